/// Favourites and play history. Both are keyed by track id, which a moved
/// file keeps, and leave with the track when its file is deleted.
/// Every mutating call returns after its transaction has committed.
extension Library {
    /// Likes a track (idempotent: liking twice keeps the first time).
    public func like(_ id: TrackID, at time: Int64 = WallClock.unixMilliseconds()) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            try requireTrack(id, db)
            try db.run("INSERT OR IGNORE INTO favourites(track_id, liked_at) VALUES (?, ?)", [.int(id.rawValue), .int(time)])
        }
    }

    public func unlike(_ id: TrackID) throws(LibraryError) {
        try locked { db throws(LibraryError) in try db.run("DELETE FROM favourites WHERE track_id = ?", [.int(id.rawValue)]) }
    }

    public func isLiked(_ id: TrackID) throws(LibraryError) -> Bool {
        try locked { db throws(LibraryError) in try db.scalarInt("SELECT 1 FROM favourites WHERE track_id = ?", [.int(id.rawValue)]) != nil }
    }

    /// Liked tracks, most recently liked first.
    public func favourites(limit: Int = 1_000, offset: Int = 0) throws(LibraryError) -> [Favourite] {
        try locked { db throws(LibraryError) in
            try db.query("""
                SELECT f.liked_at, \(TrackStore.columns("t"))
                FROM favourites f JOIN tracks t ON t.id = f.track_id
                ORDER BY f.liked_at DESC, f.rowid DESC LIMIT ? OFFSET ?
                """, [.int(Int64(max(0, limit))), .int(Int64(max(0, offset)))]) { s in
                Favourite(track: TrackStore.track(s, first: 1), likedAt: s.int(0))
            }
        }
    }

    /// Records that `id` started playing at `startedAt` (Unix ms) and
    /// played for `playedMilliseconds`.
    public func recordPlay(_ id: TrackID, startedAt: Int64, playedMilliseconds: Int64) throws(LibraryError) {
        guard playedMilliseconds >= 0 else { throw .invalidArgument("played time cannot be negative (\(playedMilliseconds) ms)") }
        try locked { db throws(LibraryError) in
            try requireTrack(id, db)
            try db.run("INSERT INTO history(track_id, started_at, played_ms) VALUES (?, ?, ?)",
                       [.int(id.rawValue), .int(startedAt), .int(playedMilliseconds)])
        }
    }

    /// Plays, newest first.
    public func history(limit: Int = 100, offset: Int = 0) throws(LibraryError) -> [Play] {
        try locked { db throws(LibraryError) in
            try db.query("""
                SELECT h.started_at, h.played_ms, \(TrackStore.columns("t"))
                FROM history h JOIN tracks t ON t.id = h.track_id
                ORDER BY h.started_at DESC, h.id DESC LIMIT ? OFFSET ?
                """, [.int(Int64(max(0, limit))), .int(Int64(max(0, offset)))]) { s in
                Play(track: TrackStore.track(s, first: 2), startedAt: s.int(0), playedMilliseconds: s.int(1))
            }
        }
    }

    public func clearHistory() throws(LibraryError) {
        try locked { db throws(LibraryError) in try db.run("DELETE FROM history") }
    }
}
