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

/// Estimates the leader's clock from exchanges, by their lower envelopes.
///
/// Queueing only ever adds delay, independently in each direction. Seen
/// from the follower, every exchange gives two bounds on `θ(x) = leader −
/// local` at its local instant `x`: `t2 − t1 ≥ θ(t1) + d` (forward) and
/// `t3 − t4 ≤ θ(t4) − d` (backward), `d` the base delay of the path. The
/// forward points' lower envelope is therefore `θ + d`, the backward points'
/// upper envelope `θ − d`; their mean is `θ`, assuming only that the two
/// directions share a base delay. Each envelope is the support line of the
/// convex hull of its points at the window's mean instant (the solution of
/// the linear programme "the line below every point, as high as possible
/// on average"); the two slopes are averaged into the skew, and with that
/// common slope each envelope is pinned by its lowest (highest) point.
///
/// Why envelopes and not a least-squares fit of the best exchanges: on
/// Wi-Fi (20 ± 15 ms each way, bursts of 300 ms) a whole exchange with both
/// directions clean is rare, while a clean forward trip and a clean return
/// each turn up often; the envelope uses each the moment it turns up, and a
/// delayed sample lies above the envelope and changes nothing at all: during
/// a burst the model holds and coasts on its skew by construction.
///
/// Confidence: near the floor the points thin out to a density `ρ`; the
/// lowest point then sits about `1/ρ` above the true floor. `uncertainty`
/// estimates that as the k-th smallest residual over k, per direction,
/// averaged. `ready` turns true once it is below `readyUncertainty` (or
/// below `lateReadyUncertainty` once the samples span `lateReadyAfter`, or
/// below `startUncertainty`, about a millisecond, once they span
/// `startAfter`): a follower starts playing only then, and stays true until
/// `reset`. Between rooms a millisecond is inaudible (a person walking from
/// one to the next hears more than that from the distance alone), and a
/// speaker that waits for microseconds on a link that queues waits for
/// tens of seconds: it starts, `settling`, and the output follows the model
/// by rate steering as better samples come.
///
/// A link that queues in order (Wi-Fi: each end sends from a FIFO) makes
/// samples close in time share their delay: a packet waits behind the ones
/// before it. There the floor turns up once the queue drains, whatever the
/// pace, and more samples add nothing but load. `inOrderExcess` says when
/// the samples look like that (no packet has overtaken another for
/// `inOrderRun` samples, while the path queues milliseconds): the typical
/// delay above the floor, which sets the pace (`ClockExchangeSchedule`).
///
/// The skew fitted from a young or smeared window is pulled towards 0 by its
/// own uncertainty, the disagreement of the two directions' slopes (a 2 s
/// window whose floor is 1 ms rough says nothing about ppm, and a fitted
/// ±500 ppm carried the model off by milliseconds): weighed against
/// `skewPrior`, which is how far real crystals are from each other.
public struct ClockEstimator: Sendable {
    public struct Configuration: Sendable {
        /// Most samples kept (at 200 a second: 60 s).
        public var window = 12_288
        /// Samples older than this (by `t1`, from the newest) are dropped.
        public var windowSpan: Int64 = 60 * nanosecondsPerSecond
        /// Skew is only fitted once the samples span this long; before that
        /// the offset is fitted with the skew held (0 at first).
        public var minimumSkewSpan: Int64 = nanosecondsPerSecond
        /// Skew is clamped to this (±500 ppm covers any real crystal).
        public var maximumSkew = 500e-6
        /// `ready` needs at least this many samples …
        public var minimumSamples = 8
        /// … and an uncertainty at most this. (Simulated 20 ± 15 ms each
        /// way at the join pace: 45 µs comes after 0.9–1.5 s with the model
        /// then within 50 µs; at 60 µs it was 0.6 s and up to 150 µs off.
        /// Through the bench's relay on a loaded machine the floor is
        /// sparser: 30 µs took up to 7 s there.)
        public var readyUncertainty: Int64 = 45_000
        /// A path whose floor is smeared (the bench's relay on a loaded
        /// machine: u was 50–70 µs after 3.5 s) would keep a room silent
        /// for seconds for tens of µs: after `lateReadyAfter` of samples,
        /// this uncertainty is good enough to start, and the model keeps
        /// converging while it plays.
        public var lateReadyAfter: Int64 = 1_500 * nanosecondsPerMillisecond
        public var lateReadyUncertainty: Int64 = 75_000
        /// On a link that queues (20 ± 15 ms, in order), the floor is found
        /// in tens of seconds: after this much, a model good to about
        /// `startUncertainty` plays, and converges while it does. (Simulated
        /// there: ready after 1.5–1.85 s, so heard within 2 s; at 1.8 s and
        /// 1 ms it was 1.9–2.5 s. The error then is a few hundred µs to 1.6 ms
        /// either way, against up to 0.8 ms at 1.8 s: what the samples hold,
        /// whatever the thresholds; see docs/protocol.md.)
        public var startAfter: Int64 = 1_500 * nanosecondsPerMillisecond
        public var startUncertainty: Int64 = 1_250_000
        /// How far apart real crystals are (the skew fit is weighed against it).
        public var skewPrior = 100e-6
        /// Samples with no overtaking before the path counts as in order.
        public var inOrderRun = 100
        /// … and the median delay above the floor at least this.
        public var inOrderMinimumExcess: Int64 = 1_000_000
        /// The k of the residual that estimates how far the envelope is above the floor.
        public var residualRank = 9
        /// A sample that cannot move an envelope refits only once this long
        /// (or 20 samples) has passed since the last refit. On a quiet path
        /// (10 samples a second) every sample used to refit, over a window
        /// still holding the join burst's thousands: a third of the clock's
        /// CPU on a speaker. The model coasts on its skew meanwhile (1 ppm off
        /// is 1 µs a second); the join and jittery paces reach 20 samples sooner.
        public var refitInterval: Int64 = nanosecondsPerSecond
        public init() {}
    }

