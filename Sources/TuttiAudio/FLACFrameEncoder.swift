import CFLAC

/// Why libFLAC's encoder would not start.
public enum FLACEncoderError: Error, Equatable, CustomStringConvertible {
    /// libFLAC is not installed (the loader's words).
    case unavailable(String)
    case outOfMemory
    case initFailed(status: UInt32)
    case encodeFailed(state: UInt32)

    public var description: String {
        switch self {
        case .unavailable(let why): "libFLAC is not installed (\(why))"
        case .outOfMemory: "libFLAC: out of memory"
        case .initFailed(let status): "libFLAC encoder init status \(status)"
        case .encodeFailed(let state): "libFLAC encoder state \(state)"
        }
    }
}

/// One libFLAC stream encoder (`FLAC__StreamEncoder`) writing into memory:
/// `header` is the stream's `fLaC` marker and STREAMINFO, and each `encode`
/// returns the frames it finished (libFLAC holds a block until a sample of
/// the next has come, so a block's frame comes out one call later).
/// The only place that creates, initialises, finishes and deletes one
/// (the leader's Sendspin FLAC: one per player format, TuttiSendspin).
///
/// Thread contract: one thread at a time.
public final class FLACFrameEncoder {
    private let flac: tutti_flac
    private let encoder: UnsafeMutablePointer<FLAC__StreamEncoder>
    private let channels: Int
    private let bits: Int
    /// What the write callback was given since the last look.
    fileprivate var written: [UInt8] = []
    public private(set) var header: [UInt8] = []
    private var input: [Int32] = []

    /// `blockSize` frames per FLAC frame (a Tutti chunk: 960 at 48 kHz).
    public init(sampleRate: Int, channels: Int, bitsPerSample: Int, blockSize: Int = 960) throws(FLACEncoderError) {
        do { flac = try FLACLibrary.functions() } catch { throw .unavailable(error.description) }
        guard let e = flac.encoder_new() else { throw .outOfMemory }
        encoder = e
        self.channels = channels
        bits = bitsPerSample
        _ = flac.encoder_set_channels(e, UInt32(channels))
        _ = flac.encoder_set_bits_per_sample(e, UInt32(bitsPerSample))
        _ = flac.encoder_set_sample_rate(e, UInt32(sampleRate))
        _ = flac.encoder_set_compression_level(e, 2) // fast: this runs on a group's source thread
        _ = flac.encoder_set_blocksize(e, UInt32(blockSize))
        _ = flac.encoder_set_streamable_subset(e, 1)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let status = flac.encoder_init_stream(e, { _, buffer, bytes, _, _, client in
            guard let buffer, let client else { return FLAC__STREAM_ENCODER_WRITE_STATUS_FATAL_ERROR }
            Unmanaged<FLACFrameEncoder>.fromOpaque(client).takeUnretainedValue().written += UnsafeBufferPointer(start: buffer, count: bytes)
            return FLAC__STREAM_ENCODER_WRITE_STATUS_OK
        }, nil, nil, nil, me)
        guard status == FLAC__STREAM_ENCODER_INIT_STATUS_OK else {
            flac.encoder_delete(e)
            throw .initFailed(status: status.rawValue)
        }
        header = written
        written.removeAll()
    }

    deinit {
        _ = flac.encoder_finish(encoder)
        flac.encoder_delete(encoder)
    }

    /// Encodes `frames` interleaved float frames; the FLAC frames finished, possibly none.
    public func encode(_ samples: [Float], frames: Int) throws(FLACEncoderError) -> [UInt8] {
        guard frames > 0 else { return [] }
        let count = frames * channels
        if input.count < count { input = [Int32](repeating: 0, count: count) }
        let scale = Float(1 << (bits - 1))
        for i in 0..<count { input[i] = Int32(max(-scale, min(scale - 1, (samples[i] * scale).rounded()))) }
        let ok = input.withUnsafeBufferPointer { flac.encoder_process_interleaved(encoder, $0.baseAddress!, UInt32(frames)) }
        guard ok != 0 else { throw .encodeFailed(state: flac.encoder_get_state(encoder).rawValue) }
        defer { written.removeAll(keepingCapacity: true) }
        return written
    }
}
