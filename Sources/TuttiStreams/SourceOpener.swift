import FoundationEssentials
import TuttiAudio
import TuttiCore
import TuttiDecode

/// The player's one entry point for opening a queue entry.
///
/// * `http://` and `https://` URLs: the offline cache first (works with the
///   network gone), else a `NetworkSource`; a station playlist (PLS, M3U,
///   ASX, XSPF) found on the way is resolved to its first stream that opens
///   (`StationPlaylists`), an HLS playlist (`.m3u8` with `#EXT-X-` tags) is
///   played by an `HLSSource`.
/// * `file://` URLs and plain paths: `AudioFile.open`.
///
/// Thread contract: `open` may be called from any thread and blocks while
/// connecting (up to `options.connectTimeout`, plus `stallTimeout` while
/// looking for the first frame); the returned decoder belongs to the caller.
public final class SourceOpener: Sendable {
    public let cache: StreamCache?
    public let options: NetworkOptions
    private let log: Logger
    private let onMetadata: (@Sendable (_ uri: String, StreamMetadata) -> Void)?
    /// Keep finite network files in the cache as they play (a tee of the bytes, no second download).
    public let autoCache: Bool

    /// `onMetadata(uri, metadata)` is called (on a network queue) whenever a
    /// stream's station or title changes: wire it to now-playing.
    public init(cache: StreamCache? = nil, options: NetworkOptions = NetworkOptions(), log: Logger = .silent, autoCache: Bool = true,
                onMetadata: (@Sendable (_ uri: String, StreamMetadata) -> Void)? = nil) {
        self.cache = cache
        self.autoCache = autoCache
        self.options = options
        self.log = log
        self.onMetadata = onMetadata
    }

    public static func isNetworkURL(_ uri: String) -> Bool {
        let lower = uri.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// A source ready for the player: local files and cached copies open at
    /// once (`.ready`); network sources open and decode on their own thread
    /// (`.background`) so the player never waits on the network.
    public enum Opened {
        case ready(any AudioDecoder)
        case background(BackgroundSource)
    }

    /// Like `open`, but a network source (not in the cache) comes back at
    /// once as a `BackgroundSource` starting at `startFrame` (48 kHz);
    /// its failures arrive through `poll`. Local files throw as in `open`.
    public func openForPlayback(_ uri: String, startFrame: Int = 0) throws(StreamError) -> Opened {
        if PipeSourceSpec.isPipe(uri) {
            let spec: PipeSourceSpec
            do { spec = try PipeSourceSpec(parsing: uri) } catch { throw .unsupportedURL(error.description) }
            // A pipe's writer may pre-roll (shairport-sync writes a second of silence at once): settle, and lead by the rest.
            return .background(BackgroundSource(uri: uri, isRealTime: true, settleSeconds: 0.12) { cancellation throws(AudioError) in
                try PipeSource(spec, cancellation: cancellation)
            })
        }
        if LineInSpec.isLineIn(uri) {
            let spec: LineInSpec
            do { spec = try LineInSpec(parsing: uri) } catch { throw .unsupportedURL(error.description) }
            // A short ring: a live input is heard at once or not at all (while
            // its group is paused, the device overruns and starts again afresh).
            return .background(BackgroundSource(uri: uri, ringSeconds: 0.25, isRealTime: true) { cancellation throws(AudioError) in
                try LineInSource(spec, cancellation: cancellation)
            })
        }
        if Self.isNetworkURL(uri), cache?.cachedPath(for: uri) == nil {
            let handler = onMetadata.map { h in { @Sendable (m: StreamMetadata) in h(uri, m) } }
            let (options, log, cache) = (self.options, self.log, self.autoCache ? self.cache : nil)
            return .background(BackgroundSource(uri: uri, startFrame: startFrame) { cancellation throws(StreamError) in
                try StationPlaylists.open(uri, options: options, log: log, openHLS: { url throws(StreamError) in
                    try HLSSource(url: url, options: options, log: log, cancellation: cancellation, onMetadata: handler)
                }) { url throws(StreamError) in
                    // Only the URL queued is kept in the cache (a station behind a playlist is live anyway).
                    try NetworkSource(url: url, options: options, log: log, onMetadata: handler, cancellation: cancellation,
                                      cache: startFrame == 0 && url == uri ? cache : nil)
                }
            })
        }
        return .ready(try open(uri))
    }

    /// Opens `uri`; throws `StreamError` (`.audio` wraps local file errors).
    public func open(_ uri: String) throws(StreamError) -> any AudioDecoder {
        if Self.isNetworkURL(uri) {
            if let cache, let path = cache.cachedPath(for: uri) {
                log.info("\(uri): playing from the offline cache")
                do { return NamedDecoder(try AudioFile.open(path), path: uri) } catch {
                    log.warning("\(uri): the cached copy failed (\(error)); removing it and using the network")
                    cache.remove(uri)
                }
            }
            let handler = onMetadata.map { h in { @Sendable (m: StreamMetadata) in h(uri, m) } }
            let (options, log) = (self.options, self.log)
            return try StationPlaylists.open(uri, options: options, log: log, openHLS: { url throws(StreamError) in
                try HLSSource(url: url, options: options, log: log, onMetadata: handler)
            }) { url throws(StreamError) in
                try NetworkSource(url: url, options: options, log: log, onMetadata: handler)
            }
        }
        var path = uri
        if uri.lowercased().hasPrefix("file://") {
            guard let url = URL(string: uri), url.isFileURL else { throw .unsupportedURL(uri) }
            path = url.path
        } else if let colon = uri.firstIndex(of: ":"), uri[..<colon].count > 1, uri[..<colon].allSatisfy({ $0.isLetter }),
                  uri[colon...].hasPrefix("://") {
            throw .unsupportedURL(uri)
        }
        do { return try AudioFile.open(path) } catch { throw .audio(error) }
    }
}

/// A decoder that reports another name as its `path` (a cached file plays
/// under its URL, so logs and now-playing show where it came from).
final class NamedDecoder: AudioDecoder {
    let inner: any AudioDecoder
    let path: String
    init(_ inner: any AudioDecoder, path: String) { self.inner = inner; self.path = path }
    var sampleRate: Int { inner.sampleRate }
    var frameCount: Int? { inner.frameCount }
    func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int { try inner.read(into: &output, maxFrames: maxFrames) }
    func seek(toFrame frame: Int) throws(AudioError) { try inner.seek(toFrame: frame) }
}
