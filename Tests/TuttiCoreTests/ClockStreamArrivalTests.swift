import Testing
import TuttiCore

/// The audio stream's arrivals (v8 `sendTime`) as one-way evidence from
/// leader to speaker, on injected time.
@Suite("Clock estimation: the stream's arrivals")
struct ClockStreamArrivalTests {
    static let truth = TrueLeaderClock(offset: 1_000_000_000, skew: 0)
    static let ms = nanosecondsPerMillisecond

    /// Datagram exchanges every 20 ms for 4 s, in order, 1 ms to the leader
    /// and `back` ns back, plus `queue` × (0 … 4 ms) cycling (each floor
    /// comes every fifth exchange); with `streamBack`, a stream arrival
    /// every 10 ms between them that took that long. Returns the estimator
    /// after the last one.
    static func run(back: Int64, queue: Int64 = 1, streamBack: Int64?, configuration: ClockEstimator.Configuration = .init()) -> ClockEstimator {
        var e = ClockEstimator(configuration: configuration)
        for i in 0..<200 {
            let t1 = Int64(i) * 20 * ms
            let wait = queue * Int64(i % 5) * ms
            let atLeader = truth.leader(atLocal: t1 + ms + wait)
            let added = e.add(ClockSample(t1: LocalTime(nanoseconds: t1), t2: LeaderTime(nanoseconds: atLeader), t3: LeaderTime(nanoseconds: atLeader),
                                          t4: LocalTime(nanoseconds: t1 + ms + wait + back + wait)), overStream: false)
            #expect(added)
            guard let streamBack else { continue }
            for k in [5, 15] as [Int64] where i < 199 {
                let sent = t1 + k * ms
                let kept = e.addStreamArrival(.init(sent: LeaderTime(nanoseconds: truth.leader(atLocal: sent)), received: LocalTime(nanoseconds: sent + streamBack)))
                #expect(kept)
            }
        }
        return e
    }

    static func error(_ e: ClockEstimator, at local: Int64 = 4 * nanosecondsPerSecond) -> Int64 {
        e.model!.leaderTime(at: LocalTime(nanoseconds: local)).nanoseconds - truth.leader(atLocal: local)
    }

    @Test("On a link that queues in order, stream arrivals faster than the replies tighten the backward bound")
    func tightens() {
        // 1 ms there, 5 ms back at best: the replies alone put the leader 2 ms early.
        let replies = Self.run(back: 5 * Self.ms, streamBack: nil)
        #expect(replies.inOrderExcess != nil)
        #expect(Self.error(replies) == -2 * Self.ms)
        // The stream gets there in 1 ms: the backward envelope rests on it.
        let stream = Self.run(back: 5 * Self.ms, streamBack: Self.ms)
        #expect(abs(Self.error(stream)) <= 1)
        #expect(stream.streamArrivalCount == 398)
        #expect(stream.sampleCount == 200)
    }

    @Test("Where datagrams do not queue (a wire), the stream's arrivals are kept but not used")
    func notOnAWire() {
        let replies = Self.run(back: 5 * Self.ms, queue: 0, streamBack: nil)
        let stream = Self.run(back: 5 * Self.ms, queue: 0, streamBack: Self.ms)
        #expect(stream.inOrderExcess == nil)
        #expect(stream.streamArrivalCount == 398)
        #expect(stream.model == replies.model)
        #expect(Self.error(stream) == -2 * Self.ms)
    }

    @Test("A delayed stream arrival changes nothing, and never counts as a reply's queueing")
    func delayedChangesNothing() {
        var c = ClockEstimator.Configuration()
        c.refitInterval = 0 // a refit at every addition, so both runs end on a fit of the same window
        let replies = Self.run(back: Self.ms, streamBack: nil, configuration: c)
        // 40 ms late, as a write behind a queue: above the envelope, no evidence.
        let late = Self.run(back: Self.ms, streamBack: 40 * Self.ms, configuration: c)
        #expect(late.inOrderExcess != nil)
        #expect(late.model == replies.model)
        #expect(late.uncertainty == replies.uncertainty)
        #expect(late.queueing == replies.queueing)
        #expect(late.medianExcess == replies.medianExcess)
        #expect(late.ready == replies.ready)
        #expect(abs(Self.error(late)) <= 1)
    }

    @Test("Arrivals out of order, overflowing or older than the window are refused; the window slides; reset clears")
    func bookkeeping() {
        var e = ClockEstimator()
        let s = nanosecondsPerSecond
        func arrival(_ t: Int64) -> ClockEstimator.StreamArrival {
            .init(sent: LeaderTime(nanoseconds: t + s), received: LocalTime(nanoseconds: t))
        }
        let first = e.addStreamArrival(arrival(10 * s))
        let earlier = e.addStreamArrival(arrival(9 * s))
        let overflowing = e.addStreamArrival(.init(sent: LeaderTime(nanoseconds: .min), received: LocalTime(nanoseconds: 11 * s)))
        #expect(first && !earlier && !overflowing, "one received before the last one, or overflowing, is refused")
        #expect(e.streamArrivalCount == 1)
        e.add(ClockSample(t1: LocalTime(nanoseconds: 100 * s), t2: LeaderTime(nanoseconds: 101 * s), t3: LeaderTime(nanoseconds: 101 * s),
                          t4: LocalTime(nanoseconds: 100 * s + 1_000)))
        let ancient = e.addStreamArrival(arrival(30 * s))
        let recent = e.addStreamArrival(arrival(99 * s))
        #expect(!ancient && recent, "one older than the window before the newest exchange is refused")
        #expect(e.streamArrivalCount == 1, "the arrival at 10 s slid out of the window")
        e.reset()
        #expect(e.streamArrivalCount == 0)
        #expect(e.model == nil)
    }
}
