import Foundation
import Testing
import TuttiControlClient
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiNet
import TuttiTestSupport

/// A Play here page's room has a channel map and an EQ like any room: the
/// leader makes them in the PCM it sends the page. Heard through the
/// WebSocket by a raw client (`PlayHereSocketTests.Page`), chunk by chunk.
@Suite(.serialized) struct PlayHereSoundTests {
    static let toneAmplitude = 0.2
    static let trackFrames = 48_000 * 20

    /// 1 kHz on the left, 440 Hz on the right, each over a little noise so
    /// that every chunk's first two frames say where in the track it is.
    static func track() -> [Int16] {
        var random = SplitMix64(seed: 32)
        var out: [Int16] = []
        out.reserveCapacity(2 * trackFrames)
        for i in 0..<trackFrames {
            let t = Double(i) / 48_000
            for f in [1_000.0, 440.0] {
                let noise = Double(Int(random.next() % 601) - 300) / 32_768 // ±300 LSB
                out.append(sampleToInt16(Float(toneAmplitude * sin(2 * Double.pi * f * t) + noise)))
            }
        }
        return out
    }

    /// One audio message: its PTS and its samples (interleaved 16-bit stereo).
    struct Heard {
        var pts: Int64
        var samples: [Int16]
        var frames: Int { samples.count / 2 }
    }

    static func audio(_ message: [UInt8]) throws -> Heard {
        try #require(message.count >= PlayHere.audioHeaderBytes && message[17] == PlayHere.formatS16)
        let frames = Int((13..<17).reduce(UInt32(0)) { $0 << 8 | UInt32(message[$1]) })
        try #require(message.count == PlayHere.audioHeaderBytes + 4 * frames, "\(frames) frames in \(message.count) bytes")
        var samples = [Int16](repeating: 0, count: 2 * frames)
        for i in 0..<(2 * frames) {
            samples[i] = Int16(bitPattern: UInt16(message[18 + 2 * i]) | UInt16(message[19 + 2 * i]) << 8)
        }
        return Heard(pts: PlayHereSocketTests.int64(message, 5), samples: samples)
    }

    /// Where each chunk starts in the track, by its first two frames.
    struct TrackIndex {
        let track: [Int16]
        var start: [UInt64: Int] = [:]

        init(_ track: [Int16]) {
            self.track = track
            for i in 0..<(track.count / 2 - 1) { start[Self.key(track, i)] = i }
        }

        static func key(_ s: [Int16], _ frame: Int) -> UInt64 {
            (0..<4).reduce(UInt64(0)) { $0 << 16 | UInt64(UInt16(bitPattern: s[2 * frame + $1])) }
        }

        /// The chunk is the track's own samples, bit for bit.
        func isExact(_ chunk: Heard) -> Bool {
            guard chunk.frames >= 2, let at = start[Self.key(chunk.samples, 0)], 2 * at + chunk.samples.count <= track.count else { return false }
            return track[(2 * at)..<(2 * at + chunk.samples.count)].elementsEqual(chunk.samples)
        }
    }

    /// Reads the page's audio until `until` holds for a chunk (at most `seconds` of audio); nil if it never did.
    static func skip(_ page: PlayHereSocketTests.Page, seconds: Double, until: (Heard) -> Bool) throws -> Heard? {
        var frames = 0
        while frames < Int(seconds * 48_000), let message = try page.next(type: 0x83) {
            let chunk = try audio(message)
            if until(chunk) { return chunk }
            frames += chunk.frames
        }
        return nil
    }

    /// The next `seconds` of the page's audio, in order.
    static func read(_ page: PlayHereSocketTests.Page, seconds: Double) throws -> [Heard] {
        var out: [Heard] = [], frames = 0
        while frames < Int(seconds * 48_000), let message = try page.next(type: 0x83) {
            out.append(try audio(message))
            frames += out.last!.frames
        }
        return out
    }

    /// Both outputs carry the same samples.
    static func bothAlike(_ c: Heard) -> Bool {
        stride(from: 0, to: c.samples.count, by: 2).allSatisfy { (i: Int) -> Bool in c.samples[i] == c.samples[i + 1] }
    }

    /// Level of `frequency` on one output over one chunk, dB re the tone sent.
    static func level(_ chunk: Heard, channel: Int, frequency: Double) -> Double {
        20 * log10(max(channelToneAmplitude(chunk.samples, channel: channel, start: 0, count: chunk.frames, frequency: frequency), 1e-12) / toneAmplitude)
    }

