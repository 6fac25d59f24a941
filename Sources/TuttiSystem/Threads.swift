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

/// A thread could not be started: the system's limit on threads or memory
/// was reached. What was to run on it does not run.
public struct ThreadError: Error, CustomStringConvertible, Equatable {
    public let name: String
    public let errno: Int32
    public var description: String { "cannot start thread \(name): \(String(cString: strerror(errno)))" }
}

/// Starts a detached OS thread named `name` running `body`. Throws when
/// the system refuses one (EAGAIN at its thread limit, ENOMEM): the caller
/// decides what that means, which for work a peer asked for is refusing
/// that peer, never stopping the daemon.
public func startThread(name: String, stackSize: Int = 512 << 10, _ body: @escaping @Sendable () -> Void) throws(ThreadError) {
    _ = try spawnThread(name: name, stackSize: stackSize, detached: true, body)
}

/// Creates an OS thread running `body`, detached or to be joined (`JoinableThread`).
func spawnThread(name: String, stackSize: Int, detached: Bool, _ body: @escaping @Sendable () -> Void) throws(ThreadError) -> pthread_t {
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN)))
    pthread_attr_setdetachstate(&attributes, Int32(detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE))
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
        throw ThreadError(name: name, errno: rc)
    }
    return thread
}

/// Starts a thread the process cannot run without (a signal handler, an
/// accept loop at start-up, an audio output): without it the process ends
/// with the reason. Never for work a peer asked for: use `startThread`.
public func startEssentialThread(name: String, stackSize: Int = 512 << 10, _ body: @escaping @Sendable () -> Void) {
    do { try startThread(name: name, stackSize: stackSize, body) } catch {
        fatalError("\(error)")
    }
}

/// The threads this process runs now (/proc/self/task): after a clean
/// stop, only the one that stopped it.
public func runningThreadCount() -> Int {
    guard let directory = opendir("/proc/self/task") else { return 0 }
    defer { closedir(directory) }
    var count = 0
    while let entry = readdir(directory) {
        if entry.pointee.d_name.0 != CChar(UInt8(ascii: ".")) { count += 1 }
    }
    return count
}
