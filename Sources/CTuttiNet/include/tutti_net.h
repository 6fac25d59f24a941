// What TuttiNet cannot do from Swift: kernel receive timestamps.
#ifndef TUTTI_NET_H
#define TUTTI_NET_H
#include <stdint.h>

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

#endif
