import Glibc

/// A mutex with a condition variable, without Foundation (NSCondition's
/// place in the leader): lock, wait, signal. Timed waits run on
/// CLOCK_MONOTONIC, so setting the wall clock never cuts one short or
/// stretches it.
// Sendable because the pthread mutex and condition variable are made for
// use from any thread; they are allocated once and never move.
public final class Condition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits for a signal; the caller holds the lock.
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Waits for a signal until `deadline` (CLOCK_MONOTONIC ns, as
    /// `Condition.now()`); false when the deadline passed. The caller holds the lock.
    @discardableResult
    public func wait(untilNanoseconds deadline: Int64) -> Bool {
        var at = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &at) == 0
    }

    /// Waits for a signal at most `seconds`; false when they passed.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        wait(untilNanoseconds: Condition.deadline(afterSeconds: seconds))
    }

    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }

    /// CLOCK_MONOTONIC now, ns: the clock of `wait(untilNanoseconds:)`.
    public static func now() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }

    /// The deadline `seconds` from now (a huge or infinite span saturates).
    public static func deadline(afterSeconds seconds: Double) -> Int64 {
        let span = seconds * 1e9
        guard span.isFinite, span < 1e18 else { return Int64.max / 2 }
        return now() + Int64(max(0, span))
    }
}
