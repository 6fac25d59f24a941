import Foundation
import Testing
import TuttiAuth
import TuttiCore
@testable import TuttiLibrary
import TuttiTestSupport

@Suite struct ScanTests {
    @Test func readsTagsLengthAndCoversFromMP3FLACAndWAV() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music")
        let png = pngBytes(rgb: (200, 30, 30))
        write(dir + "/cover.png", png)

        try media.mp3("Lame/lame.mp3", lameTags: ["--tt", "Déjà Vu", "--ta", "Beyoncé", "--tl", "B'Day", "--ty", "2006",
                                                  "--tn", "3/12", "--tg", "Rock", "--ti", dir + "/cover.png"])
        try media.mp3("Lame/v1only.mp3", lameTags: ["--id3v1-only", "--tt", "Old Tag", "--ta", "Someone", "--tn", "9", "--tg", "Jazz", "--ty", "1999"])
        let v23 = try media.mp3("ID3/v23.mp3")
        try runTool(["id3v2", "--id3v2-only", "--song", "Twenty Three", "--artist", "Tag Tool", "--album", "Versions",
                 "--TPE2", "Various Artists", "--TPOS", "2/2", "--track", "5/9", "--genre", "17", "--year", "2003", v23])
        try media.mp3("ID3/v24.mp3", id3Version: 4, frames: [
            .text("TIT2", "東京タワーの夜"), .text("TPE1", "山田 太郎"), .text("TALB", "夜景\0Night View \0"), .text("TPE2", "山田"),
            .text("TRCK", "07"), .text("TPOS", "1/1"), .text("TDRC", "2021-11-03"), .text("TCON", "J-Pop"),
            .frontCover(mime: "image/png", bytes: png),
        ])
        try media.flac("FLAC/tagged.flac", tags: ["TITLE": "Flac Title", "ARTIST": "Flac Artist", "ALBUM": "Lossless",
                                                  "ALBUMARTIST": "Flac Band", "GENRE": "Ambient", "TRACKNUMBER": "2/10",
                                                  "DISCNUMBER": "1", "DATE": "2019-03-01"], picture: dir + "/cover.png")
        media.wav("WAV/tagged.wav", info: ["INAM": "Wave Title", "IART": "Wave Artist", "IPRD": "Wave Album", "IGNR": "Field Recording", "ICRD": "2011", "ITRK": "4"])
        media.wav("WAV/07 - Night_Drive.wav")

        let library = try Library(path: dir + "/library.db")
        let summary = try library.scan(folder: dir + "/music")
        #expect(summary.skipped.isEmpty, "\(summary.skipped)")
        #expect(summary.added == 7)
        #expect(summary.filesRead == 7)

        func track(_ relative: String) throws -> Track {
            try #require(try library.track(atPath: dir + "/music/" + relative), "\(relative) not in library")
        }
        let lame = try track("Lame/lame.mp3")
        #expect(lame.title == "Déjà Vu")
        #expect(lame.artist == "Beyoncé")
        #expect(lame.album == "B'Day")
        #expect(lame.year == 2006)
        #expect(lame.trackNumber == 3)
        #expect(lame.genre == "Rock")
        #expect(lame.format == .mp3)
        // Gapless: the LAME tag's delay and padding removed, the source's exact length.
        #expect(lame.durationFrames == media.frames)
        #expect(lame.sampleRate == 44_100)

        let v1 = try track("Lame/v1only.mp3")
        #expect(v1.title == "Old Tag")
        #expect(v1.artist == "Someone")
        #expect(v1.trackNumber == 9)
        #expect(v1.genre == "Jazz")
        #expect(v1.year == 1999)

        let t23 = try track("ID3/v23.mp3")
        #expect(t23.title == "Twenty Three")
        #expect(t23.albumArtist == "Various Artists")
        #expect(t23.trackNumber == 5)
        #expect(t23.discNumber == 2)
        #expect(t23.genre == "Rock") // "(17)" resolved through the ID3v1 genre list
        #expect(t23.year == 2003)
        #expect(t23.durationFrames == media.frames)

