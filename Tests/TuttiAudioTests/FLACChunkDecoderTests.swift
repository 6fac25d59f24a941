import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiTestSupport

/// A Sendspin server's FLAC, as a Tutti speaker decodes it (TuttiAudio's
/// `FLACChunkDecoder`, through libFLAC opened at first use): one frame a
/// chunk after the stream's STREAMINFO. Frames made by libFLAC's encoder and
/// by FFmpeg's (aiosendspin's server encodes with FFmpeg through PyAV).
struct FLACChunkDecoderTests {
    /// A tone on `bits`-bit steps, left and right apart, interleaved, as floats the encoder takes exactly.
    func steppedTone(frames: Int, bits: Int) -> [Float] {
        let full = Float(Int64(1) << Int64(bits - 1))
        var input: [Float] = []
        for i in 0..<frames {
            let q = (sin(Double(i) * 2 * Double.pi * 440 / 48_000) * Double(full) * 0.37).rounded()
            input += [Float(q) / full, Float((-q / 2).rounded()) / full]
        }
        return input
    }

    /// libFLAC's frames (`FLACFrameEncoder`, the leader's) at 16 and 24 bits
    /// come back sample for sample, each frame as long as its block; a frame
    /// cut short or with one bit flipped is an error, and the next decodes.
    @Test(arguments: [16, 24])
    func libFLACsFramesDecodeExactlyAndABadFrameDoesNotStopTheNext(bits: Int) throws {
        let encoder = try FLACFrameEncoder(sampleRate: 48_000, channels: 2, bitsPerSample: bits, blockSize: 960)
        let input = steppedTone(frames: 960 * 12, bits: bits)
        var frames: [[UInt8]] = []
        for block in 0..<12 {
            let out = try encoder.encode(Array(input[(block * 1_920)..<((block + 1) * 1_920)]), frames: 960)
            if !out.isEmpty { frames.append(out) }
        }
        #expect(frames.count >= 10)
        let decoder = try FLACChunkDecoder(header: encoder.header)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: WireProtocol.maxChunkFrames * 2)
        defer { output.deallocate() }
        var exact = 0
        for (k, frame) in frames.enumerated() {
            #expect(CodecFrames.flacSamples(frame) == 960)
            if k == 4 {
                #expect(throws: AudioError.self) { try decoder.decode(Array(frame.prefix(frame.count / 2)), frames: 960, into: output, maxFrames: 4_800) }
                var flipped = frame
                flipped[frame.count / 2] ^= 0x10
                #expect(throws: AudioError.self) { try decoder.decode(flipped, frames: 960, into: output, maxFrames: 4_800) }
                #expect(throws: AudioError.self) { try decoder.decode([], frames: 960, into: output, maxFrames: 4_800) }
                // Two frames in one chunk: the first plays, the rest is dropped (one frame a chunk).
                #expect(try decoder.decode(frame + frames[k + 1], frames: 960, into: output, maxFrames: 4_800) == 960)
                continue
            }
            let n = try decoder.decode(frame, frames: 960, into: output, maxFrames: WireProtocol.maxChunkFrames)
            #expect(n == 960)
            var worst: Float = 0
            for i in 0..<(n * 2) { worst = max(worst, abs(output[i] - input[k * 1_920 + i])) }
            #expect(worst == 0, "frame \(k): largest difference \(worst)")
            if worst == 0 { exact += 1 }
        }
        #expect(exact == frames.count - 1)
    }

    /// Whatever a server sends, nothing crashes: every prefix of a frame,
    /// every single-byte corruption of it, random bytes, and a header cut
    /// short or missing (then a frame that names its own depth and rate still
    /// decodes).
    @Test func cutAndCorruptedFramesAreErrorsNeverCrashes() throws {
        let encoder = try FLACFrameEncoder(sampleRate: 48_000, channels: 2, bitsPerSample: 16, blockSize: 960)
        let input = steppedTone(frames: 960 * 3, bits: 16)
        var frames: [[UInt8]] = []
        for block in 0..<3 { let out = try encoder.encode(Array(input[(block * 1_920)..<((block + 1) * 1_920)]), frames: 960); if !out.isEmpty { frames.append(out) } }
        let frame = try #require(frames.first)
        let decoder = try FLACChunkDecoder(header: encoder.header)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: 65_536 * 2)
        defer { output.deallocate() }
        var failed = 0
        for cut in 0..<frame.count {
            do { _ = try decoder.decode(Array(frame.prefix(cut)), frames: 960, into: output, maxFrames: 65_536) } catch { failed += 1 }
        }
        #expect(failed == frame.count, "every cut frame is an error")
        var corrupt = 0
        for at in stride(from: 0, to: frame.count, by: 3) {
            var bad = frame
            bad[at] ^= 0x5a
            do { _ = try decoder.decode(bad, frames: 960, into: output, maxFrames: 65_536) } catch { corrupt += 1 }
        }
        // CRC-8 guards the header, CRC-16 the whole frame: a changed byte never passes.
        #expect(corrupt == (frame.count + 2) / 3)
        var generator = SystemRandomNumberGenerator()
        for size in [1, 2, 16, 700, 5_000] {
            let noise = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? decoder.decode(noise, frames: 960, into: output, maxFrames: 65_536)
            _ = try? decoder.decode([0xff, 0xf8] + noise, frames: 960, into: output, maxFrames: 65_536)
        }
        // After all that, a good frame decodes exactly.
        #expect(try decoder.decode(frame, frames: 960, into: output, maxFrames: 65_536) == 960)
        #expect((0..<1_920).allSatisfy { output[$0] == input[$0] })
        // A header cut in its STREAMINFO is refused at once.
        #expect(throws: AudioError.self) { try FLACChunkDecoder(header: Array(encoder.header.prefix(20))) }
        // No header: libFLAC's frames name their rate and depth, so they decode.
        let headless = try FLACChunkDecoder(header: [])
        #expect(try headless.decode(frame, frames: 960, into: output, maxFrames: 65_536) == 960)
        #expect((0..<1_920).allSatisfy { output[$0] == input[$0] })
    }

    /// FFmpeg's encoder at its strongest setting (LPC up to order 12, every
    /// stereo mode), 16 and 24 bits, cut into frames as a server sends them:
    /// every frame decodes to what FFmpeg decodes, sample for sample.
    @Test(arguments: [("s16", 16), ("s32", 24)])
    func ffmpegsFramesDecodeToWhatFFmpegDecodes(format: String, bits: Int) throws {
        let dir = makeTemporaryDirectory()
        let flac = dir + "/x.flac"
        // Noise and two tones, so the encoder uses every kind of subframe.
        let made = try runProgram("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2",
                                                      "-f", "lavfi", "-i", "anoisesrc=d=2:c=pink:r=48000:a=0.3",
                                                      "-filter_complex", "[0][1]amerge=inputs=2,pan=stereo|c0<c0+0.2*c1|c1<c1",
                                                      "-c:a", "flac", "-compression_level", "12", "-sample_fmt", format,
                                                      "-bits_per_raw_sample", String(bits), flac])
        #expect(made.status == 0, "\(made.err)")
        let raw = dir + "/x.raw"
        _ = try runProgram("/usr/bin/ffmpeg", ["-v", "error", "-i", flac, "-f", "s32le", "-acodec", "pcm_s32le", raw])
        let expected: [Int32] = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Int32.self)) }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: flac)))
        // "fLaC" and the metadata blocks: the codec_header.
        var at = 4
        var last = false
        while !last {
            last = bytes[at] & 0x80 != 0
            at += 4 + (Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]))
        }
        let decoder = try FLACChunkDecoder(header: Array(bytes[0..<at]))
        let output = UnsafeMutablePointer<Float>.allocate(capacity: 65_536 * 2)
        defer { output.deallocate() }
        // Where frames may start (a sync code); a frame ends where the shortest chunk
        // from its start decodes (one cut at a sync code inside the data fails its CRC).
        let syncs = (at..<(bytes.count - 1)).filter { bytes[$0] == 0xff && bytes[$0 + 1] & 0xfe == 0xf8 } + [bytes.count]
        let scale = Float(Int64(1) << Int64(bits - 1))
        var frame = 0, decoded = 0, mismatches = 0, falseSyncs = 0
        while at < bytes.count {
            var next: Int?
            for end in syncs where end > at {
                let chunk = Array(bytes[at..<end])
                guard let n = try? decoder.decode(chunk, frames: CodecFrames.flacSamples(chunk) ?? 0, into: output, maxFrames: 65_536) else { falseSyncs += 1; continue }
                #expect(n == CodecFrames.flacSamples(chunk), "frame \(frame): \(n) samples")
                for i in 0..<n {
                    for c in 0..<2 where Int32(output[2 * i + c] * scale) << (32 - bits) != expected[2 * (decoded + i) + c] { mismatches += 1 }
                }
                decoded += n
                next = end
                break
            }
            at = try #require(next, "frame \(frame) at byte \(at) never decoded")
            frame += 1
        }
        #expect(decoded * 2 == expected.count, "\(decoded) frames decoded, FFmpeg \(expected.count / 2)")
        #expect(mismatches == 0, "\(mismatches) samples differ over \(frame) FLAC frames (\(falseSyncs) sync codes inside frames)")
        #expect(frame > 10)
    }
}
