import Testing
import TuttiCore

private let ms = nanosecondsPerMillisecond

@Suite("Clock exchanges: schedule, datagrams, arrival margin")
struct ClockExchangeTests {
    /// Runs the schedule from 0 to `until` (1 ms steps), noting when each action came.
    static func drive(_ s: inout ClockExchangeSchedule, until: Int64, step: Int64 = ms,
                      each: (Int64, inout ClockExchangeSchedule) -> Void = { _, _ in }) -> [(Int64, ClockExchangeSchedule.Action)] {
        var out: [(Int64, ClockExchangeSchedule.Action)] = []
        var t: Int64 = 0
        while t < until {
            each(t, &s)
            for a in s.poll(now: t).actions { out.append((t, a)) }
            t += step
        }
        return out
    }

    @Test("Datagrams: a 2 ms burst for 2 s, then 5 ms while jittery and 20 ms once quiet; no stream requests while replies come")
    func datagramPace() {
        var s = ClockExchangeSchedule(datagramsOffered: true, start: 0)
        let actions = Self.drive(&s, until: 6_000 * ms) { t, s in
            s.datagramReplied(at: t)
            if t == 500 * ms { s.estimatorReady(at: t) }
            s.clockUncertainty(t < 4_000 * ms ? 30_000 : 5_000)
        }
        let datagrams = actions.filter { $0.1 == .request(.datagram) }.map(\.0)
        #expect(actions.allSatisfy { $0.1 != .request(.stream) })
        #expect(datagrams.filter { $0 < 2_000 * ms }.count == 1_000)
        #expect(datagrams.filter { $0 >= 2_000 * ms && $0 < 4_000 * ms }.count == 400)
        #expect(datagrams.filter { $0 >= 4_010 * ms }.count == 99)
        #expect(actions.filter { $0.1 == .health }.map(\.0) == [1, 2, 3, 4, 5].map { $0 * 1_000 * ms })
    }

    @Test("The burst lasts until the estimator has been ready 0.5 s, at most 4 s")
    func burstLength() {
        var s = ClockExchangeSchedule(datagramsOffered: true, start: 0)
        #expect(s.joining(at: 1_999 * ms))
        #expect(s.joining(at: 3_000 * ms)) // not ready yet
        s.estimatorReady(at: 2_800 * ms)
        s.estimatorReady(at: 3_000 * ms) // the first call counts
        #expect(s.joining(at: 3_299 * ms))
        #expect(!s.joining(at: 3_300 * ms))
        let never = ClockExchangeSchedule(datagramsOffered: true, start: 0)
        #expect(never.joining(at: 3_999 * ms) && !never.joining(at: 4_000 * ms))
    }

    @Test("Unanswered datagrams: the stream takes over after 1 s, at the old pace, and stops when replies return")
    func fallback() {
        var s = ClockExchangeSchedule(datagramsOffered: true, start: 0)
        let actions = Self.drive(&s, until: 3_000 * ms) { t, s in
            if t >= 2_000 * ms { s.datagramReplied(at: t) }
        }
        let stream = actions.filter { $0.1 == .request(.stream) }.map(\.0)
        #expect(stream.first == 1_000 * ms)
        #expect(stream.last! < 2_000 * ms)
        // 20 at 25 ms, then 50 ms: 1000, 1025, … 1475, 1525 … 1975.
        #expect(stream.count == 30)
        #expect(stream[19] - stream[18] == 25 * ms && stream[21] - stream[20] == 50 * ms)
        #expect(actions.contains { $0.0 > 2_000 * ms && $0.1 == .request(.datagram) })
    }

    @Test("A leader without datagrams (v3): stream requests only, 20 at 25 ms then every 50 ms")
    func streamOnly() {
        var s = ClockExchangeSchedule(datagramsOffered: false, start: 0)
        let actions = Self.drive(&s, until: 1_000 * ms)
        let stream = actions.filter { $0.1 == .request(.stream) }.map(\.0)
        #expect(actions.allSatisfy { $0.1 != .request(.datagram) })
        #expect(stream.prefix(3) == [0, 25 * ms, 50 * ms])
        #expect(stream.count == 20 + 10) // 0…475 ms, then 525 … 975 ms
    }

    @Test("After a stall of the sender, one request, not a catch-up burst")
    func noCatchUp() {
        var s = ClockExchangeSchedule(datagramsOffered: true, start: 0)
        _ = s.poll(now: 0)
        let (actions, next) = s.poll(now: 300 * ms)
        #expect(actions.filter { $0 == .request(.datagram) }.count == 1)
        #expect(next == 301 * ms)
    }

    @Test("Clock datagrams: requests padded to a response's size; short or foreign datagrams ignored")
    func datagrams() {
        let request = ClockDatagram.request(id: 7, t1: LocalTime(nanoseconds: -42))
        #expect(request.count == WireProtocol.clockDatagramBytes)
        let response = Message.timeResponse(id: 7, t1: LocalTime(nanoseconds: -42), t2: LeaderTime(nanoseconds: 5), t3: LeaderTime(nanoseconds: 6)).encoded()
        #expect(response.count == WireProtocol.clockDatagramBytes)
        func decode(_ b: [UInt8]) -> Message? { b.withUnsafeBytes { ClockDatagram.decode($0) } }
        #expect(decode(request) == .timeRequest(id: 7, t1: LocalTime(nanoseconds: -42)))
        #expect(decode(response) == .timeResponse(id: 7, t1: LocalTime(nanoseconds: -42), t2: LeaderTime(nanoseconds: 5), t3: LeaderTime(nanoseconds: 6)))
        // An unpadded request would let anyone get 33 bytes sent for 17.
        #expect(decode(Message.timeRequest(id: 7, t1: LocalTime(nanoseconds: 1)).encoded()) == nil)
        #expect(decode(Message.bye(reason: String(repeating: "x", count: 40)).encoded()) == nil)
        #expect(decode([]) == nil && decode([0, 0, 0, 200, 4]) == nil && decode(Array(request.prefix(10))) == nil)
    }

    @Test("syncReport's bytes")
    func syncReportLayout() {
        let r = SyncReport(clockUncertaintyNanoseconds: 258, clockSamples: 3, clockChannel: .datagram, arrivalLeadMinimumNanoseconds: -1, lateChunks: 2)
        #expect(Message.syncReport(r).encoded() == [0, 0, 0, 26, 15, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 3, 1,
                                                   0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 2])
    }

    @Test("Arrival margin: the least lead over the last 10 s, late chunks counted")
    func arrivalMargin() {
        var m = ArrivalMargin(seconds: 10)
        let s = nanosecondsPerSecond
        #expect(m.minimum(at: 0) == nil)
        m.record(lead: 900 * ms, at: 100 * s)
        m.record(lead: 400 * ms, at: 101 * s)
        m.record(lead: 950 * ms, at: 105 * s)
        #expect(m.minimum(at: 105 * s) == 400 * ms)
        #expect(m.minimum(at: 110 * s + 999 * ms) == 400 * ms)
        #expect(m.minimum(at: 111 * s) == 950 * ms) // the 101 s bucket left the window
        m.record(lead: -3 * ms, at: 112 * s)
        #expect(m.minimum(at: 112 * s) == -3 * ms && m.lateChunks == 1)
        #expect(m.minimum(at: 200 * s) == nil)
    }
}
