import CMPG123
import CTuttiShim
import Synchronization
import TuttiAudio
import TuttiCore

/// An MP3 stream or file over HTTP(S), decoded as it arrives through
/// libmpg123's feed API: interleaved stereo float at the stream's own rate,
/// gapless for files with a LAME/Xing header (like `MP3Decoder`).
///
/// * Opening blocks until the first frame's format is known (or throws:
///   `connectTimeout` for the headers, `stallTimeout` per wait for bytes,
///   `maxProbeBytes` of data without an MPEG frame).
/// * `read` blocks until audio is decoded, the end, or an error; it throws
///   when nothing arrives for `stallTimeout`.
/// * Live streams (no Content-Length, or ICY metadata) reconnect with
///   backoff when they drop; finite files that fail mid-way throw from `read`.
/// * Finite files seek with a Range request; live streams throw on `seek`.
///
/// Thread contract: like every `AudioDecoder`, one reader thread. `metadata`,
/// `statistics` and `setMetadataHandler` may be used from any thread; the
/// metadata handler is called on the network queue.
public final class NetworkSource: AudioDecoder {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    /// A radio-style stream with no end (no Content-Length, or ICY metadata).
    public let isLive: Bool
    /// Bytes of a finite file; nil for live streams.
    public let contentLength: Int64?

    private let stream: HTTPStream
    private let handle: OpaquePointer
    private var input = [UInt8](repeating: 0, count: 16_384)
    private var output: [UInt8] = []
    private var finished = false
    // Reader thread only: for turning buffered bytes into seconds.
    private var fedBytes: Int64 = 0
    private var decodedFrames: Int64 = 0

