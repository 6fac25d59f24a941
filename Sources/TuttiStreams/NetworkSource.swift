import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode

/// An MP3 stream or file over HTTP(S), decoded as it arrives through
/// libmpg123's feed API: interleaved stereo float at the stream's own rate,
/// gapless for files with a LAME/Xing header (like `MP3Decoder`). Other
/// codecs (AAC, Ogg Vorbis and Opus, FLAC, MPEG-TS), named by the
/// Content-Type or found when no MPEG frame is, are demuxed and decoded by
/// FFmpeg reading the same bytes (`FFmpegDecoder` over `StreamBytes`); ICY
/// titles come from the HTTP layer either way. Such streams do not seek.
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
    /// Set for a stream FFmpeg decodes (then `decoder` is unused).
    private var ffmpeg: FFmpegDecoder?
    private var ffmpegBytes: StreamBytes?
    /// libavcodec's name for what FFmpeg decodes ("aac", "vorbis", "opus"…); "mp3" through libmpg123.
    public private(set) var codec = "mp3"
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
        // A type FFmpeg reads (AAC, Ogg…) goes to it at once; else libmpg123 looks for MPEG frames.
        let ffmpegFormat = probe == nil ? FFmpegStreams.demuxer(contentType: info.contentType) : nil
        // Feed until libmpg123 has found the first frame and announces its format.
        var fed = 0
        // The first bytes, kept to recognise a playlist served under another type.
        var head: [UInt8] = []
        // Every byte libmpg123 was fed, for FFmpeg when it finds no MPEG frame in them.
        var probed: [UInt8] = []
        var nothing: [Float] = []
        probing: while probe == nil && ffmpegFormat == nil {
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
                    probed += input[0..<n]
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
        var viaFFmpeg: (FFmpegDecoder, StreamBytes)?
        if let ffmpegFormat {
            viaFFmpeg = Self.openFFmpeg(stream, replay: [], url: url, format: ffmpegFormat, options: options, failure: &probe)
        } else if case .undecodable? = probe, !probed.isEmpty {
            // Not MPEG audio: FFmpeg probes the same bytes (and the rest of the stream) for another
            // codec. When it finds none either, libmpg123's reason stands (it names the type served).
            let mpegFailure = probe
            var ffmpegFailure: StreamError?
            viaFFmpeg = Self.openFFmpeg(stream, replay: probed, url: url, format: "", options: options, failure: &ffmpegFailure)
            probe = viaFFmpeg == nil ? mpegFailure : nil
        }
        probed = []
        if let (ff, bytes) = viaFFmpeg {
            ffmpeg = ff
            ffmpegBytes = bytes
            codec = ff.codecName
            format = (ff.sampleRate, ff.channels)
            log.info("\(url): \(ff.codecName) at \(ff.sampleRate) Hz, decoded by FFmpeg")
        } else if probe == nil {
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
        if ffmpeg == nil { decoder.fixFormat(rate: format.rate, channels: format.channels) }
        fedBytes = Int64(fed)
    }

    /// FFmpeg on the stream's bytes (after `replay`, bytes already taken from
    /// it); nil with `failure` set when it finds no audio it can decode.
    private static func openFFmpeg(_ stream: HTTPStream, replay: [UInt8], url: String, format: String, options: NetworkOptions,
                                   failure: inout StreamError?) -> (FFmpegDecoder, StreamBytes)? {
        let bytes = StreamBytes(stream, replay: replay)
        do {
            let decoder = try FFmpegDecoder(source: bytes, name: url, format: format.isEmpty ? nil : format,
                                            probeBytes: max(replay.count + 65_536, 65_536))
            failure = nil
            return (decoder, bytes)
        } catch {
            failure = bytes.failure ?? .undecodable(url: url, reason: Self.reason(error))
            return nil
        }
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
        let fedBytes = ffmpegBytes?.bytesRead ?? self.fedBytes
        guard fedBytes > 0, decodedFrames > 0, sampleRate > 0 else { return 0 }
        return Double(stream.statistics.bufferedBytes) * Double(decodedFrames) / Double(fedBytes) / Double(sampleRate)
    }

    /// How full the buffer between network and decoder is, 0…1 (for "buffering" displays).
    public var bufferFill: Double {
        Double(stream.statistics.bufferedBytes) / Double(max(1, stream.options.bufferCapacity))
    }

    /// Exact length (gapless) when the file has a LAME/Xing header, else
    /// libmpg123's estimate; nil for live streams.
    public var frameCount: Int? { isLive ? nil : ffmpeg.map(\.frameCount) ?? decoder.frameCount }

    public func seek(toFrame frame: Int) throws(AudioError) {
        guard !isLive else { throw StreamError.notSeekable(url: path, reason: "it is a live stream").audioError }
        if let ffmpeg {
            // A finite file: FFmpeg seeks through `StreamBytes`, which asks for a Range.
            do { try ffmpeg.seek(toFrame: frame) } catch { throw ffmpegBytes?.failure?.audioError ?? error }
            finished = false
            return
        }
        switch decoder.seek(toFrame: frame) {
        case .failure(let e): throw StreamError.notSeekable(url: path, reason: Self.reason(e)).audioError
        case .success(let inputOffset):
            do { try stream.restart(at: inputOffset) } catch { throw error.audioError }
        }
        finished = false
    }

    public func read(into out: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        guard !finished, maxFrames > 0 else { return 0 }
        if let ffmpeg {
            do {
                let n = try ffmpeg.read(into: &out, maxFrames: maxFrames)
                decodedFrames += Int64(n)
                if n == 0 { finished = true }
                return n
            } catch {
                finished = true
                throw ffmpegBytes?.failure?.audioError ?? error
            }
        }
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

/// The bytes of an `HTTPStream` as FFmpeg reads them, after `replay` (bytes
/// already taken from the stream while looking for MPEG frames). A
/// reconnection's seam is passed over: the demuxers FFmpeg uses for radio
/// (ADTS, Ogg pages, MPEG-TS) find the next frame or page on their own.
/// Thread contract: the decoder's thread only.
final class StreamBytes: FFmpegByteSource {
    private let stream: HTTPStream
    private var replay: [UInt8]
    private var replayed = 0
    private(set) var bytesRead: Int64 = 0
    /// What ended the stream, kept in the stream's terms (FFmpeg sees an I/O error).
    private(set) var failure: StreamError?

    init(_ stream: HTTPStream, replay: [UInt8]) {
        self.stream = stream
        self.replay = replay
        // A finite file with a length seeks with Range requests (an MP4 whose index is at its end needs it).
        if let info = stream.info, !info.isLive, let length = info.contentLength, length > 0 { seekableSize = length } else { seekableSize = nil }
    }

    let seekableSize: Int64?

    func seek(to offset: Int64) -> Bool {
        replay = []
        replayed = 0
        do { try stream.restart(at: offset) } catch {
            failure = error
            return false
        }
        return true
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> FFmpegRead {
        if replayed < replay.count {
            let n = min(buffer.count, replay.count - replayed)
            replay.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[replayed..<(replayed + n)])) }
            replayed += n
            if replayed == replay.count { replay = []; replayed = 0 }
            return .bytes(n)
        }
        while true {
            switch stream.read(into: buffer) {
            case .bytes(let n):
                bytesRead += Int64(n)
                return .bytes(n)
            case .discontinuity: continue
            case .end: return .end
            case .failure(let e):
                failure = e
                return .failure(e.audioError)
            }
        }
    }
}

/// Which libavformat demuxer reads a stream of a Content-Type: nil for MPEG
/// audio and unknown types (libmpg123 looks first), "" for FFmpeg to probe.
public enum FFmpegStreams {
    public static func demuxer(contentType: String?) -> String? {
        guard let type = contentType?.split(separator: ";").first.map({ FeedBuilder.trimmed(String($0)).lowercased() }) else { return nil }
        switch type {
        case "audio/aac", "audio/aacp", "audio/x-aac", "audio/x-aacp": return "aac"
        case "audio/ogg", "application/ogg", "audio/x-ogg", "audio/vorbis", "audio/opus", "audio/x-opus+ogg", "audio/x-vorbis+ogg": return "ogg"
        case "audio/flac", "audio/x-flac": return "flac"
        case "video/mp2t", "audio/mp2t": return "mpegts"
        case "audio/mp4", "audio/x-m4a", "audio/m4a", "audio/wav", "audio/x-wav", "audio/wave": return ""
        default: return nil
        }
    }
}
