/// An HLS playlist (RFC 8216) as a radio player needs it: a multivariant
/// ("master") playlist's variants, or a media playlist's segments. Pure:
/// text in, values out; URIs resolved against the playlist's own URL.
/// Bounded: at most `maxSegments` segments and `maxVariants` variants are
/// kept, lines longer than `maxLineBytes` are ignored.
public enum HLSPlaylist: Equatable, Sendable {
    case multivariant([HLSVariant])
    case media(HLSMediaPlaylist)

    /// The most a station's playlist may weigh (fetched whole).
    public static let maxBytes = 1 << 20
    public static let maxSegments = 10_000
    public static let maxVariants = 64
    public static let maxLineBytes = 8_192
    /// A segment lasts at most this (s): beyond, reloads would wait forever.
    public static let maximumTargetDuration = 300.0
    /// Sequence numbers from the playlist are at most this: counting on from it cannot overflow.
    public static let maximumMediaSequence = 1 << 62

    public static func parse(_ text: String, url: String) throws(HLSPlaylistError) -> HLSPlaylist {
        let lines = text.split(whereSeparator: \.isNewline).map { FeedBuilder.trimmed(String($0)) }
        guard lines.first(where: { !$0.isEmpty }) == "#EXTM3U" else { throw .notHLS("it does not start with #EXTM3U") }
        if lines.contains(where: { $0.hasPrefix("#EXT-X-STREAM-INF") }) { return .multivariant(try variants(lines, url: url)) }
        return .media(try media(lines, url: url))
    }

    private static func variants(_ lines: [String], url: String) throws(HLSPlaylistError) -> [HLSVariant] {
        // Audio renditions by group (`#EXT-X-MEDIA:TYPE=AUDIO`), wherever declared: an audio-only stream a variant with video points to.
        var audioGroups: [String: String] = [:]
        for line in lines where line.hasPrefix("#EXT-X-MEDIA:") && line.utf8.count <= maxLineBytes {
            let a = attributes(line.dropFirst("#EXT-X-MEDIA:".count))
            if a["TYPE"] == "AUDIO", let group = a["GROUP-ID"], let uri = a["URI"], let resolved = StationPlaylist.resolve(uri, base: url),
               audioGroups[group] == nil || a["DEFAULT"] == "YES" {
                audioGroups[group] = resolved
            }
        }
        var result: [HLSVariant] = []
        var pending: [String: String]?
        for line in lines where line.utf8.count <= maxLineBytes {
            if line.hasPrefix("#EXT-X-STREAM-INF:") {
                pending = attributes(line.dropFirst("#EXT-X-STREAM-INF:".count))
            } else if !line.hasPrefix("#"), !line.isEmpty, let a = pending {
                pending = nil
                guard let resolved = StationPlaylist.resolve(line, base: url), result.count < maxVariants else { continue }
                let codecs = (a["CODECS"] ?? "").lowercased()
                // No CODECS: unknown, taken as audio (radio variants often leave it out).
                let hasVideo = ["avc", "hvc", "hev", "vp0", "av01", "mp4v"].contains { codecs.contains($0) } || a["RESOLUTION"] != nil
                result.append(HLSVariant(url: resolved, bandwidth: Int(a["BANDWIDTH"] ?? "") ?? 0, hasVideo: hasVideo,
                                         audioRendition: a["AUDIO"].flatMap { audioGroups[$0] }))
            }
        }
        guard !result.isEmpty else { throw .empty("its multivariant playlist lists no stream") }
        return result
    }

