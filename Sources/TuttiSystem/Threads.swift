import CTuttiThread
import Glibc

// Threads without Foundation: a speaker's process then never loads it
// (about 10 MiB of resident memory for Foundation alone).

/// Names the calling OS thread (shown by top and ps; Foundation's
/// `Thread.name` does not reach the kernel). At most 15 bytes are kept.
public func nameThread(_ name: String) {
    tutti_set_thread_name(name)
}

/// Makes the calling thread yield the processor to the others (nice +`by`):
/// for background work such as a library scan. A refusal changes nothing
/// that matters, so it is ignored.
public func lowerThreadPriority(by increment: Int32) {
    _ = tutti_lower_thread_priority(increment)
}

private final class ThreadBody {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
}

/// Starts a detached OS thread named `name` running `body`. Failing to
/// start one (no memory, thread limit) is not something a daemon can work
/// around, so it stops with the reason.
public func startThread(name: String, stackSize: Int = 512 << 10, _ body: @escaping @Sendable () -> Void) {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN)))
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    let context = Unmanaged.passRetained(ThreadBody(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, &attributes, { raw in
        let work = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
        nameThread(work.name)
        work.body()
        return nil
    }, context)
    if rc != 0 {
        Unmanaged<ThreadBody>.fromOpaque(context).release()
        fatalError("cannot start thread \(name): \(String(cString: strerror(rc)))")
    }
}
