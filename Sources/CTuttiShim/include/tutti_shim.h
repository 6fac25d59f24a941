// What Swift cannot call directly: the variadic opus_*_ctl requests.
#ifndef TUTTI_SHIM_H
#define TUTTI_SHIM_H
#include <stdint.h>

struct OpusEncoder;
struct OpusDecoder;

int tutti_opus_encoder_set_bitrate(struct OpusEncoder *enc, int32_t bitsPerSecond);
int tutti_opus_encoder_set_complexity(struct OpusEncoder *enc, int32_t complexity);
int tutti_opus_encoder_set_signal_music(struct OpusEncoder *enc);
int tutti_opus_encoder_get_lookahead(struct OpusEncoder *enc, int32_t *samples);
int tutti_opus_encoder_reset(struct OpusEncoder *enc);
int tutti_opus_decoder_reset(struct OpusDecoder *dec);

#endif