    private static func media(_ lines: [String], url: String) throws(HLSPlaylistError) -> HLSMediaPlaylist {
        var playlist = HLSMediaPlaylist()
        var sequence = 0
        var duration: Double?
        var title: String?
        var discontinuity = false
        var programDate: String?
        for line in lines where line.utf8.count <= maxLineBytes {
            if line.hasPrefix("#EXT-X-TARGETDURATION:") {
                // Bounded: an infinite or absurd target duration would make the reader wait forever between reloads.
                if let d = Double(line.dropFirst("#EXT-X-TARGETDURATION:".count)), d.isFinite, d > 0, d <= maximumTargetDuration {
                    playlist.targetDuration = d
                }
            } else if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") {
                // Bounded where it enters: sequence numbers are counted on (one a segment) and
                // subtracted between reloads, and Int.max + 1 traps.
                guard let n = Int(line.dropFirst("#EXT-X-MEDIA-SEQUENCE:".count)), (0...maximumMediaSequence).contains(n) else {
                    throw .unsupported("its #EXT-X-MEDIA-SEQUENCE is not a number from 0 to 2^62")
                }
                playlist.mediaSequence = n
                sequence = playlist.mediaSequence
            } else if line.hasPrefix("#EXTINF:") {
                let value = line.dropFirst("#EXTINF:".count)
                let comma = value.firstIndex(of: ",") ?? value.endIndex
                duration = Double(value[..<comma])
                let rest = comma < value.endIndex ? String(value[value.index(after: comma)...]) : ""
                title = rest.isEmpty ? nil : rest
            } else if line == "#EXT-X-ENDLIST" {
                playlist.hasEnded = true
            } else if line.hasPrefix("#EXT-X-PLAYLIST-TYPE:") {
                playlist.isVOD = line.hasSuffix("VOD")
            } else if line == "#EXT-X-DISCONTINUITY" {
                discontinuity = true
            } else if line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") {
                programDate = String(line.dropFirst("#EXT-X-PROGRAM-DATE-TIME:".count))
            } else if line.hasPrefix("#EXT-X-MAP:") {
                let a = attributes(line.dropFirst("#EXT-X-MAP:".count))
                guard a["BYTERANGE"] == nil else { throw .unsupported("an initialization section by byte range") }
                guard let uri = a["URI"], let resolved = StationPlaylist.resolve(uri, base: url) else { throw .unsupported("an EXT-X-MAP without a usable URI") }
                playlist.initSection = resolved
            } else if line.hasPrefix("#EXT-X-KEY:") {
                let method = attributes(line.dropFirst("#EXT-X-KEY:".count))["METHOD"] ?? "NONE"
                guard method == "NONE" else { throw .unsupported("encrypted segments (\(method))") }
            } else if line.hasPrefix("#EXT-X-BYTERANGE") {
                throw .unsupported("segments by byte range")
            } else if !line.hasPrefix("#"), !line.isEmpty {
                defer { sequence += 1; duration = nil; title = nil; discontinuity = false; programDate = nil }
                guard playlist.segments.count < maxSegments, let resolved = StationPlaylist.resolve(line, base: url) else { continue }
                playlist.segments.append(HLSSegment(sequence: sequence, url: resolved, duration: duration ?? playlist.targetDuration,
                                                    title: title, discontinuity: discontinuity, programDateTime: programDate))
            }
        }
        guard playlist.targetDuration > 0 else { throw .empty("its media playlist has no #EXT-X-TARGETDURATION") }
        return playlist
    }

    /// `KEY=value,KEY="quoted, value"` as a dictionary.
    static func attributes(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var i = text.startIndex
        while i < text.endIndex {
            guard let eq = text[i...].firstIndex(of: "=") else { break }
            let key = FeedBuilder.trimmed(String(text[i..<eq]))
            var j = text.index(after: eq)
            var value = ""
            if j < text.endIndex, text[j] == "\"" {
                let start = text.index(after: j)
                let end = text[start...].firstIndex(of: "\"") ?? text.endIndex
                value = String(text[start..<end])
                j = end < text.endIndex ? text.index(after: end) : end
                if let comma = text[j...].firstIndex(of: ",") { j = text.index(after: comma) } else { j = text.endIndex }
            } else {
                let end = text[j...].firstIndex(of: ",") ?? text.endIndex
                value = String(text[j..<end])
                j = end < text.endIndex ? text.index(after: end) : end
            }
            result[key] = value
            i = j
        }
        return result
    }
}

/// One stream of a multivariant playlist.
public struct HLSVariant: Equatable, Sendable {
    public var url: String
    public var bandwidth: Int
    public var hasVideo: Bool
    /// The audio rendition (`#EXT-X-MEDIA:TYPE=AUDIO`) it names, if any.
    public var audioRendition: String?

    /// The media playlist to play: the best audio-only variant; else an
    /// audio rendition; else the lightest variant with video (the leader
    /// fetches its video too, and plays only the sound).
    public static func choose(_ variants: [HLSVariant]) -> String? {
        if let audio = variants.filter({ !$0.hasVideo }).max(by: { $0.bandwidth < $1.bandwidth }) { return audio.url }
        if let rendition = variants.compactMap(\.audioRendition).first { return rendition }
        return variants.min(by: { $0.bandwidth < $1.bandwidth })?.url
    }
}

public struct HLSMediaPlaylist: Equatable, Sendable {
    public var targetDuration: Double = 0
    public var mediaSequence = 0
    public var segments: [HLSSegment] = []
    /// `#EXT-X-ENDLIST`: no segment will be added.
    public var hasEnded = false
    public var isVOD = false
    /// fMP4: the initialization section (`#EXT-X-MAP`) before the first segment.
    public var initSection: String?
    public init() {}
}

