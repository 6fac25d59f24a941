import TuttiAudio
import TuttiCore
import TuttiDecode

/// The group's chunks (encoded once for every room, in the leader's wire
/// codec) in the format one Sendspin player asked for: PCM of 16 or 24
/// bits, FLAC, or Opus. Opus to an Opus player and 16-bit PCM to a PCM
/// player when the leader sends PCM pass as they are; otherwise the chunk
/// is decoded (a PCM leader's is a copy) and encoded again for this player.
/// Not thread-safe: its player calls it under its own lock.
final class SendspinAudioEncoder {
    let format: SendspinAudioFormat
    private let streamCodec: Codec
    private let decoder: (any ChunkDecoder)?
    private let flac: FLACFrameEncoder?
    private var samples = [Float](repeating: 0, count: 2 * 5_760)

    init(format: SendspinAudioFormat, streamCodec: Codec) throws {
        self.format = format
        self.streamCodec = streamCodec
        let passes = (format.codec == .opus && streamCodec == .opus) || (format.codec == .pcm && format.bitDepth == 16 && streamCodec == .pcm)
        decoder = passes ? nil : try makeDecoder(streamCodec)
        flac = format.codec == .flac ? try FLACFrameEncoder(sampleRate: format.sampleRate, channels: format.channels, bitsPerSample: format.bitDepth) : nil
    }

    /// What `stream/start` carries as `codec_header` (FLAC's `fLaC` and STREAMINFO), nil for none.
    var codecHeader: [UInt8]? { flac?.header }

    /// FLAC: the PTS of the blocks fed and not yet out (libFLAC holds one).
    private var pendingPTS: [Int64] = []

    /// Chunks fed and not yet given back (FLAC's held block): the next this many `encode`s give them.
    var heldChunks: Int { pendingPTS.count }

    /// The chunk for this player, with the leader time (ns) of its first
    /// frame; nil while the encoder holds it (FLAC's one block).
    func encode(_ chunk: Chunk) throws -> (pts: Int64, payload: [UInt8])? {
        guard let decoder else { return (chunk.pts.nanoseconds, chunk.payload) }
        let frames = try samples.withUnsafeMutableBufferPointer { p in
            try decoder.decode(chunk.payload, frames: Int(chunk.frames), into: p.baseAddress!, maxFrames: p.count / 2)
        }
        switch format.codec {
        case .pcm, .opus: // Opus is offered only when the leader encodes it: it passed above
            return (chunk.pts.nanoseconds, Self.pcm(samples, frames: frames, bits: format.bitDepth))
        case .flac:
            pendingPTS.append(chunk.pts.nanoseconds)
            let out = try flac!.encode(samples, frames: frames)
            guard !out.isEmpty, !pendingPTS.isEmpty else {
                if pendingPTS.count > 4 { pendingPTS.removeFirst() } // never grows, whatever libFLAC does
                return nil
            }
            return (pendingPTS.removeFirst(), out)
        }
    }

    /// Little-endian signed PCM, interleaved, as the spec's PCM convention says.
    static func pcm(_ samples: [Float], frames: Int, bits: Int) -> [UInt8] {
        let bytes = bits / 8
        var out = [UInt8](repeating: 0, count: frames * 2 * bytes)
        let scale = Float(1 << (bits - 1))
        for i in 0..<(frames * 2) {
            let v = Int32(max(-scale, min(scale - 1, (samples[i] * scale).rounded())))
            for b in 0..<bytes { out[i * bytes + b] = UInt8(truncatingIfNeeded: v >> Int32(8 * b)) }
        }
        return out
    }
}
