import CFLAC
import Glibc
import TuttiAudio
import TuttiCore

/// FLAC through libFLAC's stream decoder: exact length from STREAMINFO,
/// sample-accurate seeking, mono or stereo (more channels are refused).
public final class FLACDecoder: AudioDecoder {
    public let path: String
    public private(set) var sampleRate = 0
    public private(set) var frameCount: Int?
    private var channels = 0
    private var bitsPerSample = 0
    private let decoder: FLACStreamDecoder
    /// Decoded frames not yet handed out (interleaved stereo).
    fileprivate var pending: [Float] = []
    fileprivate var pendingStart = 0
    fileprivate var failure: String?

    public init(path: String) throws(AudioError) {
        do { decoder = try FLACStreamDecoder() } catch { throw .undecodable(path: path, reason: error.description) }
        self.path = path
        do {
            try decoder.open(path: path, write: flacWrite, metadata: flacMetadata, error: flacError, client: Unmanaged.passUnretained(self).toOpaque())
        } catch {
            throw .cannotOpen(path: path, reason: error.status.map { "libFLAC could not open it (init status \($0))" } ?? error.description)
        }
        guard decoder.processMetadata(), sampleRate > 0 else {
            throw .undecodable(path: path, reason: failure ?? "no FLAC stream information")
        }
        guard channels == 1 || channels == 2 else {
            throw .undecodable(path: path, reason: "\(channels) channels (mono or stereo only)")
        }
    }

    fileprivate func streamInfo(rate: Int, channels: Int, bits: Int, total: Int) {
        sampleRate = rate; self.channels = channels; bitsPerSample = bits
        frameCount = total > 0 ? total : nil
    }

    fileprivate func append(_ buffers: UnsafePointer<UnsafePointer<FLAC__int32>?>, frames: Int, channels: Int, bits: Int) {
        let scale = 1 / Float(1 << (max(1, bits) - 1))
        pending.reserveCapacity(pending.count + frames * 2)
        guard let left = buffers[0] else { return }
        let right = channels > 1 ? buffers[1] ?? left : left
        for i in 0..<frames {
            pending.append(Float(left[i]) * scale)
            pending.append(Float(right[i]) * scale)
        }
    }

    public func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        while pending.count - pendingStart < maxFrames * 2 {
            let state = decoder.state
            if state == FLAC__STREAM_DECODER_END_OF_STREAM { break }
            if state.rawValue > FLAC__STREAM_DECODER_END_OF_STREAM.rawValue || !decoder.processFrame() {
                throw .undecodable(path: path, reason: failure ?? "libFLAC stopped (state \(decoder.state.rawValue))")
            }
            if let failure { self.failure = nil; throw .undecodable(path: path, reason: failure) }
        }
        let available = (pending.count - pendingStart) / 2
        let n = min(available, maxFrames)
        output.append(contentsOf: pending[pendingStart..<(pendingStart + 2 * n)])
        pendingStart += 2 * n
        if pendingStart > 1 << 16 || pendingStart == pending.count {
            pending.removeSubrange(0..<pendingStart)
            pendingStart = 0
        }
        return n
    }

    public func seek(toFrame frame: Int) throws(AudioError) {
        pending.removeAll(keepingCapacity: true)
        pendingStart = 0
        let target = UInt64(max(0, min(frame, (frameCount ?? Int.max) - 1)))
        if !decoder.seek(toSample: target) {
            // A failed seek leaves the decoder needing a flush before it can go on.
            decoder.flush()
            throw .undecodable(path: path, reason: "seek to frame \(frame) failed")
        }
    }
}

private func owner(_ client: UnsafeMutableRawPointer?) -> FLACDecoder {
    Unmanaged<FLACDecoder>.fromOpaque(client!).takeUnretainedValue()
}

private let flacWrite: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, client in
    guard let frame, let buffer else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
    let header = frame.pointee.header
    owner(client).append(buffer, frames: Int(header.blocksize), channels: Int(header.channels), bits: Int(header.bits_per_sample))
    return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
}

private let flacMetadata: FLAC__StreamDecoderMetadataCallback = { _, metadata, client in
    guard let metadata, metadata.pointee.type == FLAC__METADATA_TYPE_STREAMINFO else { return }
    let info = metadata.pointee.data.stream_info
    owner(client).streamInfo(rate: Int(info.sample_rate), channels: Int(info.channels), bits: Int(info.bits_per_sample),
                             total: Int(info.total_samples))
}

private let flacError: FLAC__StreamDecoderErrorCallback = { _, status, client in
    owner(client).failure = "corrupt FLAC data (error \(status.rawValue))"
}