        let t24 = try track("ID3/v24.mp3")
        #expect(t24.title == "東京タワーの夜")
        #expect(t24.artist == "山田 太郎")
        #expect(t24.albumArtist == "山田")
        #expect(t24.album == "夜景; Night View") // ID3v2.4's values apart by NULs, a list; the space and NULs at the end trimmed
        #expect(t24.trackNumber == 7)
        #expect(t24.year == 2021)
        #expect(t24.genre == "J-Pop")

        let flac = try track("FLAC/tagged.flac")
        #expect(flac.title == "Flac Title")
        #expect(flac.albumArtist == "Flac Band")
        #expect(flac.trackNumber == 2)
        #expect(flac.discNumber == 1)
        #expect(flac.year == 2019)
        #expect(flac.durationFrames == media.frames) // STREAMINFO total samples
        #expect(flac.format == .flac)

        let wav = try track("WAV/tagged.wav")
        #expect(wav.title == "Wave Title")
        #expect(wav.artist == "Wave Artist")
        #expect(wav.album == "Wave Album")
        #expect(wav.genre == "Field Recording")
        #expect(wav.year == 2011)
        #expect(wav.trackNumber == 4)
        #expect(wav.durationFrames == media.frames)

        let untagged = try track("WAV/07 - Night_Drive.wav")
        #expect(untagged.title == "Night Drive")
        #expect(untagged.trackNumber == 7)
        #expect(untagged.artist == nil)

