import Foundation
import Testing
import TuttiAuth
import TuttiCore
@testable import TuttiLibrary
import TuttiTestSupport

@Suite struct PersistenceTests {
    /// What a killed process leaves on disk is the database file and its
    /// WAL exactly as they are while the connection is still open (no
    /// close, no checkpoint). Copy them at that moment and open the copy.
    @Test func acknowledgedWritesSurviveAKilledProcess() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music", frames: 4_410)
        media.wav("a.wav", info: ["INAM": "Alpha"])
        media.wav("b.wav", info: ["INAM": "Beta"])
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music")
        let a = try #require(try library.track(atPath: dir + "/music/a.wav")).id
        try library.like(a, at: 7)
        try library.recordPlay(a, startedAt: 1_234, playedMilliseconds: 99)
        let p = try library.createPlaylist(named: "Kept")
        try library.addToPlaylist(p.id, tracks: [a])
        try library.recordSearch("alpha")

        // A second connection sees every acknowledged write while the first is still open.
        let second = try Library(path: dir + "/library.db")
        #expect(try second.favourites().map(\.track.id) == [a])
        #expect(try second.history().map(\.playedMilliseconds) == [99])

        // The "killed" state: files copied while the first connection still holds them.
        #expect(FileManager.default.fileExists(atPath: dir + "/library.db-wal"))
        try FileManager.default.createDirectory(atPath: dir + "/crash", withIntermediateDirectories: true)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: dir + "/library.db" + suffix, toPath: dir + "/crash/library.db" + suffix)
        }
        withExtendedLifetime(library) {}
        let reopened = try Library(path: dir + "/crash/library.db")
        #expect(try reopened.favourites().map(\.likedAt) == [7])
        #expect(try reopened.history().map(\.startedAt) == [1_234])
        #expect(try reopened.playlists().map(\.name) == ["Kept"])
        #expect(try reopened.entries(of: p.id).map(\.track.id) == [a])
        #expect(try reopened.recentSearches() == ["alpha"])
        #expect(try reopened.search("alp").tracks.map(\.id) == [a])
    }

    @Test func anOlderDatabaseIsUpgraded() throws {
        let dir = makeTemporaryDirectory()
        // Version 1 made by hand: the tables of the first release, one track, no search index.
        do {
            let db = try Database(path: dir + "/old.db")
            try db.execute(Schema.migrations[0].sql)
            try db.execute("""
                INSERT INTO tracks(path, format, title, artist, duration_frames, sample_rate, file_size, mtime_ns, content_hash, added_at)
                VALUES ('/m/old.mp3', 'mp3', 'Ancient Melody', 'Elder', 44100, 44100, 1000, 0, 'x', 0);
                INSERT INTO favourites(track_id, liked_at) VALUES (1, 5);
                PRAGMA user_version = 1;
                """)
        }
        let library = try Library(path: dir + "/old.db")
        #expect(try library.search("ancient").tracks.map(\.title) == ["Ancient Melody"]) // index built from existing rows
        #expect(try library.search("elde").tracks.count == 1)
        #expect(try library.favourites().map(\.likedAt) == [5])
        try library.recordSearch("ancient") // a table from a later migration
        let check = try Database(path: dir + "/old.db")
        #expect(try check.userVersion == Schema.latestVersion)
    }

    /// Schema 6 rebuilds the word and substring indexes with smaller pages:
    /// a library of schema 5 keeps its tracks, likes and playlists, and finds
    /// the same tracks by word, prefix and substring afterwards.
    @Test func aVersion5LibraryIsRebuiltIntoSmallerIndexPagesAndKeepsEverything() throws {
        let dir = makeTemporaryDirectory()
        do {
            let db = try Database(path: dir + "/v5.db")
            try Schema.migrate(db, to: Array(Schema.migrations.prefix { $0.version <= 5 }), adoptingUnversioned: false)
            #expect(try db.userVersion == 5)
            for (i, title) in ["Upbeat Morning", "Quiet Evening", "東京タワーの夜"].enumerated() {
                let c = TrackStore.searchColumns(title: title, artist: "Elder", album: "Old Album", albumArtist: nil, genre: nil,
                                                 track: i + 1, disc: nil, year: nil)
                try db.run("""
                    INSERT INTO tracks(path, format, title, artist, album, track_no, duration_frames, sample_rate, file_size, mtime_ns,
                                       content_hash, added_at, mpd_text, grams, title_key, artist_key)
                    VALUES (?, 'mp3', ?, 'Elder', 'Old Album', ?, 44100, 44100, 1000, 0, ?, 0, ?, ?, ?, ?)
                    """, [.text("/m/\(i).mp3"), .text(title), .int(Int64(i + 1)), .text("h\(i)"), .text(c.mpdText), SQLValue(c.grams),
                          .text(c.titleKey), SQLValue(c.artistKey)])
            }
            try db.execute("""
                INSERT INTO favourites(track_id, liked_at) VALUES (2, 5);
                INSERT INTO playlists(id, name, created_at, updated_at) VALUES (1, 'Evening', 0, 0);
                INSERT INTO playlist_entries(playlist_id, position, track_id) VALUES (1, 0, 2), (1, 1, 1);
                """)
        }
        let library = try Library(path: dir + "/v5.db")
        #expect(try library.trackCount() == 3)
        #expect(try library.favourites().map(\.likedAt) == [5])
        #expect(try library.entries(of: PlaylistID(1)).map(\.track.title) == ["Quiet Evening", "Upbeat Morning"])
        #expect(try library.search("quiet").tracks.map(\.title) == ["Quiet Evening"])           // a word
        #expect(try library.search("eveni").tracks.map(\.title) == ["Quiet Evening"])           // a prefix
        #expect(try library.search("beat").tracks.map(\.title) == ["Upbeat Morning"])           // a substring (trigrams)
        #expect(try library.search("タワー").tracks.map(\.title) == ["東京タワーの夜"])             // CJK inside a token
        #expect(try library.search("elder").tracks.count == 3)
        let db = try Database(path: dir + "/v5.db")
        #expect(try db.userVersion == Schema.latestVersion)
        for table in ["tracks_fts", "tracks_trigram"] {
            #expect(try db.scalarInt("SELECT v FROM \(table)_config WHERE k = 'pgsz'") == 500)
            try db.execute("INSERT INTO \(table)(\(table)) VALUES ('integrity-check')") // throws when the index and rows disagree
        }
    }

    @Test func aNewerDatabaseIsRefusedWithAClearMessage() throws {
        let dir = makeTemporaryDirectory()
        _ = try Library(path: dir + "/new.db")
        do {
            let db = try Database(path: dir + "/new.db")
            try db.execute("PRAGMA user_version = 999; UPDATE meta SET value = '9.9' WHERE key = 'written_by'")
        }
        do {
            _ = try Library(path: dir + "/new.db")
            Issue.record("a newer database was opened")
        } catch {
            #expect(error == .databaseTooNew(path: dir + "/new.db", found: 999, supported: Schema.latestVersion, writtenBy: "9.9"))
            #expect(error.description.contains("Tutti 9.9 or later"))
            #expect(error.description.contains("999"))
            print(error.description)
        }
        // Without a note of who wrote it, the message still says what to do.
        do {
            let db = try Database(path: dir + "/new.db")
            try db.execute("DELETE FROM meta")
        }
        #expect { try Library(path: dir + "/new.db") } throws: { error in
            "\(error)".contains("a newer Tutti") && "\(error)".contains("--db")
        }
    }

    @Test func foreignFilesAreRefused() throws {
        let dir = makeTemporaryDirectory()
        do {
            let db = try Database(path: dir + "/other.db")
            try db.execute("CREATE TABLE notes(x)")
        }
        #expect { try Library(path: dir + "/other.db") } throws: { error in
            guard case LibraryError.corruptSchema = error else { return false }
            return true
        }
        write(dir + "/text.db", Array(String(repeating: "not a database\n", count: 100).utf8))
        #expect { try Library(path: dir + "/text.db") } throws: { error in
            guard case LibraryError.cannotOpenDatabase(_, let reason) = error else { return false }
            return reason.contains("not a database")
        }
        #expect(throws: LibraryError.self) { try Library(path: dir + "/no/such/folder/x.db") }
    }

    @Test func transactionsRollBackOnError() throws {
        let dir = makeTemporaryDirectory()
        let db = try Database(path: dir + "/t.db")
        try db.execute("CREATE TABLE t(x INTEGER UNIQUE)")
        #expect(throws: LibraryError.self) {
            try db.transaction { () throws(LibraryError) in
                try db.run("INSERT INTO t VALUES (1)")
                try db.transaction { () throws(LibraryError) in try db.run("INSERT INTO t VALUES (2)") }
                try db.run("INSERT INTO t VALUES (1)") // violates UNIQUE
            }
        }
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 0)
        // A failed savepoint leaves the outer transaction usable.
        try db.transaction { () throws(LibraryError) in
            try db.run("INSERT INTO t VALUES (1)")
            do {
                try db.transaction { () throws(LibraryError) in try db.run("INSERT INTO t VALUES (1)") }
            } catch {
                #expect("\(error)".contains("UNIQUE"))
            }
            try db.run("INSERT INTO t VALUES (3)")
        }
        #expect(try db.query("SELECT x FROM t ORDER BY x") { $0.int(0) } == [1, 3])
        #expect(try db.scalarText("PRAGMA journal_mode") == "wal")
        #expect(try db.scalarInt("PRAGMA synchronous") == 2) // FULL
    }
}

