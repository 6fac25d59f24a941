import TuttiCore

/// FLAC frames one at a time, as a Sendspin server sends a player them
/// (one frame a chunk, after `stream/start`'s `codec_header`: `fLaC` and
/// STREAMINFO), decoded by TuttiCore's `FLACFrameDecoder`: no libFLAC in a
/// speaker's process. Output is stereo float like every `ChunkDecoder`'s
/// (mono doubled; each depth scaled by its own full scale).
///
/// Thread contract: one thread at a time (a speaker's connection thread).
public final class FLACChunkDecoder: ChunkDecoder {
    private let streamBits: Int?
    private var channels: [[Int32]] = [[], []]

    /// `header`: the stream's `fLaC` and metadata (empty: each frame must name its depth).
    public init(header: [UInt8]) {
        streamBits = FLACFrameDecoder.streamBitsPerSample(header: header)
    }

    public func reset() {}

    public func decode(_ payload: [UInt8], frames: Int, into output: UnsafeMutablePointer<Float>, maxFrames: Int) throws(AudioError) -> Int {
        let header: FLACFrameDecoder.Header
        do { header = try FLACFrameDecoder.decode(payload, streamBits: streamBits, into: &channels) } catch {
            throw .codec(operation: "flac decode", reason: error.description)
        }
        guard header.channels <= 2 else { throw .codec(operation: "flac decode", reason: "\(header.channels) channels (this speaker offered stereo)") }
        let n = min(header.blockSize, maxFrames)
        let scale = 1 / Float(Int64(1) << Int64(header.bitsPerSample - 1))
        let left = channels[0], right = header.channels > 1 ? channels[1] : channels[0]
        for i in 0..<n {
            output[2 * i] = Float(left[i]) * scale
            output[2 * i + 1] = Float(right[i]) * scale
        }
        return n
    }

    public func conceal(frames: Int, into output: UnsafeMutablePointer<Float>) -> Int {
        output.update(repeating: 0, count: frames * 2)
        return frames
    }
}
