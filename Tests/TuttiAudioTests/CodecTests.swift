import Foundation
import Testing
import TuttiAudio
import TuttiCore

/// Encodes and decodes through libopus directly, aligned by the encoder's
/// reported look-ahead, so SNR is measured exactly.
func opusRoundTrip(_ input: [Float], bitrate: Int, frameSize: Int = 960) throws -> (output: [Float], delay: Int) {
    let encoder = try OpusChunkEncoder(bitrateKbps: bitrate, frameSize: frameSize)
    let decoder = try OpusChunkDecoder()
    var output: [Float] = []
    let scratch = UnsafeMutablePointer<Float>.allocate(capacity: 5_760 * 2)
    defer { scratch.deallocate() }
    var offset = 0
    while offset + frameSize * 2 <= input.count {
        let packet = try input.withUnsafeBufferPointer { try encoder.encode($0.baseAddress! + offset, count: frameSize) }
        let n = try decoder.decode(packet, frames: frameSize, into: scratch, maxFrames: 5_760)
        output.append(contentsOf: UnsafeBufferPointer(start: scratch, count: n * 2))
        offset += frameSize * 2
    }
    return (output, encoder.delayFrames)
}

@Suite struct CodecTests {
    @Test(arguments: [("sine", 160), ("music", 160), ("sine", 64), ("music", 96)])
    func opusSNR(kind: String, bitrate: Int) throws {
        let input = kind == "sine" ? TestSignal.sine(frequency: 1_000, seconds: 2) : TestSignal.music(seconds: 2)
        let (output, delay) = try opusRoundTrip(input, bitrate: bitrate)
        let start = 2 * 4_800
        let count = output.count - start - 2 * 2_000
        let snr = SignalMetrics.snr(input, start, output, start + 2 * delay, count: count)
        print("opus \(kind) at \(bitrate) kbps: SNR \(String(format: "%.1f", snr)) dB (look-ahead \(delay) frames)")
        if bitrate >= 160 { #expect(snr >= 25, "SNR \(snr) dB at the default bitrate") }
        #expect(snr >= 12, "SNR \(snr) dB")
    }

    @Test func opusConcealsALostChunk() throws {
        let input = TestSignal.sine(frequency: 440, seconds: 0.5)
        let encoder = try OpusChunkEncoder(bitrateKbps: 160, frameSize: 960)
        let decoder = try OpusChunkDecoder()
        let out = UnsafeMutablePointer<Float>.allocate(capacity: 960 * 2)
        defer { out.deallocate() }
        for k in 0..<10 {
            let packet = try input.withUnsafeBufferPointer { try encoder.encode($0.baseAddress! + k * 1_920, count: 960) }
            if k == 6 { continue }
            _ = try decoder.decode(packet, frames: 960, into: out, maxFrames: 960)
        }
        let n = decoder.conceal(frames: 960, into: out)
        #expect(n == 960)
        var energy: Float = 0
        for i in 0..<(n * 2) { energy += out[i] * out[i] }
        // Concealment continues the tone rather than dropping to silence.
        #expect(energy / Float(n * 2) > 0.01)
    }

    @Test func opusRejectsBadSettings() {
        #expect(throws: AudioError.self) { try OpusChunkEncoder(bitrateKbps: 160, frameSize: 1_000) }
        #expect(throws: AudioError.self) { try OpusChunkEncoder(bitrateKbps: 2, frameSize: 960) }
        let decoder = try! OpusChunkDecoder()
        let out = UnsafeMutablePointer<Float>.allocate(capacity: 960 * 2)
        defer { out.deallocate() }
        #expect(throws: AudioError.self) { try decoder.decode([0xff, 0xff, 0xff], frames: 960, into: out, maxFrames: 960) }
    }

    @Test func pcmIsBitExact() throws {
        let input: [Float] = (0..<2_000).map { Float(Int16(truncatingIfNeeded: $0 &* 977)) / 32768 }
        let payload = try input.withUnsafeBufferPointer { try PCMEncoder().encode($0.baseAddress!, count: 1_000) }
        #expect(payload.count == 4_000)
        let out = UnsafeMutablePointer<Float>.allocate(capacity: 2_000)
        defer { out.deallocate() }
        let n = try PCMDecoder().decode(payload, frames: 1_000, into: out, maxFrames: 1_000)
        #expect(n == 1_000)
        #expect(Array(UnsafeBufferPointer(start: out, count: 2_000)) == input)
        #expect(throws: AudioError.self) { try PCMDecoder().decode([1, 2, 3], frames: 1_000, into: out, maxFrames: 1_000) }
    }
}
