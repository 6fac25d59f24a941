/// When a follower sends its clock requests, and over which channel.
///
/// At join it sends a burst (one request every 1 ms) so the estimator's
/// envelopes fill fast, for at least `minimumJoin` and until the estimator
/// has been ready for `settle` (at most `maximumJoin`). While the
/// estimator's uncertainty is above `quietUncertainty` (a jittery path needs
/// many samples for its envelopes: the lowest of N delays spread over W
/// sits about W/N above the floor), one every 2 ms until `youngSpan` after
/// the start, then one every 5 ms. On a quiet path (the uncertainty at
/// most `quietUncertainty` and the path's queueing at most `quietQueueing`,
/// until either exceeds `noisyUncertainty` or `noisyQueueing`) one every
/// 100 ms: there the envelopes need few points, and each exchange costs
/// both ends a datagram and a wake-up (at 50 a second, 0.55 % of a core
/// of a speaker's 1.9 %; a 16-room leader went from 5.4 % to 3.3 %).
/// Requests go as datagrams when the leader offers them (v5): on their own
/// socket, never queued behind audio on the TCP stream. When no datagram
/// reply has come for `datagramGrace` (UDP blocked, an old relay), requests
/// also go over the stream, at the old pace, until datagram replies return.
/// A leader older than v5 gets stream requests only. On a path that queues
/// in order (`ClockEstimator.inOrderExcess`: Wi-Fi under load), a request
/// sent a millisecond after another waits behind it and reports the same
/// queue: there one goes every median-delay-above-the-floor (at least
/// `joinInterval`, at most `inOrderMaximumInterval`), join burst included.
/// (Simulated 20 ± 15 ms in order with a 50-chunk-a-second stream beside
/// it, 8 seeds: the model's median error after 20 s was 200–570 µs at the
/// usual pace, 17–101 µs at one every 20 ms but for one seed's 461 µs.) With `streamProbes`
/// (a v6 leader) a request also goes over the stream every
/// `streamProbeInterval` (`quietStreamProbeInterval` on a quiet path)
/// while datagrams carry the clock: its reply queues
/// behind the audio, so it measures how late the stream delivers
/// (`StreamDelayTail`). A health report goes once a second.
///
/// Pure: it runs on the times it is given and returns what to do.
public struct ClockExchangeSchedule: Sendable {
    public enum Channel: Equatable, Sendable { case datagram, stream }
    public enum Action: Equatable, Sendable {
        case request(Channel)
        case health
    }

    public struct Configuration: Sendable {
        public var joinInterval: Int64 = 1 * nanosecondsPerMillisecond
        /// Until the window is this long, a jittery path is sampled faster.
        public var youngSpan: Int64 = 20 * nanosecondsPerSecond
        public var youngInterval: Int64 = 2 * nanosecondsPerMillisecond
        public var steadyInterval: Int64 = 5 * nanosecondsPerMillisecond
        /// The slowest pace on a path that queues in order (see the type's comment).
        public var inOrderMaximumInterval: Int64 = 20 * nanosecondsPerMillisecond
        public var quietInterval: Int64 = 100 * nanosecondsPerMillisecond
        /// Quiet from this uncertainty down, until it rises above `noisyUncertainty`
        /// (fewer points raise it a little: no flapping between paces).
        public var quietUncertainty: Int64 = 10_000
        public var noisyUncertainty: Int64 = 20_000
        /// The uncertainty alone is no test: on 20 ± 15 ms of jitter it fell to
        /// 9 µs after 30 s of samples at 2–5 ms, and at the quiet pace rose
        /// back to 20 µs. A wire queues µs, Wi-Fi milliseconds.
        public var quietQueueing: Int64 = 250_000
        public var noisyQueueing: Int64 = 500_000
        public var minimumJoin: Int64 = 2 * nanosecondsPerSecond
        public var maximumJoin: Int64 = 4 * nanosecondsPerSecond
        public var settle: Int64 = 500 * nanosecondsPerMillisecond
        /// Over TCP: 20 at this pace first (as before v5) …
        public var streamJoinInterval: Int64 = 25 * nanosecondsPerMillisecond
        public var streamJoinCount = 20
        /// … then this.
        public var streamInterval: Int64 = 50 * nanosecondsPerMillisecond
        public var datagramGrace: Int64 = nanosecondsPerSecond
        public var streamProbeInterval: Int64 = 100 * nanosecondsPerMillisecond
        public var quietStreamProbeInterval: Int64 = 250 * nanosecondsPerMillisecond
        public var healthInterval: Int64 = nanosecondsPerSecond
        public init() {}
    }

