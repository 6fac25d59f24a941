/// The library's schema as numbered migrations. `PRAGMA user_version` holds
/// the number of the last one applied; opening a database runs the missing
/// ones in order, each in its own transaction, and refuses a database whose
/// version is newer than this build knows.
///
/// Never edit a migration that has shipped: add a new one.
public enum Schema {
    /// The Tutti release that writes this schema; stored in `meta` so an
    /// older build can say which version a newer database needs.
    public static let tuttiVersion = "0.1"

    public struct Migration: Sendable {
        public let version: Int
        public let summary: String
        public let sql: String
    }

    public static var latestVersion: Int { migrations.last?.version ?? 0 }

    public static let migrations: [Migration] = [
        Migration(version: 1, summary: "tracks, covers, favourites, history, playlists", sql: """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE covers (
                hash TEXT PRIMARY KEY,        -- SHA-256 of the image bytes, hex
                mime TEXT NOT NULL,
                bytes BLOB NOT NULL
            );
            CREATE TABLE tracks (
                id INTEGER PRIMARY KEY,
                path TEXT NOT NULL UNIQUE,    -- absolute
                format TEXT NOT NULL,         -- mp3, flac, wav
                title TEXT NOT NULL,
                artist TEXT, album TEXT, album_artist TEXT, genre TEXT,
                track_no INTEGER, disc_no INTEGER, year INTEGER,
                duration_frames INTEGER NOT NULL, -- exact, gapless, at sample_rate
                sample_rate INTEGER NOT NULL,
                file_size INTEGER NOT NULL,
                mtime_ns INTEGER NOT NULL,
                content_hash TEXT NOT NULL,   -- see ContentHash: size + first and last 64 KiB
                cover_hash TEXT REFERENCES covers(hash),
                added_at INTEGER NOT NULL     -- Unix ms
            );
            CREATE INDEX tracks_content_hash ON tracks(content_hash);
            CREATE INDEX tracks_album ON tracks(album_artist, album, disc_no, track_no);
            CREATE INDEX tracks_cover ON tracks(cover_hash);
            -- Keyed by track id; a moved file keeps its id, so these survive moves.
            CREATE TABLE favourites (
                track_id INTEGER PRIMARY KEY REFERENCES tracks(id) ON DELETE CASCADE,
                liked_at INTEGER NOT NULL
            );
            CREATE TABLE history (
                id INTEGER PRIMARY KEY,
                track_id INTEGER NOT NULL REFERENCES tracks(id) ON DELETE CASCADE,
                started_at INTEGER NOT NULL,  -- Unix ms
                played_ms INTEGER NOT NULL
            );
            CREATE INDEX history_started ON history(started_at);
            CREATE INDEX history_track ON history(track_id);
            CREATE TABLE playlists (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            );
            CREATE TABLE playlist_entries (
                id INTEGER PRIMARY KEY,
                playlist_id INTEGER NOT NULL REFERENCES playlists(id) ON DELETE CASCADE,
                position INTEGER NOT NULL,    -- order only; gaps allowed
                track_id INTEGER NOT NULL REFERENCES tracks(id) ON DELETE CASCADE
            );
            CREATE INDEX playlist_entries_order ON playlist_entries(playlist_id, position);
            CREATE INDEX playlist_entries_track ON playlist_entries(track_id);
            """),
        Migration(version: 2, summary: "word index (FTS5)", sql: """
            CREATE VIRTUAL TABLE tracks_fts USING fts5(
                title, artist, album, album_artist, genre,
                content='tracks', content_rowid='id',
                tokenize='unicode61 remove_diacritics 2', prefix='1 2 3');
            CREATE TRIGGER tracks_fts_insert AFTER INSERT ON tracks BEGIN
                INSERT INTO tracks_fts(rowid, title, artist, album, album_artist, genre)
                VALUES (new.id, new.title, new.artist, new.album, new.album_artist, new.genre);
            END;
            CREATE TRIGGER tracks_fts_delete AFTER DELETE ON tracks BEGIN
                INSERT INTO tracks_fts(tracks_fts, rowid, title, artist, album, album_artist, genre)
                VALUES ('delete', old.id, old.title, old.artist, old.album, old.album_artist, old.genre);
            END;
            CREATE TRIGGER tracks_fts_update AFTER UPDATE OF title, artist, album, album_artist, genre ON tracks BEGIN
                INSERT INTO tracks_fts(tracks_fts, rowid, title, artist, album, album_artist, genre)
                VALUES ('delete', old.id, old.title, old.artist, old.album, old.album_artist, old.genre);
                INSERT INTO tracks_fts(rowid, title, artist, album, album_artist, genre)
                VALUES (new.id, new.title, new.artist, new.album, new.album_artist, new.genre);
            END;
            INSERT INTO tracks_fts(tracks_fts) VALUES ('rebuild');
            """),
        Migration(version: 3, summary: "substring index for CJK (FTS5 trigram), recent searches", sql: """
            CREATE VIRTUAL TABLE tracks_trigram USING fts5(
                title, artist, album, album_artist, genre,
                content='tracks', content_rowid='id', tokenize='trigram');
            CREATE TRIGGER tracks_trigram_insert AFTER INSERT ON tracks BEGIN
                INSERT INTO tracks_trigram(rowid, title, artist, album, album_artist, genre)
                VALUES (new.id, new.title, new.artist, new.album, new.album_artist, new.genre);
            END;
            CREATE TRIGGER tracks_trigram_delete AFTER DELETE ON tracks BEGIN
                INSERT INTO tracks_trigram(tracks_trigram, rowid, title, artist, album, album_artist, genre)
                VALUES ('delete', old.id, old.title, old.artist, old.album, old.album_artist, old.genre);
            END;
            CREATE TRIGGER tracks_trigram_update AFTER UPDATE OF title, artist, album, album_artist, genre ON tracks BEGIN
                INSERT INTO tracks_trigram(tracks_trigram, rowid, title, artist, album, album_artist, genre)
                VALUES ('delete', old.id, old.title, old.artist, old.album, old.album_artist, old.genre);
                INSERT INTO tracks_trigram(rowid, title, artist, album, album_artist, genre)
                VALUES (new.id, new.title, new.artist, new.album, new.album_artist, new.genre);
            END;
            INSERT INTO tracks_trigram(tracks_trigram) VALUES ('rebuild');
            CREATE TABLE recent_searches (
                key TEXT PRIMARY KEY,         -- the query folded for case, so "ABBA" and "abba" are one entry
                query TEXT NOT NULL,          -- as last typed
                seq INTEGER NOT NULL          -- newest is largest; a counter, not a clock, so order is exact
            );
            """),
        Migration(version: 4, summary: "MPD search text, CJK grams, browsing indexes (issue 12)", sql: """
            -- Every tag value the MPD port shows, case-folded as MPD folds (SearchText.mpdHaystack):
            -- `search any` is one instr() per row, read from the index below in path order.
            ALTER TABLE tracks ADD COLUMN mpd_text TEXT;
            -- One- and two-character pieces of CJK runs (SearchText.cjkGrams), NULL without CJK text.
            ALTER TABLE tracks ADD COLUMN grams TEXT;
            -- SearchText.wordFold of the title, artist and album artist: ranking's "the whole text is the title / the artist".
            ALTER TABLE tracks ADD COLUMN title_key TEXT;
            ALTER TABLE tracks ADD COLUMN artist_key TEXT;
            ALTER TABLE tracks ADD COLUMN album_artist_key TEXT;
            CREATE INDEX tracks_title_key ON tracks(title_key);
            CREATE INDEX tracks_artist_key ON tracks(artist_key);
            CREATE INDEX tracks_album_artist_key ON tracks(album_artist_key);
            CREATE INDEX tracks_mpd ON tracks(path, mpd_text);
            CREATE INDEX tracks_artist ON tracks(artist, album);
            CREATE INDEX tracks_album_name ON tracks(album);
            CREATE INDEX tracks_who ON tracks(coalesce(album_artist, artist), album);
            CREATE VIRTUAL TABLE tracks_grams USING fts5(grams, content='tracks', content_rowid='id', tokenize='unicode61');
            CREATE TRIGGER tracks_grams_insert AFTER INSERT ON tracks WHEN new.grams IS NOT NULL BEGIN
                INSERT INTO tracks_grams(rowid, grams) VALUES (new.id, new.grams);
            END;
            CREATE TRIGGER tracks_grams_delete AFTER DELETE ON tracks WHEN old.grams IS NOT NULL BEGIN
                INSERT INTO tracks_grams(tracks_grams, rowid, grams) VALUES ('delete', old.id, old.grams);
            END;
            CREATE TRIGGER tracks_grams_update AFTER UPDATE OF grams ON tracks BEGIN
                INSERT INTO tracks_grams(tracks_grams, rowid, grams) SELECT 'delete', old.id, old.grams WHERE old.grams IS NOT NULL;
                INSERT INTO tracks_grams(rowid, grams) SELECT new.id, new.grams WHERE new.grams IS NOT NULL;
            END;
            """),
        Migration(version: 5, summary: "the MPD port's answers and the scan's comparison from tracks_mpd alone (issue 12)", sql: """
            -- Every column a song block and the scan's comparison read, beside each path: a 96,000-song
            -- `search any` and an unchanged rescan read this index alone, in path order, with no
            -- lookup of each row in the table (a seek per song and 40 MB of table pages read).
            DROP INDEX tracks_mpd;
            CREATE INDEX tracks_mpd ON tracks(path, mpd_text, title, artist, album, album_artist, genre, track_no, disc_no, year,
                                              duration_frames, sample_rate, mtime_ns, file_size);
            """),
        Migration(version: 6, summary: "word and substring indexes in smaller pages and fewer segments (issue 12)", sql: """
            -- A search's cost is mostly FTS5 walking the doclists of common terms (the trigrams "the", "ver";
            -- words such as "love") to the rows the rarer ones name. It skips to a leaf page and reads on from
            -- there: pages of 500 bytes instead of 4,050 make each skip land closer. An index in 8 segments
            -- looks every term up 8 times: with 8 MiB of pending terms instead of 1 a first scan's refill
            -- writes 2-3. Measured on 100,000 tracks (callgrind, the benchmark's 200 queries): the substring
            -- step 3.2 M instructions a query to 1.6 M, the word tiers 2.6 M to 1.9 M. Rebuilt from `tracks`.
            INSERT INTO tracks_fts(tracks_fts, rank) VALUES ('pgsz', 500);
            INSERT INTO tracks_fts(tracks_fts, rank) VALUES ('hashsize', 8388608);
            INSERT INTO tracks_fts(tracks_fts) VALUES ('rebuild');
            INSERT INTO tracks_trigram(tracks_trigram, rank) VALUES ('pgsz', 500);
            INSERT INTO tracks_trigram(tracks_trigram, rank) VALUES ('hashsize', 8388608);
            INSERT INTO tracks_trigram(tracks_trigram) VALUES ('rebuild');
            """),
        Migration(version: 7, summary: "word index with prefixes of up to six letters (issue 12)", sql: """
            -- Search as you type asks for the last word as a prefix. A prefix longer than the index
            -- keeps is answered by merging the doclist of every word that begins with it, whole,
            -- before the first row comes out: "love*" (11,000 rows) cost 0.9 ms with a limit of 50,
            -- "dream*" 0.6 ms; kept prefixes are read like any word and stop at the limit (0.09 ms).
            -- Measured on 100,000 tracks: the index grows from 16 to 24 MiB; rebuilt in about a second.
            -- The triggers on `tracks` name the table, not its options: they stay as they are.
            DROP TABLE tracks_fts;
            CREATE VIRTUAL TABLE tracks_fts USING fts5(
                title, artist, album, album_artist, genre,
                content='tracks', content_rowid='id',
                tokenize='unicode61 remove_diacritics 2', prefix='1 2 3 4 5 6');
            INSERT INTO tracks_fts(tracks_fts, rank) VALUES ('pgsz', 500);
            INSERT INTO tracks_fts(tracks_fts, rank) VALUES ('hashsize', 8388608);
            INSERT INTO tracks_fts(tracks_fts) VALUES ('rebuild');
            """),
        Migration(version: 8, summary: "podcasts and their episodes (issue 27)", sql: """
            CREATE TABLE podcasts (
                id INTEGER PRIMARY KEY,
                url TEXT NOT NULL UNIQUE,     -- the feed, as subscribed
                title TEXT NOT NULL,
                author TEXT, image TEXT, description TEXT, link TEXT,
                etag TEXT, last_modified TEXT, -- the last answer's validators (If-None-Match, If-Modified-Since)
                speed REAL,                   -- preferred speed, 0.5-2; NULL: the group's own
                subscribed_at INTEGER NOT NULL, -- Unix ms
                refreshed_at INTEGER,         -- last successful fetch (200 or 304), Unix ms
                refresh_error TEXT            -- why the last refresh failed; NULL after a success
            );
            CREATE TABLE episodes (
                id INTEGER PRIMARY KEY,
                podcast_id INTEGER NOT NULL REFERENCES podcasts(id) ON DELETE CASCADE,
                guid TEXT NOT NULL,
                title TEXT NOT NULL,
                url TEXT NOT NULL,            -- the enclosure: what plays
                mime TEXT, length INTEGER,    -- as the enclosure declares
                duration_ms INTEGER,          -- itunes:duration, then what playback measured
                published_at INTEGER,         -- Unix ms
                description TEXT,             -- plain text
                image TEXT,
                played INTEGER NOT NULL DEFAULT 0,
                position_ms INTEGER NOT NULL DEFAULT 0, -- where to resume
                listened_at INTEGER,          -- last position update, Unix ms
                UNIQUE (podcast_id, guid)
            );
            CREATE INDEX episodes_order ON episodes(podcast_id, published_at DESC);
            CREATE INDEX episodes_url ON episodes(url);
            """),
    ]