    /// Connects to `url` and decodes until the format is known.
    /// Throws `StreamError` (typed: HTTP status, network, timeout, undecodable).
    public init(url: String, options: NetworkOptions = NetworkOptions(), log: Logger = .silent,
                onMetadata: (@Sendable (StreamMetadata) -> Void)? = nil,
                cancellation: NetworkCancellation? = nil, cache: StreamCache? = nil) throws(StreamError) {
        // With `cache`, a finite file that arrives whole is kept in it (the bytes are teed as they come).
        let stream = try HTTPStream(url: url, options: options, log: log, cache: cache)
        if let onMetadata { stream.setMetadataHandler(onMetadata) }
        cancellation?.attach(stream)
        try stream.open()
        var err: Int32 = 0
        guard let mh = mpg123_new(nil, &err) else {
            stream.close()
            throw .undecodable(url: url, reason: String(cString: mpg123_plain_strerror(err)))
        }
        guard tutti_mpg123_open_feed(mh) == MPG123_OK.rawValue else {
            let reason = String(cString: mpg123_strerror(mh))
            mpg123_delete(mh); stream.close()
            throw .undecodable(url: url, reason: reason)
        }
        self.path = url
        self.stream = stream
        self.handle = mh
        let info = stream.info!
        self.isLive = info.isLive
        self.contentLength = info.isLive ? nil : info.contentLength
        // Feed until libmpg123 has found the first frame and announces its format.
        var fed = 0
        var probe: StreamError? = nil
        probing: while true {
            var done = 0
            let rc = output.withUnsafeMutableBytes { mpg123_read(mh, $0.baseAddress, 0, &done) }
            if rc == MPG123_NEW_FORMAT.rawValue { break }
            if rc == MPG123_NEED_MORE.rawValue || rc == MPG123_OK.rawValue {
                if fed >= options.maxProbeBytes {
                    probe = .undecodable(url: url, reason: "no MPEG audio frame in the first \(fed) bytes\(Self.typeNote(info))")
                    break
                }
                switch input.withUnsafeMutableBytes({ stream.read(into: $0) }) {
                case .bytes(let n):
                    fed += n
                    _ = input.withUnsafeBytes { mpg123_feed(mh, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), n) }
                case .discontinuity: continue
                case .end:
                    probe = .undecodable(url: url, reason: fed == 0 ? "the response is empty" : "no MPEG audio frame in \(fed) bytes\(Self.typeNote(info))")
                    break probing
                case .failure(let e):
                    probe = e
                    break probing
                }
                continue
            }
            probe = .undecodable(url: url, reason: String(cString: mpg123_strerror(mh)))
            break
        }
        var rate = 0, ch: Int32 = 0, encoding: Int32 = 0
        if probe == nil {
            if mpg123_getformat(mh, &rate, &ch, &encoding) != MPG123_OK.rawValue || rate <= 0 {
                probe = .undecodable(url: url, reason: String(cString: mpg123_strerror(mh)))
            } else if encoding != Int32(MPG123_ENC_FLOAT_32.rawValue) {
                probe = .undecodable(url: url, reason: "libmpg123 cannot produce 32-bit float output")
            }
        }
        self.sampleRate = rate
        self.channels = Int(ch)
        if let probe {
            // deinit runs: it closes the stream and frees the handle.
            throw probe
        }
        mpg123_format_none(mh)
        mpg123_format(mh, rate, ch, encoding)
        fedBytes = Int64(fed)
    }

    deinit {
        stream.close()
        mpg123_delete(handle)
    }

    private static func typeNote(_ info: ResponseInfo) -> String {
        info.contentType.map { " (the server says it is \($0))" } ?? ""
    }

    /// The stream's station and now-playing title; safe from any thread.
    public var metadata: StreamMetadata { stream.metadata }

    /// Called on the network queue whenever the station or title changes,
    /// and at once with what is already known. Pass nil to stop.
    public func setMetadataHandler(_ handler: (@Sendable (StreamMetadata) -> Void)?) {
        stream.setMetadataHandler(handler)
    }

    /// Reconnects, pauses, drops and buffer level; safe from any thread.
    public var statistics: NetworkStatistics { stream.statistics }

    /// Finite file: the share downloaded so far, 0…1; nil for live streams.
    public var downloadedFraction: Double? { stream.downloadedFraction }

    /// Seconds of audio in the byte buffer between network and decoder,
    /// estimated from the bytes-per-frame seen so far. Reader thread only.
    public var bufferedSeconds: Double {
        guard fedBytes > 0, decodedFrames > 0, sampleRate > 0 else { return 0 }
        return Double(stream.statistics.bufferedBytes) * Double(decodedFrames) / Double(fedBytes) / Double(sampleRate)
    }

    /// How full the buffer between network and decoder is, 0…1 (for "buffering" displays).
    public var bufferFill: Double {
        Double(stream.statistics.bufferedBytes) / Double(max(1, stream.options.bufferCapacity))
    }

    /// Exact length (gapless) when the file has a LAME/Xing header, else
    /// libmpg123's estimate; nil for live streams.
    public var frameCount: Int? {
        guard !isLive else { return nil }
        let n = tutti_mpg123_length(handle)
        return n > 0 ? Int(n) : nil
    }

    public func seek(toFrame frame: Int) throws(AudioError) {
        guard !isLive else { throw StreamError.notSeekable(url: path, reason: "it is a live stream").audioError }
        var inputOffset: Int64 = 0
        let rc = tutti_mpg123_feedseek(handle, Int64(max(0, frame)), &inputOffset)
        guard rc >= 0 else {
            throw StreamError.notSeekable(url: path, reason: String(cString: mpg123_strerror(handle))).audioError
        }
        do { try stream.restart(at: inputOffset) } catch { throw error.audioError }
        finished = false
    }

    public func read(into out: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        guard !finished, maxFrames > 0 else { return 0 }
        let bytesPerFrame = 4 * channels
        let want = maxFrames * bytesPerFrame
        if output.count < want { output = [UInt8](repeating: 0, count: want) }
        while true {
            var done = 0
            let rc = output.withUnsafeMutableBytes { mpg123_read(handle, $0.baseAddress, want, &done) }
            let frames = done / bytesPerFrame
            if frames > 0 {
                decodedFrames += Int64(frames)
                output.withUnsafeBytes { appendStereo(decodedFloats: $0, frames: frames, channels: channels, to: &out) }
            }
            switch rc {
            case MPG123_OK.rawValue:
                if frames > 0 { return frames }
            case MPG123_DONE.rawValue:
                finished = true
                return frames
            case MPG123_NEW_FORMAT.rawValue:
                var rate = 0, ch: Int32 = 0, encoding: Int32 = 0
                mpg123_getformat(handle, &rate, &ch, &encoding)
                if rate != sampleRate || Int(ch) != channels {
                    finished = true
                    throw StreamError.undecodable(url: path, reason: "the format changed from \(sampleRate) Hz × \(channels) to \(rate) Hz × \(ch)").audioError
                }
                if frames > 0 { return frames }
            case MPG123_NEED_MORE.rawValue:
                if frames > 0 { return frames }
                switch input.withUnsafeMutableBytes({ stream.read(into: $0) }) {
                case .bytes(let n):
                    fedBytes += Int64(n)
                    _ = input.withUnsafeBytes { mpg123_feed(handle, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), n) }
                case .discontinuity:
                    // New connection (or dropped data): start the decoder afresh
                    // rather than splice half a frame onto the next one.
                    if tutti_mpg123_open_feed(handle) == MPG123_OK.rawValue {
                        mpg123_format_none(handle)
                        mpg123_format(handle, sampleRate, Int32(channels), Int32(MPG123_ENC_FLOAT_32.rawValue))
                    }
                case .end:
                    finished = true
                    return 0
                case .failure(let e):
                    finished = true
                    throw e.audioError
                }
            default:
                finished = true
                throw StreamError.undecodable(url: path, reason: String(cString: mpg123_strerror(handle))).audioError
            }
        }
    }
}

/// Lets another thread abandon a `NetworkSource` that is still connecting
/// or waiting for data: its blocked `init` or `read` returns at once.
public final class NetworkCancellation: Sendable {
    private let state = Mutex<(cancelled: Bool, stream: HTTPStream?)>((false, nil))

    public init() {}

    public func cancel() {
        let stream = state.withLock { s -> HTTPStream? in s.cancelled = true; return s.stream }
        stream?.close()
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    func attach(_ stream: HTTPStream) {
        let cancelled = state.withLock { s -> Bool in s.stream = stream; return s.cancelled }
        if cancelled { stream.close() }
    }
}