    public let configuration: Configuration
    public let datagramsOffered: Bool
    public let streamProbes: Bool
    private let start: Int64
    private var readyAt: Int64?
    private var lastDatagramReply: Int64?
    private var nextDatagram: Int64
    private var nextStream: Int64
    private var nextHealth: Int64
    private var streamSent = 0
    private var streaming = false
    private var quiet = false
    private var inOrderExcess: Int64?

    public init(configuration: Configuration = Configuration(), datagramsOffered: Bool, streamProbes: Bool = false, start: Int64) {
        self.configuration = configuration
        self.datagramsOffered = datagramsOffered
        self.streamProbes = streamProbes
        self.start = start
        nextDatagram = start
        nextStream = start
        nextHealth = start + configuration.healthInterval
    }

    /// A datagram reply arrived at `now`.
    public mutating func datagramReplied(at now: Int64) {
        lastDatagramReply = max(lastDatagramReply ?? now, now)
    }

    /// The estimator became ready at `now` (the first call counts).
    public mutating func estimatorReady(at now: Int64) {
        if readyAt == nil { readyAt = now }
    }

    /// The estimator's latest uncertainty and the path's queueing (ns), which
    /// set the steady pace, and its `inOrderExcess` (nil: not in order).
    public mutating func clockPath(uncertainty: Int64?, queueing: Int64?, inOrderExcess: Int64? = nil) {
        self.inOrderExcess = inOrderExcess
        let u = uncertainty ?? .max, q = queueing ?? .max
        if u <= configuration.quietUncertainty && q <= configuration.quietQueueing {
            quiet = true
        } else if u > configuration.noisyUncertainty || q > configuration.noisyQueueing {
            quiet = false
        }
    }

    /// Whether the path counts as quiet now (see the type's comment).
    public var isQuiet: Bool { quiet }

    /// Whether the join burst is on at `now`.
    public func joining(at now: Int64) -> Bool {
        let elapsed = now - start
        if elapsed < configuration.minimumJoin { return true }
        if elapsed >= configuration.maximumJoin { return false }
        guard let readyAt else { return true }
        return now - readyAt < configuration.settle
    }

    /// Whether requests go over the stream at `now`.
    public func usingStream(at now: Int64) -> Bool {
        guard datagramsOffered else { return true }
        return now - (lastDatagramReply ?? start) >= configuration.datagramGrace
    }

    /// What is due at `now`, and when to ask again.
    public mutating func poll(now: Int64) -> (actions: [Action], next: Int64) {
        var actions: [Action] = []
        if datagramsOffered && now >= nextDatagram {
            actions.append(.request(.datagram))
            let interval = quiet ? (joining(at: now) ? configuration.joinInterval : configuration.quietInterval)
                : inOrderExcess.map { min(max($0, configuration.joinInterval), configuration.inOrderMaximumInterval) }
                ?? (joining(at: now) ? configuration.joinInterval
                    : now - start < configuration.youngSpan ? configuration.youngInterval : configuration.steadyInterval)
            // Never a burst of catch-up requests after a stall of this thread.
            nextDatagram = max(nextDatagram + interval, now + interval / 2)
        }
        if usingStream(at: now) {
            if !streaming { streaming = true; nextStream = now }
            if now >= nextStream {
                actions.append(.request(.stream))
                streamSent += 1
                let interval = streamSent <= configuration.streamJoinCount ? configuration.streamJoinInterval : configuration.streamInterval
                nextStream = max(nextStream + interval, now + interval / 2)
            }
        } else {
            streaming = false
            if streamProbes && now >= nextStream {
                actions.append(.request(.stream))
                let interval = quiet ? configuration.quietStreamProbeInterval : configuration.streamProbeInterval
                nextStream = max(nextStream + interval, now + interval / 2)
            }
        }
        if now >= nextHealth {
            actions.append(.health)
            nextHealth = max(nextHealth + configuration.healthInterval, now + configuration.healthInterval / 2)
        }
        var next = nextHealth
        if datagramsOffered { next = min(next, nextDatagram) }
        // While datagrams answer, look again when the grace would run out.
        next = min(next, usingStream(at: now) ? nextStream : (lastDatagramReply ?? start) + configuration.datagramGrace)
        if streamProbes { next = min(next, nextStream) }
        return (actions, max(next, now))
    }
}

/// The least value recorded over a sliding window of whole seconds (one
/// slot per second, so memory and work stay fixed whatever the rate). Pure; times in ns.
struct PerSecondMinimum: Sendable {
    let seconds: Int
    private var minima: [Int64]
    private var bucketSecond: Int64?

