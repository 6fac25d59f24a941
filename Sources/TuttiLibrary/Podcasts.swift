import TuttiCore
import TuttiSystem

public struct PodcastID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int64
    public init(_ rawValue: Int64) { self.rawValue = rawValue }
    public var description: String { "podcast \(rawValue)" }
}

public struct EpisodeID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int64
    public init(_ rawValue: Int64) { self.rawValue = rawValue }
    public var description: String { "episode \(rawValue)" }
}

/// A subscribed show.
public struct Podcast: Sendable, Equatable {
    public var id: PodcastID
    public var url: String
    public var title: String
    public var author: String?
    public var image: String?
    public var description: String?
    public var link: String?
    public var etag: String?
    public var lastModified: String?
    /// Preferred speed (0.5–2), applied when one of its episodes starts; nil: the group's own.
    public var speed: Double?
    public var subscribedAt: Int64
    public var refreshedAt: Int64?
    public var refreshError: String?
    public var episodeCount: Int
    public var unplayedCount: Int
}

/// One episode of a subscribed show, with where the listener is in it.
public struct PodcastEpisode: Sendable, Equatable {
    public var id: EpisodeID
    public var podcast: PodcastID
    public var guid: String
    public var title: String
    public var url: String
    public var mimeType: String?
    public var length: Int64?
    public var durationMs: Int64?
    public var publishedAt: Int64?
    public var description: String?
    public var image: String?
    public var played: Bool
    public var positionMs: Int64
    public var listenedAt: Int64?
}

/// What a refresh changed.
public struct PodcastUpdate: Sendable, Equatable {
    public var podcast: PodcastID
    public var added: Int
    public var updated: Int
}

/// Podcasts and their episodes (schema 8). A refresh merges by GUID: new
/// episodes are added, known ones get the feed's new title, URL and
/// description but keep their played flag and position. Every mutating
/// call returns after its transaction has committed.
extension Library {
    private static let podcastColumns = """
        p.id, p.url, p.title, p.author, p.image, p.description, p.link, p.etag, p.last_modified, p.speed, p.subscribed_at,
        p.refreshed_at, p.refresh_error, (SELECT count(*) FROM episodes e WHERE e.podcast_id = p.id),
        (SELECT count(*) FROM episodes e WHERE e.podcast_id = p.id AND e.played = 0)
        """
    private static let episodeColumns = """
        id, podcast_id, guid, title, url, mime, length, duration_ms, published_at, description, image, played, position_ms, listened_at
        """

    private static func podcast(_ s: Statement) -> Podcast {
        Podcast(id: PodcastID(s.int(0)), url: s.text(1), title: s.text(2), author: s.optionalText(3), image: s.optionalText(4),
                description: s.optionalText(5), link: s.optionalText(6), etag: s.optionalText(7), lastModified: s.optionalText(8),
                speed: s.isNull(9) ? nil : s.double(9), subscribedAt: s.int(10), refreshedAt: s.optionalInt(11), refreshError: s.optionalText(12),
                episodeCount: Int(s.int(13)), unplayedCount: Int(s.int(14)))
    }

    private static func episode(_ s: Statement) -> PodcastEpisode {
        PodcastEpisode(id: EpisodeID(s.int(0)), podcast: PodcastID(s.int(1)), guid: s.text(2), title: s.text(3), url: s.text(4),
                       mimeType: s.optionalText(5), length: s.optionalInt(6), durationMs: s.optionalInt(7), publishedAt: s.optionalInt(8),
                       description: s.optionalText(9), image: s.optionalText(10), played: s.int(11) != 0, positionMs: s.int(12),
                       listenedAt: s.optionalInt(13))
    }

