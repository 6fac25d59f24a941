import CTuttiThread

/// Gives memory that was freed back to the kernel. glibc keeps freed pages
/// in the arena of the thread that freed them (one arena per thread, up to
/// eight per core), so after a burst of work on worker threads (a library
/// scan) the process stays as large as at its peak until this is called.
public func returnFreedMemory() {
    _ = tutti_malloc_trim()
}
