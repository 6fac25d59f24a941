import Foundation
import Testing
import TuttiCore
@testable import TuttiLibrary
import TuttiTestSupport

private func library(with names: [String], _ test: String = #function) throws -> (Library, String, [TrackID]) {
    let dir = makeTemporaryDirectory(test)
    let media = MediaFactory(dir: dir + "/music", frames: 4_410)
    for name in names { media.wav(name, info: ["INAM": ((name as NSString).lastPathComponent as NSString).deletingPathExtension, "IART": "Artist"]) }
    let library = try Library(path: dir + "/library.db")
    _ = try library.scan(folder: dir + "/music")
    let ids = try names.map { try #require(try library.track(atPath: dir + "/music/" + $0)).id }
    return (library, dir, ids)
}

@Suite struct PlaylistTests {
    @Test func createAddInsertMoveRemoveRenameDelete() throws {
        let (library, _, ids) = try library(with: ["a.wav", "b.wav", "c.wav", "d.wav"])
        let p = try library.createPlaylist(named: "  Mix  ")
        #expect(p.name == "Mix")
        try library.addToPlaylist(p.id, tracks: [ids[0], ids[1], ids[2]])
        try library.addToPlaylist(p.id, tracks: [ids[3]], at: 1)
        try library.addToPlaylist(p.id, tracks: [ids[0]]) // duplicates are allowed
        func order() throws -> [TrackID] { try library.entries(of: p.id).map(\.track.id) }
        #expect(try order() == [ids[0], ids[3], ids[1], ids[2], ids[0]])
        #expect(try library.entries(of: p.id).map(\.index) == [0, 1, 2, 3, 4])

        try library.moveInPlaylist(p.id, from: 0, to: 3)
        #expect(try order() == [ids[3], ids[1], ids[2], ids[0], ids[0]])
        try library.moveInPlaylist(p.id, from: 4, to: 0)
        #expect(try order() == [ids[0], ids[3], ids[1], ids[2], ids[0]])
        try library.removeFromPlaylist(p.id, at: 4)
        #expect(try order() == [ids[0], ids[3], ids[1], ids[2]])

        #expect(throws: LibraryError.self) { try library.removeFromPlaylist(p.id, at: 9) }
        #expect(throws: LibraryError.self) { try library.moveInPlaylist(p.id, from: 0, to: 4) }
        #expect(throws: LibraryError.self) { try library.addToPlaylist(p.id, tracks: [TrackID(9_999)]) }
        #expect(try order().count == 4) // a failed add changes nothing
        #expect(throws: LibraryError.self) { try library.createPlaylist(named: "   ") }

        try library.renamePlaylist(p.id, to: "Zed")
        let other = try library.createPlaylist(named: "alpha")
        #expect(try library.playlists().map(\.name) == ["alpha", "Zed"])
        #expect(try library.playlist(p.id)?.entryCount == 4)
        try library.deletePlaylist(p.id)
        #expect(try library.playlists().map(\.id) == [other.id])
        #expect(throws: LibraryError.notFound("playlist \(p.id.rawValue)")) { try library.deletePlaylist(p.id) }
    }

    @Test func m3uRoundTripWithRelativePaths() throws {
        let (library, dir, ids) = try library(with: ["Album/01 One.wav", "Album/02 Two.wav", "Loose/Three.wav"])
        let p = try library.createPlaylist(named: "Round trip")
        try library.addToPlaylist(p.id, tracks: [ids[2], ids[0], ids[1]])
        try FileManager.default.createDirectory(atPath: dir + "/playlists", withIntermediateDirectories: true)
        try library.exportM3U(p.id, to: dir + "/playlists/trip.m3u8")
        let text = String(decoding: read(dir + "/playlists/trip.m3u8"), as: UTF8.self)
        #expect(text.hasPrefix("#EXTM3U\n#EXTINF:0,Artist - Three\n../music/Loose/Three.wav\n"))
        #expect(!text.contains(dir)) // relative: the folder can move with its music

        let report = try library.importM3U(path: dir + "/playlists/trip.m3u8")
        #expect(report.playlist.name == "trip")
        #expect(report.added == 3)
        #expect(report.unresolved.isEmpty)
        #expect(try library.entries(of: report.playlist.id).map(\.track.id) == [ids[2], ids[0], ids[1]])

        try library.exportM3U(p.id, to: dir + "/playlists/absolute.m3u", relativePaths: false)
        let absolute = try library.importM3U(path: dir + "/playlists/absolute.m3u", name: "Absolute")
        #expect(absolute.added == 3)
        #expect(absolute.playlist.name == "Absolute")
    }

    @Test func m3uImportReportsWhatItCannotResolve() throws {
        let (library, dir, ids) = try library(with: ["a.wav", "sub/b.wav"])
        write(dir + "/outside.wav", wavBytes(frames: 100))
        let m3u = """
            \u{FEFF}#EXTM3U\r
            #EXTINF:1,Artist - a\r
            music/a.wav\r
            # a comment\r
            \r
            #EXTINF:-1,Radio
            http://radio.example/stream
            \(dir)/music/sub/../sub/b.wav
            music/missing.wav
            file://\(dir.replacingOccurrences(of: " ", with: "%20"))/music/a.wav
            outside.wav
            """
        write(dir + "/list.m3u", Array(m3u.utf8))
        let report = try library.importM3U(path: dir + "/list.m3u")
        #expect(report.added == 3)
        #expect(try library.entries(of: report.playlist.id).map(\.track.id) == [ids[0], ids[1], ids[0]])
        #expect(report.unresolved.map(\.line) == [7, 9, 11])
        #expect(report.unresolved.map(\.entry) == ["http://radio.example/stream", "music/missing.wav", "outside.wav"])
        #expect(report.unresolved[1].reason.contains("does not exist"))
        #expect(report.unresolved[2].reason.contains("not in the library"))
        #expect(throws: LibraryError.self) { try library.importM3U(path: dir + "/nope.m3u") }
    }

    @Test func favouritesAndHistory() throws {
        let (library, _, ids) = try library(with: ["a.wav", "b.wav"])
        try library.like(ids[0], at: 100)
        try library.like(ids[1], at: 200)
        try library.like(ids[0], at: 300) // already liked: keeps the first time
        #expect(try library.favourites().map(\.track.id) == [ids[1], ids[0]])
        #expect(try library.isLiked(ids[0]))
        try library.unlike(ids[0])
        #expect(try !library.isLiked(ids[0]))
        #expect(throws: LibraryError.self) { try library.like(TrackID(12_345)) }

        try library.recordPlay(ids[0], startedAt: 1_000, playedMilliseconds: 30_000)
        try library.recordPlay(ids[1], startedAt: 2_000, playedMilliseconds: 5_000)
        try library.recordPlay(ids[0], startedAt: 3_000, playedMilliseconds: 180_000)
        let history = try library.history()
        #expect(history.map(\.track.id) == [ids[0], ids[1], ids[0]])
        #expect(history.map(\.startedAt) == [3_000, 2_000, 1_000])
        #expect(history.map(\.playedMilliseconds) == [180_000, 5_000, 30_000])
        #expect(try library.history(limit: 1).count == 1)
        #expect(throws: LibraryError.self) { try library.recordPlay(ids[0], startedAt: 0, playedMilliseconds: -1) }
    }
}

@Suite struct M3UTests {
    @Test func parsesExtinfAndLocations() {
        let items = M3U.parse("#EXTM3U\n#EXTINF:123 tvg-id=\"x\",Band - Song\nsong.mp3\nother.mp3\n")
        #expect(items == [.init(line: 3, location: "song.mp3", title: "Band - Song", durationSeconds: 123),
                          .init(line: 4, location: "other.mp3", title: nil, durationSeconds: nil)])
    }

    @Test func resolvesPaths() {
        #expect(M3U.resolve("a/../b/./c.mp3", baseDirectory: "/m") == "/m/b/c.mp3")
        #expect(M3U.resolve("/abs//x.mp3", baseDirectory: "/m") == "/abs/x.mp3")
        #expect(M3U.resolve("file:///music/My%20Song.mp3", baseDirectory: "/m") == "/music/My Song.mp3")
        #expect(M3U.resolve("Music\\Band\\a.mp3", baseDirectory: "/m") == "/m/Music/Band/a.mp3")
        #expect(M3U.resolve("https://x/y.mp3", baseDirectory: "/m") == nil)
        #expect(M3U.relativePath(from: "/home/u/lists", to: "/home/u/music/a.mp3") == "../music/a.mp3")
        #expect(M3U.relativePath(from: "/home/u/music", to: "/home/u/music/x/a.mp3") == "x/a.mp3")
        #expect(M3U.relativePath(from: "/", to: "/a.mp3") == "a.mp3")
    }

    /// Found by the m3u fuzz target: an exported name with a backslash in
    /// it was read back as a Windows path, so the entry named another file.
    @Test func aNameWithABackslashExportsAndImportsAsItself() {
        let path = "/srv/music/playlists/AC\\DC - Live.mp3"
        let relative = M3U.relativePath(from: "/srv/music/playlists", to: path)
        #expect(relative == "./AC\\DC - Live.mp3")
        #expect(M3U.resolve(relative, baseDirectory: "/srv/music/playlists") == path)
        #expect(M3U.resolve("Music\\Band\\a.mp3", baseDirectory: "/m") == "/m/Music/Band/a.mp3", "Windows playlists still read")
    }
}
