import CTuttiThread

/// Gives memory that was freed back to the kernel. glibc keeps freed pages
/// in the arena of the thread that freed them (one arena per thread, up to
/// eight per core), so after a burst of work on worker threads (a library
/// scan) the process stays as large as at its peak until this is called.
public func returnFreedMemory() {
    _ = tutti_malloc_trim()
}

/// At most `count` malloc arenas for the whole process (glibc's default is
/// eight per core). Each arena keeps its own freed and fragmented pages, so a
/// burst of work spread over many threads (the scan's readers, the command
/// threads) leaves a process larger than the same work in two arenas: a
/// leader after a cold scan of 100,000 files was 40.3 MiB resident with the
/// default and 36.0 MiB with two (after every query too: 38.9 and 37.7).
/// Call before starting threads.
public func limitMallocArenas(_ count: Int) {
    _ = tutti_limit_malloc_arenas(Int32(count))
}
