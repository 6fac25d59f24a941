/// How a network source tries again after a failure: `initialDelay`,
/// doubling, capped at `maxDelay`, each wait shortened at random by up to
/// `jitter` of itself (listeners dropped by one server restart do not all
/// come back in the same instant); after `maxAttempts` failed attempts in
/// a row it gives up (nil: never, until the reader's stall timeout gives up
/// on the source). Seconds.
public struct ReconnectPolicy: Sendable, Equatable {
    public var initialDelay: Double
    public var maxDelay: Double
    public var maxAttempts: Int?
    /// The largest share of a wait taken off at random, 0…1.
    public var jitter: Double

    public init(initialDelay: Double = 0.5, maxDelay: Double = 30, maxAttempts: Int? = nil, jitter: Double = 0.2) {
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
        self.maxAttempts = maxAttempts
        self.jitter = min(max(jitter, 0), 1)
    }

    /// No reconnection: a live stream that closes cleanly has ended.
    public static let never = ReconnectPolicy(maxAttempts: 0)

    /// The longest wait before attempt `n` (0-based) of a run of failures: before jitter.
    public func delay(beforeAttempt n: Int) -> Double {
        min(maxDelay, initialDelay * Double(1 << min(n, 30)))
    }

    public func allows(attempt n: Int) -> Bool { maxAttempts.map { n < $0 } ?? true }
}

/// The back-off of one source, on injected time (monotonic ns, whatever
/// clock the caller reads) with jitter from an injected generator: the
/// caller reports what happened and is told what to do. A live HTTP stream
/// (`HTTPStream`) reports each lost connection and failed attempt, and the
/// bytes each connection delivers; an HLS source reports each failed
/// playlist reload and each one that worked.
///
/// Not thread-safe: a value, kept under its owner's lock.
public struct ReconnectBackoff: Sendable, Equatable {
    public enum Decision: Equatable, Sendable {
        /// Try again at `at` (`delay` ns after the failure); `attempt` counts this run of failures from 1.
        case retry(attempt: Int, at: Int64, delay: Int64)
        /// The policy allows no more attempts: `attempts` were made since the last success.
        case giveUp(attempts: Int)
    }

    public let policy: ReconnectPolicy
    /// Bytes a connection must deliver to count as working (the next failure then waits `initialDelay` again).
    public let healthyBytes: Int64
    /// Attempts made since the last success.
    public private(set) var failures = 0
    /// When the attempt decided last is due; nil when none is waiting.
    public private(set) var retryAt: Int64?
    private var bytesThisConnection: Int64 = 0

    public init(policy: ReconnectPolicy, healthyBytes: Int64 = 32_768) {
        self.policy = policy
        self.healthyBytes = healthyBytes
    }

    /// The connection was lost, or an attempt (or a reload) failed, at `now`.
    public mutating func failed(now: Int64, using random: inout some RandomNumberGenerator) -> Decision {
        bytesThisConnection = 0
        guard policy.allows(attempt: failures) else {
            retryAt = nil
            return .giveUp(attempts: failures)
        }
        let ceiling = Int64((policy.delay(beforeAttempt: failures) * 1e9).rounded())
        // The top 53 bits as a fraction in [0, 1): exact, and the same for a given generator on every machine.
        let unit = Double(random.next() >> 11) / Double(UInt64(1) << 53)
        let delay = ceiling - Int64((Double(ceiling) * policy.jitter * unit).rounded(.down))
        failures += 1
        retryAt = now + delay
        return .retry(attempt: failures, at: now + delay, delay: delay)
    }

    /// A connection (re)established by the attempt: its bytes are counted afresh.
    public mutating func connected() {
        retryAt = nil
        bytesThisConnection = 0
    }

    /// A connection delivered `bytes`: once it has delivered `healthyBytes`, it works.
    public mutating func received(bytes: Int) {
        bytesThisConnection += Int64(bytes)
        if failures > 0 && bytesThisConnection >= healthyBytes { failures = 0 }
    }

    /// The attempt worked outright (a playlist reloaded): the next failure starts from `initialDelay`.
    public mutating func succeeded() {
        failures = 0
        retryAt = nil
        bytesThisConnection = 0
    }
}
