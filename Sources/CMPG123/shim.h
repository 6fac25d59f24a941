// libmpg123, and wrappers for the calls it maps through large-file macros
// that Swift cannot see. Owned by TuttiDecode, whose MPG123Handle alone
// calls it.
#ifndef TUTTI_CMPG123_H
#define TUTTI_CMPG123_H
#include <stdio.h>
#include <mpg123.h>

static inline int tutti_mpg123_open(mpg123_handle *mh, const char *path) {
    return mpg123_open(mh, path);
}
static inline long long tutti_mpg123_length(mpg123_handle *mh) {
    return (long long)mpg123_length(mh);
}
/// Enables gapless decoding, float output and quiet errors.
static inline int tutti_mpg123_configure(mpg123_handle *mh) {
    return mpg123_param(mh, MPG123_ADD_FLAGS, MPG123_GAPLESS | MPG123_FORCE_FLOAT | MPG123_QUIET, 0);
}
/// Seeks to a sample offset (gapless: encoder delay excluded); returns the new offset or < 0.
static inline long long tutti_mpg123_seek(mpg123_handle *mh, long long sample) {
    return (long long)mpg123_seek(mh, (off_t)sample, SEEK_SET);
}
/// Opens `mh` for feeding (tutti_mpg123_configure was applied when it was made); returns MPG123_OK or an error code.
static inline int tutti_mpg123_open_feed(mpg123_handle *mh) {
    return mpg123_open_feed(mh);
}
/// mpg123_feedseek to a sample offset from the start (gapless); *input_offset is the
/// byte position in the stream to feed from next. Returns the new offset or < 0.
static inline long long tutti_mpg123_feedseek(mpg123_handle *mh, long long sample, long long *input_offset) {
    off_t in = 0;
    off_t r = mpg123_feedseek(mh, (off_t)sample, SEEK_SET, &in);
    *input_offset = (long long)in;
    return (long long)r;
}
#endif
