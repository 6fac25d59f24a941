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
    case timedOut(url: String, seconds: Double, waitingFor: String)
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
    /// A local file failed to open (through `AudioFile.open`).
    case audio(AudioError)

    public var description: String {
        switch self {
        case .unsupportedURL(let u): "unsupported source '\(u)': expected an http:// or https:// URL or a local path"
        case .httpStatus(let url, let status): "\(url): the server answered HTTP \(status)\(Self.statusText(status))"
        case .network(let url, let reason): "\(url): \(reason)"
        case .timedOut(let url, let s, let what): "\(url): nothing received for \(Self.seconds(s)) s while waiting for \(what)"
        case .truncated(let url, let got, let want): "\(url): the connection ended after \(got) of \(want) bytes"
        case .overran(let url, let declared): "\(url): the server sent more than the \(declared) bytes it declared (Content-Length); nothing was kept"
        case .refused(let url, let why): "\(url): \(why)"
        case .undecodable(let url, let reason): "\(url): not decodable as MP3: \(reason)"
        case .notSeekable(let url, let reason): "\(url): cannot seek: \(reason)"
        case .tooLarge(let url, let limit): "\(url): larger than the \(limit >= 1 << 20 ? "\(limit >> 20) MiB" : "\(limit) bytes") Tutti reads; refused"
        case .isPlaylist(let url, let kind): "\(url): a station playlist (\(kind.rawValue.uppercased())), not audio"
        case .playlist(let url, let reason): "\(url): \(reason)"
        case .cache(let op, let path, let reason): "cache: \(op) \(path): \(reason)"
        case .audio(let e): e.description
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
        }
    }

    private static func statusText(_ status: Int) -> String {
        switch status {
        case 401, 403: " (access denied)"
        case 404: " (not found)"
        case 416: " (range not satisfiable)"
        case 500...599: " (server error)"
        default: ""
        }
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? String(Int(s)) : fixedPoint(s, decimals: 1)
    }
}
