import Dispatch
import TuttiSystem
import Glibc
import Synchronization
import TuttiCore

/// System calls of the input edge, in the style of swift-nio's System.swift:
/// retried on EINTR, errno turned into `InputError` in one place.
enum Sys {
    /// Runs `call` until it does not fail with EINTR; a negative result
    /// becomes `.system(operation:errno:)`, or the error `describe` builds.
    @inline(__always)
    static func retrying<R: BinaryInteger>(
        _ operation: String, _ describe: ((Int32) -> InputError)? = nil, _ call: () -> R
    ) throws(InputError) -> R {
        while true {
            let r = call()
            if r >= 0 { return r }
            let e = errno
            if e == EINTR { continue }
            throw describe?(e) ?? .system(operation: operation, errno: e)
        }
    }

    /// CLOCK_MONOTONIC: the clock of kernel input timestamps once
    /// EVIOCSCLOCKID took, of GPIO events since Linux 5.7, and of the
    /// rest of Tutti.
    static func now() -> LocalTime {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return LocalTime(nanoseconds: Int64(ts.tv_sec) * nanosecondsPerSecond + Int64(ts.tv_nsec))
    }

    /// A kernel timestamp if it is plausibly on CLOCK_MONOTONIC (within the
    /// last 10 s and not in the future), else the time it was read. Kernels
    /// before 5.7 stamp GPIO events on CLOCK_REALTIME, and an evdev device
    /// that refused EVIOCSCLOCKID does too; gesture timing must not mix the
    /// two clocks.
    static func plausible(_ stamped: LocalTime, readAt now: LocalTime) -> LocalTime {
        let age = now - stamped
        return age >= 0 && age <= 10 * nanosecondsPerSecond ? stamped : now
    }

    /// Milliseconds for poll(2) until `deadline`, rounded up so a tick never
    /// comes early; -1 (wait forever) without a deadline.
    static func pollTimeout(until deadline: LocalTime?, now: LocalTime) -> Int32 {
        guard let deadline else { return -1 }
        let ns = max(0, deadline - now)
        return Int32(min((ns + nanosecondsPerMillisecond - 1) / nanosecondsPerMillisecond, 60_000))
    }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }
}

/// A pipe whose read end sits in a poll set so another thread can wake
/// the poller (to stop it). Both ends are non-blocking.
final class WakePipe: Sendable {
    let readEnd: Int32
    private let writeEnd: Int32

    init() throws(InputError) {
        var fds: [Int32] = [-1, -1]
        _ = try Sys.retrying("pipe") { pipe(&fds) }
        readEnd = fds[0]
        writeEnd = fds[1]
        for fd in fds {
            Sys.setNonBlocking(fd)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    /// Safe from any thread; a full pipe already means "wake up".
    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    func drain() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }
}

/// The thread a source reads on: started once, stopped by a flag the loop
/// checks after every wake-up, joined by a semaphore the thread signals last.
final class SourceThread: Sendable {
    private let stopping = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)
    private let exited = DispatchSemaphore(value: 0)
    private let joined = Mutex<Bool>(false)
    /// pthread_self() of the thread once it runs (pthread_t is an unsigned long on Linux).
    private let worker = Atomic<UInt>(0)

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    func start(name: String, _ body: @escaping @Sendable () -> Void) {
        precondition(!started.exchange(true, ordering: .acquiringAndReleasing), "a button source starts once")
        // Named for top, ps -L and the rt bench, which look for tutti-*.
        startEssentialThread(name: name, stackSize: 512 << 10) { [self] in
            worker.store(UInt(pthread_self()), ordering: .releasing)
            body()
            exited.signal()
        }
    }

    /// Sets the flag, calls `wake` so a blocked wait returns, and waits for
    /// the thread. Idempotent; returns at once if never started. Called on
    /// the thread itself (from a handler) it only sets the flag: waiting
    /// for itself would never end.
    func stop(wake: () -> Void) {
        stopping.store(true, ordering: .releasing)
        wake()
        guard worker.load(ordering: .acquiring) != UInt(pthread_self()) else { return }
        join()
    }

    /// Waits for the thread to end (for sources that end by themselves).
    func join() {
        guard started.load(ordering: .acquiring) else { return }
        joined.withLock { done in
            guard !done else { return }
            exited.wait()
            done = true
        }
    }
}