    /// Brings `db` to `latestVersion`, or throws when it is newer or foreign.
    static func migrate(_ db: Database) throws(LibraryError) {
        try migrate(db, to: migrations, adoptingUnversioned: false)
    }

    /// Runs the `migrations` `db` has not had, each in a transaction with
    /// `meta.written_by`. A file with tables but no version is refused,
    /// unless `adoptingUnversioned` (its first migration must then be
    /// written to meet those tables: `CREATE TABLE IF NOT EXISTS`).
    static func migrate(_ db: Database, to migrations: [Migration], adoptingUnversioned: Bool) throws(LibraryError) {
        let found = try db.userVersion
        let latestVersion = migrations.last?.version ?? 0
        if found > latestVersion {
            let writtenBy = try? db.scalarText("SELECT value FROM meta WHERE key = 'written_by'")
            throw .databaseTooNew(path: db.path, found: found, supported: latestVersion, writtenBy: writtenBy ?? nil)
        }
        if found == 0 && !adoptingUnversioned {
            let tables = try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table'") ?? 0
            guard tables == 0 else {
                throw .corruptSchema(path: db.path, reason: "it holds \(tables) tables but no Tutti schema version; pass --db with another file")
            }
        }
        for migration in migrations where migration.version > found {
            try db.transaction { () throws(LibraryError) in
                try db.execute(migration.sql)
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES ('written_by', ?)", [.text(tuttiVersion)])
                try db.execute("PRAGMA user_version = \(migration.version)")
            }
        }
    }
}

