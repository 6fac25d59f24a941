#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
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

#include <link.h>
#include <stdint.h>
#include <sys/mman.h>

struct tutti_code_span { uintptr_t start, end; };

/// The first object dl_iterate_phdr reports is the program itself.
static int tutti_program_code(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct tutti_code_span *span = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type == PT_LOAD && (header->p_flags & PF_X)) {
            span->start = info->dlpi_addr + header->p_vaddr;
            span->end = span->start + header->p_memsz;
        }
    }
    return 1;
}

long tutti_release_program_code(void) {
    struct tutti_code_span span = {0, 0};
    dl_iterate_phdr(tutti_program_code, &span);
    if (span.end <= span.start) { errno = ENOENT; return -1; }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    // Whole pages inside the segment only: the page it shares with the next segment stays.
    uintptr_t start = (span.start + page - 1) & ~(page - 1), end = span.end & ~(page - 1);
    if (end <= start) return 0;
    if (madvise((void *)start, end - start, MADV_DONTNEED) != 0) return -1;
    return (long)(end - start);
}
