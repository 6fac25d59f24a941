#define _GNU_SOURCE
#include <spawn.h>
#include <signal.h>
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "tutti_spawn.h"

int tutti_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                int stdin_fd, int stdout_fd, int stderr_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) { posix_spawn_file_actions_destroy(&actions); return rc; }
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (rc == 0) rc = posix_spawnattr_setpgroup(&attributes, 0);
    // Dispatch blocks some signals and a test may ignore others: the program
    // starts with defaults, so SIGTERM still ends it.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attributes, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attributes, &all);
    if (rc == 0) rc = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (rc == 0) rc = posix_spawn(pid, path, &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

int tutti_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}
