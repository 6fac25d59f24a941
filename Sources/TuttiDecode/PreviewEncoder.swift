import TuttiAudio
import TuttiCore

/// A track's preview (TuttiCore's `PreviewWindow`): its middle 30 seconds
/// decoded with the leader's own decoders (`AudioFile`: FFmpeg only for a
/// file that needs it), resampled to 48 kHz by libsoxr where the file is
/// not, and encoded as Ogg Opus (`OggOpusWriter`: pages by libogg, opened at
/// the first preview) at `bitrateKbps`, which
/// Chromium's and Safari's `decodeAudioData` take. Runs on the caller's
/// thread (the leader's preview worker), allocates freely: never on the audio thread.
public enum PreviewEncoder {
    /// 64 kbps stereo: a phone's speaker or earphones, 240 KB for 30 s.
    public static let bitrateKbps = 64
    static let frameSize = 960 // 20 ms

    /// `knownFrames`: the track's length at its own rate from the library,
    /// for a decoder that cannot tell (0: unknown).
    public static func encode(path: String, knownFrames: Int = 0, seconds: Int = PreviewWindow.seconds) throws(AudioError) -> [UInt8] {
        let decoder = try AudioFile.open(path)
        let rate = decoder.sampleRate
        guard rate > 0 else { throw .undecodable(path: path, reason: "no sample rate") }
        let window = PreviewWindow.frames(total: decoder.frameCount ?? knownFrames, rate: rate, seconds: seconds)
        if window.start > 0 { try decoder.seek(toFrame: window.start) }
        var source: [Float] = []
        source.reserveCapacity(window.count * 2)
        while source.count / 2 < window.count {
            let n = try decoder.read(into: &source, maxFrames: min(16_384, window.count - source.count / 2))
            if n == 0 { break }
        }
        if source.count > window.count * 2 { source.removeSubrange((window.count * 2)...) }
        guard !source.isEmpty else { throw .undecodable(path: path, reason: "no audio at frame \(window.start)") }
        var pcm: [Float]
        if rate == StreamFormat.sampleRate {
            pcm = source
        } else {
            let resampler = try SoxrResampler(inputRate: rate)
            pcm = []
            pcm.reserveCapacity(source.count * StreamFormat.sampleRate / rate + 4096)
            try source.withUnsafeBufferPointer { (p) throws(AudioError) in try resampler.process(p.baseAddress!, frames: source.count / 2, into: &pcm) }
            try resampler.finish(into: &pcm)
        }
        return try encodeOpus(pcm)
    }

    /// 48 kHz interleaved stereo to an Ogg Opus file.
    public static func encodeOpus(_ pcm: [Float]) throws(AudioError) -> [UInt8] {
        let encoder = try OpusChunkEncoder(bitrateKbps: bitrateKbps, frameSize: frameSize)
        let samples = pcm.count / 2
        // The tail padded with silence to whole frames, and by the look-ahead, so the last samples come out.
        let padded = ((samples + encoder.delayFrames + frameSize - 1) / frameSize) * frameSize
        var input = pcm
        input += [Float](repeating: 0, count: (padded - samples) * 2)
        // A serial from the audio: the same preview is the same file.
        var serial = FNV1a()
        input.prefix(256).withUnsafeBytes { serial.update($0) }
        let writer: OggOpusWriter
        do { writer = try OggOpusWriter(serial: UInt32(truncatingIfNeeded: serial.value), preSkip: encoder.delayFrames) } catch {
            throw .codec(operation: "Ogg", reason: error.description)
        }
        try input.withUnsafeBufferPointer { (p) throws(AudioError) in
            var at = 0
            while at < padded {
                let packet = try encoder.encode(p.baseAddress! + at * 2, count: frameSize)
                do throws(OggError) { try writer.append(packet: packet, samples: frameSize) } catch { throw .codec(operation: "Ogg", reason: error.description) }
                at += frameSize
            }
        }
        do { return try writer.finish(samples: samples) } catch { throw .codec(operation: "Ogg", reason: error.description) }
    }
}
