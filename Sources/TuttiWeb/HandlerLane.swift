import Glibc
import TuttiSystem

/// Runs request and WebSocket handlers on threads of Tutti's own, with
/// 1 MiB stacks, while civetweb's worker waits. Debian builds civetweb with
/// 100 KiB worker stacks (USE_STACK_SIZE), too little for Swift handlers
/// that parse JSON and query SQLite: a POST /api body nested 100 deep
/// overflowed one and ended the leader. A hand-off costs a few µs.
///
/// A pthread mutex and condition variable, not Synchronization.Mutex and a
/// semaphore: ThreadSanitizer sees these, so the hand-off of each job and
/// its result is checked rather than suppressed.
///
/// Threads start as jobs need them, up to `threads`, and one idle for
/// `idleSeconds` ends: an idle leader keeps none (16 were 18 % of an idle
/// leader's threads), and a burst of requests is served as before.
// Sendable because every field is read and written under `lock`, and a job's closure runs on one lane thread while the thread that queued it waits for `done`.
final class HandlerLane: @unchecked Sendable {
    private final class Job {
        let work: () -> Void
        var done = false
        init(_ work: @escaping () -> Void) { self.work = work }
    }

    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    /// Signalled when a job is queued or the lane stops (the lane threads wait on it).
    private let work = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Broadcast when a job is done or a lane thread ends (the callers and `stop` wait on it).
    private let finished = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var queue: [Job] = []
    private var stopping = false
    /// Lane threads alive, and those of them waiting for a job.
    private var running = 0
    private var idle = 0
    private let maximum: Int
    private let stackBytes: Int
    private let name: String
    private let idleSeconds: Int

    init(threads: Int, stackBytes: Int = 1 << 20, name: String = "tutti-web", idleSeconds: Int = 30) {
        pthread_mutex_init(lock, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(work, &attributes)
        pthread_condattr_destroy(&attributes)
        pthread_cond_init(finished, nil)
        maximum = max(1, threads)
        self.stackBytes = stackBytes
        self.name = name
        self.idleSeconds = idleSeconds
    }

    deinit {
        pthread_cond_destroy(work); pthread_cond_destroy(finished); pthread_mutex_destroy(lock)
        work.deallocate(); finished.deallocate(); lock.deallocate()
    }

    /// Lane threads alive now.
    var threadCount: Int {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return running
    }

    /// Runs `body` on a lane thread and returns its result; the caller blocks meanwhile.
    func run<T>(_ body: @escaping () -> T) -> T {
        // Escaping: the lane thread still holds the job a moment after it is done.
        let box = ResultBox<T>()
        let job = Job { box.value = body() }
        pthread_mutex_lock(lock)
        queue.append(job)
        if idle < queue.count && running < maximum {
            running += 1
            do {
                try startThread(name: "\(name)-\(running - 1)", stackSize: stackBytes) { [self] in serve() }
            } catch {
                running -= 1 // the threads already running take it in turn
                if running == 0 {
                    // None at all: the request runs here, on civetweb's smaller stack, rather than never.
                    queue.removeAll { $0 === job }
                    pthread_mutex_unlock(lock)
                    job.work()
                    return box.value!
                }
            }
        }
        pthread_cond_signal(work) // one lane thread is enough
        while !job.done { pthread_cond_wait(finished, lock) }
        pthread_mutex_unlock(lock)
        return box.value!
    }

    /// Lets the lane threads end once the jobs already queued are done, and waits for them.
    func stop() {
        pthread_mutex_lock(lock)
        stopping = true
        pthread_cond_broadcast(work)
        while running > 0 { pthread_cond_wait(finished, lock) }
        pthread_mutex_unlock(lock)
    }

    private func serve() {
        pthread_mutex_lock(lock)
        while true {
            if !queue.isEmpty {
                let job = queue.removeFirst()
                pthread_mutex_unlock(lock)
                job.work()
                pthread_mutex_lock(lock)
                job.done = true
                pthread_cond_broadcast(finished)
            } else if stopping {
                running -= 1
                pthread_cond_broadcast(finished)
                pthread_mutex_unlock(lock)
                return
            } else {
                idle += 1
                var now = timespec()
                clock_gettime(CLOCK_MONOTONIC, &now)
                var until = timespec(tv_sec: now.tv_sec + idleSeconds, tv_nsec: now.tv_nsec)
                let timedOut = pthread_cond_timedwait(work, lock, &until) == ETIMEDOUT
                idle -= 1
                if timedOut && queue.isEmpty && !stopping {
                    running -= 1
                    pthread_cond_broadcast(finished)
                    pthread_mutex_unlock(lock)
                    return
                }
            }
        }
    }
}

/// Where a lane job leaves its result for the thread waiting on it.
private final class ResultBox<T> {
    var value: T?
}
