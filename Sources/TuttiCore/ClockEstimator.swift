/// One NTP-style exchange: follower sends at `t1`, leader receives at `t2`
/// and answers at `t3`, follower receives at `t4`.
public struct ClockSample: Equatable, Sendable {
    public var t1: LocalTime
    public var t2: LeaderTime
    public var t3: LeaderTime
    public var t4: LocalTime

    public init(t1: LocalTime, t2: LeaderTime, t3: LeaderTime, t4: LocalTime) {
        self.t1 = t1; self.t2 = t2; self.t3 = t3; self.t4 = t4
    }

    /// Time spent on the network, excluding the leader's turnaround.
    public var roundTrip: Int64 { (t4 - t1) - (t3 - t2) }
    /// leader − local, assuming the two directions took equally long.
    public var offset: Int64 { ((t2.nanoseconds - t1.nanoseconds) + (t3.nanoseconds - t4.nanoseconds)) / 2 }
    /// The local instant the offset describes.
    public var midpoint: LocalTime { LocalTime(nanoseconds: t1.nanoseconds + (t4 - t1) / 2) }

    /// Whether `roundTrip` and `offset` can be computed without overflow:
    /// t1…t3 come off the wire, and garbage there must not trap.
    var isRepresentable: Bool {
        let (up, o1) = t4.nanoseconds.subtractingReportingOverflow(t1.nanoseconds)
        let (turn, o2) = t3.nanoseconds.subtractingReportingOverflow(t2.nanoseconds)
        let (_, o3) = up.subtractingReportingOverflow(turn)
        let (out, o4) = t2.nanoseconds.subtractingReportingOverflow(t1.nanoseconds)
        let (back, o5) = t3.nanoseconds.subtractingReportingOverflow(t4.nanoseconds)
        let (_, o6) = out.addingReportingOverflow(back)
        return !(o1 || o2 || o3 || o4 || o5 || o6)
    }
}

/// `leader = local + offset + skew · (local − reference)`.
public struct ClockModel: Equatable, Sendable {
    public var reference: LocalTime
    public var offset: Int64
    /// Leader rate relative to local, minus one (1e-6 = 1 ppm fast).
    public var skew: Double

    public init(reference: LocalTime, offset: Int64, skew: Double) {
        self.reference = reference; self.offset = offset; self.skew = skew
    }

    public static let identity = ClockModel(reference: LocalTime(nanoseconds: 0), offset: 0, skew: 0)

    @inline(__always)
    public func leaderTime(at local: LocalTime) -> LeaderTime {
        let dt = local - reference
        return LeaderTime(nanoseconds: local.nanoseconds &+ offset &+ Int64((Double(dt) * skew).rounded()))
    }

    @inline(__always)
    public func localTime(at leader: LeaderTime) -> LocalTime {
        // Solve leader = local + offset + skew·(local − ref) for local.
        let shifted = Double(leader.nanoseconds &- offset &- reference.nanoseconds) / (1 + skew)
        // A PTS from the wire can be anything: clamp so the conversion cannot trap.
        let clamped = min(max(shifted.rounded(), -9.2e18), 9.2e18)
        return LocalTime(nanoseconds: reference.nanoseconds &+ Int64(clamped))
    }
}

/// Estimates the leader's clock from exchanges: favours the lowest
/// round trips (least queueing, so least asymmetry), rejects outliers, and
/// fits offset and skew by least squares once the window spans long enough.
public struct ClockEstimator: Sendable {
    public struct Configuration: Sendable {
        /// Samples kept (five a second after start-up: 30 s).
        public var window = 150
        /// Samples whose round trip exceeds the best by more than this are ignored.
        public var roundTripSlack: Int64 = 200_000
        /// Fraction of the window (lowest round trips) used for the fit.
        public var bestFraction = 0.4
        /// Skew is only fitted once the kept samples span this long.
        public var minimumSkewSpan: Int64 = 2 * nanosecondsPerSecond
        /// Skew is clamped to this (±500 ppm covers any real crystal).
        public var maximumSkew = 500e-6
        public init() {}
    }

    public let configuration: Configuration
    private(set) public var samples: [ClockSample] = []
    private(set) public var model: ClockModel?
    /// The best round trip currently in the window.
    private(set) public var bestRoundTrip: Int64 = 0

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        samples.reserveCapacity(configuration.window + 1)
    }

    public var sampleCount: Int { samples.count }

    public mutating func reset() {
        samples.removeAll(keepingCapacity: true)
        model = nil
        bestRoundTrip = 0 // else health reports show the previous session's round trip
    }

    /// Adds an exchange and refits. Returns false if the sample was discarded
    /// as impossible (negative round trip or out of order).
    @discardableResult
    public mutating func add(_ sample: ClockSample) -> Bool {
        guard sample.isRepresentable, sample.roundTrip >= 0, sample.t4 >= sample.t1, sample.t3 >= sample.t2 else { return false }
        samples.append(sample)
        if samples.count > configuration.window { samples.removeFirst(samples.count - configuration.window) }
        refit()
        return true
    }

    private mutating func refit() {
        guard let best = samples.map(\.roundTrip).min() else { return }
        bestRoundTrip = best
        // The lowest round trips, never more than `slack` above the best.
        let sorted = samples.sorted { $0.roundTrip < $1.roundTrip }
        let keep = max(1, Int(Double(sorted.count) * configuration.bestFraction))
        let (ceiling, overflow) = best.addingReportingOverflow(configuration.roundTripSlack)
        let chosen = sorted.prefix(keep).filter { $0.roundTrip <= (overflow ? Int64.max : ceiling) }

        let reference = chosen.map(\.midpoint).max()!
        let span = chosen.map(\.midpoint).max()! - chosen.map(\.midpoint).min()!
        if chosen.count >= 3 && span >= configuration.minimumSkewSpan {
            // Least squares offset = a + b·(x − reference), x in seconds.
            let xs = chosen.map { Double($0.midpoint - reference) / 1e9 }
            let ys = chosen.map { Double($0.offset) }
            let n = Double(xs.count)
            let mx = xs.reduce(0, +) / n, my = ys.reduce(0, +) / n
            var sxx = 0.0, sxy = 0.0
            for (x, y) in zip(xs, ys) { sxx += (x - mx) * (x - mx); sxy += (x - mx) * (y - my) }
            var slope = sxx > 0 ? sxy / sxx : 0 // ns per second
            let limit = configuration.maximumSkew * 1e9
            slope = min(max(slope, -limit), limit)
            let a = my - slope * mx
            model = ClockModel(reference: reference, offset: Int64(a.rounded()), skew: slope / 1e9)
        } else {
            // Too short to see skew: the median offset of the best samples,
            // keeping any skew already learnt. Each offset is re-expressed at
            // `reference` with that skew before the median is taken (they
            // were measured at different instants).
            let skew = model?.skew ?? 0
            let offsets = chosen.map { $0.offset + Int64((Double(reference - $0.midpoint) * skew).rounded()) }.sorted()
            model = ClockModel(reference: reference, offset: offsets[offsets.count / 2], skew: skew)
        }
    }
}
