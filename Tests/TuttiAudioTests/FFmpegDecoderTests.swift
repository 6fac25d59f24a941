import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTestSupport

/// Files made by Debian's ffmpeg at test time, decoded through FFmpeg: the
/// rate, the exact length (what the container declares equals what
/// decodes), the content lined up at lag 0, bit-exact lossless formats, and
/// sample-accurate seeking.
@Suite struct FFmpegDecoderTests {
    struct Format: CustomStringConvertible, Sendable {
        var name: String, ext: String, args: [String], rate: Int, lossless: Bool
        /// Frames a lossy encoder may add or drop at the end (its last block).
        var lengthSlack: Int
        var description: String { name }
    }

    static let formats: [Format] = [
        // A movie time scale of the sample rate, so the edit list can say where the audio ends to the sample.
        Format(name: "AAC (MP4)", ext: "m4a", args: ["-c:a", "aac", "-b:a", "192k", "-movie_timescale", "44100"], rate: 44_100, lossless: false, lengthSlack: 0),
        // Raw ADTS says nothing of the encoder's delay or padding: its 1,024 + up to 1,024 frames stay.
        Format(name: "AAC (ADTS)", ext: "aac", args: ["-c:a", "aac", "-b:a", "192k"], rate: 44_100, lossless: false, lengthSlack: 2_048),
        Format(name: "ALAC", ext: "m4a", args: ["-c:a", "alac"], rate: 44_100, lossless: true, lengthSlack: 0),
        Format(name: "Vorbis", ext: "ogg", args: ["-c:a", "libvorbis", "-q:a", "6"], rate: 44_100, lossless: false, lengthSlack: 0),
        Format(name: "Opus", ext: "opus", args: ["-c:a", "libopus", "-b:a", "160k"], rate: 48_000, lossless: false, lengthSlack: 0),
        // WMA declares no encoder delay, and ASF's timestamps are milliseconds.
        Format(name: "WMA", ext: "wma", args: ["-c:a", "wmav2", "-b:a", "192k"], rate: 44_100, lossless: false, lengthSlack: 4_096),
        Format(name: "WavPack", ext: "wv", args: ["-c:a", "wavpack"], rate: 44_100, lossless: true, lengthSlack: 0),
        Format(name: "AIFF", ext: "aiff", args: ["-c:a", "pcm_s16be"], rate: 44_100, lossless: true, lengthSlack: 0),
    ]

    /// 2.5 s of music-like sound plus an odd remainder (no codec's block size divides it).
    static func source(rate: Int) -> [Float] { TestSignal.music(seconds: Double(rate * 5 / 2 + 777) / Double(rate), rate: rate, percussion: false) }

    static func encode(_ format: Format, _ samples: [Float], dir: String, name: String = "in") throws -> String {
        let wav = "\(dir)/\(name).wav", out = "\(dir)/\(name).\(format.ext)"
        _ = FileManager.default.createFile(atPath: wav, contents: Data(TestSignal.wav16(samples, rate: format.rate)))
        try runTool(["ffmpeg", "-v", "error", "-y", "-i", wav] + format.args + [out])
        return out
    }

    static func decodeAll(_ decoder: any AudioDecoder) throws -> [Float] {
        var out: [Float] = []
        while try decoder.read(into: &out, maxFrames: 4_096) > 0 {}
        return out
    }

    @Test(arguments: formats)
    func decodesExactlyAndSeeksToTheSample(format: Format) throws {
        let dir = makeTemporaryDirectory("ff-\(format.ext)-\(format.lossless)")
        let source = Self.source(rate: format.rate)
        let frames = source.count / 2
        let path = try Self.encode(format, source, dir: dir)
        let decoder = try AudioFile.open(path)
        #expect(decoder is FFmpegDecoder)
        // Recognised by content too (a cached copy named without its extension).
        try FileManager.default.copyItem(atPath: path, toPath: dir + "/noname")
        #expect(try AudioFile.open(dir + "/noname") is FFmpegDecoder, "\(format) by its first bytes")
        #expect(decoder.sampleRate == format.rate)
        let decoded = try Self.decodeAll(decoder)
        let decodedFrames = decoded.count / 2
        print("\(format): \(frames) frames in, \(decodedFrames) decoded, \(decoder.frameCount ?? -1) declared")
        #expect(decoder.frameCount == decodedFrames || format.name == "WMA", "the declared length is what decodes")
        #expect(abs(decodedFrames - frames) <= format.lengthSlack, "length \(decodedFrames) vs \(frames)")
        let gaplessUnknown = ["AAC (ADTS)", "WMA"].contains(format.name)
        if format.lossless {
            let expected = source.map { Float(sampleToInt16($0)) / 32_768 }
            #expect(decoded == expected, "bit-exact")
        } else if !gaplessUnknown {
            let best = SignalMetrics.bestLag(source, aStart: 2 * 4_000, decoded, candidates: -64...64, count: 2 * format.rate / 2)
            print("\(format): start lag \(best.lag / 2) frames, correlation \(best.correlation)")
            #expect(best.lag == 0, "encoder delay removed: lag \(best.lag / 2) frames")
            #expect(best.correlation > 0.97)
        }
        // Seeking lands on the sample: what follows matches the whole decode there.
        for target in [format.rate + 12_345, 333] {
            try decoder.seek(toFrame: target)
            var out: [Float] = []
            while out.count < 2 * 4_800, try decoder.read(into: &out, maxFrames: 4_800 - out.count / 2) > 0 {}
            let error = Self.seekError(decoded, out, target: target)
            print("\(format): seek to \(target): \(error) frames off")
            #expect(error == 0, "seek to \(target) landed \(error) frames off")
        }
    }

