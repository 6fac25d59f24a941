#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include "tutti_thread.h"

void tutti_set_thread_name(const char *name) {
    char shortName[16];
    strncpy(shortName, name, 15);
    shortName[15] = 0;
    pthread_setname_np(pthread_self(), shortName);
}

#include <sys/resource.h>
#include <unistd.h>

int tutti_lower_thread_priority(int increment) {
    pid_t tid = gettid();
    int current = getpriority(PRIO_PROCESS, (id_t)tid);
    return setpriority(PRIO_PROCESS, (id_t)tid, current + increment);
}

#include <malloc.h>

int tutti_malloc_trim(void) { return malloc_trim(0); }

int tutti_limit_malloc_arenas(int count) { return mallopt(M_ARENA_MAX, count); }

int tutti_map_allocations_above(int bytes) { return mallopt(M_MMAP_THRESHOLD, bytes); }