public struct HLSSegment: Equatable, Sendable {
    public var sequence: Int
    public var url: String
    public var duration: Double
    /// `#EXTINF`'s title, if any (some stations name the song there).
    public var title: String?
    public var discontinuity: Bool
    public var programDateTime: String?
}

public enum HLSPlaylistError: Error, Equatable, Sendable, CustomStringConvertible {
    case notHLS(String)
    case empty(String)
    case unsupported(String)

    public var description: String {
        switch self {
        case .notHLS(let why): "not an HLS playlist: \(why)"
        case .empty(let why): "an empty HLS playlist: \(why)"
        case .unsupported(let what): "HLS with \(what), which Tutti does not play"
        }
    }
}

/// Which segment to fetch next and when to reload a media playlist: the
/// HLS client's decisions, on injected time (seconds), without I/O.
///
/// * A live playlist starts three target durations from its end (RFC 8216
///   6.3.3), a VOD one (or one that has ended) at its first segment.
/// * Segments are taken in media-sequence order, each once. A client that
///   fell out of the sliding window (the server dropped segments it had not
///   fetched) jumps to the oldest one still listed and counts what it missed.
/// * A live playlist is reloaded a target duration after it last changed
///   (half of one after a reload that brought nothing new, as the RFC
///   says); one that brings nothing new for `stallTargets` target durations
///   is a dead stream.
public struct HLSSession: Sendable, Equatable {
    public enum Step: Equatable, Sendable {
        /// Fetch this segment (first `initSection` when it is new).
        case fetch(HLSSegment, initSection: String?)
        /// Nothing to fetch before reloading the playlist at this time.
        case reload(at: Double)
        /// The stream has ended (VOD done, or ENDLIST reached).
        case finished
        /// The playlist stopped moving: no new segment for this long.
        case stalled(seconds: Double)
    }

    public private(set) var playlist = HLSMediaPlaylist()
    /// The sequence number of the next segment to fetch; nil before the first playlist.
    public private(set) var nextSequence: Int?
    /// Segments that left the window before they were fetched.
    public private(set) var missedSegments = 0
    private var lastChange = 0.0
    private var lastReload = 0.0
    private var reloadsWithoutChange = 0
    private var sentInit: String?
    public let stallTargets: Double

    public init(stallTargets: Double = 6) { self.stallTargets = stallTargets }

    /// A (re)loaded media playlist at `now`.
    public mutating func update(_ new: HLSMediaPlaylist, now: Double) {
        let lastKnown = playlist.segments.last?.sequence ?? Int.min
        let grew = (new.segments.last?.sequence ?? Int.min) > lastKnown || new.hasEnded != playlist.hasEnded
        if nextSequence == nil {
            let first = new.segments.first?.sequence ?? new.mediaSequence
            if new.hasEnded || new.isVOD {
                nextSequence = first
            } else {
                // Three target durations from the end, counting whole segments.
                var held = 0.0, index = new.segments.count
                while index > 0 && held < 3 * new.targetDuration { index -= 1; held += new.segments[index].duration }
                nextSequence = index < new.segments.count ? new.segments[index].sequence : first
            }
            lastChange = now
        } else if grew {
            lastChange = now
            reloadsWithoutChange = 0
        } else {
            reloadsWithoutChange += 1
        }
        if let next = nextSequence, let first = new.segments.first?.sequence, next < first {
            missedSegments += first - next
            nextSequence = first
        }
        lastReload = now
        playlist = new
    }

    /// What to do at `now`; a `.fetch` step counts as done (the next call goes on past it).
    public mutating func step(now: Double) -> Step {
        guard let next = nextSequence else { return .reload(at: now) }
        if let segment = playlist.segments.first(where: { $0.sequence >= next }) {
            nextSequence = segment.sequence + 1
            let initSection = playlist.initSection != sentInit ? playlist.initSection : nil
            sentInit = playlist.initSection
            return .fetch(segment, initSection: initSection)
        }
        if playlist.hasEnded || playlist.isVOD { return .finished }
        let quiet = now - lastChange
        if quiet > stallTargets * max(playlist.targetDuration, 1) { return .stalled(seconds: quiet) }
        let wait = reloadsWithoutChange > 0 ? playlist.targetDuration / 2 : playlist.targetDuration
        return .reload(at: max(now, lastReload + max(wait, 0.1)))
    }
}
