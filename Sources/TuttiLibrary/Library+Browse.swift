/// Browsing the library as a person does: artists, then their albums,
/// then an album's tracks (`Library.albumTracks`).
public struct ArtistSummary: Equatable, Sendable {
    /// The album artist, or the track artist when there is none.
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

    /// Albums (of one artist, or all), by artist then name; `limit` bounds a whole-library listing.
    public func albums(artist: String? = nil, limit: Int = 5_000) throws(LibraryError) -> [AlbumSummary] {
        // One artist: an equality the index on coalesce(album_artist, artist) answers (no "?1 IS NULL OR").
        let filter = artist == nil ? "" : "AND coalesce(album_artist, artist) = ?1"
        return try reading { db throws(LibraryError) in
            try db.query("""
                SELECT album, coalesce(album_artist, artist) AS who, max(year), count(*), max(cover_hash) FROM tracks
                WHERE album IS NOT NULL \(filter)
                GROUP BY album, who ORDER BY who COLLATE NOCASE, album COLLATE NOCASE LIMIT ?2
                """, [SQLValue(artist), .int(Int64(limit))]) {
                AlbumSummary(name: $0.text(0), artist: $0.optionalText(1), year: $0.optionalInt(2).map { Int($0) },
                             tracks: Int($0.int(3)), coverHash: $0.optionalText(4))
            }
        }
    }
}
