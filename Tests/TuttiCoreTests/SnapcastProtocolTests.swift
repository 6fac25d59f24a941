import Testing
import TuttiCore

@Suite struct SnapcastProtocolTests {
    @Test func timesAreNormalisedAsSnapcastDoes() {
        #expect(SnapcastTime(nanoseconds: 1_500_000_000) == SnapcastTime(sec: 1, usec: 500_000))
        #expect(SnapcastTime(nanoseconds: -1_000) == SnapcastTime(sec: -1, usec: 999_999))
        #expect(SnapcastTime(nanoseconds: -1_500_000_000) == SnapcastTime(sec: -2, usec: 500_000))
        #expect(SnapcastTime(nanoseconds: 999) == SnapcastTime(sec: 0, usec: 0), "whole microseconds, rounded down")
        #expect(SnapcastTime(sec: -2, usec: 500_000).nanoseconds == -1_500_000_000)
    }

    @Test func everyMessageRoundTripsThroughTheFramer() throws {
        let messages: [SnapcastMessage] = [
            .hello(json: #"{"ID":"kitchen","HostName":"pi"}"#), .clientInfo(json: #"{"volume":40,"muted":false}"#),
            .serverSettings(json: #"{"bufferMs":1000,"latency":0,"muted":false,"volume":100}"#),
            .time(latency: SnapcastTime(sec: -1, usec: 250)), .codecHeader(for: .opus), .codecHeader(for: .pcm),
            .wireChunk(timestamp: SnapcastTime(sec: 12, usec: 345), payload: [1, 2, 3, 4]),
            .error(code: 401, error: "Unauthorized", message: "Authentication required"),
        ]
        var framer = SnapcastFramer(limit: 1 << 20)
        var wire: [UInt8] = []
        for (i, m) in messages.enumerated() { wire += m.encoded(id: UInt16(i), refersTo: 7, sent: SnapcastTime(sec: 3, usec: 4)) }
        // Delivered a byte at a time, as TCP may.
        var out: [(SnapcastHeader, SnapcastMessage?)] = []
        for b in wire {
            framer.append([b])
            while let m = try framer.next() { out.append(m) }
        }
        #expect(out.map(\.1) == messages.map { Optional($0) })
        #expect(out.map(\.0.id) == Array(0..<UInt16(messages.count)))
        #expect(out.allSatisfy { $0.0.refersTo == 7 && $0.0.sent == SnapcastTime(sec: 3, usec: 4) })
        #expect(framer.pendingBytes == 0)
    }

    @Test func theWireLayoutIsSnapcasts() {
        // A Time message: 26-byte base (type 4, id 1, refersTo 2, sent 3 s 4 µs, received 5 s 6 µs, size 8), then the latency.
        let bytes = SnapcastMessage.time(latency: SnapcastTime(sec: 0, usec: 300)).encoded(id: 1, refersTo: 2, sent: SnapcastTime(sec: 3, usec: 4), received: SnapcastTime(sec: 5, usec: 6))
        #expect(bytes == [4, 0, 1, 0, 2, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 44, 1, 0, 0])
        // The Opus pseudo header: "OPUS" as a little-endian 0x4F505553, 48000, 16 bits, 2 channels.
        guard case .codecHeader(let codec, let payload) = SnapcastMessage.codecHeader(for: .opus) else { Issue.record("not a codec header"); return }
        #expect(codec == "opus")
        #expect(payload == [0x53, 0x55, 0x50, 0x4F, 0x80, 0xBB, 0, 0, 16, 0, 2, 0])
        guard case .codecHeader(let pcm, let wav) = SnapcastMessage.codecHeader(for: .pcm) else { Issue.record("not a codec header"); return }
        #expect(pcm == "pcm" && wav.count == 44 && Array(wav[0..<4]) == Array("RIFF".utf8))
    }

    @Test func hostileInputIsRefusedNotBuffered() throws {
        var framer = SnapcastFramer(limit: 1_024)
        // A header announcing 2 GB: refused at once, before any body arrives.
        var header = SnapcastMessage.hello(json: "").encoded(sent: SnapcastTime(sec: 0, usec: 0))
        header[22] = 0; header[23] = 0; header[24] = 0; header[25] = 0x80
        framer.append(header)
        #expect(throws: SnapcastProtocolError.tooLarge(type: 5, size: 0x8000_0000, limit: 1_024)) { _ = try framer.next() }
        // A body whose string claims more bytes than the body has.
        var lying = SnapcastMessage.hello(json: "abc").encoded(sent: SnapcastTime(sec: 0, usec: 0))
        lying[26] = 200
        var f2 = SnapcastFramer()
        f2.append(lying)
        #expect(throws: SnapcastProtocolError.malformed(type: 5, reason: "a string of 200 bytes in 3")) { _ = try f2.next() }
        // An unknown type is skipped, the stream goes on.
        var f3 = SnapcastFramer()
        var unknown = SnapcastMessage.time(latency: SnapcastTime(sec: 0, usec: 0)).encoded(sent: SnapcastTime(sec: 0, usec: 0))
        unknown[0] = 99
        f3.append(unknown + SnapcastMessage.hello(json: "{}").encoded(sent: SnapcastTime(sec: 0, usec: 0)))
        #expect(try f3.next()?.message == nil)
        #expect(try f3.next()?.message == .hello(json: "{}"))
    }

    /// Found by the snapcast fuzz target: a framer with a limit beyond
    /// UInt32 (no limit) trapped converting it instead of reading the message.
    @Test func aFramerWithoutALimitReadsMessages() throws {
        var framer = SnapcastFramer(limit: Int.max)
        framer.append(SnapcastMessage.clientInfo(json: "{}").encoded(sent: SnapcastTime(sec: 0, usec: 0)))
        #expect(try framer.next()?.message == .clientInfo(json: "{}"))
    }
}