    public let configuration: Configuration
    /// The window, in order of `t1`: `stored[head...]`. Old samples are
    /// dropped by moving `head` and the array is compacted only once half of
    /// it is dropped ones (a `removeFirst` per sample moved the whole window,
    /// 12,288 samples at 200 a second, every time).
    private var stored: [ClockSample] = []
    private var head = 0
    public var samples: ArraySlice<ClockSample> { stored[head...] }
    private(set) public var model: ClockModel?
    /// The best round trip currently in the window.
    private(set) public var bestRoundTrip: Int64 = 0
    /// How far off the offset may be, ns (see the type's comment); nil before a sample.
    private(set) public var uncertainty: Int64?
    /// The mean one-way delay above the envelopes over the newer half of the
    /// window, ns: how much the path queues. A few µs on a wire, milliseconds
    /// on Wi-Fi. (The uncertainty falls with the number of samples however
    /// jittery the path; this does not.)
    private(set) public var queueing: Int64?
    /// Good enough to play by (see the type's comment).
    private(set) public var ready = false
    /// Ready, and not yet as sure as `readyUncertainty`: the output converges by steering.
    public var settling: Bool { ready && (uncertainty ?? .max) > configuration.readyUncertainty }
    /// The median one-way delay above the envelopes, ns (newer half of the window).
    private(set) public var medianExcess: Int64?
    /// Datagram samples since one overtook another (`add(_:overStream:)`).
    private(set) public var samplesInOrder = 0
    /// On a path that queues in order (see the type's comment), its median
    /// delay above the floor, ns; nil otherwise.
    public var inOrderExcess: Int64? {
        guard samplesInOrder >= configuration.inOrderRun, let m = medianExcess, m >= configuration.inOrderMinimumExcess else { return nil }
        return m
    }

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        stored.reserveCapacity(2 * configuration.window + 1)
    }

    public var sampleCount: Int { stored.count - head }

    public mutating func reset() {
        stored.removeAll(keepingCapacity: true)
        head = 0
        model = nil
        lastRefit = nil
        addedSinceRefit = 0
        medianExcess = nil
        samplesInOrder = 0
        lastDatagram = nil
        bestRoundTrip = 0 // else health reports show the previous session's round trip
        uncertainty = nil
        queueing = nil
        ready = false
    }

    /// Adds an exchange and refits (see `add(_:)`); `overStream`: it went
    /// over the TCP stream, behind the audio, and says nothing about the
    /// order datagrams keep.
    @discardableResult
    public mutating func add(_ sample: ClockSample, overStream: Bool) -> Bool {
        guard add(sample) else { return false }
        if !overStream {
            // Replies come in arrival order: one sent earlier than the last
            // one's was overtaken on the way back; one that reached the leader
            // earlier than the last one's overtook it on the way there.
            if let last = lastDatagram {
                samplesInOrder = sample.t1 < last.t1 || sample.t2 < last.t2 ? 0 : samplesInOrder + 1
            }
            lastDatagram = sample
        }
        return true
    }

    private var lastDatagram: ClockSample?

    /// Adds an exchange and refits. Returns false if the sample was discarded
    /// as impossible (negative round trip, received before sent, overflowing)
    /// or older than the window. Replies may arrive out of order (UDP): a
    /// sample is put in its place by `t1`.
    @discardableResult
    public mutating func add(_ sample: ClockSample) -> Bool {
        guard sample.isRepresentable, sample.roundTrip >= 0, sample.t4 >= sample.t1, sample.t3 >= sample.t2 else { return false }
        if head < stored.count, let last = stored.last, sample.t1 < last.t1 {
            guard last.t1 - sample.t1 < configuration.windowSpan else { return false }
            var i = stored.count - 1
            while i > head && stored[i - 1].t1 > sample.t1 { i -= 1 }
            stored.insert(sample, at: i)
        } else {
            stored.append(sample)
        }
        let newest = stored[stored.count - 1].t1
        var drop = head + max(0, sampleCount - configuration.window)
        while drop < stored.count - 1 && newest - stored[drop].t1 > configuration.windowSpan { drop += 1 }
        head = drop
        if head >= configuration.window || (head > 64 && 2 * head >= stored.count) {
            stored.removeFirst(head)
            head = 0
        }
        // Refitting costs a pass over the window: do it when the sample
        // could move an envelope, and every 20 samples or `refitInterval`
        // anyway, as the window slides. A delayed sample changes nothing (see above).
        addedSinceRefit += 1
        bestRoundTrip = min(bestRoundTrip, sample.roundTrip)
        if let m = model, let last = lastRefit, addedSinceRefit < 20, sample.t1 - last < configuration.refitInterval {
            let predicted = m.leaderTime(at: sample.t1).nanoseconds &- sample.t1.nanoseconds
            let forwardDelay = Double(sample.t2.nanoseconds &- sample.t1.nanoseconds) - Double(predicted)
            let backDelay = Double(predicted) - Double(sample.t3.nanoseconds &- sample.t4.nanoseconds)
            if forwardDelay >= envelopeFloor && backDelay >= envelopeFloor { return true }
        }
        refit()
        return true
    }

    private struct Point { var x: Double; var y: Double }
    private var addedSinceRefit = 0
    private var lastRefit: LocalTime?
    /// The base delay `d` at the envelopes (both directions share it).
    private var envelopeFloor = 0.0

    /// The refit's working arrays, kept so that a refit allocates nothing
    /// once they have grown to the window.
    private var forward: [Point] = [], backward: [Point] = [], hull: [Point] = [], smallest: [Double] = []

    private mutating func refit() {
        guard head < stored.count, let newest = stored.last else { return }
        let count = sampleCount
        addedSinceRefit = 0
        lastRefit = newest.t1
        var best = Int64.max
        for s in samples { best = min(best, s.roundTrip) }
        bestRoundTrip = best
        let reference = newest.midpoint
        // Offsets relative to the newest sample's, so the doubles stay small.
        let base = newest.offset
        forward.removeAll(keepingCapacity: true); backward.removeAll(keepingCapacity: true)
        for s in samples {
            forward.append(Point(x: Double(s.t1 - reference), y: Double((s.t2.nanoseconds &- s.t1.nanoseconds) &- base)))
            // Negated, so that both envelopes are lower ones.
            backward.append(Point(x: Double(s.t4 - reference), y: -Double((s.t3.nanoseconds &- s.t4.nanoseconds) &- base)))
        }
        // t4 = t1 + round trip: nearly in order already.
        Self.insertionSort(&backward)
        var skew = model?.skew ?? 0
        let span = newest.t1 - stored[head].t1
        // With the common slope, each envelope rests on its lowest point in
        // the newer half of the window: near now, so an error in the skew
        // is carried over half the window at most, yet over enough points.
        // (x is taken from t1 forward, t4 backward; the newest exchange is always in.)
        let from = -Double(span) / 2 - Double(newest.t4 - newest.t1)
        let k = min(configuration.residualRank, max(1, count / 2))
        // Fitted as soon as the window spans minimumSkewSpan, even on a
        // jittery path where the chord is still rough: a crystal 50 ppm off
        // held at 0 costs more (50 µs a second of window) than a rough fit,
        // which the offset, pinned near now, mostly absorbs. (Waiting for
        // the uncertainty to allow a 20 ppm fit kept 100–200 µs errors for
        // the first 5–10 s on 20 ± 15 ms.)
        if count >= 3 && span >= configuration.minimumSkewSpan {
            let sf = Self.hullSlope(forward, hull: &hull)
            let sb = -Self.hullSlope(backward, hull: &hull) // the backward envelope was negated
            let fitted = (sf + sb) / 2
            // Weighed against the prior by how far the two directions'
            // slopes disagree: each is a measure of the same skew, so their
            // difference is what the window can tell (0 on a clean path;
            // hundreds of ppm on a 2 s window of a queued link).
            let sigma = abs(sf - sb) / 2
            let prior = configuration.skewPrior
            let weight = prior > 0 ? prior * prior / (prior * prior + sigma * sigma) : 1
            skew = min(max(fitted * (weight.isFinite ? weight : 0), -configuration.maximumSkew), configuration.maximumSkew)
        }
        let (af, ab, mean) = envelopes(skew: skew, from: from, k: k)
        // θ(reference) = (lower forward envelope + upper backward envelope) / 2.
        let theta = (af - ab) / 2
        guard theta.isFinite, skew.isFinite, abs(theta) < 9e18 else { return } // absurd timestamps: keep the last model
        model = ClockModel(reference: reference, offset: base &+ Int64(theta.rounded()), skew: skew)
        envelopeFloor = (af + ab) / 2
        let u = mean.isFinite ? Int64(min(max(mean.rounded(), 0), 9e18)) : Int64.max
        uncertainty = u
        var excess = 0.0, n = 0
        smallest.removeAll(keepingCapacity: true)
        for p in forward where p.x >= from { let e = p.y - skew * p.x - af; excess += e; n += 1; smallest.append(e) }
        for p in backward where p.x >= from { let e = p.y + skew * p.x - ab; excess += e; n += 1; smallest.append(e) }
        let q = excess / Double(max(1, n))
        queueing = q.isFinite ? Int64(min(max(q.rounded(), 0), 9e18)) : Int64.max
        let median = Self.select(&smallest, rank: smallest.count / 2)
        medianExcess = median.isFinite ? Int64(min(max(median.rounded(), 0), 9e18)) : nil
        if !ready && count >= configuration.minimumSamples
            && (u <= configuration.readyUncertainty || (span >= configuration.lateReadyAfter && u <= configuration.lateReadyUncertainty)
                || (span >= configuration.startAfter && u <= configuration.startUncertainty)) {
            ready = true
        }
    }

    /// Each envelope's lowest point from `from` on, with slope `skew`, and
    /// how far it may be above the floor (see the type's comment), ns.
    private mutating func envelopes(skew: Double, from: Double, k: Int) -> (forward: Double, backward: Double, uncertainty: Double) {
        var af = Double.infinity, ab = Double.infinity
        for p in forward where p.x >= from { af = min(af, p.y - skew * p.x) }
        for p in backward where p.x >= from { ab = min(ab, p.y + skew * p.x) }
        let ef = Self.kthSmallest(forward.lazy.filter { $0.x >= from }.map { $0.y - skew * $0.x - af }, k, scratch: &smallest) / Double(max(1, k - 1))
        let eb = Self.kthSmallest(backward.lazy.filter { $0.x >= from }.map { $0.y + skew * $0.x - ab }, k, scratch: &smallest) / Double(max(1, k - 1))
        return (af, ab, (ef + eb) / 2)
    }

    /// The mean slope of the points' lower convex hull over the middle half
    /// of their span: the chord of the envelope between a quarter and three
    /// quarters of the way. (The LP's own answer, the one hull edge over the
    /// mean, rests on two points and swings when the samples are unevenly
    /// dense, as after the join burst.)
    private static func hullSlope(_ points: [Point], hull: inout [Point]) -> Double {
        hull.removeAll(keepingCapacity: true)
        for p in points {
            while hull.count >= 2 {
                let o = hull[hull.count - 2], a = hull[hull.count - 1]
                // Keep only left turns: a lies strictly below the chord o → p.
                if (a.x - o.x) * (p.y - o.y) - (a.y - o.y) * (p.x - o.x) <= 0 { hull.removeLast() } else { break }
            }
            hull.append(p)
        }
        guard hull.count >= 2, let first = hull.first, let last = hull.last, last.x > first.x else { return 0 }
        let q1 = first.x + (last.x - first.x) / 4, q3 = first.x + 3 * (last.x - first.x) / 4
        func envelope(at x: Double) -> Double {
            var j = 0
            while j < hull.count - 2 && hull[j + 1].x < x { j += 1 }
            let a = hull[j], b = hull[j + 1]
            return b.x > a.x ? a.y + (b.y - a.y) * (x - a.x) / (b.x - a.x) : min(a.y, b.y)
        }
        return (envelope(at: q3) - envelope(at: q1)) / (q3 - q1)
    }

    /// The value of the given rank (0-based) in `values`, which it reorders
    /// (Hoare's selection: linear on average); infinity when empty.
    private static func select(_ values: inout [Double], rank: Int) -> Double {
        guard !values.isEmpty else { return .infinity }
        var lo = 0, hi = values.count - 1
        let k = min(max(rank, 0), hi)
        while lo < hi {
            let pivot = values[(lo + hi) / 2]
            var i = lo, j = hi
            while i <= j {
                while values[i] < pivot { i += 1 }
                while values[j] > pivot { j -= 1 }
                if i <= j { values.swapAt(i, j); i += 1; j -= 1 }
            }
            if k <= j { hi = j } else if k >= i { lo = i } else { break }
        }
        return values[k]
    }

    private static func insertionSort(_ points: inout [Point]) {
        guard points.count > 1 else { return }
        for i in 1..<points.count {
            let p = points[i]
            var j = i
            while j > 0 && points[j - 1].x > p.x { points[j] = points[j - 1]; j -= 1 }
            points[j] = p
        }
    }

    /// The k-th smallest value (1-based), in one pass; infinity when there are fewer than k.
    private static func kthSmallest<S: Sequence<Double>>(_ values: S, _ k: Int, scratch smallest: inout [Double]) -> Double {
        smallest.removeAll(keepingCapacity: true)
        for v in values {
            if smallest.count < k {
                smallest.append(v); smallest.sort()
            } else if v < smallest[k - 1] {
                smallest[k - 1] = v
                var i = k - 1
                while i > 0 && smallest[i - 1] > smallest[i] { smallest.swapAt(i, i - 1); i -= 1 }
            }
        }
        return smallest.count < k ? .infinity : max(0, smallest[k - 1])
    }
}
