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

/// Allocations of more than `bytes` get pages of their own (mmap), handed
/// back whole when freed. glibc's default threshold moves up to the size of
/// the largest block freed (up to 32 MiB), after which a scan's arrays of
/// 100,000 files are carved from the arenas, and the pages around what is
/// still alive there stay resident: a leader was 1.3 to 9.5 MiB of anonymous
/// memory more after one unchanged rescan than after the next (24.1-24.8
/// MiB resident in all with a fixed 256 KiB, 25.7-32.7 without). A threshold
/// set here stays where it is set. Call before starting threads.
public func mapAllocations(above bytes: Int) {
    _ = tutti_map_allocations_above(Int32(bytes))
}

/// Unmaps the pages of this program's own code (they stay in the page cache
/// and fault back in when run). Start-up touches code that never runs again,
/// and the kernel maps 64 KiB around every page that faults in: a speaker's
/// code was 5 MiB resident, of which about 0.4 MiB runs while it plays.
/// Call once start-up is over (what faults back is mapped 64 KiB at a time
/// again: about 1.8 MiB). Returns the bytes released, nil if the call failed.
@discardableResult
public func releaseStartUpCode() -> Int? {
    let released = tutti_release_program_code()
    return released >= 0 ? released : nil
}
