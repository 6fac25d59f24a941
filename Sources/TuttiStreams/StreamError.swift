import FoundationEssentials
import TuttiAudio
import TuttiCore

/// Errors from network sources and the offline cache: what failed, on which
/// URL or file, and why, in words a user can act on.
public enum StreamError: Error, CustomStringConvertible, Equatable, Sendable {
    /// Not an http(s) URL, or not a URL at all.
    case unsupportedURL(String)
    /// The server answered with a status other than 200/206.
    case httpStatus(url: String, status: Int)
    /// Connection refused, DNS, TLS, reset: the transport failed.
    case network(url: String, reason: String)
    /// Nothing arrived for `seconds` while `waitingFor` (headers, audio).
    case timedOut(url: String, seconds: Double, waitingFor: Awaited)
    /// A finite file ended before its Content-Length.
    case truncated(url: String, received: Int64, expected: Int64)
    /// The server sent more than the Content-Length it declared (the transfer was cut off there).
    case overran(url: String, declared: Int64)
    /// The leader does not fetch from that address (this machine, the home
    /// network without `local-streams`, link-local, multicast): see `StreamDestinationPolicy`.
    case refused(url: String, StreamDestinationRefusal)
    /// The bytes are not MPEG audio libmpg123 can decode.
    case undecodable(url: String, reason: String)
    /// `seek` on a live stream, or on a server that cannot resume.
    case notSeekable(url: String, reason: String)
    /// A document (a feed, a playlist) larger than the `limit` bytes Tutti reads; refused before it was kept.
    case tooLarge(url: String, limit: Int)
    /// The URL answered with a station playlist (PLS, M3U, ASX, XSPF), not
    /// audio: `SourceOpener` resolves it (`StationPlaylists`).
    case isPlaylist(url: String, kind: StationPlaylistKind)
    /// A station playlist that led to nothing playable (each entry's failure
    /// in `reason`), or one that could not be read.
    case playlist(url: String, reason: String)
    /// The offline cache could not do `operation` on `path`.
    case cache(operation: String, path: String, reason: String)
    /// A live stream (no Content-Length) offered to the offline cache.
    case liveNotCacheable(url: String)
    /// A file larger than the whole offline cache.
    case largerThanCache(url: String, size: Int64, capacity: Int64)
    /// A local file failed to open (through `AudioFile.open`).
    case audio(AudioError)

    public var description: String { message.description }

    /// What the person is told (the catalogue's `stream.*`). URLs, paths,
    /// numbers and the reasons libcurl, the system or a server give are data.
    public var message: UserMessage {
        switch self {
        case .unsupportedURL(let u): UserMessage(.streamUnsupportedSource, ["source": u])
        case .httpStatus(let url, let status): UserMessage(Self.statusKey(status), ["url": url, "status": "\(status)"])
        case .network(let url, let reason): UserMessage(.streamNetwork, ["url": url, "reason": reason])
        case .timedOut(let url, let s, let what): UserMessage(.streamTimedOut, ["url": url, "seconds": Self.seconds(s)], messages: ["what": what.message])
        case .truncated(let url, let got, let want): UserMessage(.streamTruncated, ["url": url, "received": "\(got)", "expected": "\(want)"])
        case .overran(let url, let declared): UserMessage(.streamOverran, ["url": url, "declared": "\(declared)"])
        case .refused(let url, let why): why.message(at: url)
        case .undecodable(let url, let reason): UserMessage(.streamUndecodable, ["url": url, "reason": reason])
        case .notSeekable(let url, let reason): UserMessage(.streamNotSeekable, ["url": url, "reason": reason])
        case .tooLarge(let url, let limit):
            limit >= 1 << 20 ? UserMessage(.streamTooLargeMiB, ["url": url, "limit": "\(limit >> 20)"])
                             : UserMessage(.streamTooLargeBytes, ["url": url, "limit": "\(limit)"])
        case .isPlaylist(let url, let kind): UserMessage(.streamIsPlaylist, ["url": url, "kind": kind.rawValue.uppercased()])
        case .playlist(let url, let reason): UserMessage(.streamPlaylist, ["url": url, "reason": reason])
        case .cache(let op, let path, let reason):
            UserMessage(.streamCache, ["path": path, "reason": reason, "operation": op], messages: Self.cacheOperations[op].map { ["operation": UserMessage($0)] } ?? [:])
        case .liveNotCacheable(let url): UserMessage(.streamCacheLive, ["url": url])
        case .largerThanCache(let url, let size, let capacity): UserMessage(.streamCacheTooBig, ["url": url, "size": "\(size)", "capacity": "\(capacity)"])
        case .audio(let e): e.message
        }
    }

    /// The same failure as the `AudioError` that `AudioDecoder.read`/`seek` must throw.
    var audioError: AudioError {
        switch self {
        case .audio(let e): e
        case .undecodable(let url, _): .undecodable(path: url, reason: description)
        case .httpStatus(let url, _), .network(let url, _), .timedOut(let url, _, _), .truncated(let url, _, _),
             .notSeekable(let url, _), .overran(let url, _), .refused(let url, _), .tooLarge(let url, _),
             .isPlaylist(let url, _), .playlist(let url, _):
            .cannotOpen(path: url, reason: description)
        case .unsupportedURL(let u): .cannotOpen(path: u, reason: description)
        case .cache(_, let path, _): .cannotOpen(path: path, reason: description)
        case .liveNotCacheable(let url), .largerThanCache(let url, _, _): .cannotOpen(path: url, reason: description)
        }
    }

    /// The status's meaning is said for the statuses a person can act on.
    private static func statusKey(_ status: Int) -> MessageKey {
        switch status {
        case 401, 403: .streamHTTPAccessDenied
        case 404: .streamHTTPNotFound
        case 416: .streamHTTPRangeNotSatisfiable
        case 500...599: .streamHTTPServerError
        default: .streamHTTPStatus
        }
    }

    /// The cache's operations in words; another (`fsync`) is the system call's name.
    private static let cacheOperations: [String: MessageKey] = ["create": .streamCacheCreate, "write": .streamCacheWrite, "rename": .streamCacheRename]

    /// What a stream was waiting for when nothing came.
    public enum Awaited: Sendable, Equatable {
        case responseHeaders
        case audioData
        /// Audio of a live stream that is reconnecting.
        case audioAfterReconnect

        var message: UserMessage {
            switch self {
            case .responseHeaders: UserMessage(.streamWaitingForHeaders)
            case .audioData: UserMessage(.streamWaitingForAudio)
            case .audioAfterReconnect: UserMessage(.streamWaitingForReconnect)
            }
        }
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? String(Int(s)) : fixedPoint(s, decimals: 1)
    }
}
