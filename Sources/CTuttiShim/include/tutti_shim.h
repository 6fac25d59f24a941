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

// libmpg123 maps these names through large-file macros that Swift cannot see.
struct mpg123_handle_struct;
int tutti_mpg123_open(struct mpg123_handle_struct *mh, const char *path);
long long tutti_mpg123_length(struct mpg123_handle_struct *mh);
/// Enables gapless decoding, float output and quiet errors.
int tutti_mpg123_configure(struct mpg123_handle_struct *mh);
/// Seeks to a sample offset (gapless: encoder delay excluded); returns the new offset or < 0.
long long tutti_mpg123_seek(struct mpg123_handle_struct *mh, long long sample);

// Kernel receive timestamps on a TCP socket (SO_TIMESTAMPNS), converted
// to CLOCK_MONOTONIC: the instant data reached the host, without the
// reader thread's wake-up latency.
int tutti_enable_receive_timestamps(int fd);
/// Like recv(); *arrival is the monotonic ns of the last segment read, or 0.
long tutti_recv_timestamped(int fd, void *buffer, unsigned long length, int64_t *arrival);
/// The same for a datagram socket, also giving the sender (IPv4 address and
/// port in network byte order; zero when not IPv4).
long tutti_recvfrom_timestamped(int fd, void *buffer, unsigned long length, int64_t *arrival,
                                uint32_t *from_address, uint16_t *from_port);


// Network sources (TuttiStreams): libmpg123's feed mode, whose seek is a large-file macro.
/// Opens `mh` for feeding and applies tutti_mpg123_configure; returns MPG123_OK or an error code.
int tutti_mpg123_open_feed(struct mpg123_handle_struct *mh);
/// mpg123_feedseek to a sample offset from the start (gapless); *input_offset is the
/// byte position in the stream to feed from next. Returns the new offset or < 0.
long long tutti_mpg123_feedseek(struct mpg123_handle_struct *mh, long long sample, long long *input_offset);

#endif
