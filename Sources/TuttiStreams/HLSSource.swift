import TuttiAudio
import TuttiCore
import TuttiDecode

/// HLS radio (RFC 8216): live (a sliding window) and VOD media playlists of
/// MPEG-TS or fMP4 segments, or packed audio. A multivariant playlist is
/// resolved to one stream first (`HLSVariant.choose`). Playlists and
/// segments are fetched through `DocumentFetch` (the HTTP layer: destination
/// policy, bounded redirects, `HLSPlaylist.maxBytes` per playlist,
/// `maxSegmentBytes` per segment); `HLSSession` decides what to fetch and
/// when to reload; the segments, one after another, are a byte stream that
/// FFmpeg demuxes and decodes (`FFmpegDecoder` over `HLSSegmentBytes`).
/// At most one segment is held in memory beside FFmpeg's own buffers.
///
/// Thread contract: like every `AudioDecoder`, one reader thread; `init`
/// and `read` block on the network (`read` sleeps until a live playlist's
/// next reload). Does not seek.
public final class HLSSource: AudioDecoder {
    public let path: String
    public var sampleRate: Int { decoder.sampleRate }
    public var frameCount: Int? { nil }
    /// libavcodec's name for the audio codec ("aac", "mp3", "opus"…).
    public var codec: String { decoder.codecName }
    /// The media playlist played (the variant chosen, or `path` itself).
    public let mediaURL: String

    public static let maxSegmentBytes = 16 << 20

    private let decoder: FFmpegDecoder
    private let bytes: HLSSegmentBytes

    public init(url: String, options: NetworkOptions = NetworkOptions(), log: Logger = .silent,
                cancellation: NetworkCancellation? = nil, onMetadata: (@Sendable (StreamMetadata) -> Void)? = nil) throws(StreamError) {
        var mediaURL = url
        var playlist = try Self.load(url, options: options)
        if case .multivariant(let variants) = playlist {
            guard let chosen = HLSVariant.choose(variants) else { throw .playlist(url: url, reason: "no stream to play in its variants") }
            log.info("\(url): HLS variant \(chosen) of \(variants.count)")
            mediaURL = chosen
            playlist = try Self.load(chosen, options: options)
        }
        guard case .media(let media) = playlist else {
            throw .playlist(url: mediaURL, reason: "a multivariant HLS playlist where a media playlist was expected")
        }
        let bytes = HLSSegmentBytes(url: mediaURL, first: media, options: options, log: log, cancellation: cancellation, onMetadata: onMetadata)
        // MPEG-TS segments name their demuxer; fMP4 (an EXT-X-MAP) and packed audio are probed.
        let firstPath = media.segments.first.map { $0.url.split(separator: "?").first.map(String.init) ?? $0.url } ?? ""
        let format: String? = media.initSection != nil ? nil : firstPath.lowercased().hasSuffix(".aac") ? "aac" : firstPath.lowercased().hasSuffix(".ts") ? "mpegts" : nil
        do {
            decoder = try FFmpegDecoder(source: bytes, name: url, format: format, probeBytes: 256 * 1_024)
        } catch {
            throw bytes.failure ?? .undecodable(url: url, reason: "its HLS segments: \(error)")
        }
        self.path = url
        self.mediaURL = mediaURL
        self.bytes = bytes
        log.info("\(url): HLS \(media.hasEnded || media.isVOD ? "VOD" : "live"), \(decoder.codecName) at \(decoder.sampleRate) Hz")
    }

    static func load(_ url: String, options: NetworkOptions) throws(StreamError) -> HLSPlaylist {
        let document: FetchedDocument
        switch try DocumentFetch.fetch(url, options: options, maxBytes: HLSPlaylist.maxBytes) {
        case .fetched(let d): document = d
        case .notModified: throw .playlist(url: url, reason: "the server answered 304 to an unconditional request")
        }
        do { return try HLSPlaylist.parse(String(decoding: document.body, as: UTF8.self), url: url) } catch {
            throw .playlist(url: url, reason: error.description)
        }
    }

    /// Segments the live window dropped before they were fetched, and segments that failed to download.
    public var skippedSegments: Int { bytes.skipped }

    public func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        do { return try decoder.read(into: &output, maxFrames: maxFrames) } catch {
            throw bytes.failure?.audioError ?? error
        }
    }

    public func seek(toFrame frame: Int) throws(AudioError) {
        throw StreamError.notSeekable(url: path, reason: "an HLS stream plays from where it joins").audioError
    }
}

