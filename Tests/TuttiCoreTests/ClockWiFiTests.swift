import Testing
import TuttiCore

/// One direction's delay on a simulated Wi-Fi path, ns.
enum WiFiDelay {
    /// `mean ± half`, uniform.
    case uniform(mean: Double, half: Double)
    /// `lo…hi` normally; stalls of `stall` ns start every `every` ns on average.
    case bursts(lo: Double, hi: Double, every: Double, stall: ClosedRange<Double>)
    /// `floor` plus an exponential queue of mean `mean` (a busy stream's smeared floor).
    case queued(floor: Double, mean: Double)
}

/// Exchanges over a simulated path, at the pace of the follower's schedule
/// on a jittery path (a 1 ms burst for `joinSeconds`, then every 2 ms for
/// the first 20 s, then every 5 ms), with loss.
struct WiFiRun {
    var truth: TrueLeaderClock
    var down: WiFiDelay
    var up: WiFiDelay
    var loss = 0.0
    var joinSeconds = 2.0
    /// A clock request's pace over TCP instead (as for a v3/v4 leader: 20 at 25 ms, then 50 ms).
    var overStream = false
    var rng: SplitMix64
    /// Stall intervals (shared by both directions: one radio).
    private var stalls: [(Int64, Int64)] = []
    private var stallHorizon: Int64 = 0

    init(truth: TrueLeaderClock, down: WiFiDelay, up: WiFiDelay, loss: Double = 0, seed: UInt64) {
        self.truth = truth; self.down = down; self.up = up; self.loss = loss
        rng = SplitMix64(seed: seed)
    }

    private mutating func stallEnd(at t: Int64, every: Double, stall: ClosedRange<Double>) -> Int64? {
        while stallHorizon < t + nanosecondsPerSecond {
            let start = stallHorizon + Int64(rng.exponential(mean: every))
            let end = start + Int64(stall.lowerBound + rng.unit() * (stall.upperBound - stall.lowerBound))
            stalls.append((start, end)); stallHorizon = end
        }
        return stalls.first { $0.0 <= t && t < $0.1 }?.1
    }

    /// When a packet sent at `t` arrives.
    mutating func arrival(sent t: Int64, over d: WiFiDelay) -> Int64 {
        switch d {
        case .uniform(let mean, let half):
            return t + Int64(max(0, mean + (rng.unit() * 2 - 1) * half))
        case .bursts(let lo, let hi, let every, let stall):
            let base = Int64(lo + rng.unit() * (hi - lo))
            return (stallEnd(at: t, every: every, stall: stall) ?? t) + base
        case .queued(let floor, let mean):
            return t + Int64(floor + rng.exponential(mean: mean))
        }
    }

    /// Feeds `seconds` of exchanges into `estimator`, calling `observe` after each
    /// with the local time the reply came (and the estimator).
    mutating func run(_ estimator: inout ClockEstimator, seconds: Double, from start: Int64 = 1_000 * nanosecondsPerSecond,
                      observe: (Int64, ClockEstimator) -> Void = { _, _ in }) {
        var t1 = start
        var replies: [ClockSample] = []
        var sent = 0
        let end = start + Int64(seconds * 1e9)
        while t1 < end {
            let lostOut = rng.unit() < loss, lostBack = rng.unit() < loss
            let atLeader = arrival(sent: t1, over: up)
            let t2 = truth.leader(atLocal: atLeader)
            let t4 = arrival(sent: atLeader + 20_000, over: down)
            if !lostOut && !lostBack {
                replies.append(ClockSample(t1: LocalTime(nanoseconds: t1), t2: LeaderTime(nanoseconds: t2),
                                           t3: LeaderTime(nanoseconds: t2 + 20_000), t4: LocalTime(nanoseconds: t4)))
            }
            sent += 1
            t1 += overStream ? (sent <= 20 ? 25 : 50) * nanosecondsPerMillisecond
                : t1 - start < Int64(joinSeconds * 1e9) ? nanosecondsPerMillisecond
                : t1 - start < 20 * nanosecondsPerSecond ? 2 * nanosecondsPerMillisecond : 5 * nanosecondsPerMillisecond
            // Deliver every reply that has arrived by now, in arrival order.
            replies.sort { $0.t4 < $1.t4 }
            while let first = replies.first, first.t4.nanoseconds <= t1 {
                estimator.add(first, overStream: overStream)
                observe(first.t4.nanoseconds, estimator)
                replies.removeFirst()
            }
        }
    }
}

@Suite("Clock estimator on Wi-Fi") struct ClockWiFiTests {
    static func error(_ e: ClockEstimator, at t: Int64, _ truth: TrueLeaderClock) -> Int64 {
        e.model!.leaderTime(at: LocalTime(nanoseconds: t)).nanoseconds - truth.leader(atLocal: t)
    }

