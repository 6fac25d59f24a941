import TuttiCore
import TuttiControlKit

// MPD song filters, with no I/O: the old `TAG VALUE …` pairs and the
// filter expressions of MPD 0.21 (`(artist == 'x')`, `((a) AND (b))`, `(!…)`).

/// What a filter needs of a song.
public struct MPDSong: Sendable, Equatable {
    /// Relative to the music folder (or an absolute path or URL outside it).
    public var uri: String
    /// Canonical MPD tag name (`Artist`, `Album`, …) → value.
    public var tags: [String: String]
    public var durationSeconds: Double?
    /// Seconds since 1970, for `Last-Modified`.
    public var modified: Int64?
    /// Library path, for covers and playlists; nil for songs not in the library.
    public var path: String?
    public var coverHash: String?
    public var bitrateKbps: Int?

    public init(uri: String, tags: [String: String] = [:], durationSeconds: Double? = nil, modified: Int64? = nil,
                path: String? = nil, coverHash: String? = nil, bitrateKbps: Int? = nil) {
        self.uri = uri
        self.tags = tags
        self.durationSeconds = durationSeconds
        self.modified = modified
        self.path = path
        self.coverHash = coverHash
        self.bitrateKbps = bitrateKbps
    }
}

/// The tags Tutti knows, in MPD's spelling and in the order songs list them.
public enum MPDTags {
    public static let all = ["Artist", "AlbumArtist", "Title", "Album", "Track", "Disc", "Genre", "Date"]

    /// Every tag MPD 0.23 knows; Tutti accepts them in `tagtypes` and
    /// filters (a tag it does not fill is an empty value).
    public static let known = all + [
        "ArtistSort", "AlbumSort", "AlbumArtistSort", "TitleSort", "Name", "Mood", "OriginalDate", "Composer", "ComposerSort",
        "Performer", "Conductor", "Work", "Ensemble", "Movement", "MovementNumber", "Location", "Grouping", "Comment", "Label",
        "MUSICBRAINZ_ARTISTID", "MUSICBRAINZ_ALBUMID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID",
        "MUSICBRAINZ_RELEASETRACKID", "MUSICBRAINZ_WORKID",
    ]

    /// The canonical spelling of a tag name in any case, or nil.
    public static func canonical(_ name: String) -> String? {
        let lower = name.lowercased()
        if lower == "album_artist" { return "AlbumArtist" }
        return known.first { $0.lowercased() == lower }
    }
}

public indirect enum MPDFilter: Equatable, Sendable {
    public enum Operator: Equatable, Sendable { case equals, notEquals, contains, startsWith }
    /// `tag` nil means "any tag".
    case tag(String?, Operator, String)
    case file(Operator, String)
    /// The song lies in this folder (recursively).
    case base(String)
    case not(MPDFilter)
    case and([MPDFilter])
    /// Matches everything (`modified-since`, which Tutti does not track).
    case all

    /// Parses the arguments of `find`/`search`/`list`…: either one filter
    /// expression per argument starting with `(`, or `TAG VALUE` pairs.
    /// `exact` (find) compares whole values case-sensitively; otherwise
    /// (search) `TAG VALUE` means a case-insensitive substring match.
    public static func parse(_ arguments: [String], exact: Bool) throws(MPDError) -> MPDFilter {
        var filters: [MPDFilter] = []
        var i = 0
        while i < arguments.count {
            let a = arguments[i]
            if a.hasPrefix("(") {
                var parser = ExpressionParser(text: Array(a))
                filters.append(try parser.parseTop())
                i += 1
                continue
            }
            guard i + 1 < arguments.count else { throw .argument("Missing value for \"\(a)\"") }
            let value = arguments[i + 1]
            let op: Operator = exact ? .equals : .contains
            switch a.lowercased() {
            case "any": filters.append(.tag(nil, op, value))
            case "file": filters.append(.file(op, value))
            case "base": filters.append(.base(value))
            case "modified-since": filters.append(.all)
            default:
                guard let tag = MPDTags.canonical(a) else { throw .argument("Unknown filter type: \(a)") }
                filters.append(.tag(tag, op, value))
            }
            i += 2
        }
        return filters.count == 1 ? filters[0] : .and(filters)
    }

    /// `foldCase`: compare ignoring case (search); else exact (find).
    public func matches(_ song: MPDSong, foldCase: Bool) -> Bool {
        func compare(_ value: String, _ op: Operator, _ wanted: String) -> Bool {
            let v = foldCase ? SearchText.mpdFold(value) : value
            let w = foldCase ? SearchText.mpdFold(wanted) : wanted
            switch op {
            case .equals: return v == w
            case .notEquals: return v != w
            case .contains: return v.contains(w)
            case .startsWith: return v.hasPrefix(w)
            }
        }
        switch self {
        case .all:
            return true
        case .and(let filters):
            return filters.allSatisfy { $0.matches(song, foldCase: foldCase) }
        case .not(let f):
            return !f.matches(song, foldCase: foldCase)
        case .base(let folder):
            let trimmed = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
            return trimmed.isEmpty || song.uri.hasPrefix(trimmed + "/")
        case .file(let op, let wanted):
            return compare(song.uri, op, wanted)
        case .tag(let tag?, let op, let wanted):
            // A missing tag is the empty string, so `(genre != 'x')` matches untagged songs.
            return compare(song.tags[tag] ?? "", op, wanted)
        case .tag(nil, let op, let wanted):
            // Tag values only, as MPD 0.23: `search any "mp3"` does not match file names.
            let values = Array(song.tags.values)
            if op == .notEquals { return values.allSatisfy { compare($0, .notEquals, wanted) } }
            return values.contains { compare($0, op, wanted) }
        }
    }
}

