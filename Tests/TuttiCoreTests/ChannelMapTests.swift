import Glibc
import Testing
import TuttiCore

/// The channel-map kernel the playout thread runs, and the stereo pairs' rules.
@Suite struct ChannelMapTests {
    /// 1 kHz-ish left and a different tone right, interleaved, with values that are not round in binary.
    static func block(frames: Int) -> [Float] {
        var out: [Float] = []
        for k in 0..<frames {
            out.append(Float(0.7 * sin(Double(k) * 0.131)) + 1e-7 * Float(k))
            out.append(Float(-0.45 * cos(Double(k) * 0.377)) - 3e-8 * Float(k))
        }
        return out
    }

    static func run(_ map: ChannelMap, _ input: [Float], target: ChannelMap? = nil, from start: ChannelMap? = nil) -> [Float] {
        var data = input
        var mapper = ChannelMapper(start ?? map)
        data.withUnsafeMutableBufferPointer { mapper.process($0.baseAddress!, frames: input.count / 2, target: target ?? map) }
        return data
    }

    @Test func stereoIsBitExactAndTheOthersAreExact() {
        let input = Self.block(frames: 960)
        let bits = { (a: [Float]) in a.map(\.bitPattern) }
        let stereoExact = bits(Self.run(.stereo, input)) == bits(input)
        #expect(stereoExact)
        let left = Self.run(.left, input), right = Self.run(.right, input), swap = Self.run(.swap, input), mono = Self.run(.mono, input)
        for k in 0..<960 {
            let l = input[2 * k], r = input[2 * k + 1]
            #expect(left[2 * k].bitPattern == l.bitPattern && left[2 * k + 1].bitPattern == l.bitPattern)
            #expect(right[2 * k].bitPattern == r.bitPattern && right[2 * k + 1].bitPattern == r.bitPattern)
            #expect(swap[2 * k].bitPattern == r.bitPattern && swap[2 * k + 1].bitPattern == l.bitPattern)
            #expect(mono[2 * k] == (l + r) * 0.5 && mono[2 * k + 1] == mono[2 * k])
        }
        // Mono is −6 dB: two full-scale channels in phase stay at full scale.
        #expect(Self.run(.mono, [1, 1, -1, -1]) == [1, 1, -1, -1])
        #expect(Self.run(.mono, [1, 0]) == [0.5, 0.5])
    }

    @Test func aChangeFadesOver480FramesThenIsExact() {
        let input = Self.block(frames: 1_200)
        // From stereo to left: frame 0 is still stereo, the fade is linear, and from frame 480 on it is exact.
        let out = Self.run(.stereo, input, target: .left, from: .stereo)
        #expect(out[0] == input[0] && out[1] == input[1])
        for k in [120, 240, 360] {
            let t = Float(k) / 480
            let expected = input[2 * k + 1] + (input[2 * k] - input[2 * k + 1]) * t
            #expect(abs(out[2 * k + 1] - expected) < 1e-6, "frame \(k)")
            #expect(out[2 * k] == input[2 * k])
        }
        for k in 480..<1_200 { #expect(out[2 * k + 1].bitPattern == input[2 * k].bitPattern && out[2 * k].bitPattern == input[2 * k].bitPattern) }
        // The fade spans blocks: twelve blocks of 100 frames come out as one of 1200.
        var mapper = ChannelMapper(.stereo)
        var pieces = input
        pieces.withUnsafeMutableBufferPointer { p in
            for b in 0..<12 { mapper.process(p.baseAddress! + 2 * 100 * b, frames: 100, target: .left) }
        }
        let alike = pieces.map(\.bitPattern) == out.map(\.bitPattern) // not inside #expect: it would print both arrays
        #expect(alike, "block by block as in one go")
        // Back to stereo: after the fade, bit-exact again.
        var back = input
        back.withUnsafeMutableBufferPointer { p in
            mapper.process(p.baseAddress!, frames: 600, target: .stereo)
            mapper.process(p.baseAddress! + 1_200, frames: 600, target: .stereo)
        }
        let exact = Array(back[1_200...]).map(\.bitPattern) == Array(input[1_200...]).map(\.bitPattern)
        #expect(exact, "stereo again: bit-exact after the fade")
    }

    @Test func namesAndErrors() {
        #expect(ChannelMap.names == ["stereo", "left", "right", "mono", "swap"])
        #expect(ChannelMap(name: "LEFT") == .left && ChannelMap(name: "r") == .right && ChannelMap(name: "surround") == nil)
        #expect(ChannelMapError.unknownMap("surround").description == "'surround' is not a channel map: use one of stereo, left, right, mono, swap")
        #expect(ChannelMapError.speakerTooOld(room: "den", version: 7).description.contains("v7") &&
                ChannelMapError.speakerTooOld(room: "den", version: 7).description.contains("update"))
    }

    @Test func pairsAreOneRoomByName() throws {
        var pairs = StereoPairs()
        let known = ["bath", "living-l", "living-r"]
        let (p, ended) = try pairs.pair(left: "living-l", right: "living-r", name: "Living", known: known)
        #expect(p == StereoPair(name: "Living", left: "living-l", right: "living-r") && ended.isEmpty)
        #expect(pairs.collapse(known) == ["bath", "Living"])
        #expect(pairs.speakers(of: "Living") == ["living-l", "living-r"] && pairs.speakers(of: "living-r") == ["living-l", "living-r"])
        #expect(pairs.speakers(of: "bath") == ["bath"] && pairs.speakers(of: "living") == ["living-l", "living-r"])
        #expect(pairs.channelMap(of: "living-l") == .left && pairs.channelMap(of: "living-r") == .right && pairs.channelMap(of: "bath") == nil)
        // Swapped, by the pair's name or a speaker's; paired again reversed is a swap too.
        #expect(try pairs.swap("living-l") == StereoPair(name: "Living", left: "living-r", right: "living-l"))
        _ = try pairs.pair(left: "living-l", right: "living-r", known: known)
        #expect(pairs.pairs == [StereoPair(name: "Living", left: "living-l", right: "living-r")], "the name is kept")
        // Refusals, each with what to do.
        #expect(throws: ChannelMapError.sameRoom("bath")) { try pairs.pair(left: "bath", right: "bath", known: known) }
        #expect(throws: ChannelMapError.unknownRoom("attic", known: ["bath", "Living"])) { try pairs.pair(left: "bath", right: "attic", known: known) }
        #expect(throws: ChannelMapError.badPairName("Bath")) { try pairs.pair(left: "living-l", right: "living-r", name: "Bath", known: known) }
        #expect(throws: ChannelMapError.unknownPair("Kitchen", known: ["Living"])) { try pairs.unpair("Kitchen") }
        // A speaker paired anew leaves its old pair, which ends.
        let (again, ended2) = try pairs.pair(left: "bath", right: "living-r", known: known)
        #expect(again.name == "bath + living-r" && ended2.map(\.name) == ["Living"] && pairs.pairs.count == 1)
        #expect(try pairs.unpair("bath") == again && pairs.isEmpty)
        // Read leniently: a speaker in two saved pairs keeps its first.
        let saved = StereoPairs([StereoPair(name: "A", left: "x", right: "y"), StereoPair(name: "B", left: "y", right: "z"), StereoPair(name: "C", left: "q", right: "q")])
        #expect(saved.pairs.map(\.name) == ["A"])
    }
}
