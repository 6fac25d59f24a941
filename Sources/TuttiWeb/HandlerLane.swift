import Dispatch
import Synchronization
import TuttiSystem

/// Runs request and WebSocket handlers on threads of Tutti's own, with
/// 1 MiB stacks, while civetweb's worker waits. Debian builds civetweb with
/// 100 KiB worker stacks (USE_STACK_SIZE), too little for Swift handlers
/// that parse JSON and query SQLite: a POST /api body nested 100 deep
/// overflowed one and ended the leader. A hand-off costs a few µs.
// Sendable because the queue is a Mutex, and a job's closure runs on one lane thread while the thread that queued it waits on `done`.
final class HandlerLane: @unchecked Sendable {
    // Sendable because its closure runs on exactly one lane thread, while the thread that queued it waits on `done`.
    private final class Job: @unchecked Sendable {
        let work: () -> Void
        let done = DispatchSemaphore(value: 0)
        init(_ work: @escaping () -> Void) { self.work = work }
    }

    private let queue = Mutex<[Job]>([])
    private let ready = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let threads: Int

    init(threads: Int, stackBytes: Int = 1 << 20, name: String = "tutti-web") {
        self.threads = threads
        for i in 0..<threads {
            startThread(name: "\(name)-\(i)", stackSize: stackBytes) { [self] in serve() }
        }
    }

    /// Runs `body` on a lane thread and returns its result; the caller blocks meanwhile.
    func run<T>(_ body: @escaping () -> T) -> T {
        // Escaping, not withoutActuallyEscaping: the lane thread may still hold the job a moment after `done`.
        let box = ResultBox<T>()
        let job = Job { box.value = body() }
        queue.withLock { $0.append(job) }
        ready.signal()
        job.done.wait()
        return box.value!
    }

    /// Lets the lane threads end (after the jobs already queued).
    func stop() {
        stopping.store(true, ordering: .releasing)
        for _ in 0..<threads { ready.signal() }
    }

    private func serve() {
        while true {
            ready.wait()
            if let job = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                job.work()
                job.done.signal()
            } else if stopping.load(ordering: .acquiring) {
                return
            }
        }
    }
}

/// Where a lane job leaves its result for the thread waiting on it.
private final class ResultBox<T> {
    var value: T?
}