    init(seconds: Int) {
        self.seconds = max(1, seconds)
        minima = Array(repeating: .max, count: self.seconds)
    }

    mutating func reset() {
        for i in minima.indices { minima[i] = .max }
        bucketSecond = nil
    }

    mutating func record(_ value: Int64, at now: Int64) {
        advance(to: now)
        let i = slot(now / nanosecondsPerSecond)
        minima[i] = min(minima[i], value)
    }

    /// nil: nothing recorded in the window ending at `now`.
    mutating func minimum(at now: Int64) -> Int64? {
        advance(to: now)
        let m = minima.min()!
        return m == .max ? nil : m
    }

    private func slot(_ second: Int64) -> Int { Int((second % Int64(seconds) + Int64(seconds)) % Int64(seconds)) }

    private mutating func advance(to now: Int64) {
        let second = now / nanosecondsPerSecond
        guard let last = bucketSecond else { bucketSecond = second; return }
        guard second > last else { return }
        // Clear the slots of the seconds that passed without a record.
        for s in (last + 1)...min(second, last + Int64(seconds)) { minima[slot(s)] = .max }
        bucketSecond = second
    }
}

/// The least lead chunks had on arrival, over a sliding window of whole
/// seconds, and how many came too late: the tail of the arrival delay, as a
/// follower measures it (`SyncReport`). Pure; times in ns.
public struct ArrivalMargin: Sendable {
    public var seconds: Int { window.seconds }
    private var window: PerSecondMinimum
    public private(set) var lateChunks = 0

    public init(seconds: Int = 10) { window = PerSecondMinimum(seconds: seconds) }

    /// Forgets everything (a new connection).
    public mutating func reset() {
        window.reset()
        lateChunks = 0
    }

    /// A chunk whose PTS is `lead` ns ahead of the leader time it arrived at.
    public mutating func record(lead: Int64, at now: Int64) {
        window.record(lead, at: now)
        if lead < 0 { lateChunks += 1 }
    }

    /// The least lead over the window ending at `now` (nil: nothing arrived in it).
    public mutating func minimum(at now: Int64) -> Int64? { window.minimum(at: now) }
}

/// The longest the TCP stream took to deliver, over a sliding window: a
/// follower's replies to its stream clock requests, which queue behind the
/// audio like every chunk does, measured from the leader's `t3` to their
/// arrival in leader time (v6, `SyncReport.streamDelayMaximumNanoseconds`).
/// Pure; times in ns.
public struct StreamDelayTail: Sendable {
    private var window: PerSecondMinimum

    public init(seconds: Int = 30) { window = PerSecondMinimum(seconds: seconds) }

    public mutating func reset() { window.reset() }

    /// A reply stamped `sent` (leader time) that arrived at leader time `arrived`; `now` is local monotonic.
    public mutating func record(sent: Int64, arrived: Int64, at now: Int64) {
        // `sent` comes off the wire: a difference that overflows counts as the longest possible.
        let (delay, overflow) = arrived.subtractingReportingOverflow(sent)
        window.record(overflow ? -Int64.max : -max(0, delay), at: now)
    }

    /// The longest delay in the window ending at `now` (nil: none recorded).
    public mutating func maximum(at now: Int64) -> Int64? { window.minimum(at: now).map { -$0 } }
}

/// How far ahead the leader schedules a command (pause, next, seek …) so
/// that every room hears it at the same instant: the configured start
/// latency, or more while some room's TCP stream takes longer than that to
/// deliver (a lost segment waits a retransmission timeout, 200 ms or more):
/// new audio sent at the command must be there before its first frame is
/// due, else that room goes silent until it comes. The longest delay any
/// room reported plus `margin`, at most `ceiling`. Pure.
public struct CommandLead: Sendable, Equatable {
    public var base: Int64
    public var ceiling: Int64
    public var margin: Int64 = 30 * nanosecondsPerMillisecond

    /// `ceiling` is kept at least `base`.
    public init(base: Int64, ceiling: Int64) {
        self.base = base
        self.ceiling = max(base, ceiling)
    }

    /// The lead for rooms whose stream delays are these (nil: not reported).
    public func lead<S: Sequence<Int64?>>(streamDelays: S) -> Int64 {
        var worst: Int64 = 0
        // Clamped first: a report comes off the wire, and Int64.max + margin must not trap.
        for case let d? in streamDelays { worst = max(worst, min(d, ceiling)) }
        return min(max(base, worst + margin), ceiling)
    }
}
