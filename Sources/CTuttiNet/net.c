#define _GNU_SOURCE
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <string.h>
#include "tutti_net.h"

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
