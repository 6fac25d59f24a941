import COpus
import TuttiCore

/// Encodes 48 kHz stereo float frames into wire payloads, once per stream.
public protocol ChunkEncoder: AnyObject {
    var codec: Codec { get }
    /// Frames by which decoded audio lags the input (Opus look-ahead).
    var delayFrames: Int { get }
    func encode(_ frames: UnsafePointer<Float>, count: Int) throws(AudioError) -> [UInt8]
    /// Forgets history at a discontinuity (flush, skip, seek).
    func reset()
}

/// Decodes payloads back to float frames; conceals lost chunks.
public protocol ChunkDecoder: AnyObject {
    /// Decodes into `output` (room for `maxFrames` stereo frames); returns frames.
    func decode(_ payload: [UInt8], frames: Int, into output: UnsafeMutablePointer<Float>, maxFrames: Int) throws(AudioError) -> Int
    /// Produces `frames` frames standing in for a lost chunk.
    func conceal(frames: Int, into output: UnsafeMutablePointer<Float>) -> Int
    /// Forgets history at a discontinuity.
    func reset()
}

public func makeEncoder(_ codec: Codec, bitrateKbps: Int, frameSize: Int) throws(AudioError) -> any ChunkEncoder {
    switch codec {
    case .pcm: return PCMEncoder()
    case .opus: return try OpusChunkEncoder(bitrateKbps: bitrateKbps, frameSize: frameSize)
    }
}

public func makeDecoder(_ codec: Codec) throws(AudioError) -> any ChunkDecoder {
    switch codec {
    case .pcm: return PCMDecoder()
    case .opus: return try OpusChunkDecoder()
    }
}

/// Raw S16LE: bit-exact for 16-bit sources.
public final class PCMEncoder: ChunkEncoder {
    public let codec = Codec.pcm
    public let delayFrames = 0
    public init() {}
    public func reset() {}
    public func encode(_ frames: UnsafePointer<Float>, count: Int) throws(AudioError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count * 4)
        for i in 0..<(count * 2) {
            let v = UInt16(bitPattern: sampleToInt16(frames[i]))
            out[2 * i] = UInt8(v & 0xff)
            out[2 * i + 1] = UInt8(v >> 8)
        }
        return out
    }
}

/// Raw little-endian stereo PCM: S16LE (Tutti's wire), or S24LE in 3 bytes
/// (a Sendspin server's 24-bit PCM), exactly into floats (24 bits fit a Float's mantissa).
public final class PCMDecoder: ChunkDecoder {
    public let bytesPerSample: Int
    public init(bitDepth: Int = 16) {
        precondition(bitDepth == 16 || bitDepth == 24, "PCM of 16 or 24 bits")
        bytesPerSample = bitDepth / 8
    }
    public func reset() {}
    public func decode(_ payload: [UInt8], frames: Int, into output: UnsafeMutablePointer<Float>, maxFrames: Int) throws(AudioError) -> Int {
        let frameBytes = 2 * bytesPerSample
        let n = min(payload.count / frameBytes, maxFrames)
        guard n == frames, payload.count == n * frameBytes else {
            throw .codec(operation: "pcm decode", reason: "payload holds \(payload.count) bytes, header says \(frames) frames of \(frameBytes)")
        }
        if bytesPerSample == 2 {
            for i in 0..<(n * 2) {
                let v = Int16(bitPattern: UInt16(payload[2 * i]) | UInt16(payload[2 * i + 1]) << 8)
                output[i] = Float(v) / 32768
            }
        } else {
            for i in 0..<(n * 2) {
                // The three bytes in the top of an Int32, shifted back down with their sign.
                let v = Int32(bitPattern: UInt32(payload[3 * i]) << 8 | UInt32(payload[3 * i + 1]) << 16 | UInt32(payload[3 * i + 2]) << 24) >> 8
                output[i] = Float(v) / 8_388_608
            }
        }
        return n
    }
    public func conceal(frames: Int, into output: UnsafeMutablePointer<Float>) -> Int {
        output.update(repeating: 0, count: frames * 2)
        return frames
    }
}

public final class OpusChunkEncoder: ChunkEncoder {
    public let codec = Codec.opus
    public let delayFrames: Int
    private let encoder: OpaquePointer
    private var packet = [UInt8](repeating: 0, count: 4000)

    public static let validFrameSizes = [120, 240, 480, 960, 1920, 2880]

    public init(bitrateKbps: Int, frameSize: Int) throws(AudioError) {
        guard Self.validFrameSizes.contains(frameSize) else {
            throw .codec(operation: "opus setup", reason: "frame of \(frameSize) samples is not an Opus frame size (2.5–60 ms)")
        }
        guard (6...510).contains(bitrateKbps) else {
            throw .codec(operation: "opus setup", reason: "bitrate \(bitrateKbps) kbps outside 6–510")
        }
        var err: Int32 = 0
        guard let enc = opus_encoder_create(48_000, 2, OPUS_APPLICATION_AUDIO, &err), err == OPUS_OK else {
            throw .codec(operation: "opus_encoder_create", reason: String(cString: opus_strerror(err)))
        }
        encoder = enc
        tutti_opus_encoder_set_bitrate(enc, Int32(bitrateKbps * 1000))
        tutti_opus_encoder_set_signal_music(enc)
        tutti_opus_encoder_set_complexity(enc, 10)
        var lookahead: Int32 = 0
        tutti_opus_encoder_get_lookahead(enc, &lookahead)
        delayFrames = Int(lookahead)
    }

    deinit { opus_encoder_destroy(encoder) }

    public func reset() { tutti_opus_encoder_reset(encoder) }

    public func encode(_ frames: UnsafePointer<Float>, count: Int) throws(AudioError) -> [UInt8] {
        let n = packet.withUnsafeMutableBufferPointer {
            opus_encode_float(encoder, frames, Int32(count), $0.baseAddress!, Int32($0.count))
        }
        guard n > 0 else { throw .codec(operation: "opus_encode_float", reason: String(cString: opus_strerror(n))) }
        return Array(packet[0..<Int(n)])
    }
}

public final class OpusChunkDecoder: ChunkDecoder {
    private let decoder: OpaquePointer

    public init() throws(AudioError) {
        var err: Int32 = 0
        guard let dec = opus_decoder_create(48_000, 2, &err), err == OPUS_OK else {
            throw .codec(operation: "opus_decoder_create", reason: String(cString: opus_strerror(err)))
        }
        decoder = dec
    }

    deinit { opus_decoder_destroy(decoder) }

    public func reset() { tutti_opus_decoder_reset(decoder) }

    public func decode(_ payload: [UInt8], frames: Int, into output: UnsafeMutablePointer<Float>, maxFrames: Int) throws(AudioError) -> Int {
        let n = payload.withUnsafeBufferPointer {
            opus_decode_float(decoder, $0.baseAddress, Int32($0.count), output, Int32(maxFrames), 0)
        }
        guard n >= 0 else { throw .codec(operation: "opus_decode_float", reason: String(cString: opus_strerror(n))) }
        return Int(n)
    }

    public func conceal(frames: Int, into output: UnsafeMutablePointer<Float>) -> Int {
        let n = opus_decode_float(decoder, nil, 0, output, Int32(frames), 0)
        if n < 0 { output.update(repeating: 0, count: frames * 2); return frames }
        return Int(n)
    }
}
