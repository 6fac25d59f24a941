import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTestSupport


private func decodeAll(_ path: String) throws -> (samples: [Float], rate: Int) {
    let decoder = try AudioFile.open(path)
    var out: [Float] = []
    while try decoder.read(into: &out, maxFrames: 4_096) > 0 {}
    return (out, decoder.sampleRate)
}

@Suite struct DecoderTests {
    @Test(arguments: [44_100, 48_000])
    func mp3IsGaplessAndKeepsContent(rate: Int) throws {
        let dir = makeTemporaryDirectory("mp3\(rate)")
        let frames = rate * 2 + 777   // not a multiple of the 1152-sample MP3 frame
        let source = TestSignal.music(seconds: Double(frames) / Double(rate), rate: rate, percussion: false)
        _ = FileManager.default.createFile(atPath: dir + "/in.wav", contents: Data(TestSignal.wav16(source, rate: rate)))
        try runTool(["lame", "--quiet", "-b", "256", dir + "/in.wav", dir + "/in.mp3"])
        let (decoded, decodedRate) = try decodeAll(dir + "/in.mp3")
        #expect(decodedRate == rate)
        let decodedFrames = decoded.count / 2
        print("mp3 at \(rate) Hz: \(frames) frames in, \(decodedFrames) out")
        #expect(abs(decodedFrames - frames) <= 1_152, "gapless length: \(decodedFrames) vs \(frames)")
        // Encoder delay removed: the content lines up at lag 0 (within a few samples).
        let best = SignalMetrics.bestLag(source, aStart: 2 * 4_000, decoded, candidates: -40...40, count: 2 * rate)
        #expect(abs(best.lag) <= 4, "lag \(best.lag / 2) frames")
        #expect(best.correlation > 0.99, "correlation \(best.correlation)")
        let mp3 = try MP3Decoder(path: dir + "/in.mp3")
        #expect(abs((mp3.frameCount ?? 0) - frames) <= 1_152)
    }

