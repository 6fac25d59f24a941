import Foundation
import Testing
import TuttiCore
import TuttiDecode
import TuttiTestSupport

/// Previews' Ogg Opus (TuttiDecode's `OggOpusWriter`: TuttiCore's
/// `OpusOggMapping` in pages written by libogg) read back by readers that
/// are not ours: oggz-validate (liboggz: page order, checksums, granules),
/// opusinfo (opus-tools: the RFC 7845 mapping, its length), ffprobe and
/// ffmpeg (libavformat, what a browser's demuxer is closest to).
@Suite struct OggOpusWriterTests {
    /// One page read back: flags, granule, serial, sequence, and the sizes of the packets that end on it.
    struct Page { var flags: UInt8; var granule: Int64; var serial: UInt32; var sequence: UInt32; var ended: [Int]; var continues: Bool }

    /// The pages' headers as RFC 3533 lays them out (the checksums are oggz-validate's to check).
    func pages(_ bytes: [UInt8]) -> [Page] {
        func le(_ at: Int, _ n: Int) -> UInt64 { (0..<n).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) } }
        var out: [Page] = []
        var at = 0, partial = 0
        while at + 27 <= bytes.count, Array(bytes[at..<at + 4]) == Array("OggS".utf8) {
            let segments = Int(bytes[at + 26])
            let lacing = bytes[(at + 27)..<(at + 27 + segments)]
            var ended: [Int] = []
            for l in lacing {
                partial += Int(l)
                if l < 255 { ended.append(partial); partial = 0 }
            }
            out.append(Page(flags: bytes[at + 5], granule: Int64(bitPattern: le(at + 6, 8)), serial: UInt32(le(at + 14, 4)),
                            sequence: UInt32(le(at + 18, 4)), ended: ended, continues: partial > 0))
            at += 27 + segments + lacing.reduce(0) { $0 + Int($1) }
        }
        #expect(at == bytes.count, "pages cover the file: \(at) of \(bytes.count) bytes")
        return out
    }

    @Test func thirdPartyReadersTakeAPreviewWithItsExactLength() throws {
        for tool in ["/usr/bin/ffmpeg", "/usr/bin/ffprobe", "/usr/bin/opusinfo", "/usr/bin/oggz-validate"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let dir = makeTemporaryDirectory()
        // 3.3 s of 1 kHz at 48 kHz, a length that ends inside a packet: 158,437 samples.
        let samples = 158_437
        var pcm = [Float](repeating: 0, count: samples * 2)
        for i in 0..<samples {
            let v = Float(0.3 * sin(2 * Double.pi * 1_000 * Double(i) / 48_000))
            pcm[2 * i] = v; pcm[2 * i + 1] = v
        }
        let bytes = try PreviewEncoder.encodeOpus(pcm)
        #expect(try PreviewEncoder.encodeOpus(pcm) == bytes, "the same audio is the same file")
        let file = dir + "/preview.opus"
        try Data(bytes).write(to: URL(fileURLWithPath: file))

        // The pages: both headers alone on a page each, then audio pages whose
        // granule counts the 20 ms packets completed on them, the last marked.
        let p = pages(bytes)
        let preSkip = Int(bytes[28 + 10]) | Int(bytes[28 + 11]) << 8
        let packets = (samples + preSkip + 959) / 960
        #expect(p.count >= 4, "\(p.count) pages")
        #expect(p.map { $0.sequence } == (0..<UInt32(p.count)).map { $0 }, "pages numbered in order")
        #expect(Set(p.map { $0.serial }).count == 1)
        #expect(p[0].flags == 0x02 && p[0].granule == 0 && p[0].ended == [19], "OpusHead alone, first: \(p[0])")
        #expect(p[1].flags == 0 && p[1].granule == 0 && p[1].ended.count == 1 && !p[1].continues, "OpusTags alone: \(p[1])")
        var completed = 0
        for (i, page) in p.enumerated().dropFirst(2) {
            completed += page.ended.count
            let expected = i == p.count - 1 ? Int64(preSkip + samples) : Int64(completed * 960)
            #expect(page.granule == expected, "page \(i): granule \(page.granule), \(completed) packets ended by it")
            #expect(page.flags & 0x04 == (i == p.count - 1 ? 0x04 : 0), "only the last page ends the stream: page \(i) flags \(page.flags)")
        }
        #expect(completed == packets, "\(completed) audio packets of 20 ms, \(packets) expected for \(samples) samples and a pre-skip of \(preSkip)")

        // liboggz: every page's checksum, order, granules that never go back, the stream's start and end.
        let validate = try runProgram("/usr/bin/oggz-validate", [file], mergeErrors: true)
        #expect(validate.status == 0, "oggz-validate: \(validate.out)")

        // opus-tools: the mapping as RFC 7845 reads it, and the length after pre-skip and end trimming.
        let info = try runProgram("/usr/bin/opusinfo", [file], mergeErrors: true)
        print("opusinfo:\n\(info.out)")
        #expect(info.status == 0, "opusinfo: \(info.out)")
        #expect(!info.out.contains("WARNING") && !info.out.contains("ERROR"), "opusinfo finds fault: \(info.out)")
        #expect(info.out.contains("Pre-skip: \(preSkip)") && info.out.contains("Channels: 2"), "\(info.out)")
        let ms = samples * 1_000 / 48_000 // opusinfo truncates to the millisecond
        let length = "Playback length: \(ms / 60_000)m:" + String(format: "%02d.%03ds", ms / 1_000 % 60, ms % 1_000)
        #expect(info.out.contains(length), "opusinfo's length, \(length) expected: \(info.out)")

        // libavformat: its duration, and a decode with no error of exactly the samples written.
        let probe = try runProgram("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels,duration_ts",
                                                         "-of", "default=nw=1", file], mergeErrors: true)
        #expect(probe.status == 0 && probe.out.contains("codec_name=opus") && probe.out.contains("channels=2"), "ffprobe: \(probe.out)")
        let ticks = probe.out.split(separator: "\n").first { $0.hasPrefix("duration_ts=") }.flatMap { Int($0.dropFirst(12)) } ?? -1
        #expect(abs(ticks - samples) <= 960, "ffprobe: \(ticks) samples at 48 kHz, \(samples) written (1 packet is 960)")
        let decode = try runProgram("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", file, "-f", "s16le", "-ac", "2", "-ar", "48000", dir + "/out.raw"],
                                    mergeErrors: true)
        #expect(decode.status == 0 && decode.out.isEmpty, "ffmpeg decoded with errors: \(decode.out)")
        let decoded = (try? Data(contentsOf: URL(fileURLWithPath: dir + "/out.raw")).count) ?? 0
        #expect(decoded / 4 == samples, "ffmpeg decoded \(decoded / 4) samples, \(samples) written")
        print("Ogg Opus: \(bytes.count) bytes, \(p.count) pages, \(completed) packets, pre-skip \(preSkip); ffprobe \(ticks) samples, ffmpeg \(decoded / 4), written \(samples)")
    }
}
