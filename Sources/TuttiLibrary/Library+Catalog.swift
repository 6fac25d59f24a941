import TuttiCore

/// A track as the MPD port shows it: what a song block needs, read
/// straight from the row (no dictionary per song).
public struct CatalogSong: Sendable, Equatable {
    public var id: TrackID
    /// Absolute, as stored.
    public var path: String
    public var title: String
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var trackNumber: Int?
    public var discNumber: Int?
    public var year: Int?
    public var durationSeconds: Double
    public var modifiedSeconds: Int64
    public var fileSize: Int
    public var coverHash: String?
}

/// A column a catalog condition or listing names.
public enum CatalogColumn: String, Sendable, CaseIterable {
    case title, artist, album, albumArtist = "album_artist", genre, trackNumber = "track_no", discNumber = "disc_no", year
    /// The album artist, or the artist when there is none (MPD's fallback for `list albumartist`).
    case albumArtistOrArtist = "coalesce(album_artist, artist)"

    var isNumber: Bool { self == .trackNumber || self == .discNumber || self == .year }

    /// As compared with a client's text: numbers are compared as their decimal text.
    var sql: String { isNumber ? "CAST(\(rawValue) AS TEXT)" : rawValue }
}

/// The part of a song filter SQLite can apply: every condition must hold.
/// The MPD port turns its filter into one of these, exactly where it can
/// and as a superset where it cannot (then it checks each song itself).
public struct CatalogPrefilter: Sendable, Equatable {
    public enum Condition: Sendable, Equatable {
        /// `SearchText.mpdHaystack` of the song contains this folded text.
        case foldedTextContains(String)
        /// The column's value is exactly this (case-sensitive).
        case equals(CatalogColumn, String)
        /// The column's value contains this text, ASCII letters in any case (SQLite's LIKE).
        case columnLike(CatalogColumn, String)
        /// The song's path lies under this absolute folder.
        case under(String)
    }

    public var conditions: [Condition]
    public init(_ conditions: [Condition] = []) { self.conditions = conditions }

    /// The WHERE clause and its values (after the path cursor).
    fileprivate var sql: (clause: String, values: [SQLValue]) {
        var parts: [String] = []
        var values: [SQLValue] = []
        for c in conditions {
            switch c {
            case .foldedTextContains(let text):
                parts.append("instr(mpd_text, ?) > 0")
                values.append(.text(text))
            case .equals(let column, let value):
                parts.append("\(column.sql) = ?")
                values.append(.text(value))
            case .columnLike(let column, let value):
                parts.append("\(column.sql) LIKE ? ESCAPE '\\'")
                values.append(.text("%" + SearchQuery.escapeLike(value) + "%"))
            case .under(let folder):
                let base = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
                parts.append("path >= ? AND path < ?")
                values += [.text(base + "/"), .text(base + "0")] // "0" follows "/"
            }
        }
        return (parts.isEmpty ? "" : " AND " + parts.joined(separator: " AND "), values)
    }
}

/// An entry of one folder, for `lsinfo`: a subfolder (its name) or a song.
public enum CatalogFolderEntry: Sendable {
    case folder(String)
    case song(CatalogSong)
}

/// Counts for MPD's `stats`.
public struct CatalogStats: Sendable, Equatable {
    public var songs: Int
    public var artists: Int
    public var albums: Int
    public var totalSeconds: Double

    public init(songs: Int, artists: Int, albums: Int, totalSeconds: Double) {
        self.songs = songs
        self.artists = artists
        self.albums = albums
        self.totalSeconds = totalSeconds
    }
}

/// The MPD port's view of the library, read in path order through the
/// query connection, a page at a time: the connection's lock is released
/// between pages (a slow client never holds up other readers) and only a
/// page of songs is in memory, however large the answer.
extension Library {
    static let catalogColumns = """
        id, path, title, artist, album, album_artist, genre, track_no, disc_no, year, duration_frames, sample_rate, mtime_ns, file_size, cover_hash
        """
    static let catalogPage = 512

    static func catalogSong(_ s: Statement) -> CatalogSong {
        let rate = s.int(11)
        return CatalogSong(id: TrackID(s.int(0)), path: s.text(1), title: s.text(2), artist: s.optionalText(3), album: s.optionalText(4),
                           albumArtist: s.optionalText(5), genre: s.optionalText(6), trackNumber: s.optionalInt(7).map(Int.init),
                           discNumber: s.optionalInt(8).map(Int.init), year: s.optionalInt(9).map(Int.init),
                           durationSeconds: rate > 0 ? Double(s.int(10)) / Double(rate) : 0,
                           modifiedSeconds: s.int(12) / 1_000_000_000, fileSize: Int(s.int(13)), coverHash: s.optionalText(14))
    }

    /// Songs matching `prefilter` in path order: `offset` matches skipped,
    /// at most `limit` visited; `visit` returns false to stop early.
    /// The skipping is done by SQLite, so `window 50000:50050` costs a
    /// count, not 50,000 songs. Called without any lock held by `visit`.
    public func catalogSongs(_ prefilter: CatalogPrefilter = CatalogPrefilter(), offset: Int = 0, limit: Int? = nil,
                             visit: (CatalogSong) -> Bool) throws(LibraryError) {
        let (clause, values) = prefilter.sql
        // INDEXED BY: path order straight from the index that also holds
        // mpd_text, so a row is looked up only when it matches.
        let sql = """
            SELECT \(Self.catalogColumns) FROM tracks INDEXED BY tracks_mpd
            WHERE path > ?\(clause) ORDER BY path LIMIT ? OFFSET ?
            """
        var cursor = ""
        var skip = max(0, offset)
        var left = limit ?? Int.max
        while left > 0 {
            let pageSize = min(Self.catalogPage, left)
            let page = try reading { db throws(LibraryError) -> [CatalogSong] in
                try db.query(sql, [.text(cursor)] + values + [.int(Int64(pageSize)), .int(Int64(skip))]) { Self.catalogSong($0) }
            }
            skip = 0
            for song in page {
                left -= 1
                guard visit(song) else { return }
            }
            guard page.count == pageSize, let last = page.last else { return }
            cursor = last.path
        }
    }