    @Test("20 ± 15 ms each way: ready within 2 s and within 80 µs from then; from 10 s on within 60 µs, median 10 µs", arguments: [1, 2, 3] as [UInt64])
    func jitter(seed: UInt64) {
        let truth = TrueLeaderClock(offset: 3_000_000_000, skew: seed % 2 == 0 ? 50e-6 : -50e-6)
        var run = WiFiRun(truth: truth, down: .uniform(mean: 20e6, half: 15e6), up: .uniform(mean: 20e6, half: 15e6), seed: seed)
        var e = ClockEstimator()
        var readyAt: Int64?
        var errors: [Int64] = []
        var early: Int64 = 0
        let start: Int64 = 1_000 * nanosecondsPerSecond
        run.run(&e, seconds: 40, from: start) { t, e in
            if e.ready && readyAt == nil { readyAt = t }
            guard readyAt != nil else { return }
            let error = abs(Self.error(e, at: t, truth))
            if t - start >= 10 * nanosecondsPerSecond { errors.append(error) } else { early = max(early, error) }
        }
        errors.sort()
        let ready = Double(readyAt! - start) / 1e9
        print("20±15 ms seed \(seed): ready after \(ready) s, worst before 10 s \(early / 1000) µs; from 10 s |error| median \(errors[errors.count / 2] / 1000) µs, " +
              "p99 \(errors[errors.count * 99 / 100] / 1000) µs, max \(errors.last! / 1000) µs, uncertainty \(e.uncertainty! / 1000) µs, " +
              "skew error \((e.model!.skew - truth.skew) * 1e6) ppm")
        #expect(ready <= 2)
        #expect(early <= 80_000)
        #expect(errors.last! <= 60_000)
        #expect(errors[errors.count / 2] <= 10_000)
    }

    /// Clock exchanges over a loaded machine's TCP stream (a v3 speaker):
    /// 20–50 a second, each behind a queue of 1–2 ms on average. Few samples
    /// and a smeared floor: the skew is fitted from 1 s of them, and must not
    /// carry the offset away.
    @Test("20–50 exchanges a second over a busy stream: from 3 s on within 150 µs", arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func sparseAndSmeared(seed: UInt64) {
        let truth = TrueLeaderClock(offset: 1_500_000_000, skew: seed % 2 == 0 ? 30e-6 : -30e-6)
        var run = WiFiRun(truth: truth, down: .queued(floor: 100_000, mean: 2e6), up: .queued(floor: 100_000, mean: 1e6), seed: seed)
        run.overStream = true
        var e = ClockEstimator()
        var worst: Int64 = 0, worstAt: Int64 = 0
        let start: Int64 = 1_000 * nanosecondsPerSecond
        run.run(&e, seconds: 20, from: start) { t, e in
            guard e.ready, t - start >= 3 * nanosecondsPerSecond else { return }
            let error = abs(Self.error(e, at: t, truth))
            if error > worst { worst = error; worstAt = t - start }
        }
        print("busy stream seed \(seed): worst from 3 s \(worst / 1000) µs at \(Double(worstAt) / 1e9) s, uncertainty \(e.uncertainty! / 1000) µs, " +
              "skew error \((e.model!.skew - truth.skew) * 1e6) ppm")
        #expect(e.ready)
        #expect(worst <= 150_000)
    }
}

/// A link that queues in order (Wi-Fi: each end sends from a FIFO): every
/// packet leaves after the ones sent before it in its direction, the audio
/// stream's chunks (50 a second, leader to follower) included. Requests go
/// at the pace `ClockExchangeSchedule` asks for, seeing the estimator as a
/// follower does.
struct QueuedLinkRun {
    var truth: TrueLeaderClock
    var halfSpread: Double
    var mean: Double
    var rng: SplitMix64
    var loss = 0.01

    init(truth: TrueLeaderClock, mean: Double = 20e6, halfSpread: Double = 15e6, seed: UInt64) {
        self.truth = truth; self.mean = mean; self.halfSpread = halfSpread
        rng = SplitMix64(seed: seed)
    }

    private mutating func draw() -> Int64 { Int64(max(0, mean + (rng.unit() * 2 - 1) * halfSpread)) }

