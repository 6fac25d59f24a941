import Testing
import TuttiCore

@Suite struct PlayHereTests {
    @Test func pageMessagesAreReadWithEveryLengthChecked() throws {
        var ping: [UInt8] = [0x01]
        let t = 1234.5625
        for s in stride(from: 56, through: 0, by: -8) { ping.append(UInt8(truncatingIfNeeded: t.bitPattern >> UInt64(s))) }
        #expect(try PlayHere.parse(ping) == .clockPing(pageTime: 1234.5625))
        #expect(try PlayHere.parse([0x02] + Array("  Jane’s phone \n".utf8)) == .start(name: "Jane’s phone"))
        #expect(try PlayHere.parse([0x03]) == .stop)

        #expect(throws: PlayHere.WireError.empty) { try PlayHere.parse([]) }
        #expect(throws: PlayHere.WireError.unknownType(9)) { try PlayHere.parse([9, 1]) }
        #expect(throws: PlayHere.WireError.badLength(type: 1, expected: "8", got: 7)) { try PlayHere.parse(Array(ping.dropLast())) }
        #expect(throws: PlayHere.WireError.badLength(type: 3, expected: "0", got: 1)) { try PlayHere.parse([3, 0]) }
        #expect(throws: PlayHere.WireError.badLength(type: 2, expected: "1…64", got: 65)) { try PlayHere.parse([2] + [UInt8](repeating: 65, count: 65)) }
        #expect(throws: PlayHere.WireError.badLength(type: 2, expected: "1…64", got: 0)) { try PlayHere.parse([2]) }
        #expect(throws: PlayHere.WireError.badName("is not UTF-8")) { try PlayHere.parse([2, 0xff, 0xfe]) }
        #expect(throws: PlayHere.WireError.badName("is empty")) { try PlayHere.parse([2, 32, 32]) }
        #expect(throws: PlayHere.WireError.badName("has control characters")) { try PlayHere.parse([2, 65, 7, 66]) }
        var nan: [UInt8] = [0x01]
        for s in stride(from: 56, through: 0, by: -8) { nan.append(UInt8(truncatingIfNeeded: Double.nan.bitPattern >> UInt64(s))) }
        #expect(throws: PlayHere.WireError.badLength(type: 1, expected: "a finite time", got: 8)) { try PlayHere.parse(nan) }
    }

    @Test func leaderMessagesAreFramedByteForByte() {
        #expect(PlayHere.clockReply(pageTime: 1.0, received: 0x0102_0304_0506_0708, sent: -1) ==
                [0x81, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
        #expect(PlayHere.audio(streamID: 7, pts: 1_000_000_000, frames: 1, pcm: [1, 2, 3, 4]) ==
                [0x83, 0, 0, 0, 7, 0, 0, 0, 0, 0x3b, 0x9a, 0xca, 0x00, 0, 0, 0, 1, 1, 1, 2, 3, 4])
        #expect(PlayHere.audio(streamID: 7, pts: 0, frames: 1, pcm: [1, 2, 3, 4]).count == PlayHere.audioHeaderBytes + 4)
        #expect(PlayHere.cut(from: 256) == [0x84, 0, 0, 0, 0, 0, 0, 1, 0])
        #expect(PlayHere.settings(RoomSettings(volume: 40, muted: true, latencyTrimNanoseconds: 1)) == [0x85, 40, 1, 0, 0, 0, 0, 0, 0, 0, 1])
        #expect(PlayHere.joined(name: "Den") == [0x82, 68, 101, 110])
        #expect(PlayHere.stopped(reason: String(repeating: "x", count: 300)).count == 201, "reasons are bounded")
    }

    @Test func aNameAlreadyTakenGetsTheNextNumber() {
        #expect(PlayHere.uniqueName("Phone", taken: []) == "Phone")
        #expect(PlayHere.uniqueName("Phone", taken: ["Phone"]) == "Phone 2")
        #expect(PlayHere.uniqueName("Phone", taken: ["Phone", "Phone 2", "Phone 3"]) == "Phone 4")
    }

    @Test func theSessionPassesItsStreamsAudioCutsOnASwitchAndSendsChangedSettingsOnce() {
        var s = PlayHereSession()
        let stream = { (id: UInt32) in StreamDescription(streamID: id, codec: .pcm, framesPerChunk: 960, bufferNanoseconds: 1_000_000_000) }
        let chunk = { (id: UInt32, frames: UInt32) in Chunk(streamID: id, sequence: 1, pts: LeaderTime(nanoseconds: 5), frames: frames, payload: []) }
        #expect(s.handle(.chunk(chunk(1, 960))) == [], "before follow: no stream yet")
        #expect(s.handle(.follow(stream: stream(1), from: LeaderTime(nanoseconds: 100))) == [], "the first stream needs no cut")
        #expect(s.handle(.chunk(chunk(1, 960))) == [.sendAudio(chunk(1, 960))])
        #expect(s.handle(.chunk(chunk(2, 960))) == [])
        #expect(s.foreignChunks == 2)
        #expect(s.handle(.chunk(chunk(1, 0))) == [], "an empty chunk")
        #expect(s.handle(.chunk(chunk(1, 4_801))) == [], "over 100 ms")
        #expect(s.handle(.flush(streamID: 2, from: LeaderTime(nanoseconds: 9), fade: true)) == [], "another stream's flush")
        #expect(s.handle(.flush(streamID: 1, from: LeaderTime(nanoseconds: 9), fade: true)) == [.send(PlayHere.cut(from: 9))])
        #expect(s.handle(.follow(stream: stream(2), from: LeaderTime(nanoseconds: 700))) == [.send(PlayHere.cut(from: 700))])
        #expect(s.streamID == 2)
        let quiet = RoomSettings(volume: 30, muted: false, latencyTrimNanoseconds: 0)
        #expect(s.handle(.settings(quiet)) == [.send(PlayHere.settings(quiet))])
        #expect(s.handle(.settings(quiet)) == [], "unchanged")
        #expect(s.handle(.streamEnd(streamID: 2, at: LeaderTime(nanoseconds: 1))) == [])
        #expect(s.close(reason: "bye") == [.send(PlayHere.stopped(reason: "bye"))])
        #expect(s.close(reason: "again") == [])
        #expect(s.handle(.chunk(chunk(2, 960))) == [], "closed")
    }
}
