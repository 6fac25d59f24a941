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

/// Estimates the leader's clock from exchanges.
///
/// Network queueing only ever adds delay, and independently in each
/// direction. So the window is cut into groups of consecutive exchanges,
/// and in each group the smallest forward delay (`t2 − t1`) and the
/// smallest backward delay (`t4 − t3`) are taken separately (after removing
/// the skew learnt so far): their half-difference is that group's offset,
/// assuming only that the two directions share a base delay. Taking the
/// minima per direction needs far fewer lucky exchanges than waiting for one
/// with both directions clean at once. Offset and skew are then a weighted
/// least-squares line through the groups (groups whose best round trip is
/// congested weigh less), iterated twice so the detrending uses the new skew.
public struct ClockEstimator: Sendable {
    public struct Configuration: Sendable {
        /// Samples kept (twenty a second after start-up: 60 s).
        public var window = 1_200
        /// Largest group of consecutive samples (at 20/s: 2 s).
        public var maximumGroup = 40
        /// A group whose best round trip is this much above the window's best weighs ¼.
        public var roundTripSlack: Int64 = 100_000
        /// Skew is only fitted once the groups span this long.
        public var minimumSkewSpan: Int64 = nanosecondsPerSecond
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
        if let last = samples.last, sample.t1 < last.t1 { return false }
        samples.append(sample)
        if samples.count > configuration.window { samples.removeFirst(samples.count - configuration.window) }
        refit()
        return true
    }

    private struct GroupPoint { var x: Double; var offset: Double; var roundTrip: Double }

    private mutating func refit() {
        guard let newest = samples.last else { return }
        bestRoundTrip = samples.lazy.map(\.roundTrip).min()!
        let reference = newest.midpoint
        var skew = model?.skew ?? 0
        // Groups of `size` consecutive samples, aligned on the newest; a few at least.
        let size = max(1, min(configuration.maximumGroup, samples.count / 6))
        var fitted: ClockModel?
        for _ in 0..<2 {
            var points: [GroupPoint] = []
            var end = samples.count
            while end > 0 {
                let start = max(0, end - size)
                if end - start < max(1, size / 2) && !points.isEmpty { break } // a stub at the old end
                points.append(groupPoint(samples[start..<end], reference: reference, skew: skew))
                end = start
            }
            let bestGroup = points.map(\.roundTrip).min()!
            let slack = Double(configuration.roundTripSlack)
            let weights = points.map { 1 / (1 + (($0.roundTrip - bestGroup) / slack) * (($0.roundTrip - bestGroup) / slack)) }
            let span = (points.map(\.x).max()! - points.map(\.x).min()!) * 1e9
            if points.count >= 3 && span >= Double(configuration.minimumSkewSpan) {
                // Weighted least squares: offset = a + b·x (x in seconds from `reference`).
                var sw = 0.0, sx = 0.0, sy = 0.0
                for (p, w) in zip(points, weights) { sw += w; sx += w * p.x; sy += w * p.offset }
                let mx = sx / sw, my = sy / sw
                var sxx = 0.0, sxy = 0.0
                for (p, w) in zip(points, weights) { sxx += w * (p.x - mx) * (p.x - mx); sxy += w * (p.x - mx) * (p.offset - my) }
                var slope = sxx > 0 ? sxy / sxx : 0 // ns per second
                let limit = configuration.maximumSkew * 1e9
                slope = min(max(slope, -limit), limit)
                skew = slope / 1e9
                fitted = ClockModel(reference: reference, offset: Int64((my - slope * mx).rounded()), skew: skew)
            } else {
                // Too short to see skew: the weighted mean offset, carried to
                // `reference` with any skew already learnt.
                var sw = 0.0, sy = 0.0
                for (p, w) in zip(points, weights) { sw += w; sy += w * (p.offset - p.x * skew * 1e9) }
                fitted = ClockModel(reference: reference, offset: Int64((sy / sw).rounded()), skew: skew)
                break
            }
        }
        model = fitted
    }

    /// The offset at a group's centre from its separate forward and backward minima.
    private func groupPoint(_ group: ArraySlice<ClockSample>, reference: LocalTime, skew: Double) -> GroupPoint {
        var centre = 0.0
        for s in group { centre += Double(s.midpoint - reference) }
        centre /= Double(group.count)
        var forward = Double.infinity, backward = Double.infinity
        for s in group {
            // forward = offset(t1) + queueing, backward = queueing − offset(t4); detrend to the centre.
            let f = Double(s.t2.nanoseconds &- s.t1.nanoseconds) - skew * (Double(s.t1 - reference) - centre)
            let b = Double(s.t4.nanoseconds &- s.t3.nanoseconds) + skew * (Double(s.t4 - reference) - centre)
            forward = min(forward, f)
            backward = min(backward, b)
        }
        return GroupPoint(x: centre / 1e9, offset: (forward - backward) / 2, roundTrip: forward + backward)
    }
}