    /// How many frames after (positive) or before `target` the output of a seek starts, by best correlation.
    static func seekError(_ decoded: [Float], _ out: [Float], target: Int) -> Int {
        var best = (lag: 0, c: -2.0)
        let count = 2 * 2_000
        for lag in -3_000...3_000 {
            let start = 2 * (target + lag)
            guard start >= 0, start + count <= decoded.count, count <= out.count else { continue }
            let c = SignalMetrics.correlation(decoded, start, out, 0, count: count)
            if c > best.c { best = (lag, c) }
        }
        return best.lag
    }

    /// One sine cut in two files at a point no codec block falls on:
    /// decoded back to back they join with no gap and no overlap. (AAC: FFmpeg's
    /// encoder writes no iTunSMPB; its edit list is exact when the movie time
    /// scale is the sample rate, as iTunes writes it, not with its default of 1000.)
    @Test(arguments: formats.filter { ["Opus", "Vorbis", "AAC (MP4)"].contains($0.name) })
    func consecutiveTracksJoinGaplessly(format: Format) throws {
        let dir = makeTemporaryDirectory("ff-join-\(format.ext)")
        let rate = format.rate
        let sine = TestSignal.sine(frequency: 441, seconds: 3, amplitude: 0.5, rate: rate)
        let cut = rate + 12_345
        let a = try Self.encode(format, Array(sine[0..<(2 * cut)]), dir: dir, name: "a")
        let b = try Self.encode(format, Array(sine[(2 * cut)...]), dir: dir, name: "b")
        let first = try Self.decodeAll(try AudioFile.open(a)), second = try Self.decodeAll(try AudioFile.open(b))
        let joined = first + second
        let lengthError = joined.count / 2 - sine.count / 2
        // Around the join, the joined decode lines up with the sine at lag 0.
        let best = SignalMetrics.bestLag(sine, aStart: 2 * (cut - 1_000), joined, candidates: -64...64, count: 2 * 2_000)
        print("\(format) join: \(first.count / 2) + \(second.count / 2) frames for \(cut) + \(sine.count / 2 - cut); lag \(best.lag / 2), correlation \(best.correlation)")
        #expect(lengthError == 0, "joined length off by \(lengthError) frames")
        #expect(best.lag == 0)
        #expect(best.correlation > 0.99)
    }

    @Test func iTunesGaplessDataCutsThePadding() throws {
        // " 00000000 delay padding length": the length is where the audio ends.
        #expect(FFmpegGapless.iTunesEnd(" 00000000 00000840 000001E4 00000000001CCB5C 00000000 00000000") == 0x1CCB5C)
        #expect(FFmpegGapless.iTunesEnd("garbage") == nil)
    }

    @Test func aDamagedFileIsReportedNotCrashed() throws {
        let dir = makeTemporaryDirectory()
        let path = try Self.encode(Self.formats[4], Self.source(rate: 48_000), dir: dir)
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        for i in stride(from: 4_000, to: bytes.count, by: 5) { bytes[i] ^= 0x5A }
        _ = FileManager.default.createFile(atPath: dir + "/bad.opus", contents: Data(bytes))
        // Either it opens and decodes what it can, or it throws naming the file.
        do {
            let d = try AudioFile.open(dir + "/bad.opus")
            _ = try? Self.decodeAll(d)
        } catch {
            #expect("\(error)".contains("bad.opus"))
        }
        _ = FileManager.default.createFile(atPath: dir + "/empty.m4a", contents: Data([0, 0, 0, 8] + Array("ftyp".utf8)))
        #expect(throws: AudioError.self) { try AudioFile.open(dir + "/empty.m4a") }
    }
}

/// DSD (a DSF file written here: ffmpeg has no DSD encoder) decodes to PCM
/// at an eighth of the bit rate, with the tone it carries and the length its header gives.
@Suite struct DSDDecoderTests {
    @Test func aDSFFileDecodesToItsToneAtAnEighthOfItsRate() throws {
        let dir = makeTemporaryDirectory()
        let (bytes, samples) = FFmpegCorpus.dsf(seconds: 0.5, frequency: 1_000, amplitude: 0.5)
        _ = FileManager.default.createFile(atPath: dir + "/tone.dsf", contents: Data(bytes))
        let decoder = try AudioFile.open(dir + "/tone.dsf")
        #expect(decoder.sampleRate == 352_800)
        let out = try FFmpegDecoderTests.decodeAll(decoder)
        print("DSF: \(samples) DSD samples → \(out.count / 2) frames at \(decoder.sampleRate) Hz, declared \(decoder.frameCount ?? -1)")
        #expect(decoder.frameCount == out.count / 2)
        #expect(abs(out.count / 2 - samples / 8) <= 4_096 / 8 * 8, "about \(samples / 8) frames")
        // The 1 kHz component's amplitude (least squares over the middle): the modulator's input, 0.5.
        var sn = 0.0, cs = 0.0
        let range = (out.count / 8)..<(3 * out.count / 8)
        for i in range {
            let a = 2 * Double.pi * 1_000 * Double(i) / 352_800
            sn += Double(out[2 * i]) * sin(a); cs += Double(out[2 * i]) * cos(a)
        }
        let amplitude = 2 * (sn * sn + cs * cs).squareRoot() / Double(range.count)
        print("DSF: 1 kHz at amplitude \(amplitude)")
        #expect(abs(amplitude - 0.5) < 0.1)
    }
}
