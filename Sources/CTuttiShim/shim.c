#define _GNU_SOURCE
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <string.h>
#include <stdio.h>
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

#include <mpg123.h>

int tutti_mpg123_open(mpg123_handle *mh, const char *path) {
    return mpg123_open(mh, path);
}
long long tutti_mpg123_length(mpg123_handle *mh) {
    return (long long)mpg123_length(mh);
}
int tutti_mpg123_configure(mpg123_handle *mh) {
    return mpg123_param(mh, MPG123_ADD_FLAGS, MPG123_GAPLESS | MPG123_FORCE_FLOAT | MPG123_QUIET, 0);
}

int tutti_enable_receive_timestamps(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
}

static int64_t tutti_arrival_of(struct msghdr *msg) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec kernel, real, mono;
            memcpy(&kernel, CMSG_DATA(c), sizeof kernel);
            clock_gettime(CLOCK_REALTIME, &real);
            clock_gettime(CLOCK_MONOTONIC, &mono);
            int64_t k = (int64_t)kernel.tv_sec * 1000000000LL + kernel.tv_nsec;
            int64_t r = (int64_t)real.tv_sec * 1000000000LL + real.tv_nsec;
            int64_t m = (int64_t)mono.tv_sec * 1000000000LL + mono.tv_nsec;
            // The kernel stamps in CLOCK_REALTIME; both clocks advance together.
            return m - (r - k);
        }
    }
    return 0;
}

long tutti_recv_timestamped(int fd, void *buffer, unsigned long length, int64_t *arrival) {
    struct iovec iov = { .iov_base = buffer, .iov_len = length };
    union { char buf[CMSG_SPACE(sizeof(struct timespec)) * 2]; struct cmsghdr align; } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    long n = recvmsg(fd, &msg, 0);
    *arrival = 0;
    if (n <= 0) return n;
    *arrival = tutti_arrival_of(&msg);
    return n;
}

long tutti_recvfrom_timestamped(int fd, void *buffer, unsigned long length, int64_t *arrival,
                                uint32_t *from_address, uint16_t *from_port) {
    struct iovec iov = { .iov_base = buffer, .iov_len = length };
    union { char buf[CMSG_SPACE(sizeof(struct timespec)) * 2]; struct cmsghdr align; } control;
    struct sockaddr_in from;
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    memset(&from, 0, sizeof from);
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    long n = recvmsg(fd, &msg, 0);
    *arrival = 0;
    *from_address = 0;
    *from_port = 0;
    if (n < 0) return n;
    if (from.sin_family == AF_INET) { *from_address = from.sin_addr.s_addr; *from_port = from.sin_port; }
    *arrival = tutti_arrival_of(&msg);
    return n;
}

long long tutti_mpg123_seek(mpg123_handle *mh, long long sample) {
    return (long long)mpg123_seek(mh, (off_t)sample, SEEK_SET);
}

int tutti_mpg123_open_feed(mpg123_handle *mh) {
    tutti_mpg123_configure(mh);
    return mpg123_open_feed(mh);
}
long long tutti_mpg123_feedseek(mpg123_handle *mh, long long sample, long long *input_offset) {
    off_t in = 0;
    off_t r = mpg123_feedseek(mh, (off_t)sample, SEEK_SET, &in);
    *input_offset = (long long)in;
    return (long long)r;
}
