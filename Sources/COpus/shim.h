// libopus, and typed wrappers for its variadic opus_*_ctl requests
// (Swift cannot call them). Owned by TuttiAudio.
#ifndef TUTTI_COPUS_H
#define TUTTI_COPUS_H
#include <stdint.h>
#include <opus.h>

static inline int tutti_opus_encoder_set_bitrate(OpusEncoder *enc, int32_t bps) {
    return opus_encoder_ctl(enc, OPUS_SET_BITRATE(bps));
}
static inline int tutti_opus_encoder_set_complexity(OpusEncoder *enc, int32_t c) {
    return opus_encoder_ctl(enc, OPUS_SET_COMPLEXITY(c));
}
static inline int tutti_opus_encoder_set_signal_music(OpusEncoder *enc) {
    return opus_encoder_ctl(enc, OPUS_SET_SIGNAL(OPUS_SIGNAL_MUSIC));
}
static inline int tutti_opus_encoder_get_lookahead(OpusEncoder *enc, int32_t *samples) {
    opus_int32 v = 0;
    int rc = opus_encoder_ctl(enc, OPUS_GET_LOOKAHEAD(&v));
    *samples = v;
    return rc;
}
static inline int tutti_opus_encoder_reset(OpusEncoder *enc) {
    return opus_encoder_ctl(enc, OPUS_RESET_STATE);
}
static inline int tutti_opus_decoder_reset(OpusDecoder *dec) {
    return opus_decoder_ctl(dec, OPUS_RESET_STATE);
}
#endif