    /// How many songs match `prefilter`, and their total length in seconds.
    public func catalogCount(_ prefilter: CatalogPrefilter) throws(LibraryError) -> (songs: Int, seconds: Double) {
        let (clause, values) = prefilter.sql
        return try reading { db throws(LibraryError) in
            try db.query("""
                SELECT count(*), coalesce(sum(CAST(duration_frames AS REAL) / max(sample_rate, 1)), 0)
                FROM tracks INDEXED BY tracks_mpd WHERE path > ''\(clause)
                """, values) { (Int($0.int(0)), $0.double(1)) }.first ?? (0, 0)
        }
    }

    /// The song at an absolute path, or nil.
    public func catalogSong(path: String) throws(LibraryError) -> CatalogSong? {
        try reading { db throws(LibraryError) in
            try db.query("SELECT \(Self.catalogColumns) FROM tracks WHERE path = ?", [.text(path)]) { Self.catalogSong($0) }.first
        }
    }

    /// Whether the library holds any song under this absolute folder.
    public func catalogHasFolder(_ folder: String) throws(LibraryError) -> Bool {
        let base = folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        return try reading { db throws(LibraryError) in
            try db.scalarInt("SELECT 1 FROM tracks WHERE path >= ? AND path < ? LIMIT 1", [.text(base + "/"), .text(base + "0")]) != nil
        }
    }

    /// One folder's entries in path order: each subfolder once (the rows
    /// under it are skipped with one index seek, not read) and the songs
    /// directly in it.
    public func catalogFolder(_ folder: String, visit: (CatalogFolderEntry) -> Void) throws(LibraryError) {
        let base = (folder.hasSuffix("/") ? String(folder.dropLast()) : folder) + "/"
        let upper = String(base.dropLast()) + "0"
        var cursor = base
        // `path > cursor`: no track's path is the folder itself ("…/") or ends in "…/name0" (tracks have extensions).
        let songSQL = "SELECT \(Self.catalogColumns) FROM tracks WHERE path > ? AND path < ? ORDER BY path LIMIT ?"
        while true {
            var next: String?
            let page = try reading { db throws(LibraryError) -> [CatalogFolderEntry] in
                var entries: [CatalogFolderEntry] = []
                let s = try db.cached(songSQL)
                try s.bind([.text(cursor), .text(upper), .int(Int64(Self.catalogPage))])
                defer { s.reset() }
                var rows = 0
                while try s.step() {
                    rows += 1
                    let path = s.text(1)
                    let rest = path.utf8.dropFirst(base.utf8.count)
                    if let slash = rest.firstIndex(of: UInt8(ascii: "/")) {
                        let name = String(decoding: rest[..<slash], as: UTF8.self)
                        entries.append(.folder(name))
                        next = base + name + "0" // past everything under base/name/
                        return entries
                    }
                    entries.append(.song(Self.catalogSong(s)))
                    next = path
                }
                if rows < Self.catalogPage { next = nil }
                return entries
            }
            for e in page { visit(e) }
            guard let n = next else { return }
            cursor = n
        }
    }

    /// Distinct values of `column` (non-empty), sorted, with the value of
    /// `group` beside each when given, for the songs matching `prefilter`.
    public func catalogValues(_ column: CatalogColumn, group: CatalogColumn? = nil,
                              _ prefilter: CatalogPrefilter = CatalogPrefilter()) throws(LibraryError) -> [(group: String?, value: String)] {
        let (clause, values) = prefilter.sql
        let g = group.map { "coalesce(\($0.sql), '')" } ?? "NULL"
        return try reading { db throws(LibraryError) in
            try db.query("""
                SELECT DISTINCT \(g), \(column.sql) AS v FROM tracks WHERE v IS NOT NULL AND v != ''\(clause) ORDER BY 1, 2
                """, values) { ($0.optionalText(0), $0.text(1)) }
        }
    }

    /// Songs, distinct artists and albums, and the total length.
    public func catalogStats() throws(LibraryError) -> CatalogStats {
        try reading { db throws(LibraryError) in
            let songs = try db.query("SELECT count(*), coalesce(sum(CAST(duration_frames AS REAL) / max(sample_rate, 1)), 0) FROM tracks") {
                (Int($0.int(0)), $0.double(1))
            }.first ?? (0, 0)
            let artists = Int(try db.scalarInt("SELECT count(*) FROM (SELECT DISTINCT artist FROM tracks WHERE artist IS NOT NULL)") ?? 0)
            let albums = Int(try db.scalarInt("SELECT count(*) FROM (SELECT DISTINCT album FROM tracks WHERE album IS NOT NULL)") ?? 0)
            return CatalogStats(songs: songs.0, artists: artists, albums: albums, totalSeconds: songs.1)
        }
    }
}
