import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode

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
public final class NetworkSource: AudioDecoder, ReportsBuffering {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    /// A radio-style stream with no end (no Content-Length, or ICY metadata).
    public let isLive: Bool
    /// Bytes of a finite file; nil for live streams.
    public let contentLength: Int64?

    private let stream: HTTPStream
    private let decoder: MP3FeedDecoder
    private var input = [UInt8](repeating: 0, count: 16_384)
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
        let decoder: MP3FeedDecoder
        do { decoder = try MP3FeedDecoder() } catch {
            stream.close()
            throw .undecodable(url: url, reason: Self.reason(error))
        }
        self.path = url
        self.stream = stream
        self.decoder = decoder
        let info = stream.info!
        self.isLive = info.isLive
        self.contentLength = info.isLive ? nil : info.contentLength
        // A station playlist announced by its type is not probed as audio (`SourceOpener` resolves it).
        var probe: StreamError? = StationPlaylist.kind(contentType: info.contentType).map { .isPlaylist(url: url, kind: $0) }
        // Feed until libmpg123 has found the first frame and announces its format.
        var fed = 0
        // The first bytes, kept to recognise a playlist served under another type.
        var head: [UInt8] = []
        var nothing: [Float] = []
        probing: while probe == nil {
            switch decoder.decode(into: &nothing, maxFrames: 0).status {
            case .newFormat:
                break probing
            case .needMore, .ok:
                if fed >= options.maxProbeBytes {
                    probe = .undecodable(url: url, reason: "no MPEG audio frame in the first \(fed) bytes\(Self.typeNote(info))")
                    break probing
                }
                switch input.withUnsafeMutableBytes({ stream.read(into: $0) }) {
                case .bytes(let n):
                    fed += n
                    if head.count < 512 { head += input[0..<min(n, 512 - head.count)] }
                    input.withUnsafeBytes { decoder.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                case .discontinuity: continue
                case .end:
                    probe = .undecodable(url: url, reason: fed == 0 ? "the response is empty" : "no MPEG audio frame in \(fed) bytes\(Self.typeNote(info))")
                    break probing
                case .failure(let e):
                    probe = e
                    break probing
                }
            case .done:
                probe = .undecodable(url: url, reason: "no MPEG audio frame in \(fed) bytes\(Self.typeNote(info))")
                break probing
            case .failed(let reason):
                probe = .undecodable(url: url, reason: reason)
                break probing
            }
        }
        if case .undecodable? = probe, let kind = StationPlaylist.kind(sniffing: head[...]) { probe = .isPlaylist(url: url, kind: kind) }
        var format = (rate: 0, channels: 0)
        if probe == nil {
            switch decoder.format() {
            case .success(let f): format = f
            case .failure(let e): probe = .undecodable(url: url, reason: Self.reason(e))
            }
        }
        self.sampleRate = format.rate
        self.channels = format.channels
        if let probe {
            // deinit runs: it closes the stream (the decoder frees its handle).
            throw probe
        }
        decoder.fixFormat(rate: format.rate, channels: format.channels)
        fedBytes = Int64(fed)
    }

    deinit {
        stream.close()
    }

    private static func reason(_ error: AudioError) -> String {
        switch error {
        case .undecodable(_, let reason), .codec(_, let reason), .cannotOpen(_, let reason): reason
        default: "\(error)"
        }
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
    public var frameCount: Int? { isLive ? nil : decoder.frameCount }

    public func seek(toFrame frame: Int) throws(AudioError) {
        guard !isLive else { throw StreamError.notSeekable(url: path, reason: "it is a live stream").audioError }
        switch decoder.seek(toFrame: frame) {
        case .failure(let e): throw StreamError.notSeekable(url: path, reason: Self.reason(e)).audioError
        case .success(let inputOffset):
            do { try stream.restart(at: inputOffset) } catch { throw error.audioError }
        }
        finished = false
    }

    public func read(into out: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        guard !finished, maxFrames > 0 else { return 0 }
        while true {
            let (frames, status) = decoder.decode(into: &out, maxFrames: maxFrames)
            decodedFrames += Int64(frames)
            switch status {
            case .ok:
                if frames > 0 { return frames }
            case .done:
                finished = true
                return frames
            case .newFormat:
                if case .success(let f) = decoder.format(), f.rate != sampleRate || f.channels != channels {
                    finished = true
                    throw StreamError.undecodable(url: path, reason: "the format changed from \(sampleRate) Hz × \(channels) to \(f.rate) Hz × \(f.channels)").audioError
                }
                if frames > 0 { return frames }
            case .needMore:
                if frames > 0 { return frames }
                switch input.withUnsafeMutableBytes({ stream.read(into: $0) }) {
                case .bytes(let n):
                    fedBytes += Int64(n)
                    input.withUnsafeBytes { decoder.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                case .discontinuity:
                    // New connection (or dropped data): start the decoder afresh
                    // rather than splice half a frame onto the next one.
                    decoder.restart(rate: sampleRate)
                case .end:
                    finished = true
                    return 0
                case .failure(let e):
                    finished = true
                    throw e.audioError
                }
            case .failed(let reason):
                finished = true
                throw StreamError.undecodable(url: path, reason: reason).audioError
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