    @Test func flacIsLosslessAndSeeksExactly() throws {
        let dir = makeTemporaryDirectory()
        let source = TestSignal.music(seconds: 2, rate: 44_100)
        _ = FileManager.default.createFile(atPath: dir + "/in.wav", contents: Data(TestSignal.wav16(source, rate: 44_100)))
        try runTool(["flac", "--silent", "-f", "-o", dir + "/in.flac", dir + "/in.wav"])
        let expected = source.map { Float(sampleToInt16($0)) / 32768 }
        let (decoded, rate) = try decodeAll(dir + "/in.flac")
        #expect(rate == 44_100)
        #expect(decoded == expected, "bit-exact: \(decoded.count) vs \(expected.count) samples")
        let flac = try FLACDecoder(path: dir + "/in.flac")
        #expect(flac.frameCount == expected.count / 2)
        try flac.seek(toFrame: 50_000)
        var out: [Float] = []
        _ = try flac.read(into: &out, maxFrames: 1_000)
        #expect(Array(out.prefix(2_000)) == Array(expected[100_000..<102_000]))
        // A damaged file is reported, never crashes.
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: dir + "/in.flac")))
        for i in stride(from: 8_000, to: min(bytes.count, 40_000), by: 7) { bytes[i] ^= 0x5A }
        _ = FileManager.default.createFile(atPath: dir + "/bad.flac", contents: Data(bytes))
        do {
            let d = try AudioFile.open(dir + "/bad.flac")
            var sink: [Float] = []
            while try d.read(into: &sink, maxFrames: 4_096) > 0 {}
            Issue.record("corrupt FLAC decoded without an error")
        } catch {
            #expect("\(error)".contains("bad.flac"))
        }
    }

    @Test func wavFormatsDecodeToTheSameSignal() throws {
        let dir = makeTemporaryDirectory()
        let n = 4_800
        // 24-bit mono, 32-bit float stereo, 32-bit int stereo of one ramp.
        var mono24 = wavHeader(sampleRate: 48_000, channels: 1, bitsPerSample: 24, dataBytes: n * 3)
        var float32 = wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 32, float: true, dataBytes: n * 8)
        var int32 = wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 32, dataBytes: n * 8)
        var expected: [Float] = []
        for i in 0..<n {
            let v = Int32(i * 1_000 - 2_400_000) // within 24-bit range
            expected.append(Float(v) / 8_388_608); expected.append(Float(v) / 8_388_608)
            mono24 += [UInt8(v & 0xff), UInt8((v >> 8) & 0xff), UInt8((v >> 16) & 0xff)]
            let f = (Float(v) / 8_388_608).bitPattern
            for _ in 0..<2 { float32 += [UInt8(f & 0xff), UInt8((f >> 8) & 0xff), UInt8((f >> 16) & 0xff), UInt8(f >> 24)] }
            let w = UInt32(bitPattern: v << 8)
            for _ in 0..<2 { int32 += [UInt8(w & 0xff), UInt8((w >> 8) & 0xff), UInt8((w >> 16) & 0xff), UInt8(w >> 24)] }
        }
        for (name, bytes) in [("m24", mono24), ("f32", float32), ("i32", int32)] {
            _ = FileManager.default.createFile(atPath: "\(dir)/\(name).wav", contents: Data(bytes))
            let (decoded, rate) = try decodeAll("\(dir)/\(name).wav")
            #expect(rate == 48_000)
            #expect(decoded.count == expected.count, "\(name)")
            let worst = zip(decoded, expected).map { abs($0 - $1) }.max() ?? 1
            #expect(worst < 1e-6, "\(name): max error \(worst)")
        }
    }

    @Test func unreadableFilesGiveClearErrors() throws {
        let dir = makeTemporaryDirectory()
        #expect(throws: AudioError.self) { try AudioFile.open(dir + "/nope.mp3") }
        _ = FileManager.default.createFile(atPath: dir + "/empty.mp3", contents: Data())
        do { _ = try AudioFile.open(dir + "/empty.mp3"); Issue.record("empty file opened") } catch {
            #expect("\(error)".contains("empty.mp3"))
        }
        _ = FileManager.default.createFile(atPath: dir + "/bad.wav", contents: Data("RIFF\0\0\0\0WAVEfmt \u{10}\0\0\0".utf8))
        do { _ = try AudioFile.open(dir + "/bad.wav"); Issue.record("truncated WAV opened") } catch {
            #expect("\(error)".contains("bad.wav"))
        }
        _ = FileManager.default.createFile(atPath: dir + "/text.mp3", contents: Data(String(repeating: "not audio ", count: 500).utf8))
        do {
            let d = try AudioFile.open(dir + "/text.mp3")
            var out: [Float] = []
            _ = try d.read(into: &out, maxFrames: 1_024)
            Issue.record("text decoded as MP3")
        } catch {
            #expect("\(error)".contains("text.mp3"))
        }
    }

    @Test func soxrResamplesLengthAndContent() throws {
        let source = TestSignal.sine(frequency: 997, seconds: 1, rate: 44_100)
        let resampler = try SoxrResampler(inputRate: 44_100)
        var out: [Float] = []
        // Feed in uneven blocks, then drain: the total must be the exact 48 kHz length.
        var offset = 0
        for block in [1, 100, 4_095, 10_000, 29_904] {
            try source.withUnsafeBufferPointer { try resampler.process($0.baseAddress! + 2 * offset, frames: block, into: &out) }
            offset += block
        }
        try resampler.finish(into: &out)
        #expect(abs(out.count / 2 - 48_000) <= 2, "\(out.count / 2) frames")
        let ideal = TestSignal.sine(frequency: 997, seconds: 1, rate: 48_000)
        let snr = SignalMetrics.snr(ideal, 2 * 2_000, out, 2 * 2_000, count: 2 * 40_000)
        #expect(snr > 80, "SNR \(snr) dB")
    }
}