/// Recursive descent over one filter expression argument.
private struct ExpressionParser {
    let text: [Character]
    var i = 0

    mutating func parseTop() throws(MPDError) -> MPDFilter {
        let f = try parseExpression(depth: 0)
        skipSpace()
        guard i == text.count else { throw .argument("Unparsed garbage after expression") }
        return f
    }

    mutating func skipSpace() { while i < text.count, text[i].isWhitespace { i += 1 } }

    mutating func expect(_ c: Character) throws(MPDError) {
        skipSpace()
        guard i < text.count, text[i] == c else { throw .argument("'\(c)' expected") }
        i += 1
    }

    mutating func parseExpression(depth: Int) throws(MPDError) -> MPDFilter {
        guard depth < 32 else { throw .argument("Filter expression nested too deep") }
        try expect("(")
        skipSpace()
        guard i < text.count else { throw .argument("Unterminated filter expression") }
        if text[i] == "(" {
            var parts = [try parseExpression(depth: depth + 1)]
            while true {
                skipSpace()
                if i < text.count, text[i] == ")" { i += 1; break }
                let word = readWord()
                guard word == "AND" else { throw .argument("'AND' or ')' expected") }
                parts.append(try parseExpression(depth: depth + 1))
            }
            return parts.count == 1 ? parts[0] : .and(parts)
        }
        if text[i] == "!" {
            i += 1
            let inner = try parseExpression(depth: depth + 1)
            try expect(")")
            return .not(inner)
        }
        let name = readWord()
        guard !name.isEmpty else { throw .argument("Tag name expected") }
        skipSpace()
        if name.lowercased() == "base" {
            let value = try readQuoted()
            try expect(")")
            return .base(value)
        }
        if name.lowercased() == "modified-since" || name.lowercased() == "added-since" {
            _ = try readQuoted()
            try expect(")")
            return .all
        }
        let opWord = readOperator()
        let op: MPDFilter.Operator
        switch opWord {
        case "==": op = .equals
        case "!=": op = .notEquals
        case "contains": op = .contains
        case "starts_with": op = .startsWith
        case "=~", "!~": throw .argument("Regular expressions are not supported")
        default: throw .argument("Unknown filter operator: \(opWord)")
        }
        skipSpace()
        let value = try readQuoted()
        try expect(")")
        switch name.lowercased() {
        case "file": return .file(op, value)
        case "any": return .tag(nil, op, value)
        default:
            guard let tag = MPDTags.canonical(name) else { throw .argument("Unknown tag type: \(name)") }
            return .tag(tag, op, value)
        }
    }

    mutating func readWord() -> String {
        skipSpace()
        var s = ""
        while i < text.count, text[i].isLetter || text[i].isNumber || text[i] == "_" || text[i] == "-" { s.append(text[i]); i += 1 }
        return s
    }

    mutating func readOperator() -> String {
        skipSpace()
        var s = ""
        while i < text.count, !text[i].isWhitespace, text[i] != "'", text[i] != "\"" { s.append(text[i]); i += 1 }
        return s
    }

    mutating func readQuoted() throws(MPDError) -> String {
        skipSpace()
        guard i < text.count, text[i] == "'" || text[i] == "\"" else { throw .argument("Quoted string expected") }
        let quote = text[i]
        i += 1
        var s = ""
        while i < text.count {
            let c = text[i]
            if c == "\\" {
                i += 1
                guard i < text.count else { break }
                s.append(text[i])
            } else if c == quote {
                i += 1
                return s
            } else {
                s.append(c)
            }
            i += 1
        }
        throw .argument("Closing quote not found")
    }
}