    /// Runs `seconds`; `observe(local time, estimator, interval asked)` after each sample.
    mutating func run(_ estimator: inout ClockEstimator, seconds: Double, from start: Int64 = 1_000 * nanosecondsPerSecond,
                      observe: (Int64, ClockEstimator) -> Void) -> [Int64] {
        var schedule = ClockExchangeSchedule(datagramsOffered: true, start: start)
        var upLast: Int64 = 0, downLast: Int64 = 0
        var nextChunk = start
        var pending: [ClockSample] = []
        var sentTimes: [Int64] = []
        var now = start
        let end = start + Int64(seconds * 1e9)
        while now < end {
            // Chunks sent down before now queue ahead of any reply sent later.
            let (actions, next) = schedule.poll(now: now)
            for case .request(.datagram) in actions {
                sentTimes.append(now)
                let atLeader = max(now + draw(), upLast + 5_000); upLast = atLeader
                let t2 = truth.leader(atLocal: atLeader)
                let replySent = atLeader + 20_000
                while nextChunk <= replySent { downLast = max(nextChunk + draw(), downLast + 5_000); nextChunk += 20 * nanosecondsPerMillisecond }
                let t4 = max(replySent + draw(), downLast + 5_000); downLast = t4
                if rng.unit() >= loss {
                    pending.append(ClockSample(t1: LocalTime(nanoseconds: now), t2: LeaderTime(nanoseconds: t2),
                                               t3: LeaderTime(nanoseconds: t2 + 20_000), t4: LocalTime(nanoseconds: t4)))
                }
            }
            let step = min(next, now + 100 * nanosecondsPerMillisecond)
            now = max(step, now + 100_000)
            pending.sort { $0.t4 < $1.t4 }
            while let first = pending.first, first.t4.nanoseconds <= now {
                estimator.add(first, overStream: false)
                pending.removeFirst()
                observe(first.t4.nanoseconds, estimator)
                schedule.clockPath(uncertainty: estimator.uncertainty, queueing: estimator.queueing, inOrderExcess: estimator.inOrderExcess)
                if estimator.ready { schedule.estimatorReady(at: first.t4.nanoseconds) }
            }
        }
        return sentTimes
    }
}

@Suite("Clock estimator on a link that queues in order") struct ClockQueuedLinkTests {
    @Test("20 ± 15 ms in order, a stream beside it: ready within 3 s to about 1 ms, converging, requests paced by the queue",
          arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func queuedInOrder(seed: UInt64) {
        let truth = TrueLeaderClock(offset: 3_000_000_000, skew: seed % 2 == 0 ? 60e-6 : -60e-6)
        var run = QueuedLinkRun(truth: truth, seed: seed)
        var e = ClockEstimator()
        var readyAt: Int64?, atReady: Int64 = 0, worst: Int64 = 0
        var late: [Int64] = []
        var settlingAt20 = true
        let start: Int64 = 1_000 * nanosecondsPerSecond
        let sent = run.run(&e, seconds: 40, from: start) { t, e in
            if e.ready && readyAt == nil { readyAt = t; atReady = abs(ClockWiFiTests.error(e, at: t, truth)) }
            guard readyAt != nil else { return }
            let error = abs(ClockWiFiTests.error(e, at: t, truth))
            worst = max(worst, error)
            if t - start >= 20 * nanosecondsPerSecond { late.append(error) }
            if t - start < 20 * nanosecondsPerSecond { settlingAt20 = e.settling }
        }
        late.sort()
        let ready = Double((readyAt ?? .max) - start) / 1e9
        let requestsAfter5s = sent.filter { $0 - start >= 5 * nanosecondsPerSecond && $0 - start < 15 * nanosecondsPerSecond }.count
        print("queued 20±15 ms seed \(seed): ready after \(ready) s, \(atReady / 1000) µs off then, worst since \(worst / 1000) µs; " +
              "from 20 s median \(late[late.count / 2] / 1000) µs, max \(late.last! / 1000) µs; settling at 20 s \(settlingAt20); " +
              "\(requestsAfter5s / 10) requests a second from 5 s, in order for \(e.samplesInOrder) samples, median excess \((e.medianExcess ?? -1) / 1000) µs")
        // Heard within 2 s, in step to a millisecond or two (it waited 35 s for 45 µs before). What the
        // samples hold at 1.5–1.8 s is that much: starting at 1.8 s and 1 ms took up to 2.5 s, and was
        // 43–838 µs off then on these seeds; at 1.5 s and 1.25 ms, 69–1,594 µs (docs/protocol.md).
        #expect(ready <= 2.0)
        #expect(atReady <= 2_000_000)
        #expect(worst <= 2_000_000)
        // Then converging as the queue lets the floor through now and then.
        #expect(late[late.count / 2] <= 400_000 && late.last! <= 1_000_000)
        // Paced by the queue: at most one every 5 ms (it was one every 2 ms, and each waited behind the last).
        #expect(e.inOrderExcess != nil)
        #expect(requestsAfter5s <= 2_000)
    }

    @Test("Over a path that overtakes (20 ± 15 ms, independent), the pace is the usual one")
    func independentPathKeepsThePace() {
        let truth = TrueLeaderClock(offset: 1_000_000_000, skew: 20e-6)
        var run = WiFiRun(truth: truth, down: .uniform(mean: 20e6, half: 15e6), up: .uniform(mean: 20e6, half: 15e6), seed: 9)
        var e = ClockEstimator()
        run.run(&e, seconds: 5)
        #expect(e.inOrderExcess == nil)
        #expect(e.samplesInOrder < 100)
    }
}
