/// A token bucket on injected time: at most `capacity` actions at once,
/// then `perSecond` a second. Pure: the caller passes the monotonic time
/// (ns) at every call, so tests run on a fake clock.
public struct TokenBucket: Sendable, Equatable {
    public let capacity: Int
    public let perSecond: Int
    /// Tokens in nanosecond-tokens (a token is 1e9 of them), so refills
    /// keep their fractions without floating point.
    private var level: Int64
    private var last: Int64?

    public init(capacity: Int, perSecond: Int) {
        precondition(capacity >= 1 && perSecond >= 1, "a bucket holds and refills at least one token")
        self.capacity = capacity
        self.perSecond = perSecond
        level = Int64(capacity) * nanosecondsPerSecond
    }

    private mutating func refill(now: Int64) {
        // A clock read out of order never moves `last` back (which would give tokens twice).
        defer { last = max(last ?? now, now) }
        guard let last, now > last else { return }
        // Saturating: a bucket left alone for years is simply full.
        let (gained, overflow) = (now - last).multipliedReportingOverflow(by: Int64(perSecond))
        let full = Int64(capacity) * nanosecondsPerSecond
        level = overflow ? full : min(full, level + min(gained, full))
    }

    /// Takes `count` tokens (at most the capacity) if there are that many.
    public mutating func take(now: Int64, count: Int = 1) -> Bool {
        refill(now: now)
        let cost = Int64(min(max(1, count), capacity)) * nanosecondsPerSecond
        guard level >= cost else { return false }
        level -= cost
        return true
    }

    /// When `count` tokens will be there (`now` if they are already).
    public mutating func nextToken(now: Int64, count: Int = 1) -> Int64 {
        refill(now: now)
        let cost = Int64(min(max(1, count), capacity)) * nanosecondsPerSecond
        if level >= cost { return now }
        return now + (cost - level + Int64(perSecond) - 1) / Int64(perSecond)
    }
}
