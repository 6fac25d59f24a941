import Glibc

/// The machine's monotonic clock (CLOCK_MONOTONIC), the time base of every
/// timestamp that crosses the network or lands in a timing log.
public enum Monotonic {
    @inline(__always)
    public static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// Sleeps until the monotonic clock reads `deadline` (absolute, ns).
    public static func sleep(until deadline: Int64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    public static func sleep(nanoseconds: Int64) {
        guard nanoseconds > 0 else { return }
        sleep(until: now() + nanoseconds)
    }
}