    @Test func aBrowserRoomPlaysItsChannelMapAndEQMadeAtTheLeaderAndStereoFlatBitExact() throws {
        let dir = makeTemporaryDirectory()
        let track = Self.track()
        writeFile(dir + "/tones.wav", wavImage(track))
        let index = TrackIndex(track)
        let leader = try startLeader(files: [dir + "/tones.wav"], loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
        }
        defer { leader.stop() }
        let page = try PlayHereSocketTests.Page(port: try #require(leader.webEndpoint).port)
        page.send(binary: [0x02] + Array("phone".utf8))
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["phone"] }, "\(leader.followerNames)")
        let rpc = try ControlClient(endpoint: try #require(leader.controlEndpoint))

        // Stereo and flat: the page gets the stream bit for bit (once past the track's first 20 ms, where play fades in).
        try #require(try Self.skip(page, seconds: 5, until: index.isExact) != nil, "no chunk of the track as it is")
        let plain = try Self.read(page, seconds: 1)
        #expect(plain.allSatisfy(index.isExact), "\(plain.filter { !index.isExact($0) }.count) of \(plain.count) chunks changed at stereo/flat")

        // Left: both outputs play the left channel (1 kHz), exactly; the right's 440 Hz is gone.
        let mapped = try rpc.call("rooms.setChannels", ["room": "phone", "channels": "left"]).object
        #expect(mapped?["channels"]?.string == "left")
        #expect(leader.channels(of: "phone") == .left)
        try #require(try Self.skip(page, seconds: 5, until: Self.bothAlike) != nil, "the page never heard its left channel on both outputs")
        let left = try Self.read(page, seconds: 1)
        #expect(left.allSatisfy(Self.bothAlike), "both outputs are the left channel's samples")
        // Over the whole second (whole periods of both tones: no leakage from 1 kHz into 440 Hz), on either output.
        let second = Heard(pts: left.first?.pts ?? 0, samples: left.flatMap(\.samples))
        let right440 = max(Self.level(second, channel: 1, frequency: 440), Self.level(second, channel: 0, frequency: 440))
        let right1k: [Double] = left.map { Self.level($0, channel: 1, frequency: 1_000) }
        print(String(format: "channel map left: right output 1 kHz %+.2f…%+.2f dB (per chunk), 440 Hz %.1f dB (over 1 s, either output)",
                     right1k.min() ?? 0, right1k.max() ?? 0, right440))
        #expect(right440 < -60, "the right channel's 440 Hz: \(right440) dB")
        #expect(second.frames >= 48_000)
        #expect(right1k.allSatisfy { abs($0) < 0.2 }, "\(right1k)")

        // An EQ: the 1 kHz band −6 dB (a cut: the automatic preamp stays 0 dB).
        var gains = [Double](repeating: 0, count: 10)
        gains[5] = -6
        _ = try rpc.call("rooms.setEq", ["room": "phone", "gains": .numbers(gains)])
        #expect(leader.equalizer(of: "phone").settings.gains == gains)
        try #require(try Self.skip(page, seconds: 5, until: { (c: Heard) -> Bool in Self.level(c, channel: 0, frequency: 1_000) < -3 }) != nil, "the EQ was never heard")
        _ = try Self.read(page, seconds: 0.1) // the filter settles
        let cut: [Double] = try Self.read(page, seconds: 1).map { Self.level($0, channel: 0, frequency: 1_000) }.sorted()
        let median = cut[cut.count / 2]
        print(String(format: "EQ 1 kHz −6 dB: heard %+.2f dB (median of %d chunks; %+.2f…%+.2f)", median, cut.count, cut.first!, cut.last!))
        #expect(abs(median + 6) <= 1 && cut.allSatisfy { abs($0 + 6) <= 1 }, "\(cut)")

        // Back to stereo and flat: bit for bit again, once both have faded out.
        _ = try rpc.call("rooms.setChannels", ["room": "phone", "channels": "stereo"])
        _ = try rpc.call("rooms.setEq", ["room": "phone", "preset": "Flat"])
        try #require(try Self.skip(page, seconds: 5, until: index.isExact) != nil, "never bit-exact again")
        let again = try Self.read(page, seconds: 1)
        #expect(again.allSatisfy(index.isExact), "\(again.filter { !index.isExact($0) }.count) of \(again.count) chunks changed")
    }
}
