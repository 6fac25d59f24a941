/// Browsing the library as a person does: artists, then their albums,
/// then an album's tracks (`Library.albumTracks`).
public struct ArtistSummary: Equatable, Sendable {
    /// The album artist, or the track artist when there is none.
    public var name: String
    public var albums: Int
    public var tracks: Int
}

public struct GenreSummary: Equatable, Sendable {
    /// The genre as tagged (tracks without one are not listed).
    public var name: String
    public var albums: Int
    public var tracks: Int
}

public struct AlbumSummary: Equatable, Sendable {
    public var name: String
    /// The album artist, or the track artist when there is none.
    public var artist: String?
    public var year: Int?
    public var tracks: Int
    /// One of its tracks' covers.
    public var coverHash: String?
}

extension Library {
    /// Every artist with albums and track counts, by name (case-insensitive).
    public func artists() throws(LibraryError) -> [ArtistSummary] {
        try reading { db throws(LibraryError) in
            try db.query("""
                SELECT coalesce(album_artist, artist) AS name, count(DISTINCT album), count(*) FROM tracks
                WHERE name IS NOT NULL GROUP BY name ORDER BY name COLLATE NOCASE
                """) { ArtistSummary(name: $0.text(0), albums: Int($0.int(1)), tracks: Int($0.int(2))) }
        }
    }

    /// Every genre with album and track counts, by name; "Jazz" and "jazz"
    /// are one genre, named by its first spelling in byte order ("Jazz").
    public func genres() throws(LibraryError) -> [GenreSummary] {
        try reading { db throws(LibraryError) in
            try db.query("""
                SELECT min(genre), count(DISTINCT album), count(*) FROM tracks
                WHERE genre IS NOT NULL AND genre <> '' GROUP BY genre COLLATE NOCASE ORDER BY 1 COLLATE NOCASE
                """) { GenreSummary(name: $0.text(0), albums: Int($0.int(1)), tracks: Int($0.int(2))) }
        }
    }

    /// Albums (of one artist, of one genre, or all), by artist then name; `limit` bounds a whole-library listing.
    /// With a genre (any case), an album is listed when any of its tracks has it, with those tracks counted.
    public func albums(artist: String? = nil, genre: String? = nil, limit: Int = 5_000) throws(LibraryError) -> [AlbumSummary] {
        // One artist: an equality the index on coalesce(album_artist, artist) answers (no "?1 IS NULL OR").
        var filter = artist == nil ? "" : "AND coalesce(album_artist, artist) = ?1"
        if genre != nil { filter += " AND genre = ?3 COLLATE NOCASE" }
        return try reading { db throws(LibraryError) in
            try db.query("""
                SELECT album, coalesce(album_artist, artist) AS who, max(year), count(*), max(cover_hash) FROM tracks
                WHERE album IS NOT NULL \(filter)
                GROUP BY album, who ORDER BY who COLLATE NOCASE, album COLLATE NOCASE LIMIT ?2
                """, [SQLValue(artist), .int(Int64(limit))] + (genre.map { [.text($0)] } ?? [])) {
                AlbumSummary(name: $0.text(0), artist: $0.optionalText(1), year: $0.optionalInt(2).map { Int($0) },
                             tracks: Int($0.int(3)), coverHash: $0.optionalText(4))
            }
        }
    }
}