/// The player's state file (`state.db`, `PlayerStateStore`) as numbered
/// migrations, like `Schema`'s. Files from before it had a version hold
/// version 1's tables already, which it meets (`IF NOT EXISTS`).
public enum StateSchema {
    public static let migrations: [Schema.Migration] = [
        Schema.Migration(version: 1, summary: "player values, the main queue, other groups' players, rooms' sound, presets", sql: """
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS player (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS queue (position INTEGER PRIMARY KEY, id INTEGER NOT NULL, uri TEXT NOT NULL, play_rank INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS group_player (group_id TEXT PRIMARY KEY, snapshot TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS room_sound (room TEXT PRIMARY KEY, sound TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS eq_preset (name TEXT PRIMARY KEY, gains TEXT NOT NULL);
            """),
        Schema.Migration(version: 2, summary: "control login tokens, as keyed digests (issue 26)", sql: """
            CREATE TABLE control_token (digest BLOB PRIMARY KEY, issued_at INTEGER NOT NULL);
            """),
    ]

    public static var latestVersion: Int { migrations.last?.version ?? 0 }

    static func migrate(_ db: Database) throws(LibraryError) {
        try Schema.migrate(db, to: migrations, adoptingUnversioned: true)
    }
}

/// Bulk loading: a scan that adds more tracks than the library holds (a
/// first scan above all) writes its rows without the indexes a row insert
/// would otherwise update one at a time, and builds them once at the end.
///
/// Measured on 100,000 rows in batches of 1,000: with every index and the
/// three FTS5 tables kept in step, 34 s of writing; without them, 2.5 s,
/// and building them afterwards (one sort per index, one pass per FTS5
/// table) 6 s. Kept during the load: the path's unique index and
/// `tracks_mpd`, both in path order like the scan's inserts (appends, not
/// scattered writes), so the MPD port answers from its index as before.
/// The others (tag, key and hash indexes) are dropped, and the FTS5
/// tables' insert triggers: rows inserted meanwhile are found by the MPD
/// port and listed, but the ranked search sees them once the load ends.
///
/// What was dropped is written to `meta` (`deferred.index.NAME`,
/// `deferred.trigger.NAME`: the SQL as `sqlite_master` held it) in the same
/// transaction, so a process killed during the load rebuilds them the next
/// time the library is opened (`Library.init`).
enum DeferredIndexes {
    /// The FTS5 tables over `tracks` and how each is filled from scratch
    /// (what its insert trigger would have written, row by row).
    static let ftsTables: [String: String] = [
        "tracks_fts": """
            INSERT INTO tracks_fts(rowid, title, artist, album, album_artist, genre)
            SELECT id, title, artist, album, album_artist, genre FROM tracks
            """,
        "tracks_trigram": """
            INSERT INTO tracks_trigram(rowid, title, artist, album, album_artist, genre)
            SELECT id, title, artist, album, album_artist, genre FROM tracks
            """,
        "tracks_grams": "INSERT INTO tracks_grams(rowid, grams) SELECT id, grams FROM tracks WHERE grams IS NOT NULL",
    ]

