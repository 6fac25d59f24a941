import Foundation
import Testing
import TuttiAudio
import TuttiControlKit
import TuttiCore
import TuttiDaemon
import TuttiWebApp
import TuttiNet
import TuttiTestSupport

/// A Play here page that asks for Opus (a browser with WebCodecs) is sent
/// the same sound as one that asks for PCM, coded once for it and stamped
/// so that each decoded frame plays when the same frame would as PCM: two
/// raw pages (`PlayHereSocketTests.Page`) in one group, the Opus page's
/// packets decoded here with libopus as a browser's AudioDecoder does
/// (no Opus header, so no pre-skip trimmed), clicks compared on the leader's timeline.
@Suite(.serialized) struct PlayHereOpusTests {
    /// A 2 ms 2 kHz burst every 250 ms, as the browser test's clicks.
    static func clicks(seconds: Int) -> [Int16] {
        var samples = [Int16](repeating: 0, count: 48_000 * seconds * 2)
        for start in stride(from: 0, to: 48_000 * seconds, by: 12_000) {
            for i in 0..<96 {
                let v: Int16 = (i / 12) % 2 == 0 ? 24_000 : -24_000
                samples[2 * (start + i)] = v
                samples[2 * (start + i) + 1] = v
            }
        }
        return samples
    }

    /// What one page heard: its left channel on the leader's timeline (frame index from `base`), and its audio bytes.
    struct Heard {
        var left: [Int: Float] = [:]
        var bytes = 0
        var messages = 0
        var formats: Set<UInt8> = []
        var firstPTS: Int64 = .max
        var lastPTS: Int64 = .min
    }

    static func frame(_ pts: Int64, base: Int64) -> Int { Int(((Double(pts - base) * 48_000) / 1e9).rounded()) }

    /// Reads `seconds` of a page's audio; Opus packets are decoded in order as they come.
    static func listen(_ page: PlayHereSocketTests.Page, seconds: Double, base: Int64, into heard: inout Heard) throws {
        let decoder = try OpusChunkDecoder()
        let out = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 5_760)
        defer { out.deallocate() }
        var frames = 0
        while frames < Int(seconds * 48_000), let m = try page.next(type: 0x83) {
            try #require(m.count > PlayHere.audioHeaderBytes)
            let pts = PlayHereSocketTests.int64(m, 5)
            let count = Int((13..<17).reduce(UInt32(0)) { $0 << 8 | UInt32(m[$1]) })
            heard.bytes += m.count
            heard.messages += 1
            heard.formats.insert(m[17])
            heard.firstPTS = min(heard.firstPTS, pts)
            heard.lastPTS = max(heard.lastPTS, pts)
            let at = frame(pts, base: base)
            if m[17] == PlayHere.formatOpus {
                let n = try decoder.decode(Array(m[18...]), frames: count, into: out, maxFrames: 5_760)
                try #require(n == count, "an Opus packet of \(count) frames decoded to \(n)")
                for i in 0..<n { heard.left[at + i] = out[2 * i] }
            } else {
                try #require(m.count == PlayHere.audioHeaderBytes + 4 * count)
                for i in 0..<count {
                    heard.left[at + i] = Float(Int16(bitPattern: UInt16(m[18 + 4 * i]) | UInt16(m[19 + 4 * i]) << 8)) / 32_768
                }
            }
            frames += count
        }
    }

    /// Frames (on the timeline) where a click starts: above 30 % of full scale after 50 ms under it.
    static func onsets(_ left: [Int: Float]) -> [Int] {
        var out: [Int] = [], last = Int.min / 2
        for f in left.keys.sorted() where abs(left[f]!) > 0.3 * 24_000 / 32_768 {
            if f - last >= 2_400 { out.append(f) }
            last = f
        }
        return out
    }

    @Test func anOpusPageHearsThePCMPagesClicksAtTheSameFramesInATwelfthOfTheBytes() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/clicks.wav", wavImage(Self.clicks(seconds: 20)))
        let log = CapturingLog()
        let leader = try startLeader(files: [dir + "/clicks.wav"], loop: true, log: log.logger) { c in
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
        }
        defer { leader.stop() }
        let port = try #require(leader.webEndpoint).port
        let pcm = try PlayHereSocketTests.Page(port: port), opus = try PlayHereSocketTests.Page(port: port)
        pcm.send(binary: [0x02] + Array("pcm".utf8))
        opus.send(binary: [0x04, 0x03] + Array("opus".utf8)) // PCM or Opus: the leader sends Opus
        #expect(waitUntil(timeout: 10) { Set(leader.followerNames) == ["pcm", "opus"] }, "\(leader.followerNames)")
        let joined = "plays here as opus (Opus \(PlayHere.opusBitrateKbps) kb/s)"
        #expect(log.lines.contains { (line: String) in line.contains(joined) }, "\(log.lines.suffix(5))")

        // Both from the PCM page's first stamp on: 3 s of PCM, then the Opus page's (queued meanwhile) and 1 s more.
        var p = Heard(), o = Heard()
        let first = try #require(try pcm.next(type: 0x83))
        let base = PlayHereSocketTests.int64(first, 5)
        try Self.listen(pcm, seconds: 3, base: base, into: &p)
        try Self.listen(opus, seconds: 5, base: base, into: &o)
        #expect(p.formats == [PlayHere.formatS16], "the PCM page got formats \(p.formats)")
        #expect(o.formats == [PlayHere.formatOpus], "the Opus page got formats \(o.formats)")

        // Each click of the PCM page against the Opus page's nearest, in frames on the leader's timeline.
        let heardPCM = Self.onsets(p.left), heardOpus = Self.onsets(o.left)
        let shared = heardPCM.filter { $0 > (o.left.keys.min() ?? .max) + 2_400 && $0 < (o.left.keys.max() ?? .min) }
        let offsets = shared.compactMap { f in heardOpus.min { abs($0 - f) < abs($1 - f) }.map { $0 - f } }
        print("Opus against PCM: \(offsets.count) clicks, offsets (frames) \(offsets.min() ?? 0)…\(offsets.max() ?? 0)")
        #expect(offsets.count >= 8, "\(heardPCM.count) PCM clicks, \(heardOpus.count) Opus clicks, \(shared.count) in both")
        // Without the encoder's look-ahead taken off, each would be +312 (6.5 ms).
        #expect(offsets.allSatisfy { abs($0) <= 2 }, "Opus clicks off by \(offsets) frames")

        // Bytes per second of audio: PCM 192,000 and its headers; Opus about 128 kb/s.
        let seconds = { (h: Heard) in Double(h.lastPTS - h.firstPTS) / 1e9 + 0.02 }
        let pcmRate = Double(p.bytes) / seconds(p), opusRate = Double(o.bytes) / seconds(o)
        print(String(format: "audio bytes per second: PCM %.0f (%d messages), Opus %.0f (%d messages), %.1f×",
                     pcmRate, p.messages, opusRate, o.messages, pcmRate / opusRate))
        #expect(pcmRate > 190_000 && pcmRate < 200_000, "PCM \(pcmRate) B/s")
        #expect(opusRate < 24_000, "Opus \(opusRate) B/s, where 128 kb/s is 16,000")
    }
}