    /// Adds a show with its parsed feed; a URL already subscribed is
    /// refreshed with it instead (the same show, not a second copy).
    public func subscribe(url: String, feed: PodcastFeed, etag: String?, lastModified: String?) throws(LibraryError) -> Podcast {
        try locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) -> Podcast in
                let now = WallClock.unixMilliseconds()
                let id: PodcastID
                if let existing = try db.scalarInt("SELECT id FROM podcasts WHERE url = ?", [.text(url)]) {
                    id = PodcastID(existing)
                } else {
                    try db.run("INSERT INTO podcasts(url, title, subscribed_at) VALUES (?, ?, ?)", [.text(url), .text(feed.title), .int(now)])
                    id = PodcastID(db.lastInsertRowID)
                }
                _ = try Self.merge(feed, into: id, etag: etag, lastModified: lastModified, now: now, db)
                return try Self.podcast(id, db)!
            }
        }
    }

    /// Stores a refreshed feed: show fields, validators, new and changed episodes.
    public func update(_ id: PodcastID, feed: PodcastFeed, etag: String?, lastModified: String?) throws(LibraryError) -> PodcastUpdate {
        try locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) -> PodcastUpdate in
                guard try Self.podcast(id, db) != nil else { throw .notFound(id.description) }
                return try Self.merge(feed, into: id, etag: etag, lastModified: lastModified, now: WallClock.unixMilliseconds(), db)
            }
        }
    }

    /// A refresh that found nothing new (304) or failed: when, and why it failed (nil: it did not).
    public func noteRefresh(_ id: PodcastID, error: String?) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            if let error {
                try db.run("UPDATE podcasts SET refresh_error = ? WHERE id = ?", [.text(PlainText.truncated(error, maxBytes: 1_024)), .int(id.rawValue)])
            } else {
                try db.run("UPDATE podcasts SET refreshed_at = ?, refresh_error = NULL WHERE id = ?", [.int(WallClock.unixMilliseconds()), .int(id.rawValue)])
            }
        }
    }

    private static func merge(_ feed: PodcastFeed, into id: PodcastID, etag: String?, lastModified: String?, now: Int64,
                              _ db: Database) throws(LibraryError) -> PodcastUpdate {
        func text(_ v: String?) -> SQLValue { v.map { .text($0) } ?? .null }
        func int(_ v: Int64?) -> SQLValue { v.map { .int($0) } ?? .null }
        try db.run("""
            UPDATE podcasts SET title = ?, author = ?, image = ?, description = ?, link = ?, etag = ?, last_modified = ?,
                refreshed_at = ?, refresh_error = NULL WHERE id = ?
            """, [.text(feed.title), text(feed.author), text(feed.image), text(feed.description), text(feed.link),
                  text(etag.map { PlainText.truncated($0, maxBytes: 1_024) }), text(lastModified.map { PlainText.truncated($0, maxBytes: 128) }),
                  .int(now), .int(id.rawValue)])
        var added = 0, updated = 0
        let find = try db.cached("SELECT id FROM episodes WHERE podcast_id = ? AND guid = ?")
        for e in feed.episodes {
            find.reset()
            try find.bind([.int(id.rawValue), .text(e.guid)])
            let existing = try find.step() ? find.int(0) : nil
            find.reset()
            let duration = e.durationSeconds.map { Int64(($0 * 1000).rounded()) }
            if let existing {
                try db.run("""
                    UPDATE episodes SET title = ?, url = ?, mime = ?, length = ?, duration_ms = coalesce(?, duration_ms), published_at = ?,
                        description = ?, image = ? WHERE id = ?
                    """, [.text(e.title), .text(e.url), text(e.mimeType), int(e.length), int(duration), int(e.publishedMs),
                          text(e.description), text(e.image), .int(existing)])
                if db.changes > 0 { updated += 1 }
            } else {
                try db.run("""
                    INSERT INTO episodes(podcast_id, guid, title, url, mime, length, duration_ms, published_at, description, image)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.int(id.rawValue), .text(e.guid), .text(e.title), .text(e.url), text(e.mimeType), int(e.length), int(duration),
                          int(e.publishedMs), text(e.description), text(e.image)])
                added += 1
            }
        }
        // A show keeps at most FeedLimits.maxEpisodes: the oldest beyond that go (a feed that grows forever does not grow the library forever).
        try db.run("""
            DELETE FROM episodes WHERE podcast_id = ?1 AND id NOT IN (
                SELECT id FROM episodes WHERE podcast_id = ?1 ORDER BY coalesce(published_at, 0) DESC, id DESC LIMIT ?2)
            """, [.int(id.rawValue), .int(Int64(FeedLimits.maxEpisodes))])
        return PodcastUpdate(podcast: id, added: added, updated: updated)
    }

    private static func podcast(_ id: PodcastID, _ db: Database) throws(LibraryError) -> Podcast? {
        try db.query("SELECT \(podcastColumns) FROM podcasts p WHERE p.id = ?", [.int(id.rawValue)]) { podcast($0) }.first
    }

    /// All shows, by title.
    public func podcasts() throws(LibraryError) -> [Podcast] {
        try reading { db throws(LibraryError) in
            try db.query("SELECT \(Self.podcastColumns) FROM podcasts p ORDER BY p.title COLLATE NOCASE, p.id") { Self.podcast($0) }
        }
    }

    public func podcast(_ id: PodcastID) throws(LibraryError) -> Podcast? {
        try reading { db throws(LibraryError) in try Self.podcast(id, db) }
    }

    /// A show by id (digits), feed URL, or title (exact, any case, then the
    /// only title that contains it).
    public func findPodcast(_ text: String) throws(LibraryError) -> Podcast? {
        let all = try podcasts()
        if let n = Int64(text), let p = all.first(where: { $0.id.rawValue == n }) { return p }
        if let p = all.first(where: { $0.url == text }) { return p }
        let lower = text.lowercased()
        if let p = all.first(where: { $0.title.lowercased() == lower }) { return p }
        let matching = all.filter { $0.title.lowercased().contains(lower) }
        return matching.count == 1 ? matching[0] : nil
    }

    /// A show's episodes, newest first.
    public func episodes(of id: PodcastID, limit: Int = FeedLimits.maxEpisodes) throws(LibraryError) -> [PodcastEpisode] {
        try reading { db throws(LibraryError) in
            guard try Self.podcast(id, db) != nil else { throw .notFound(id.description) }
            return try db.query("""
                SELECT \(Self.episodeColumns) FROM episodes WHERE podcast_id = ?
                ORDER BY coalesce(published_at, 0) DESC, id DESC LIMIT ?
                """, [.int(id.rawValue), .int(Int64(max(1, limit)))]) { Self.episode($0) }
        }
    }

    public func episode(_ id: EpisodeID) throws(LibraryError) -> PodcastEpisode? {
        try reading { db throws(LibraryError) in
            try db.query("SELECT \(Self.episodeColumns) FROM episodes WHERE id = ?", [.int(id.rawValue)]) { Self.episode($0) }.first
        }
    }

    /// The episodes whose enclosure is `url` (what a queue entry plays).
    public func episodes(playing url: String) throws(LibraryError) -> [PodcastEpisode] {
        try reading { db throws(LibraryError) in
            try db.query("SELECT \(Self.episodeColumns) FROM episodes WHERE url = ?", [.text(url)]) { Self.episode($0) }
        }
    }

    /// Every episode's enclosure URL (what the leader watches the queue for).
    public func episodeURLs() throws(LibraryError) -> Set<String> {
        Set(try reading { db throws(LibraryError) in try db.query("SELECT DISTINCT url FROM episodes") { $0.text(0) } })
    }

    /// Removes a show and its episodes.
    public func unsubscribe(_ id: PodcastID) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            try db.run("DELETE FROM podcasts WHERE id = ?", [.int(id.rawValue)])
            guard db.changes == 1 else { throw .notFound(id.description) }
        }
    }

    /// Marks an episode played or not; marking it unplayed starts it over.
    public func setPlayed(_ id: EpisodeID, _ played: Bool) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            try db.run("UPDATE episodes SET played = ?, position_ms = CASE WHEN ? THEN position_ms ELSE 0 END WHERE id = ?",
                       [.int(played ? 1 : 0), .int(played ? 1 : 0), .int(id.rawValue)])
            guard db.changes == 1 else { throw .notFound(id.description) }
        }
    }

    /// Where the listener is in the episodes playing `url`; marks them
    /// played once `EpisodeProgress` says so (never unmarks). The
    /// duration measured by the decoder, when known, replaces the feed's.
    /// Returns whether this update marked an episode played.
    @discardableResult
    public func recordProgress(url: String, positionMs: Int64, durationMs: Int64?) throws(LibraryError) -> Bool {
        try locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) -> Bool in
                let rows = try db.query("SELECT id, duration_ms, played FROM episodes WHERE url = ?", [.text(url)]) {
                    (EpisodeID($0.int(0)), $0.optionalInt(1), $0.int(2) != 0)
                }
                var marked = false
                for (id, feedDuration, played) in rows {
                    let duration = durationMs ?? feedDuration
                    let done = !played && duration.map { EpisodeProgress.isPlayed(positionSeconds: Double(positionMs) / 1000, durationSeconds: Double($0) / 1000) } == true
                    marked = marked || done
                    try db.run("""
                        UPDATE episodes SET position_ms = ?, listened_at = ?, duration_ms = coalesce(?, duration_ms), played = played OR ? WHERE id = ?
                        """, [.int(max(0, positionMs)), .int(WallClock.unixMilliseconds()), durationMs.map { SQLValue.int($0) } ?? .null, .int(done ? 1 : 0), .int(id.rawValue)])
                }
                return marked
            }
        }
    }

    /// A show's preferred speed (nil: none).
    public func setPodcastSpeed(_ id: PodcastID, _ speed: Double?) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            try db.run("UPDATE podcasts SET speed = ? WHERE id = ?", [speed.map { SQLValue.double($0) } ?? .null, .int(id.rawValue)])
            guard db.changes == 1 else { throw .notFound(id.description) }
        }
    }
}