    /// Indexes kept during a load: written in path order anyway.
    static let kept: Set<String> = ["tracks_mpd"]

    static let prefix = "deferred."

    /// Whether a load left indexes to build (a scan running now, or killed).
    static func pending(_ db: Database) throws(LibraryError) -> Bool {
        try db.scalarInt("SELECT 1 FROM meta WHERE key >= 'deferred.' AND key < 'deferred/' LIMIT 1") != nil
    }

    /// Drops the indexes and FTS5 insert triggers a bulk load would keep
    /// updating, and records them. In one transaction.
    static func suspend(_ db: Database) throws(LibraryError) {
        try db.transaction { () throws(LibraryError) in
            let indexes = try db.query("""
                SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'tracks' AND sql IS NOT NULL ORDER BY name
                """) { ($0.text(0), $0.text(1)) }.filter { !kept.contains($0.0) }
            let triggers = try db.query("""
                SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'tracks' AND name LIKE '%\\_insert' ESCAPE '\\' ORDER BY name
                """) { ($0.text(0), $0.text(1)) }.filter { ftsTables[String($0.0.dropLast("_insert".count))] != nil }
            for (name, sql) in indexes {
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(prefix + "index." + name), .text(sql)])
                try db.execute("DROP INDEX \"\(name)\"")
            }
            for (name, sql) in triggers {
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(prefix + "trigger." + name), .text(sql)])
                try db.execute("DROP TRIGGER \"\(name)\"")
            }
        }
    }

    /// Builds what `suspend` dropped: each index in one sort, each FTS5
    /// table refilled in one pass, then its trigger again. In one transaction;
    /// nothing to do when nothing is pending.
    static func resume(_ db: Database) throws(LibraryError) {
        // The index builds' sorts spill to a temporary file, not to memory
        // (the connection's temp_store=MEMORY): at 100,000 tracks that was
        // the leader's peak resident memory during a first scan.
        try db.execute("PRAGMA temp_store=FILE")
        defer { try? db.execute("PRAGMA temp_store=MEMORY") }
        try db.transaction { () throws(LibraryError) in
            let pending = try db.query("SELECT key, value FROM meta WHERE key >= 'deferred.' AND key < 'deferred/' ORDER BY key") {
                (String($0.text(0).dropFirst(prefix.count)), $0.text(1))
            }
            for (key, sql) in pending where key.hasPrefix("index.") { try db.execute(sql) }
            for (key, sql) in pending where key.hasPrefix("trigger.") {
                let table = String(key.dropFirst("trigger.".count).dropLast("_insert".count))
                if let fill = ftsTables[table] {
                    try db.execute("INSERT INTO \(table)(\(table)) VALUES ('delete-all')")
                    try db.execute(fill)
                }
                try db.execute(sql)
            }
            try db.run("DELETE FROM meta WHERE key >= 'deferred.' AND key < 'deferred/'")
        }
    }
}
