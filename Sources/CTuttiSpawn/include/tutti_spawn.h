// Starting a program whose children may outlive it (daemons that fork).
#ifndef TUTTI_SPAWN_H
#define TUTTI_SPAWN_H
#include <sys/types.h>

/// posix_spawn of `path` with stdin, stdout and stderr set to the given
/// descriptors and every other descriptor closed, in a process group of
/// its own. Closing the rest matters: a daemon the program forks would
/// otherwise hold this process's pipes and sockets open for ever.
/// Returns 0 or an errno value.
int tutti_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                int stdin_fd, int stdout_fd, int stderr_fd);

/// A descriptor that becomes readable when process `pid` exits (Linux
/// pidfd_open, 5.3 and later), so a waiter sleeps in poll(2) with a timeout
/// instead of looking with WNOHANG. -1 with errno set where the kernel has none.
int tutti_pidfd_open(pid_t pid);
#endif
