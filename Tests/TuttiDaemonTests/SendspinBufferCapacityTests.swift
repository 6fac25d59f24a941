import Foundation
import Testing
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// A Sendspin player's `buffer_capacity` from the leader's side: a small
/// player (built on PyPI's aiosendspin, `Tests/Sendspin/sendspin_player.py`)
/// never holds more unplayed audio than it declared, never runs dry, and
/// still plays each click where a Tutti speaker on a file DAC does.
@Suite(.serialized) struct SendspinBufferCapacityTests {
    /// What a player held, replayed from its log: at each audio message's
    /// arrival, the bytes of the messages it had received that had not
    /// finished playing (a `stream/clear` or `stream/end` empties it), and
    /// how long before its first sample plays each message arrived.
    struct Holding {
        var peakBytes = 0
        var peakAt: Int64 = 0
        var over: [(at: Int64, bytes: Int)] = []
        /// (arrival local ns, ms before it plays) of each message.
        var leads: [(at: Int64, ms: Double)] = []

        /// Whether `at` is in a stall, or in the 300 ms after one (the backlog of audio and pings read then).
        func afterStall(_ at: Int64) -> Bool { stalls.contains { at >= $0.from && at <= $0.to + 300_000_000 } }
        /// Whether `at` is in the 300 ms after a `stream/clear`: what plays before the cut (100 ms on) goes
        /// again with less lead than the steady state's, and the window fills again.
        func afterClear(_ at: Int64) -> Bool { clears.contains { at >= $0 && at <= $0 + 300_000_000 } }
        var received = 0
        var largestMessage = 0
        /// (arrival local ns, ms missing) where a message's audio did not follow on from the one before.
        var gaps: [(at: Int64, ms: Double)] = []
        /// ms by which the audio after a cut overlaps the chunk sent again before it (less than a chunk:
        /// the cut falls inside that chunk, and the new audio starts at the cut).
        var overlapsAtCut: [Double] = []
        /// (from, to) local ns where the machine stalled: the client's own clock pings (one every 100 ms)
        /// went unanswered for more than 150 ms, or took more than 20 ms there and back. On two cores
        /// shared with builds this happens (700 ms seen): the client reads nothing then, whatever the
        /// server does, and catches up after.
        var stalls: [(from: Int64, to: Int64)] = []
        /// When each `stream/clear` came (local ns), and for each, the ms from it to the start of the first audio
        /// after it (what it was sent again plays from there on: the chunk playing is not sent again).
        var clears: [Int64] = []
        var firstAfterClear: [Double] = []
        /// The most bytes held after the last `stream/clear`: refilled as far as the capacity allows.
        var peakAfterClear = 0

        init(records: [[String: JSONValue]], capacity: Int) {
            // When the player played each chunk (its time filter's local time), by server µs; else the server time
            // itself (one clock on one machine).
            var played: [Int64: Int64] = [:]
            for r in records where r["kind"]?.string == "chunk" {
                if let ts = r["ts"]?.number, let local = r["local"]?.number { played[Int64(ts)] = Int64(local) }
            }
            var lastPong: Int64?
            for r in records where r["kind"]?.string == "message" && r["type"]?.string == "server/time" {
                guard let at = r["at"]?.number.map({ Int64($0) }), let p = r["payload"]?.object,
                      let sent = p["client_transmitted"]?.number, let got = p["server_received"]?.number,
                      let answered = p["server_transmitted"]?.number else { continue }
                let roundTrip = (Double(at) / 1_000 - sent) - (answered - got) // µs
                if let lastPong, at - lastPong > 150_000_000 || roundTrip > 20_000 { stalls.append((lastPong, at)) }
                lastPong = at
            }
            var holding: [(end: Int64, bytes: Int)] = []
            var expected: Int64? // server µs the next message's audio should start at
            for r in records {
                if r["kind"]?.string == "message", let type = r["type"]?.string, type == "stream/clear" || type == "stream/end" {
                    holding.removeAll()
                    expected = nil
                    if type == "stream/clear", let at = r["at"]?.number { clears.append(Int64(at)); peakAfterClear = 0 }
                    continue
                }
                guard r["kind"]?.string == "received", let ts = r["ts"]?.number.map({ Int64($0) }), let at = r["at"]?.number.map({ Int64($0) }),
                      let bytes = r["bytes"]?.integer else { continue }
                let frames = r["frames"]?.integer ?? 0
                let start = played[ts] ?? ts * 1_000
                let end = start + StreamFormat.nanoseconds(frames: frames)
                holding.removeAll { $0.end <= at }
                holding.append((end, bytes))
                let held = holding.reduce(0) { $0 + $1.bytes }
                if held > peakBytes { peakBytes = held; peakAt = at }
                if held > capacity { over.append((at, held)) }
                if !clears.isEmpty { peakAfterClear = max(peakAfterClear, held) }
                if let clear = clears.last, expected == nil { firstAfterClear.append(Double(start - clear) / 1e6) }
                leads.append((at, Double(start - at) / 1e6))
                if let expected, abs(ts - expected) > 1_000 {
                    let ms = Double(ts - expected) / 1e3
                    if ms < 0 && ms > -20 && overlapsAtCut.count < clears.count { overlapsAtCut.append(ms) } else { gaps.append((at, ms)) }
                }
                expected = ts + StreamFormat.nanoseconds(frames: frames) / 1_000
                received += 1
                largestMessage = max(largestMessage, bytes)
            }
        }
    }

