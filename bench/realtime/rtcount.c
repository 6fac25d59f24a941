// LD_PRELOAD shim for bench/realtime: counts heap allocations and mutex
// locks made by threads named "tutti-playout", per second of process life,
// and prints them at exit. Allocations on "tutti-source" (the leader's
// decoder thread, which allocates freely) are counted too, as a check that
// the shim sees Swift's allocations at all. glibc only.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
extern int __pthread_mutex_lock(pthread_mutex_t *);

#define SECONDS 600
static _Atomic long allocs[SECONDS], locks[SECONDS], control[SECONDS];
static long long start_ns;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((constructor)) static void init(void) { start_ns = now_ns(); }

static int thread_is(const char *prefix) {
    char name[17] = {0};
    if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0) return 0;
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

static void count(_Atomic long *table) {
    long long s = (now_ns() - start_ns) / 1000000000LL;
    if (s < 0 || s >= SECONDS) return;
    if (thread_is("tutti-playout")) atomic_fetch_add(&table[s], 1);
    else if (table == allocs && thread_is("tutti-source")) atomic_fetch_add(&control[s], 1);
}

void *malloc(size_t n) { count(allocs); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { count(allocs); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { count(allocs); return __libc_realloc(p, n); }
int posix_memalign(void **out, size_t align, size_t n) {
    count(allocs);
    void *p = __libc_memalign(align, n);
    if (!p) return 12;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t align, size_t n) { count(allocs); return __libc_memalign(align, n); }
void free(void *p) { __libc_free(p); }
int pthread_mutex_lock(pthread_mutex_t *m) { count(locks); return __pthread_mutex_lock(m); }

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("RTCOUNT_OUT");
    FILE *f = path ? fopen(path, "w") : stderr;
    if (!f) return;
    for (int s = 0; s < SECONDS; s++) {
        long a = atomic_load(&allocs[s]), l = atomic_load(&locks[s]), c = atomic_load(&control[s]);
        if (s * 1000000000LL > now_ns() - start_ns) break;
        fprintf(f, "%d %ld %ld %ld\n", s, a, l, c);
    }
    if (path) fclose(f);
}
