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

/// One row of a catalog read (`Library.catalogRows`), valid only during
/// the call it is given to: its text as the bytes SQLite holds, so a
/// 100,000-song answer is written without making a String per value.
public struct CatalogRow {
    /// The statement's handle: a row is made per song of a 100,000-song
    /// answer, and a reference to `statement` would be retained and
    /// released for each (and for each unowned use).
    private let handle: OpaquePointer
    /// Only for reads that make a `CatalogSong` (not per song of a long answer).
    unowned(unsafe) let statement: Statement
    /// The path's bytes, fetched once for the caller and the page's cursor.
    let path: UnsafeBufferPointer<UInt8>?

    init(statement: Statement) {
        self.statement = statement
        handle = statement.stmt
        path = Statement.valueText(handle, Text.path.rawValue)
    }

    public enum Text: Int32 { case path = 1, title, artist, album, albumArtist, genre }

    public func withBytes<R>(_ field: Text, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        unsafeBytes(field).map(body)
    }
    /// The field's bytes, nil for NULL: valid only during the call the row
    /// is lent to (several fields at once, for one copy of a song block).
    public func unsafeBytes(_ field: Text) -> UnsafeBufferPointer<UInt8>? {
        field == .path ? path : Statement.valueText(handle, field.rawValue)
    }
    public var trackNumber: Int? { Statement.valueInt(handle, 7).map(Int.init) }
    public var discNumber: Int? { Statement.valueInt(handle, 8).map(Int.init) }
    public var year: Int? { Statement.valueInt(handle, 9).map(Int.init) }
    public var durationSeconds: Double {
        let rate = Statement.valueInt(handle, 11) ?? 0
        return rate > 0 ? Double(Statement.valueInt(handle, 10) ?? 0) / Double(rate) : 0
    }
    public var modifiedSeconds: Int64 { (Statement.valueInt(handle, 12) ?? 0) / 1_000_000_000 }
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
        /// The song's title, folded as MPD folds, contains this folded
        /// text: the first line of `mpd_text` (the haystack starts with the
        /// title, which has no line breaks), read from `tracks_mpd` alone.
        case foldedTitleContains(String)
        /// The column's value is exactly this (case-sensitive).
        case equals(CatalogColumn, String)
        /// The column's value contains this text, ASCII letters in any case (SQLite's LIKE).
        case columnLike(CatalogColumn, String)
        /// The song's path lies under this absolute folder.
        case under(String)
    }

    public var conditions: [Condition]
    public init(_ conditions: [Condition] = []) { self.conditions = conditions }

    /// The index to read: `tracks_mpd` (path order, the folded text beside
    /// each path) unless an equality can use a column's own index.
    fileprivate var index: String {
        conditions.contains { if case .equals = $0 { true } else { false } } ? "" : " INDEXED BY tracks_mpd"
    }

    /// The WHERE clause and its values (after the path cursor).
    fileprivate var sql: (clause: String, values: [SQLValue]) {
        var parts: [String] = []
        var values: [SQLValue] = []
        for c in conditions {
            switch c {
            case .foldedTextContains(let text):
                parts.append("mpd_text_contains(mpd_text, ?)")
                values.append(.text(text))
            case .foldedTitleContains(let text):
                // The title is the first line: searched in place, no copy per row.
                parts.append("mpd_title_contains(mpd_text, ?)")
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
    /// What a `CatalogRow` reads (`catalogColumns` without the file size and cover).
    static let catalogRowColumns = "id, path, title, artist, album, album_artist, genre, track_no, disc_no, year, duration_frames, sample_rate, mtime_ns"
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
            SELECT \(Self.catalogColumns) FROM tracks\(prefilter.index)
            WHERE path > ?\(clause) ORDER BY path LIMIT ? OFFSET ?
            """
        var cursor = ""
        var skip = max(0, offset)
        var left = limit ?? Int.max
        while left > 0 {
            let pageSize = min(Self.catalogPage, left)
            let page = try readingInBulk { db throws(LibraryError) -> [CatalogSong] in
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
        return try readingInBulk { db throws(LibraryError) in
            try db.query("""
                SELECT count(*), coalesce(sum(CAST(duration_frames AS REAL) / max(sample_rate, 1)), 0)
                FROM tracks\(prefilter.index) WHERE path > ''\(clause)
                """, values) { (Int($0.int(0)), $0.double(1)) }.first ?? (0, 0)
        }
    }

    /// As `catalogSongs`, but each row is lent to `row` inside the read
    /// (no `CatalogSong` made); `afterPage` runs between pages with no lock
    /// held (where a caller sends what it wrote). For answers that only
    /// write every matching song out.
    public func catalogRows(_ prefilter: CatalogPrefilter, offset: Int = 0, limit: Int? = nil,
                            row: (CatalogRow) -> Void, afterPage: () -> Void) throws(LibraryError) {
        let (clause, values) = prefilter.sql
        let sql = """
            SELECT \(Self.catalogRowColumns) FROM tracks\(prefilter.index)
            WHERE path > ?\(clause) ORDER BY path LIMIT ? OFFSET ?
            """
        var cursor = ""
        var last: [UInt8] = []
        var skip = max(0, offset)
        var left = limit ?? Int.max
        while left > 0 {
            let pageSize = min(Self.catalogPage, left)
            let count = try readingInBulk { db throws(LibraryError) -> Int in
                let s = try db.cached(sql)
                try s.bind([.text(cursor)] + values + [.int(Int64(pageSize)), .int(Int64(skip))])
                defer { s.reset() }
                var n = 0
                while try s.step() {
                    n += 1
                    let view = CatalogRow(statement: s)
                    row(view)
                    // The next page starts after the last row of a full one (LIMIT pageSize): only its path is kept.
                    if n == pageSize, let p = view.path { last.removeAll(keepingCapacity: true); last.append(contentsOf: p) }
                }
                return n
            }
            skip = 0
            left -= count
            afterPage()
            guard count == pageSize else { return }
            cursor = String(decoding: last, as: UTF8.self)
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

    /// One folder's entries, as MPD lists them: its subfolders, then the
    /// songs directly in it, each in path order. A subfolder costs one index
    /// seek (the rows under it are skipped, not read), made with the bytes
    /// SQLite lends and up to `catalogPage` seeks a lock hold; paths come
    /// from the path index alone, and full rows are read for the songs
    /// only, a page at a time.
    public func catalogFolder(_ folder: String, visit: (CatalogFolderEntry) -> Void) throws(LibraryError) {
        // The same pages as `catalogFolderRows`, each row made a `CatalogSong`.
        try catalogFolderRows(folder, subfolder: { visit(.folder($0)) },
                              row: { visit(.song(Self.catalogSong($0.statement))) }, afterPage: {})
    }

    /// As `catalogFolder`, but each song is lent to `row` inside the read
    /// (no `CatalogSong`, no String per value; `row` must not block), a page
    /// at a time with `afterPage` between pages, no lock held: `lsinfo` of a big folder.
    public func catalogFolderRows(_ folder: String, subfolder: (String) -> Void,
                                  row: (CatalogRow) -> Void, afterPage: () -> Void) throws(LibraryError) {
        let listing = try folderListing(folder)
        for name in listing.folders { subfolder(name) }
        let songIDs = listing.songIDs
        var start = 0
        while start < songIDs.count {
            let ids = songIDs[start..<min(start + Self.catalogPage, songIDs.count)]
            start += ids.count
            let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
            try reading { db throws(LibraryError) in
                let s = try db.cached("SELECT \(Self.catalogColumns) FROM tracks WHERE id IN (\(placeholders)) ORDER BY path")
                defer { s.reset() }
                var i: Int32 = 1
                for id in ids { try s.bind(.int(id), at: i); i += 1 }
                while try s.step() { row(CatalogRow(statement: s)) }
            }
            afterPage()
        }
    }

    /// The listing of one folder, kept while `contentVersion` stays.
    private func folderListing(_ folder: String) throws(LibraryError) -> FolderListings.Listing {
        let base = Array(((folder.hasSuffix("/") ? String(folder.dropLast()) : folder) + "/").utf8)
        let version = contentVersion
        if let cached = folderListings.withLock({ $0.listing(base, version: version) }) { return cached }
        let listing = try readFolderListing(base)
        folderListings.withLock { $0.keep(listing, for: base, version: version) }
        return listing
    }

    /// A folder's subfolder names and the ids of the songs directly in it, from the path index.
    private func readFolderListing(_ base: [UInt8]) throws(LibraryError) -> FolderListings.Listing {
        var folders: [String] = []
        var upper = base
        upper[upper.count - 1] = UInt8(ascii: "0") // "0" follows "/": past everything under the folder
        var cursor = base
        var songIDs: [Int64] = []
        var done = false
        // `path > cursor`: no track's path is the folder itself ("…/") or ends in "…/name0" (tracks have extensions).
        let pathSQL = "SELECT path, id FROM tracks WHERE path > ? AND path < ? ORDER BY path LIMIT ?"
        while !done {
            let names = try reading { db throws(LibraryError) -> [String] in
                let s = try db.cached(pathSQL)
                defer { s.reset() }
                var names: [String] = []
                var seeks = 0
                while seeks < Self.catalogPage {
                    seeks += 1
                    s.reset()
                    try s.bind(textBytes: cursor, at: 1)
                    try s.bind(textBytes: upper, at: 2)
                    try s.bind(.int(Int64(Self.catalogPage)), at: 3)
                    var rows = 0
                    var subfolder = false
                    while try s.step() {
                        rows += 1
                        let slash = s.withTextBytes(0) { p -> Int? in
                            let rest = UnsafeBufferPointer(rebasing: p[base.count...])
                            return rest.firstIndex(of: UInt8(ascii: "/")).map { base.count + $0 }
                        } ?? nil
                        if let slash {
                            _ = s.withTextBytes(0) { p in
                                names.append(String(decoding: UnsafeBufferPointer(rebasing: p[base.count..<slash]), as: UTF8.self))
                                cursor.removeAll(keepingCapacity: true)
                                cursor.append(contentsOf: UnsafeBufferPointer(rebasing: p[..<slash]))
                                cursor.append(UInt8(ascii: "0")) // past everything under base/name/
                            }
                            subfolder = true
                            break
                        }
                        songIDs.append(s.int(1))
                        _ = s.withTextBytes(0) { p in cursor.removeAll(keepingCapacity: true); cursor.append(contentsOf: p) }
                    }
                    if !subfolder && rows < Self.catalogPage { done = true; break }
                }
                return names
            }
            folders += names
        }
        return FolderListings.Listing(folders: folders, songIDs: songIDs)
    }

    /// Distinct values of `column` (non-empty), sorted, with the value of
    /// `group` beside each when given, for the songs matching `prefilter`.
    public func catalogValues(_ column: CatalogColumn, group: CatalogColumn? = nil,
                              _ prefilter: CatalogPrefilter = CatalogPrefilter()) throws(LibraryError) -> [(group: String?, value: String)] {
        let whole = group == nil && prefilter.conditions.isEmpty
        let version = contentVersion
        if whole, let kept = valueLists.withLock({ $0.values(column, version: version) }) { return kept }
        let (clause, values) = prefilter.sql
        let rows = try readingInBulk { db throws(LibraryError) -> [(group: String?, value: String)] in
            if let group {
                let g = "coalesce(\(group.sql), '')"
                return try db.query("""
                    SELECT DISTINCT \(g), \(column.sql) AS v FROM tracks WHERE v IS NOT NULL AND v != ''\(clause) ORDER BY 1, 2
                    """, values) { ($0.optionalText(0), $0.text(1)) }
            }
            // One column alone: DISTINCT and ORDER BY read it in order from its index.
            return try db.query("""
                SELECT DISTINCT \(column.sql) AS v FROM tracks WHERE v IS NOT NULL AND v != ''\(clause) ORDER BY v
                """, values) { (nil, $0.text(0)) }
        }
        if whole { valueLists.withLock { $0.keep(rows, for: column, version: version) } }
        return rows
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

/// The listings of the folders `lsinfo` asked for last, each good while
/// the library's `contentVersion` stays what it was read at: a folder of
/// 2,800 subfolders costs 2,800 index seeks to list, and clients list the
/// root again and again. Bounded: `maxFolders` listings, `maxEntries`
/// names and ids in all (the oldest go first).
struct FolderListings: Sendable {
    struct Listing: Sendable {
        var folders: [String]
        var songIDs: [Int64]
        var size: Int { folders.count + songIDs.count }
    }

    static let maxFolders = 16
    static let maxEntries = 100_000

    private var version = -1
    private var listings: [(base: [UInt8], listing: Listing)] = []

    func listing(_ base: [UInt8], version: Int) -> Listing? {
        guard version == self.version else { return nil }
        return listings.first { $0.base == base }?.listing
    }

    mutating func keep(_ listing: Listing, for base: [UInt8], version: Int) {
        if version != self.version {
            listings.removeAll()
            self.version = version
        }
        listings.removeAll { $0.base == base }
        guard listing.size <= Self.maxEntries else { return }
        listings.append((base, listing))
        while listings.count > Self.maxFolders || listings.reduce(0, { $0 + $1.listing.size }) > Self.maxEntries {
            listings.removeFirst()
        }
    }
}

/// The distinct values of whole columns (`list artist`, `list albumartist`)
/// as last read, good while `contentVersion` stays: each is a pass over an
/// index of every track (30–60 ms at 100,000 tracks, for 3,000 names),
/// and clients ask for them on every visit. Bounded: `maxBytes` of text in
/// all (`list title` of a big library is not kept).
struct ValueLists: Sendable {
    static let maxBytes = 1 << 20

    private var version = -1
    private var lists: [(column: CatalogColumn, rows: [(group: String?, value: String)], bytes: Int)] = []

    func values(_ column: CatalogColumn, version: Int) -> [(group: String?, value: String)]? {
        guard version == self.version else { return nil }
        return lists.first { $0.column == column }?.rows
    }

    mutating func keep(_ rows: [(group: String?, value: String)], for column: CatalogColumn, version: Int) {
        if version != self.version {
            lists.removeAll()
            self.version = version
        }
        lists.removeAll { $0.column == column }
        let bytes = rows.reduce(0) { $0 + $1.value.utf8.count + 16 }
        guard bytes <= Self.maxBytes else { return }
        lists.append((column, rows, bytes))
        while lists.reduce(0, { $0 + $1.bytes }) > Self.maxBytes { lists.removeFirst() }
    }
}