        // One image embedded three times is stored once.
        let hash = try #require(lame.coverHash)
        #expect(flac.coverHash == hash)
        #expect(t24.coverHash == hash)
        #expect(try library.coverCount() == 1)
        let cover = try #require(try library.cover(hash: hash))
        #expect(cover.bytes == png)
        #expect(cover.mime == "image/png")
        #expect(hash == SHA256.hash(png))
        #expect(wav.coverHash == nil)
    }

    /// The walk lists folders on several threads and puts them together in
    /// one order: paths in byte order, a folder reached twice through links
    /// listed once, under the link first in that order, however the threads ran.
    @Test func theWalkOnSeveralThreadsFindsTheSameFilesInPathOrder() throws {
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        let names = ["b/x.mp3", "a/z.flac", "a b/y.wav", "a/sub/1.mp3", "a/sub2/2.MP3", "a.mp3", "a-/q.mp3", "é/é.mp3", "c/d/e/f/g.mp3"]
        for name in names { write(music + "/" + name, [1]) }
        for i in 0..<40 { write(music + "/many/\(i)/t.mp3", [1]) }
        write(music + "/b/cover.jpg", [1])
        write(music + "/.hidden/h.mp3", [1])
        let fm = FileManager.default
        try fm.createSymbolicLink(atPath: music + "/zlink", withDestinationPath: music + "/c") // c comes first: its own name wins
        try fm.createSymbolicLink(atPath: music + "/a/loop", withDestinationPath: music + "/a") // a loop ends
        try fm.createSymbolicLink(atPath: music + "/b/gone.mp3", withDestinationPath: music + "/nowhere.mp3")

        let one = FolderWalker.walk(root: music, threads: 1)
        let paths = one.files.map { String($0.path.dropFirst(music.count + 1)) }
        let expected = (names + (0..<40).map { "many/\($0)/t.mp3" }).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        #expect(paths == expected)
        #expect(one.skipped.map(\.path) == [music + "/b/gone.mp3"])
        for _ in 0..<20 {
            let four = FolderWalker.walk(root: music, threads: 4)
            #expect(four.files.map(\.path) == one.files.map(\.path))
            #expect(four.files.map(\.size) == one.files.map(\.size))
            #expect(four.skipped.map(\.path) == one.skipped.map(\.path))
        }
    }

    @Test func rescanIsIncrementalAndPicksUpChanges() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music", frames: 4_410)
        for i in 0..<5 { media.wav("a/\(i).wav", info: ["INAM": "Song \(i)"]) }
        let library = try Library(path: dir + "/library.db")
        let first = try library.scan(folder: dir + "/music")
        #expect(first.added == 5 && first.filesRead == 5)

        let second = try library.scan(folder: dir + "/music")
        #expect(second.unchanged == 5)
        #expect(second.filesRead == 0, "unchanged files must not be opened")
        #expect(second.added + second.updated + second.removed + second.moved == 0)

        // A retagged file (new content, new mtime) is read again and keeps its id.
        let before = try #require(try library.track(atPath: dir + "/music/a/2.wav"))
        media.wav("a/2.wav", info: ["INAM": "Renamed Song"])
        setModificationTime(dir + "/music/a/2.wav", seconds: 1_700_000_000)
        let third = try library.scan(folder: dir + "/music")
        #expect(third.filesRead == 1)
        #expect(third.updated == 1)
        #expect(third.unchanged == 4)
        let after = try #require(try library.track(atPath: dir + "/music/a/2.wav"))
        #expect(after.id == before.id)
        #expect(after.title == "Renamed Song")
        #expect(try library.search("renamed").tracks.map(\.id) == [before.id])
        #expect(try library.search("song 2").tracks.isEmpty)
    }

    /// The rescan walks the folder and the library's rows side by side in
    /// byte order: a file added before the first row, between two rows or
    /// after the last, a removed one, and a changed one (its size, with the
    /// same mtime) must each be noticed, with non-ASCII names in the order.
    @Test func aRescanNoticesAddedChangedAndRemovedFilesAnywhereInPathOrder() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music", frames: 4_410)
        for name in ["b/1.wav", "b/3.wav", "d/é.wav", "d/z.wav"] { media.wav(name, info: ["INAM": "Old " + name]) }
        let library = try Library(path: dir + "/library.db")
        #expect(try library.scan(folder: dir + "/music").added == 4)
        let kept = try #require(try library.track(atPath: dir + "/music/d/é.wav"))

        media.wav("a/0.wav", info: ["INAM": "First"])          // before every row
        media.wav("b/2.wav", info: ["INAM": "Between"])        // between two rows of one folder
        media.wav("d/f.wav", info: ["INAM": "Accent neighbour"]) // "f" sorts before "é" (0x66 < 0xC3)
        media.wav("e/9.wav", info: ["INAM": "Last"])           // after every row
        try FileManager.default.removeItem(atPath: dir + "/music/b/3.wav")
        setModificationTime(dir + "/music/d/z.wav", seconds: 1_600_000_000)
        let second = try library.scan(folder: dir + "/music")
        #expect(second.added == 4 && second.removed == 1 && second.updated == 1 && second.unchanged == 2)
        #expect(second.removedTrackIDs.count == 1)
        media.wav("d/z.wav", info: ["INAM": "Longer title than before"]) // another size...
        setModificationTime(dir + "/music/d/z.wav", seconds: 1_600_000_000) // ...the same mtime
        let summary = try library.scan(folder: dir + "/music")
        #expect(summary.updated == 1 && summary.unchanged == 6 && summary.added == 0 && summary.removed == 0)
        #expect(summary.filesRead == 1)
        #expect(try library.track(atPath: dir + "/music/d/z.wav")?.title == "Longer title than before")
        #expect(try library.track(atPath: dir + "/music/b/3.wav") == nil)
        #expect(try library.track(atPath: dir + "/music/d/é.wav")?.id == kept.id)
        for (path, title) in [("a/0.wav", "First"), ("b/2.wav", "Between"), ("d/f.wav", "Accent neighbour"), ("e/9.wav", "Last")] {
            #expect(try library.track(atPath: dir + "/music/" + path)?.title == title)
        }
        #expect(try library.trackCount() == 7)
    }

    @Test func anEmptyMusicFolderRemovesNothingWhileAFolderEmptiedInPartDoes() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music", frames: 4_410)
        for i in 0..<3 { media.wav("a/\(i).wav", info: ["INAM": "Song \(i)"]) }
        media.wav("b/x.wav", info: ["INAM": "Other"])
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music")
        // The disk is unplugged: the mount point stays, empty.
        try FileManager.default.moveItem(atPath: dir + "/music", toPath: dir + "/away")
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: false)
        #expect { try library.scan(folder: dir + "/music") } throws: { error in
            "\(error)".contains("it is empty but the library holds 4 tracks from it (is its disk unplugged?); nothing was removed")
        }
        #expect(try library.trackCount() == 4)
        // Back, minus one folder the user deleted: that one leaves, as it should.
        try FileManager.default.removeItem(atPath: dir + "/music")
        try FileManager.default.moveItem(atPath: dir + "/away", toPath: dir + "/music")
        try FileManager.default.removeItem(atPath: dir + "/music/b")
        let summary = try library.scan(folder: dir + "/music")
        #expect(summary.removed == 1 && summary.unchanged == 3)
        // An empty folder the library holds nothing from scans as empty.
        try FileManager.default.createDirectory(atPath: dir + "/empty", withIntermediateDirectories: false)
        #expect(try library.scan(folder: dir + "/empty").added == 0)
        #expect(try library.trackCount() == 3)
    }

    @Test func deletedFilesLeaveTheLibraryWithTheirFavourites() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music", frames: 4_410)
        media.wav("keep.wav", info: ["INAM": "Keep"])
        media.wav("gone.wav", info: ["INAM": "Gone"])
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music")
        let gone = try #require(try library.track(atPath: dir + "/music/gone.wav"))
        try library.like(gone.id)
        try library.recordPlay(gone.id, startedAt: 1_000, playedMilliseconds: 500)

        try FileManager.default.removeItem(atPath: dir + "/music/gone.wav")
        let summary = try library.scan(folder: dir + "/music")
        #expect(summary.removed == 1)
        #expect(summary.removedTrackIDs == [gone.id])
        #expect(try library.track(gone.id) == nil)
        #expect(try library.favourites().isEmpty)
        #expect(try library.history().isEmpty)
        #expect(try library.trackCount() == 1)
    }

    @Test func movedFilesKeepTheirIdFavouritesHistoryAndPlaylists() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music")
        try media.mp3("Inbox/song.mp3", lameTags: ["--tt", "Travelling Song", "--ta", "Mover"])
        media.wav("other.wav", info: ["INAM": "Stays"])
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music")
        let original = try #require(try library.track(atPath: dir + "/music/Inbox/song.mp3"))
        try library.like(original.id, at: 42)
        try library.recordPlay(original.id, startedAt: 5_000, playedMilliseconds: 12_345)
        let playlist = try library.createPlaylist(named: "Road trip")
        try library.addToPlaylist(playlist.id, tracks: [original.id])

        try FileManager.default.createDirectory(atPath: dir + "/music/Sorted/Mover", withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: dir + "/music/Inbox/song.mp3", toPath: dir + "/music/Sorted/Mover/01 Travelling Song.mp3")
        let summary = try library.scan(folder: dir + "/music")
        #expect(summary.moved == 1)
        #expect(summary.removed == 0)
        #expect(summary.added == 0)
        let moved = try #require(try library.track(atPath: dir + "/music/Sorted/Mover/01 Travelling Song.mp3"))
        #expect(moved.id == original.id)
        #expect(try library.isLiked(moved.id))
        #expect(try library.favourites().map(\.likedAt) == [42])
        #expect(try library.history().map(\.playedMilliseconds) == [12_345])
        #expect(try library.entries(of: playlist.id).map(\.track.id) == [original.id])
        #expect(try library.track(atPath: dir + "/music/Inbox/song.mp3") == nil)
    }

    @Test func anEmptiedFolderKeepsItsTracksUnlessAsked() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music", frames: 4_410)
        media.wav("a.wav")
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music")
        try FileManager.default.removeItem(atPath: dir + "/music/a.wav")
        let held = try library.scan(folder: dir + "/music")
        #expect(held.removed == 0)
        #expect(held.warnings.count == 1)
        #expect(try library.trackCount() == 1)
        let forced = try library.scan(folder: dir + "/music", options: ScanOptions(removeTracksWhenFolderIsEmpty: true))
        #expect(forced.removed == 1)
        #expect(try library.trackCount() == 0)
    }

    @Test func corruptAndTruncatedFilesAreSkippedWithReasons() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music")
        // Deterministic "random" bytes.
        var state: UInt64 = 0x1234_5678
        func noise(_ n: Int) -> [UInt8] {
            (0..<n).map { _ in state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407; return UInt8(truncatingIfNeeded: state >> 33) }
        }
        write(dir + "/music/noise.mp3", noise(20_000))
        write(dir + "/music/noise.flac", noise(20_000))
        write(dir + "/music/noise.wav", noise(20_000))
        write(dir + "/music/empty.mp3", [])
        let goodFLAC = try media.flac("whole.flac", tags: ["TITLE": "Whole"])
        let flacBytes = read(goodFLAC)
        write(dir + "/music/cut-in-audio.flac", Array(flacBytes.prefix(flacBytes.count - 1_500)))
        write(dir + "/music/cut-in-header.flac", Array(flacBytes.prefix(30)))
        let goodMP3 = try media.mp3("whole.mp3", lameTags: ["--tt", "Whole MP3"])
        write(dir + "/music/cut-in-tag.mp3", Array(read(goodMP3).prefix(200)))
        write(dir + "/music/cut-in-audio.mp3", Array(read(goodMP3).prefix(4_000)))
        write(dir + "/music/bad-header.wav", Array("RIFF".utf8) + le32(100) + Array("WAVEfmt ".utf8) + le32(16) + [7, 0, 2, 0] + noise(12))
        media.wav("fine.wav", info: ["INAM": "Fine"])

        let library = try Library(path: dir + "/library.db")
        var progress: [ScanProgress] = []
        let summary = try library.scan(folder: dir + "/music") { progress.append($0) }
        let skipped = Dictionary(uniqueKeysWithValues: summary.skipped.map { (($0.path as NSString).lastPathComponent, $0.reason) })
        for (name, reason) in skipped.sorted(by: { $0.key < $1.key }) { print("skipped \(name): \(reason)") }
        #expect(Set(skipped.keys) == ["noise.mp3", "noise.flac", "noise.wav", "empty.mp3", "cut-in-audio.flac", "cut-in-header.flac",
                                      "cut-in-tag.mp3", "cut-in-audio.mp3", "bad-header.wav"])
        #expect(skipped.values.allSatisfy { !$0.description.isEmpty })
        if case .corrupt(let why)? = skipped["cut-in-audio.flac"] { #expect(why.contains("truncated")) } else { Issue.record("cut FLAC: \(String(describing: skipped["cut-in-audio.flac"]))") }
        #expect(skipped["empty.mp3"] == .corrupt("file is empty"))
        #expect(summary.added == 3) // whole.flac, whole.mp3, fine.wav
        #expect(try library.trackCount() == 3)
        // Progress: once per file, then a final done == total.
        #expect(progress.count == 13)
        #expect(progress.last?.done == 12 && progress.last?.total == 12)
        #expect(progress.dropLast().map(\.done) == Array(0..<12))
    }

    @Test func missingFolderIsATypedError() throws {
        let dir = makeTemporaryDirectory()
        let library = try Library(path: dir + "/library.db")
        #expect(throws: LibraryError.self) { try library.scan(folder: dir + "/nowhere") }
        do {
            _ = try library.scan(folder: dir + "/nowhere")
        } catch {
            #expect(error.description.contains("nowhere"))
        }
    }

    @Test func searchesAnswerDuringAScan() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music", frames: 441)
        for i in 0..<300 { media.wav("f/\(i).wav", info: ["INAM": "Tune \(i)"]) }
        let library = try Library(path: dir + "/library.db")
        let scanDone = DispatchSemaphore(value: 0)
        let failure = SendableBox()
        Thread.detachNewThread {
            do { _ = try library.scan(folder: dir + "/music", options: ScanOptions(batchSize: 20)) } catch { failure.set("\(error)") }
            scanDone.signal()
        }
        var searches = 0
        while scanDone.wait(timeout: .now()) == .timedOut {
            _ = try library.search("tune")
            searches += 1
        }
        #expect(failure.get() == nil)
        #expect(searches > 0)
        #expect(try library.search("tune", limit: 1_000).tracks.count == 300)
    }
}

final class SendableBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?
    func set(_ v: String) { lock.withLock { value = v } }
    func get() -> String? { lock.withLock { value } }
}
