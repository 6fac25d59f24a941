import Foundation
import Testing
import TuttiCore
@testable import TuttiLibrary
import TuttiTestSupport

/// A scan that adds more than the library holds builds its indexes once at
/// the end (`DeferredIndexes`): the same rows, indexes, triggers and search
/// results as a scan that updated them row by row.
@Suite struct BulkLoadTests {
    /// 30 WAV files in 3 folders: titles "Song 1"…, two artists, one Korean title.
    private func makeMusic(_ dir: String) -> MediaFactory {
        let media = MediaFactory(dir: dir + "/music")
        for i in 1...30 {
            let title = i == 7 ? "서울의 밤" : "Song \(i)"
            media.wav("Folder \(i % 3)/\(String(format: "%02d", i)).wav",
                      info: ["INAM": title, "IART": i % 2 == 0 ? "Even Band" : "Odd Band", "IPRD": "Album \(i % 3)"], frames: 441)
        }
        return media
    }

    private func schema(_ path: String) throws -> [String] {
        let db = try Database(path: path)
        return try db.query("SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE type IN ('index', 'trigger') ORDER BY name") {
            "\($0.text(0)) \($0.text(1)) \($0.text(2))"
        }
    }

    @Test func aBulkLoadLeavesTheSameIndexesAndFindsTheSameTracks() throws {
        let dir = makeTemporaryDirectory()
        _ = makeMusic(dir)
        let bulk = try Library(path: dir + "/bulk.db")
        let rowByRow = try Library(path: dir + "/rows.db")
        let a = try bulk.scan(folder: dir + "/music", options: ScanOptions(batchSize: 7, bulkLoadMinimum: 10))
        let b = try rowByRow.scan(folder: dir + "/music", options: ScanOptions(batchSize: 7, bulkLoadMinimum: nil))
        #expect(a.bulkLoad)
        #expect(!b.bulkLoad)
        #expect(a.added == 30 && b.added == 30)
        #expect(try schema(dir + "/bulk.db") == schema(dir + "/rows.db"))
        #expect(try schema(dir + "/bulk.db").count == 31) // 22 indexes (10 of them on tracks, 4 for podcasts), 9 triggers: none lost
        for text in ["song", "song 1", "s", "even", "odd band", "서울", "밤", "album 2", "ong"] {
            let x = try bulk.search(text, limit: 100).tracks.map(\.path)
            let y = try rowByRow.search(text, limit: 100).tracks.map(\.path)
            #expect(x == y, "\(text)")
            #expect(!x.isEmpty, "\(text)")
        }
        #expect(try bulk.search("song", limit: 100).tracks.count == 29)
        #expect(try DeferredIndexes.pending(Database(path: dir + "/bulk.db")) == false)
        #expect(try Database(path: dir + "/bulk.db").scalarText("PRAGMA integrity_check") == "ok")
        let fts = try Database(path: dir + "/bulk.db")
        try fts.execute("INSERT INTO tracks_fts(tracks_fts) VALUES ('integrity-check')")
        try fts.execute("INSERT INTO tracks_trigram(tracks_trigram) VALUES ('integrity-check')")
    }

    @Test func aSmallScanIntoABigLibraryKeepsItsIndexes() throws {
        let dir = makeTemporaryDirectory()
        let media = makeMusic(dir)
        let library = try Library(path: dir + "/library.db")
        #expect(try library.scan(folder: dir + "/music", options: ScanOptions(bulkLoadMinimum: 10)).bulkLoad)
        for i in 31...45 { media.wav("New/\(i).wav", info: ["INAM": "Later \(i)"], frames: 441) }
        // 15 new files against 30 tracks: written row by row.
        let again = try library.scan(folder: dir + "/music", options: ScanOptions(bulkLoadMinimum: 10))
        #expect(!again.bulkLoad)
        #expect(again.added == 15)
        #expect(try library.search("later", limit: 100).tracks.count == 15)
    }

    @Test func rankedSearchDuringABulkLoadRunsTheWordTiersOnly() throws {
        let dir = makeTemporaryDirectory()
        _ = makeMusic(dir)
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music", options: ScanOptions(bulkLoadMinimum: nil))
        library.bulkLoading.store(true, ordering: .releasing)
        let during = try library.search("song 1", limit: 100).tracks.map(\.title)
        let artistDuring = try library.search("even band", limit: 100).tracks.count
        library.bulkLoading.store(false, ordering: .releasing)
        let after = try library.search("song 1", limit: 100).tracks.map(\.title)
        #expect(after.count == 15) // Song 1; "song" and "1" whole words anywhere (Album 1: Song 4, 22, 25, 28); Song 10…19 by prefix
        #expect(after.first == "Song 1")
        #expect(during.first == "Song 1") // the whole-word tier finds it first too
        #expect(Set(during) == Set(after))
        #expect(artistDuring == 15)
    }

