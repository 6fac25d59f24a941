// Thread names for top, ps -L and the benchmarks: glibc's
// pthread_setname_np is a GNU extension Swift's Glibc module does not show.
#ifndef TUTTI_THREAD_H
#define TUTTI_THREAD_H
/// Names the calling thread; at most 15 bytes are kept.
void tutti_set_thread_name(const char *name);
/// Raises the calling thread's nice value by `increment` (Linux keeps one
/// per thread); returns 0 or -1 with errno set. gettid() is not in Swift's Glibc.
int tutti_lower_thread_priority(int increment);
/// glibc's malloc_trim(0) (malloc.h is not in Swift's Glibc module).
int tutti_malloc_trim(void);
/// mallopt(M_ARENA_MAX, count); 1 on success.
int tutti_limit_malloc_arenas(int count);
/// mallopt(M_MMAP_THRESHOLD, bytes); 1 on success.
int tutti_map_allocations_above(int bytes);
/// Drops this process's mappings of the program's own code pages
/// (madvise MADV_DONTNEED over its executable PT_LOAD segment; the pages stay
/// in the page cache and fault back in when run). Returns the bytes
/// dropped, or -1 with errno set.
long tutti_release_program_code(void);
#endif