    /// PCM in 40 KB (ten 20 ms chunks: about 200 ms) and FLAC in 12 KB
    /// (the tone compresses to about 370 bytes a chunk: some 600 ms), each beside a Tutti speaker.
    @Test(arguments: zip(["pcm", "flac"], [40_000, 12_000]))
    func aSmallPlayerNeverHoldsMoreThanItsCapacityNorRunsDryAndStaysInStep(codec: String, capacity: Int) throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/clicks.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
        let leader = try startLeader(files: [dir + "/clicks.wav"], codec: .pcm, loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let speaker = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        defer { speaker.stop() }
        let client = try SendspinClientRun(port: port, name: "esp32", codec: codec, seconds: 20, prefix: dir + "/ss",
                                           extra: ["--buffer-capacity", String(capacity)])
        defer { client.stop() }
        #expect(waitUntil(timeout: 20) { leader.followerNames.contains("esp32") }, "\(leader.followerNames) \(client.errors)")
        // A seek half way: stream/clear, then what plays before the cut again and the new audio, as it fits.
        #expect(waitUntil(timeout: 30) { client.chunks.count >= 350 }, "\(client.chunks.count) chunks; \(client.errors)")
        _ = try leader.perform(.seek(seconds: 3))
        #expect(waitUntil(timeout: 5) { !client.messages("stream/clear").isEmpty })
        #expect(waitUntil(timeout: 30) { client.chunks.count >= 700 }, "\(client.chunks.count) chunks; \(client.errors)")
        #expect(client.messages("stream/start").first?["player"]?["codec"]?.string == codec)
        let last = try #require(client.chunks.last).local
        #expect(waitUntilPlayed([dir + "/den.raw"], through: last))
        client.stop()
        speaker.stop()

        let holding = Holding(records: client.records, capacity: capacity)
        let first = try #require(holding.leads.first).at
        // From a second after the first chunk arrived: the join (the leader's backlog, the filter settling) is over.
        let afterJoin = holding.leads.filter { $0.at >= first + 1_000_000_000 }
        let steady = afterJoin.filter { !holding.afterStall($0.at) && !holding.afterClear($0.at) }.map(\.ms).sorted()
        let stalled = afterJoin.count - steady.count
        let least = try #require(steady.first)
        let median = steady[steady.count / 2]
        print("Sendspin \(codec) player of \(capacity) bytes: \(holding.received) messages (largest \(holding.largestMessage) bytes), " +
              "held at most \(holding.peakBytes) bytes; each arrived \(String(format: "%.1f", least)) ms (least) / " +
              "\(String(format: "%.1f", median)) ms (median) before it played, leaving aside \(stalled) read during or just after the seek's " +
              "clear or \(holding.stalls.count) machine stalls (longest \((holding.stalls.map { $0.to - $0.from }.max() ?? 0) / 1_000_000) ms)")
        #expect(holding.received >= 700, "\(holding.received) audio messages")
        // The figures below stand for most of the run, not what a stall left.
        #expect(stalled * 5 <= afterJoin.count, "\(stalled) of \(afterJoin.count) messages came in or after a stall or the clear")
        print("Sendspin \(codec) player of \(capacity) bytes after the seek's stream/clear: held at most \(holding.peakAfterClear) bytes; " +
              "the audio it was sent starts \(holding.firstAfterClear.map { String(format: "%.1f", $0) }) ms after the clear; " +
              "the new audio overlaps the last chunk before the cut by \(holding.overlapsAtCut.map { String(format: "%.1f", -$0) }) ms")
        // The seek's clear emptied it; what plays before the cut went again at once (from the chunk after the one
        // playing: within two chunks of the clear; a little before it where the client read the clear late), and it
        // filled up again to its capacity, not past it.
        #expect(holding.clears.count == 1 && holding.firstAfterClear.count == 1)
        #expect(holding.firstAfterClear.allSatisfy { $0 >= -10 && $0 <= 40 }, "\(holding.firstAfterClear) ms")
        #expect(holding.peakAfterClear > capacity - 2 * holding.largestMessage && holding.peakAfterClear <= capacity,
                "\(holding.peakAfterClear) of \(capacity) bytes after the clear")
        #expect(holding.over.isEmpty, "held more than \(capacity) bytes \(holding.over.count) times, first \(holding.over.prefix(3).map { "\($0.bytes) bytes" })")
        // It is filled near its capacity (the spec's advice for buffered sources): within two messages of it.
        #expect(holding.peakBytes > capacity - 2 * holding.largestMessage, "peak \(holding.peakBytes) of \(capacity) bytes")
        // Never dry: every message arrives well before it plays. 50 ms is a quarter of what the capacity
        // holds of PCM; in steady state each goes as the oldest finishes playing, about the capacity's
        // audio less one chunk ahead (179 ms for PCM: nine 20 ms chunks less the 1 ms guard).
        #expect(least >= 50, "a message arrived only \(least) ms before it played (median \(median) ms)")
        // Released as soon as there is room, not at the next chunk from the source (20 ms later).
        if codec == "pcm" { #expect(median >= 170 && median <= 185, "median \(median) ms ahead: 179 ms expected") }
        // Nothing dropped on the way: each message's audio follows on from the one before (to 1 ms).
        let steadyGaps = holding.gaps.filter { $0.at >= first + 1_000_000_000 }
        #expect(steadyGaps.isEmpty, "\(steadyGaps.count) gaps, first \(steadyGaps.prefix(3).map { "\($0.ms) ms" })")

        let reference = client.clickTimes()
        let tutti = clickTimes(dir + "/den.raw", ppm: 0)
        let (signed, clickMedian, p99) = try clickAgreement(reference: reference, tutti: tutti)
        #expect(signed.count >= 6, "\(signed.count) clicks compared: reference \(reference.count), Tutti \(tutti.count)")
        print("Sendspin \(codec) player of \(capacity) bytes vs Tutti speaker: click difference median \(clickMedian / 1000) µs, " +
              "p99 \(p99 / 1000) µs over \(signed.count) clicks")
        #expect(clickMedian < 1_000_000, "median \(clickMedian / 1000) µs: the spec asks ±1 ms")
        #expect(p99 < 2_000_000, "p99 \(p99 / 1000) µs")
    }

