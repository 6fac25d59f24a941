import CFLAC
import TuttiCore

/// FLAC frames one at a time, as a Sendspin server sends a player them (one
/// frame a chunk, after `stream/start`'s `codec_header`: `fLaC` and
/// STREAMINFO), decoded by libFLAC's stream decoder (`FLACStreamDecoder`,
/// libFLAC opened at the first one). Output is stereo float like every
/// `ChunkDecoder`'s (mono doubled; each depth scaled by its own full scale).
///
/// Each chunk is handed to libFLAC whole and the decoder flushed after it, so
/// a cut or corrupt frame (libFLAC reports it, or runs out of input) is an
/// error for that chunk only: the next starts clean, the STREAMINFO kept.
///
/// Thread contract: one thread at a time (a speaker's connection thread).
public final class FLACChunkDecoder: ChunkDecoder {
    private let decoder: FLACStreamDecoder
    /// The bytes libFLAC reads next (the header at first, then one chunk), valid during a call.
    fileprivate var input: UnsafeBufferPointer<UInt8> = UnsafeBufferPointer(start: nil, count: 0)
    fileprivate var inputAt = 0
    /// Where the write callback puts the frame, valid during `decode`.
    fileprivate var output: UnsafeMutablePointer<Float>?
    fileprivate var outputCapacity = 0
    fileprivate var written = 0
    /// What went wrong in this chunk (libFLAC's error callback, or the write callback's refusal).
    fileprivate var failure: String?

    /// `header`: the stream's `fLaC` and metadata (empty: each frame must name its depth).
    /// Throws when libFLAC is not installed or refuses the header.
    public init(header: [UInt8]) throws(AudioError) {
        do { decoder = try FLACStreamDecoder() } catch { throw .codec(operation: "flac open", reason: error.description) }
        decoder.skipMD5Check() // frames arrive cut out of a stream; nothing to check against
        do {
            try decoder.open(read: chunkRead, write: chunkWrite, metadata: nil, error: chunkError,
                             client: Unmanaged.passUnretained(self).toOpaque())
        } catch { throw .codec(operation: "flac open", reason: error.description) }
        guard !header.isEmpty else { return }
        let ok = header.withUnsafeBufferPointer { bytes in
            feeding(bytes) { decoder.processMetadata() }
        }
        guard ok, failure == nil else {
            throw .codec(operation: "flac header", reason: failure ?? "libFLAC stopped in the stream header (state \(decoder.state.rawValue))")
        }
        decoder.flush()
    }

    public func reset() {}

    public func decode(_ payload: [UInt8], frames: Int, into output: UnsafeMutablePointer<Float>, maxFrames: Int) throws(AudioError) -> Int {
        self.output = output
        outputCapacity = maxFrames
        written = 0
        failure = nil
        let ok = payload.withUnsafeBufferPointer { bytes in
            feeding(bytes) { decoder.processFrame() }
        }
        let frameDone = written > 0
        self.output = nil
        // A frame leaves the decoder looking for the next sync; anything else (input ran out, a
        // CRC mismatch, bytes after the frame) is dropped so the next chunk starts clean.
        decoder.flush()
        guard ok, failure == nil, frameDone else {
            throw .codec(operation: "flac decode", reason: failure ?? "no complete FLAC frame in \(payload.count) bytes")
        }
        return written
    }

    public func conceal(frames: Int, into output: UnsafeMutablePointer<Float>) -> Int {
        output.update(repeating: 0, count: frames * 2)
        return frames
    }

    /// Runs `body` with libFLAC reading `bytes`, and nothing after them.
    private func feeding<T>(_ bytes: UnsafeBufferPointer<UInt8>, _ body: () -> T) -> T {
        input = bytes
        inputAt = 0
        defer { input = UnsafeBufferPointer(start: nil, count: 0) }
        return body()
    }

    fileprivate func read(into buffer: UnsafeMutablePointer<UInt8>, capacity: Int) -> Int {
        let n = min(capacity, input.count - inputAt)
        if n > 0, let base = input.baseAddress { buffer.update(from: base + inputAt, count: n) }
        inputAt += n
        return n
    }

    fileprivate func write(_ buffers: UnsafePointer<UnsafePointer<FLAC__int32>?>, frames: Int, channels: Int, bits: Int) -> Bool {
        guard let output else { failure = "a FLAC frame in the stream header"; return false }
        guard channels == 1 || channels == 2 else { failure = "\(channels) channels (this speaker offered stereo)"; return false }
        guard (4...32).contains(bits), let left = buffers[0] else { failure = "\(bits)-bit FLAC"; return false }
        let right = channels > 1 ? buffers[1] ?? left : left
        let n = min(frames, outputCapacity)
        let scale = 1 / Float(Int64(1) << Int64(bits - 1))
        for i in 0..<n {
            output[2 * i] = Float(left[i]) * scale
            output[2 * i + 1] = Float(right[i]) * scale
        }
        written = n
        return true
    }
}

private func owner(_ client: UnsafeMutableRawPointer?) -> FLACChunkDecoder {
    Unmanaged<FLACChunkDecoder>.fromOpaque(client!).takeUnretainedValue()
}

/// Hands libFLAC what is left of the chunk; at its end, "end of stream": libFLAC stops mid-frame and says so.
private let chunkRead: FLAC__StreamDecoderReadCallback = { _, buffer, bytes, client in
    guard let buffer, let bytes else { return FLAC__STREAM_DECODER_READ_STATUS_ABORT }
    let n = owner(client).read(into: buffer, capacity: bytes.pointee)
    bytes.pointee = n
    return n > 0 ? FLAC__STREAM_DECODER_READ_STATUS_CONTINUE : FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM
}

private let chunkWrite: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, client in
    guard let frame, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
    let header = frame.pointee.header
    let ok = owner(client).write(buffer, frames: Int(header.blocksize), channels: Int(header.channels), bits: Int(header.bits_per_sample))
    return ok ? FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE : FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
}

private let chunkError: FLAC__StreamDecoderErrorCallback = { _, status, client in
    let o = owner(client)
    if o.failure == nil {
        o.failure = switch status {
        case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC: "lost sync"
        case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER: "bad frame header"
        case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH: "frame CRC mismatch"
        default: "corrupt FLAC frame (libFLAC error \(status.rawValue))"
        }
    }
}
