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

    @Test("Datagrams: a 1 ms burst for 2 s, then 2 ms while jittery for the first 20 s, 5 ms after, and 100 ms once quiet; no stream requests while replies come")
    func datagramPace() {
        var s = ClockExchangeSchedule(datagramsOffered: true, start: 0)
        let actions = Self.drive(&s, until: 24_000 * ms) { t, s in
            s.datagramReplied(at: t)
            if t == 500 * ms { s.estimatorReady(at: t) }
            s.clockPath(uncertainty: t < 22_000 * ms ? 30_000 : 5_000, queueing: 40_000)
        }
        let datagrams = actions.filter { $0.1 == .request(.datagram) }.map(\.0)
        #expect(actions.allSatisfy { $0.1 != .request(.stream) })
        #expect(datagrams.filter { $0 < 2_000 * ms }.count == 2_000)
        #expect(datagrams.filter { $0 >= 2_000 * ms && $0 < 20_000 * ms }.count == 9_000)
        #expect(datagrams.filter { $0 >= 20_000 * ms && $0 < 22_000 * ms }.count == 400)
        #expect(datagrams.filter { $0 >= 22_010 * ms }.count == 19) // 22.105 … 23.905 s, 100 ms apart
        #expect(actions.filter { $0.1 == .health }.map(\.0) == (1...23).map { Int64($0) * 1_000 * ms })
    }

    @Test("Quiet from 10 µs of uncertainty down, until it rises above 20 µs (no flapping); stream probes 100 ms, 250 ms when quiet")
    func quietHysteresis() {
        var s = ClockExchangeSchedule(datagramsOffered: true, streamProbes: true, start: 0)
        // 5 s noisy (30 µs), then 5 s at 15 µs (not yet quiet), 5 s at 8 µs (quiet),
        // 5 s at 15 µs (stays quiet), 5 s at 25 µs (noisy again).
        let levels: [Int64] = [30_000, 15_000, 8_000, 15_000, 25_000]
        let actions = Self.drive(&s, until: 25_000 * ms) { t, s in
            s.datagramReplied(at: t)
            if t == 500 * ms { s.estimatorReady(at: t) }
            s.clockPath(uncertainty: levels[Int(t / (5_000 * ms))], queueing: 40_000)
        }
        func count(_ kind: ClockExchangeSchedule.Action, _ from: Int64, _ to: Int64) -> Int {
            actions.filter { $0.1 == kind && $0.0 >= from * ms && $0.0 < to * ms }.count
        }
        #expect(count(.request(.datagram), 6_000, 10_000) == 2_000)   // 2 ms: young and not quiet
        #expect(count(.request(.datagram), 10_100, 15_000) == 49)     // 100 ms
        #expect(count(.request(.datagram), 15_100, 20_000) == 49)     // still 100 ms at 15 µs
        #expect(count(.request(.datagram), 20_010, 25_000) == 998)    // 5 ms (past the young 20 s) above 20 µs
        #expect(count(.request(.stream), 5_000, 10_000) == 50)        // probes every 100 ms
        #expect(count(.request(.stream), 10_250, 20_000) == 39)       // every 250 ms while quiet
        #expect(count(.request(.stream), 20_100, 25_000) == 49)
    }

    @Test("A jittery path is never quiet, however low the uncertainty; quiet once it queues at most 250 µs, until above 500 µs")
    func quietNeedsAQuietPath() {
        var s = ClockExchangeSchedule(datagramsOffered: true, start: 0)
        s.clockPath(uncertainty: 5_000, queueing: 7_000_000)     // 20 ± 15 ms after a minute of samples
        #expect(!s.isQuiet)
        s.clockPath(uncertainty: 5_000, queueing: 200_000)
        #expect(s.isQuiet)
        s.clockPath(uncertainty: 5_000, queueing: 450_000)       // between: stays
        #expect(s.isQuiet)
        s.clockPath(uncertainty: 5_000, queueing: 600_000)
        #expect(!s.isQuiet)
        s.clockPath(uncertainty: nil, queueing: nil)
        #expect(!s.isQuiet)
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
        #expect(next == 300 * ms + 500_000) // half the 1 ms join interval
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

    @Test("syncReport v6 appends the stream delay; a v5 report (without it) still decodes, with nil")
    func syncReportStreamDelay() throws {
        let v5 = SyncReport(clockUncertaintyNanoseconds: 258, clockSamples: 3, clockChannel: .datagram, arrivalLeadMinimumNanoseconds: -1, lateChunks: 2)
        var v6 = v5
        v6.streamDelayMaximumNanoseconds = 0x0102
        let bytes = Message.syncReport(v6).encoded()
        #expect(bytes.count == Message.syncReport(v5).encoded().count + 8)
        #expect(Array(bytes.suffix(8)) == [0, 0, 0, 0, 0, 0, 1, 2] && bytes[3] == 34)
        #expect(try Message.decode(body: bytes.dropFirst(4)) == .syncReport(v6))
        #expect(try Message.decode(body: Message.syncReport(v5).encoded().dropFirst(4)) == .syncReport(v5))
        // Half a field is refused, not read as a delay.
        #expect(throws: ProtocolError.self) { try Message.decode(body: bytes.dropFirst(4).dropLast(3)) }
    }

    @Test("Stream probes (v6): a stream request every 100 ms while datagrams carry the clock; none without them")
    func streamProbes() {
        var s = ClockExchangeSchedule(datagramsOffered: true, streamProbes: true, start: 0)
        let actions = Self.drive(&s, until: 3_000 * ms) { t, s in s.datagramReplied(at: t) }
        let stream = actions.filter { $0.1 == .request(.stream) }.map(\.0)
        #expect(stream == (0..<30).map { Int64($0) * 100 * ms })
        #expect(actions.filter { $0.1 == .request(.datagram) }.count >= 2_000)
        var plain = ClockExchangeSchedule(datagramsOffered: true, start: 0)
        #expect(Self.drive(&plain, until: 3_000 * ms) { t, s in s.datagramReplied(at: t) }.allSatisfy { $0.1 != .request(.stream) })
    }

    @Test("Stream delay tail: the longest delay over the last 30 s")
    func streamDelayTail() {
        var tail = StreamDelayTail(seconds: 30)
        let s = nanosecondsPerSecond
        #expect(tail.maximum(at: 0) == nil)
        tail.record(sent: 1_000 * ms, arrived: 1_003 * ms, at: 100 * s)
        tail.record(sent: 2_000 * ms, arrived: 2_212 * ms, at: 101 * s)
        tail.record(sent: 3_000 * ms, arrived: 2_999 * ms, at: 102 * s) // a model a hair ahead: never negative
        #expect(tail.maximum(at: 102 * s) == 212 * ms)
        #expect(tail.maximum(at: 130 * s + 999 * ms) == 212 * ms)
        #expect(tail.maximum(at: 131 * s) == 0) // the 101 s slot left; the 102 s one (0) is still in
        #expect(tail.maximum(at: 200 * s) == nil)
        tail.record(sent: .min, arrived: .max, at: 201 * s) // garbage off the wire: no trap
        #expect(tail.maximum(at: 201 * s) == .max)
    }

    @Test("Command lead: the configured 100 ms unless a room's stream delivers later; the worst room plus 30 ms, at most the ceiling")
    func commandLead() {
        let policy = CommandLead(base: 100 * ms, ceiling: 500 * ms)
        #expect(policy.lead(streamDelays: []) == 100 * ms)
        #expect(policy.lead(streamDelays: [nil, 3 * ms, 40 * ms]) == 100 * ms)
        #expect(policy.lead(streamDelays: [5 * ms, 212 * ms, nil]) == 242 * ms)
        #expect(policy.lead(streamDelays: [2_000 * ms]) == 500 * ms)
        #expect(policy.lead(streamDelays: [.max, .min]) == 500 * ms) // off the wire: clamped, no trap
        #expect(CommandLead(base: 100 * ms, ceiling: 50 * ms).lead(streamDelays: [400 * ms]) == 100 * ms)
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