    /// A player with room for more than the leader sends ahead (1 MB: over
    /// 5 s of PCM) is sent every chunk as the Tutti rooms are: a second ahead.
    @Test func aPlayerWithRoomGetsEveryChunkTheLeadersBufferAhead() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 10, amplitude: 0.5))))
        let leader = try startLeader(files: [dir + "/tone.wav"], codec: .pcm, loop: true) { c in
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let capacity = 1 << 20
        let client = try SendspinClientRun(port: port, name: "roomy", seconds: 10, prefix: dir + "/ss", extra: ["--buffer-capacity", String(capacity)])
        defer { client.stop() }
        #expect(waitUntil(timeout: 30) { client.chunks.count >= 250 }, "\(client.chunks.count) chunks; \(client.errors)")
        client.stop()
        let holding = Holding(records: client.records, capacity: capacity)
        let first = try #require(holding.leads.first).at
        let steady = holding.leads.filter { $0.at >= first + 2_000_000_000 && !holding.afterStall($0.at) }.map(\.ms).sorted()
        let median = try #require(steady.isEmpty ? nil : steady[steady.count / 2])
        print("Sendspin PCM player of \(capacity) bytes: held at most \(holding.peakBytes) bytes; each arrived " +
              "\(String(format: "%.1f", steady[0])) ms (least) / \(String(format: "%.1f", median)) ms (median) before it played")
        // A second ahead (the leader's buffer) less the time the source takes to hand a chunk over.
        #expect(median >= 950 && median <= 1_010, "median \(median) ms ahead")
        // About a second of 3,849-byte messages (52 at most), far below the capacity.
        #expect(holding.peakBytes >= 48 * 3_849 && holding.peakBytes <= 53 * 3_849, "\(holding.peakBytes) bytes")
        #expect(holding.gaps.isEmpty, "\(holding.gaps.prefix(3))")
    }

    /// A player whose `buffer_capacity` cannot hold two 20 ms chunks of
    /// PCM (7,706 bytes) could not play without gaps: it is refused at its
    /// hello, and never becomes a room.
    @Test func aPlayerWhoseBufferCannotHoldTwoChunksIsRefused() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 10, amplitude: 0.5))))
        let leader = try startLeader(files: [dir + "/tone.wav"], codec: .pcm, loop: true) { c in
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let client = try SendspinClientRun(port: port, name: "tiny", seconds: 10, prefix: dir + "/ss", extra: ["--buffer-capacity", "7705"])
        defer { client.stop() }
        func count(_ kind: String) -> Int { client.records.filter { $0["kind"]?.string == kind }.count }
        #expect(waitUntil(timeout: 15) { count("closed") > 0 }, "\(client.errors)")
        #expect(!leader.followerNames.contains("tiny"))
        let received = count("received")
        #expect(received == 0)
    }
}