@Suite struct HelperTests {
    /// Both libraries behind the one SHA-256 type give the same digests, on
    /// FIPS 180-2's vectors (libcrypto is installed wherever the tests run).
    @Test func bothImplementationsMatchTheStandardVectors() throws {
        #expect(SHA256.implementation == .libcrypto, "libcrypto 3 loads (scripts/setup.sh installs libssl-dev)")
        let vectors: [(String, String)] = [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ]
        for implementation in SHA256.Implementation.allCases {
            for (text, hex) in vectors {
                let digest = try #require(Array(text.utf8).withUnsafeBytes { SHA256.digest($0, by: implementation) })
                #expect(SHA256.hex(digest) == hex, "\(implementation) on \(text)")
            }
        }
    }

    /// The one SHA-256 on FIPS 180-2's vectors, as the library calls it.
    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hash([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hash(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let twoBlocks = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
        #expect(SHA256.hash(Array(twoBlocks.utf8)) == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        // A million "a": from contiguous storage, from a slice of it, and from a collection with none.
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_001)
        let expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        #expect(SHA256.hash(million.dropLast()) == expected)
        #expect(SHA256.hash(million[1...]) == expected)
        #expect(SHA256.hash(repeatElement(UInt8(ascii: "a"), count: 1_000_000)) == expected)
        #expect(SHA256.digest(UnsafeRawBufferPointer(start: nil, count: 0)) == [
            0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
            0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
        ])
    }

    @Test func titlesFromFileNames() {
        #expect(TagText.fromFileName("/m/03 - Some_Song.mp3") == ("Some Song", 3))
        #expect(TagText.fromFileName("/m/12. Intro.flac") == ("Intro", 12))
        #expect(TagText.fromFileName("/m/1999.mp3") == ("1999", nil)) // a title, not a track number
        #expect(TagText.fromFileName("/m/2001 A Space Odyssey.wav") == ("2001 A Space Odyssey", nil))
        #expect(TagText.fromFileName("/m/.mp3").title == ".mp3")
        #expect(TagText.fromFileName("/m/Plain Name.wav") == ("Plain Name", nil))
    }

    @Test func tagValues() {
        #expect(TagText.number("03/12") == 3)
        #expect(TagText.number("x") == nil)
        #expect(TagText.year("2001-05-17") == 2001)
        #expect(TagText.year("17 May 1999") == 1999)
        #expect(TagText.genre("(17)") == "Rock")
        #expect(TagText.genre("(17)Rock & Roll") == "Rock & Roll")
        #expect(TagText.genre("8") == "Jazz")
        #expect(TagText.genre("Chiptune") == "Chiptune")
        #expect(TagText.clean("  a\0b \0") == "a; b")
        // Values with nothing to clean are kept as they are; the others still get each rule.
        #expect(TagText.clean("Plain Title") == "Plain Title")
        #expect(TagText.clean("東京タワーの夜") == "東京タワーの夜")
        #expect(TagText.clean("a\0b") == "a; b")
        #expect(TagText.clean("\u{3000}夜\u{00A0}") == "夜")
        #expect(TagText.clean("x\0") == "x")
        #expect(TagText.clean("") == nil && TagText.clean(" \0 ") == nil)
        #expect(TagText.clean(String(repeating: "é", count: 3_000))?.count == 3_000) // 6,000 bytes, 3,000 characters: kept whole
        #expect(TagText.clean(String(repeating: "ab", count: 3_000))?.count == TagLimits.maxTextCharacters)
        #expect(TagText.imageMime([0xFF, 0xD8, 0xFF, 0xE0], declared: "image/png") == "image/jpeg")
    }
}
