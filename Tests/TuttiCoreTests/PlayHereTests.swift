import Glibc
import Testing
import TuttiCore

@Suite struct PlayHereTests {
    @Test func pageMessagesAreReadWithEveryLengthChecked() throws {
        var ping: [UInt8] = [0x01]
        let t = 1234.5625
        for s in stride(from: 56, through: 0, by: -8) { ping.append(UInt8(truncatingIfNeeded: t.bitPattern >> UInt64(s))) }
        #expect(try PlayHere.parse(ping) == .clockPing(pageTime: 1234.5625))
        #expect(try PlayHere.parse([0x02] + Array("  Jane’s phone \n".utf8)) == .start(name: "Jane’s phone", format: .s16))
        #expect(try PlayHere.parse([0x04, 3] + Array("Den".utf8)) == .start(name: "Den", format: .opus), "PCM or Opus: Opus")
        #expect(try PlayHere.parse([0x04, 2] + Array("Den".utf8)) == .start(name: "Den", format: .opus))
        #expect(try PlayHere.parse([0x04, 1] + Array("Den".utf8)) == .start(name: "Den", format: .s16), "a page without WebCodecs")
        #expect(throws: PlayHere.WireError.badFormats(0)) { try PlayHere.parse([0x04, 0, 65]) }
        #expect(throws: PlayHere.WireError.badFormats(5)) { try PlayHere.parse([0x04, 5, 65]) }
        #expect(throws: PlayHere.WireError.badLength(type: 4, expected: "2…65", got: 1)) { try PlayHere.parse([0x04, 3]) }
        #expect(throws: PlayHere.WireError.badLength(type: 4, expected: "2…65", got: 66)) { try PlayHere.parse([4, 3] + [UInt8](repeating: 65, count: 65)) }
        #expect(throws: PlayHere.WireError.badName("is empty")) { try PlayHere.parse([4, 3, 32]) }
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
        #expect(PlayHere.opusAudio(streamID: 7, pts: -1, frames: 960, packet: [0xfc, 9]) ==
                [0x83, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0x03, 0xc0, 2, 0xfc, 9])
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

    @Test func theSessionHandsOnTheRoomsChannelMapAndEQ() throws {
        var s = PlayHereSession()
        let eq = try EqualizerSettings(gains: [0, 0, 0, 0, 0, -6, 0, 0, 0, 0])
        #expect(s.handle(.channels(.left)) == [.setChannels(.left)])
        #expect(s.handle(.equalizer(eq)) == [.setEqualizer(eq)])
        _ = s.close(reason: "bye")
        #expect(s.handle(.channels(.right)) == [], "closed")
    }

    /// 16-bit stereo PCM of `frames` frames: 1 kHz left, 440 Hz right, at −14 dBFS, with ±300 LSB of noise.
    static func pcm(frames: Int, from start: Int = 0) -> [UInt8] {
        var random = SplitMix64(seed: UInt64(start + 1))
        var out: [UInt8] = []
        for i in start..<(start + frames) {
            for f in [1_000.0, 440.0] {
                let v = 0.2 * sin(2 * Double.pi * f * Double(i) / 48_000) + Double(Int(random.next() % 601) - 300) / 32_768
                let s = UInt16(bitPattern: sampleToInt16(Float(v)))
                out += [UInt8(s & 0xff), UInt8(s >> 8)]
            }
        }
        return out
    }

    static func samples(_ pcm: [UInt8]) -> [Int16] {
        stride(from: 0, to: pcm.count, by: 2).map { Int16(bitPattern: UInt16(pcm[$0]) | UInt16(pcm[$0 + 1]) << 8) }
    }

    /// Amplitude of `frequency` on one channel over whole periods (a sine and cosine fit).
    static func amplitude(_ s: [Int16], channel: Int, frequency: Double) -> Double {
        let frames = s.count / 2
        let n = Int((Double(frames) * frequency / 48_000).rounded(.down) * 48_000 / frequency)
        var a = 0.0, b = 0.0
        for i in 0..<n {
            let w = 2 * Double.pi * frequency * Double(i) / 48_000
            a += Double(s[2 * i + channel]) / 32_768 * sin(w); b += Double(s[2 * i + channel]) / 32_768 * cos(w)
        }
        return 2 * (a * a + b * b).squareRoot() / Double(n)
    }

    @Test func thePagesSoundIsBitExactAtStereoAndFlatThenMapsAndFiltersAsASpeaker() throws {
        let sound = PlayHereSound()
        var at = 0
        func chunk(_ frames: Int = 960) -> (sent: [UInt8], heard: [UInt8]) {
            let sent = Self.pcm(frames: frames, from: at)
            at += frames
            sound.load(s16: sent, frames: frames)
            return (sent, sound.render(frames: frames))
        }
        // Stereo and flat: every sample as it came, whole chunks and odd ones, full scale too.
        for frames in [960, 1, 4_800, 7] {
            let c = chunk(frames)
            #expect(c.heard == c.sent)
        }
        let extremes: [UInt8] = [0x00, 0x80, 0xff, 0x7f, 0x01, 0x00, 0xff, 0xff]
        sound.load(s16: extremes, frames: 2)
        #expect(sound.render(frames: 2) == extremes)

        // A map set while audio flows fades in over 10 ms, then the left plays on both outputs exactly.
        sound.set(channels: .left)
        let fading = Self.samples(chunk(480).heard)
        #expect(fading[0] != fading[1], "the fade starts from stereo")
        for _ in 0..<2 {
            let s = Self.samples(chunk().heard)
            #expect(stride(from: 0, to: s.count, by: 2).allSatisfy { s[$0] == s[$0 + 1] })
        }

        // The 1 kHz band −6 dB: after its 10 ms fade and the filter's settling, −6 dB ± 0.5 at 1 kHz.
        sound.set(equalizer: try EqualizerSettings(gains: [0, 0, 0, 0, 0, -6, 0, 0, 0, 0]))
        for _ in 0..<5 { _ = chunk() }
        let filtered = Self.samples(chunk(4_800).heard)
        let gain = 20 * log10(Self.amplitude(filtered, channel: 0, frequency: 1_000) / 0.2)
        #expect(abs(gain + 6) < 0.5, "\(gain) dB")
        #expect(stride(from: 0, to: filtered.count, by: 2).allSatisfy { filtered[$0] == filtered[$0 + 1] }, "the EQ keeps the map's copies alike")

        // Back to stereo and flat: once both have faded out, bit-exact again.
        sound.set(channels: .stereo)
        sound.set(equalizer: .flat)
        _ = chunk()
        for _ in 0..<3 {
            let c = chunk()
            #expect(c.heard == c.sent)
        }
    }

    @Test func aMapSetBeforeTheFirstAudioIsExactFromItsFirstFrame() {
        let sound = PlayHereSound()
        sound.set(channels: .right)
        let sent = Self.pcm(frames: 960)
        sound.load(s16: sent, frames: 960)
        let s = Self.samples(sound.render(frames: 960)), source = Self.samples(sent)
        let rightOnBoth = stride(from: 0, to: s.count, by: 2).allSatisfy { (i: Int) -> Bool in s[i] == source[i + 1] && s[i + 1] == source[i + 1] }
        #expect(rightOnBoth)
    }
}