/// The segments of an HLS media playlist as one byte stream, for FFmpeg:
/// runs `HLSSession` (fetch, wait, reload) on the reader's thread.
final class HLSSegmentBytes: FFmpegByteSource {
    private let url: String
    private let options: NetworkOptions
    private let log: Logger
    private let cancellation: NetworkCancellation?
    private let onMetadata: (@Sendable (StreamMetadata) -> Void)?
    private var session = HLSSession()
    private var current: [UInt8] = []
    private var offset = 0
    /// After a failed reload, the next waits (TuttiCore's pure `ReconnectBackoff`); the fifth failure in a row ends the source.
    private var reloadBackoff = ReconnectBackoff(policy: HLSSegmentBytes.reloadPolicy)
    private var jitter = SystemRandomNumberGenerator()
    private var lastTitle: String?
    private var fetchedAny = false
    private let start = Monotonic.now()
    private(set) var failure: StreamError?
    private(set) var skipped = 0
    private var failedInARow = 0

    init(url: String, first: HLSMediaPlaylist, options: NetworkOptions, log: Logger, cancellation: NetworkCancellation?,
         onMetadata: (@Sendable (StreamMetadata) -> Void)?) {
        self.url = url
        self.options = options
        self.log = log
        self.cancellation = cancellation
        self.onMetadata = onMetadata
        session.update(first, now: 0)
    }

    static let reloadPolicy = ReconnectPolicy(initialDelay: 0.5, maxDelay: 8, maxAttempts: 4)

    private var now: Double { Double(Monotonic.now() - start) / 1e9 }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> FFmpegRead {
        while offset >= current.count {
            if let failure { return .failure(failure.audioError) }
            if cancellation?.isCancelled == true { return .end }
            switch session.step(now: now) {
            case .fetch(let segment, let initSection):
                do throws(StreamError) {
                    var data: [UInt8] = []
                    if let initSection { data = try fetch(initSection) }
                    var body = try fetch(segment.url)
                    // Packed audio starts with an ID3 tag (timestamp, often the song): read, then left out,
                    // so the demuxer sees one continuous ADTS (or MP3) stream.
                    var title = segment.title
                    if let tag = HLSTimedMetadata.read(body[...]) {
                        title = tag.streamTitle ?? title
                        body.removeFirst(min(tag.length, body.count))
                    }
                    current = data + body
                    offset = 0
                    if let title, title != lastTitle {
                        lastTitle = title
                        onMetadata?(StreamMetadata(title: title))
                    }
                    fetchedAny = true
                    failedInARow = 0
                } catch {
                    // A live stream goes on past a segment it could not get, as players do;
                    // one whose first segment fails, or many, is broken.
                    skipped += 1
                    failedInARow += 1
                    log.warning("\(url): HLS segment \(segment.sequence) failed (\(error)); skipping it")
                    // Many in a row (not in all: a station that runs for days loses one now and then).
                    if !fetchedAny || failedInARow > 32 {
                        failure = .playlist(url: url, reason: "its HLS segment \(segment.sequence) could not be fetched (\(error))")
                    }
                }
            case .reload(let planned):
                // After a failure, not before the back-off says (the session alone would reload at once).
                let at = max(planned, reloadBackoff.retryAt.map { Double($0 - start) / 1e9 } ?? 0)
                while now < at {
                    if cancellation?.isCancelled == true { return .end }
                    Monotonic.sleep(nanoseconds: Int64(min(0.05, at - now) * 1e9))
                }
                do throws(StreamError) {
                    guard case .media(let media) = try HLSSource.load(url, options: options) else {
                        throw .playlist(url: url, reason: "it became a multivariant playlist")
                    }
                    session.update(media, now: now)
                    reloadBackoff.succeeded()
                } catch {
                    switch reloadBackoff.failed(now: Monotonic.now(), using: &jitter) {
                    case .retry(let attempt, _, let delay):
                        log.warning("\(url): HLS playlist reload failed (\(error)); retry \(attempt) in \(fixedPoint(Double(delay) / 1e9, decimals: 3)) s")
                    case .giveUp(let attempts):
                        log.warning("\(url): HLS playlist reload failed (\(error)); giving up after \(attempts) retries")
                        failure = error
                    }
                }
            case .finished:
                return .end
            case .stalled(let seconds):
                failure = .network(url: url, reason: "the HLS playlist brought no new segment for \(Int(seconds)) s")
            }
        }
        let n = min(buffer.count, current.count - offset)
        current.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + n)])) }
        offset += n
        return .bytes(n)
    }

    private func fetch(_ segment: String) throws(StreamError) -> [UInt8] {
        switch try DocumentFetch.fetch(segment, options: options, maxBytes: HLSSource.maxSegmentBytes) {
        case .fetched(let d): return d.body
        case .notModified: throw .playlist(url: segment, reason: "the server answered 304 to an unconditional request")
        }
    }
}