    @Test func indexesDeferredByAKilledScanAreBuiltAtTheNextOpen() throws {
        let dir = makeTemporaryDirectory()
        _ = makeMusic(dir)
        let path = dir + "/library.db"
        let before: [String]
        do {
            let library = try Library(path: path)
            _ = try library.scan(folder: dir + "/music", options: ScanOptions(bulkLoadMinimum: nil))
            before = try schema(path)
            // What a scan killed half-way leaves: the indexes dropped, rows written since.
            let db = try Database(path: path)
            try DeferredIndexes.suspend(db)
            try db.run("INSERT INTO tracks(path, format, title, duration_frames, sample_rate, file_size, mtime_ns, content_hash, added_at, mpd_text, title_key) VALUES ('/x/late.wav', 'wav', 'Late Arrival', 1, 44100, 1, 1, 'h', 1, 'late arrival', 'late arrival')")
            #expect(try schema(path).count == 31 - 12) // 9 indexes of tracks (tracks_mpd kept) and 3 insert triggers gone
        }
        let reopened = try Library(path: path)
        #expect(try schema(path) == before)
        #expect(try reopened.search("arrival").tracks.map(\.path) == ["/x/late.wav"])
        #expect(try reopened.search("song", limit: 100).tracks.count == 29)
    }
}

/// `search title` in SQL: the first line of `mpd_text`, read from `tracks_mpd` alone.
@Suite struct CatalogTitleFilterTests {
    @Test func aTitleFilterMatchesTitlesOnlyFoldedAsMPDFolds() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music")
        media.wav("a.wav", info: ["INAM": "Straße Nacht", "IART": "Love Band"], frames: 441)
        media.wav("b.wav", info: ["INAM": "Lovely Day", "IART": "Someone"], frames: 441)
        media.wav("c.wav", info: ["INAM": "Nothing Here", "IART": "Lover", "IPRD": "Love Songs"], frames: 441)
        media.wav("d.wav", info: ["INAM": "서울의 LOVE"], frames: 441)
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music")
        func titles(_ needle: String) throws -> [String] {
            var out: [String] = []
            let folded = SearchText.mpdFold(needle)
            try library.catalogSongs(CatalogPrefilter([.foldedTextContains(folded), .foldedTitleContains(folded)])) { out.append($0.title); return true }
            return out
        }
        #expect(try titles("LOVE") == ["Lovely Day", "서울의 LOVE"]) // not the artist "Love Band", not the album "Love Songs"
        #expect(try titles("STRASSE") == ["Straße Nacht"])
        #expect(try titles("서울") == ["서울의 LOVE"])
        #expect(try titles("band").isEmpty)
        #expect(try titles("here") == ["Nothing Here"])
        #expect(try titles("nacht") == ["Straße Nacht"]) // the title's last bytes
        #expect(try titles("nacht love").isEmpty) // not across the title's end into the artist
        #expect(try titles("").count == 4)
    }

    @Test func aNeedleOccursWithinTheBytesGivenOnly() {
        func occurs(_ needle: String, _ text: String, _ count: Int? = nil) -> Bool {
            let n = Array(needle.utf8) + [0], t = Array(text.utf8) + [0]
            return Database.occurs(n, n.count - 1, in: t, count ?? t.count - 1)
        }
        #expect(occurs("ab", "xxab"))
        #expect(occurs("ab", "abxx"))
        #expect(!occurs("ab", "xxa"))
        #expect(!occurs("ab", "xxab", 3)) // the occurrence ends past the first line
        #expect(occurs("aab", "aaab")) // a first byte that fails, then the match one byte on
        #expect(!occurs("abc", "ab"))
        #expect(occurs("", "ab"))
        #expect(!occurs("a", ""))
    }
}

/// The MPD port's whole-library reads and the scan's comparison are read
/// from `tracks_mpd` alone (schema 5): no row of the table is looked up.
@Suite struct CatalogIndexTests {
    @Test func searchAnswersAndTheScanComparisonReadTheIndexAlone() throws {
        let dir = makeTemporaryDirectory()
        _ = try Library(path: dir + "/library.db")
        let db = try Database(path: dir + "/library.db")
        func plan(_ sql: String) throws -> String {
            try db.query("EXPLAIN QUERY PLAN " + sql) { $0.text(3) }.joined(separator: "; ") // parameters unbound: NULL
        }
        let rows = try plan("SELECT \(Library.catalogRowColumns) FROM tracks INDEXED BY tracks_mpd WHERE path > ? AND instr(mpd_text, ?) > 0 ORDER BY path LIMIT ? OFFSET ?")
        #expect(rows.contains("COVERING INDEX tracks_mpd"), "\(rows)")
        #expect(!rows.contains("TEMP B-TREE"), "\(rows)")
        let scan = try plan("SELECT path, id, file_size, mtime_ns FROM tracks INDEXED BY tracks_mpd WHERE path >= ? AND path < ? ORDER BY path")
        #expect(scan.contains("COVERING INDEX tracks_mpd"), "\(scan)")
    }
}
