import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTestSupport

/// A Sendspin server's FLAC, as a Tutti speaker decodes it (TuttiCore's
/// `FLACFrameDecoder`, no libFLAC): one frame a chunk after the stream's
/// STREAMINFO. Frames made by libFLAC's encoder and by FFmpeg's.
struct FLACChunkDecoderTests {
    /// 16-bit audio through libFLAC's frames comes back sample for sample,
    /// each frame as long as its block; a cut frame fails and the next decodes.
    @Test func libFLACsFramesDecodeExactlyAndACutFrameDoesNotStopTheNext() throws {
        let encoder = try FLACFrameEncoder(sampleRate: 48_000, channels: 2, bitsPerSample: 16, blockSize: 960)
        // A 440 Hz tone on 16-bit steps, left and right apart.
        var input: [Float] = []
        for i in 0..<(960 * 12) {
            let q = Int((sin(Double(i) * 2 * Double.pi * 440 / 48_000) * 12_000).rounded())
            input += [Float(q) / 32_768, Float(-q / 2) / 32_768]
        }
        var frames: [[UInt8]] = []
        for block in 0..<12 {
            let out = try encoder.encode(Array(input[(block * 1_920)..<((block + 1) * 1_920)]), frames: 960)
            if !out.isEmpty { frames.append(out) }
        }
        #expect(frames.count >= 10)
        #expect(FLACFrameDecoder.streamBitsPerSample(header: encoder.header) == 16)
        let decoder = FLACChunkDecoder(header: encoder.header)
        let output = UnsafeMutablePointer<Float>.allocate(capacity: WireProtocol.maxChunkFrames * 2)
        defer { output.deallocate() }
        for (k, frame) in frames.enumerated() {
            #expect(CodecFrames.flacSamples(frame) == 960)
            if k == 4 {
                // A frame cut short, or one bit flipped: an error (the caller conceals), then the next frame decodes.
                #expect(throws: AudioError.self) { try decoder.decode(Array(frame.prefix(frame.count / 2)), frames: 960, into: output, maxFrames: 4_800) }
                var flipped = frame
                flipped[frame.count / 2] ^= 0x10
                #expect(throws: AudioError.self) { try decoder.decode(flipped, frames: 960, into: output, maxFrames: 4_800) }
                continue
            }
            let n = try decoder.decode(frame, frames: 960, into: output, maxFrames: WireProtocol.maxChunkFrames)
            #expect(n == 960)
            var worst: Float = 0
            for i in 0..<(n * 2) { worst = max(worst, abs(output[i] - input[k * 1_920 + i])) }
            #expect(worst == 0, "frame \(k): largest difference \(worst)")
        }
    }

    /// FFmpeg's encoder (the one aiosendspin's server uses, through PyAV) at
    /// its strongest setting (LPC up to order 12, every stereo mode) and at
    /// 24 bits: every frame of the file decodes to what FFmpeg decodes.
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
        // Skip "fLaC" and the metadata blocks.
        var at = 4
        var last = false
        while !last {
            last = bytes[at] & 0x80 != 0
            at += 4 + (Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]))
        }
        let streamBits = FLACFrameDecoder.streamBitsPerSample(header: Array(bytes[0..<at]))
        #expect(streamBits == bits)
        var channels: [[Int32]] = []
        var frame = 0, decoded = 0, mismatches = 0
        while at < bytes.count {
            let header = try FLACFrameDecoder.decode(Array(bytes[at...]), streamBits: streamBits, into: &channels)
            for i in 0..<header.blockSize {
                for c in 0..<2 where channels[c][i] << (32 - bits) != expected[2 * (decoded + i) + c] { mismatches += 1 }
            }
            decoded += header.blockSize
            at += header.byteCount
            frame += 1
        }
        #expect(decoded * 2 == expected.count, "\(decoded) frames decoded, FFmpeg \(expected.count / 2)")
        #expect(mismatches == 0, "\(mismatches) samples differ over \(frame) FLAC frames")
        #expect(frame > 10)
    }
}
