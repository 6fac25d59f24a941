#include "tutti_shim.h"
#include <opus.h>

int tutti_opus_encoder_set_bitrate(OpusEncoder *enc, int32_t bps) {
    return opus_encoder_ctl(enc, OPUS_SET_BITRATE(bps));
}
int tutti_opus_encoder_set_complexity(OpusEncoder *enc, int32_t c) {
    return opus_encoder_ctl(enc, OPUS_SET_COMPLEXITY(c));
}
int tutti_opus_encoder_set_signal_music(OpusEncoder *enc) {
    return opus_encoder_ctl(enc, OPUS_SET_SIGNAL(OPUS_SIGNAL_MUSIC));
}
int tutti_opus_encoder_get_lookahead(OpusEncoder *enc, int32_t *samples) {
    opus_int32 v = 0;
    int rc = opus_encoder_ctl(enc, OPUS_GET_LOOKAHEAD(&v));
    *samples = v;
    return rc;
}
int tutti_opus_encoder_reset(OpusEncoder *enc) {
    return opus_encoder_ctl(enc, OPUS_RESET_STATE);
}
int tutti_opus_decoder_reset(OpusDecoder *dec) {
    return opus_decoder_ctl(dec, OPUS_RESET_STATE);
}
