import Foundation
import Testing
import TuttiCore
@testable import TuttiLibrary
import TuttiTestSupport

/// `catalogFolder` (MPD's `lsinfo`): subfolders then songs in path order,
/// and its kept listings follow every scan that changes the tracks.
@Suite struct CatalogFolderTests {
    private func listing(_ library: Library, _ folder: String) throws -> [String] {
        var out: [String] = []
        try library.catalogFolder(folder) { entry in
            switch entry {
            case .folder(let name): out.append(name + "/")
            case .song(let song): out.append(String(song.path.split(separator: "/").last ?? ""))
            }
        }
        // The same listing written from the rows' bytes (`lsinfo`'s path).
        var rows: [String] = []
        try library.catalogFolderRows(folder, subfolder: { rows.append($0 + "/") }, row: { row in
            rows.append(row.withBytes(.path) { String(decoding: $0, as: UTF8.self).split(separator: "/").last.map(String.init) ?? "" } ?? "")
        }, afterPage: {})
        #expect(rows == out)
        return out
    }

    @Test func aListingFollowsTheScansThatChangeTheFolder() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music")
        media.wav("B/1.wav", frames: 441)
        media.wav("A (Live)/1.wav", frames: 441)
        media.wav("A/x/1.wav", frames: 441)
        media.wav("top.wav", frames: 441)
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music")
        // Path order: "A (Live)/" before "A/" (a space sorts before a slash).
        #expect(try listing(library, dir + "/music") == ["A (Live)/", "A/", "B/", "top.wav"])
        #expect(try listing(library, dir + "/music/") == ["A (Live)/", "A/", "B/", "top.wav"]) // kept, the same
        #expect(try listing(library, dir + "/music/A") == ["x/"])

        media.wav("C/2.wav", frames: 441)
        media.wav("B/2.wav", frames: 441)
        _ = try library.scan(folder: dir + "/music")
        #expect(try listing(library, dir + "/music") == ["A (Live)/", "A/", "B/", "C/", "top.wav"])
        #expect(try listing(library, dir + "/music/B") == ["1.wav", "2.wav"])

        try FileManager.default.removeItem(atPath: dir + "/music/A (Live)")
        try FileManager.default.removeItem(atPath: dir + "/music/top.wav")
        _ = try library.scan(folder: dir + "/music")
        #expect(try listing(library, dir + "/music") == ["A/", "B/", "C/"])
    }

    /// `list artist` and `list albumartist` are kept while the tracks stay
    /// the same, and read again after a scan that changes them.
    @Test func keptValueListsFollowTheScans() throws {
        let dir = makeTemporaryDirectory()
        let media = MediaFactory(dir: dir + "/music")
        media.wav("a.wav", info: ["IART": "Björk"], frames: 441)
        media.wav("b.wav", info: ["IART": "ABBA"], frames: 441)
        let library = try Library(path: dir + "/library.db")
        _ = try library.scan(folder: dir + "/music")
        #expect(try library.catalogValues(.artist).map(\.value) == ["ABBA", "Björk"])
        #expect(try library.catalogValues(.albumArtistOrArtist).map(\.value) == ["ABBA", "Björk"])
        #expect(try library.catalogValues(.artist).map(\.value) == ["ABBA", "Björk"]) // kept, the same
        media.wav("c.wav", info: ["IART": "Can"], frames: 441)
        _ = try library.scan(folder: dir + "/music")
        #expect(try library.catalogValues(.artist).map(\.value) == ["ABBA", "Björk", "Can"])
        try FileManager.default.removeItem(atPath: dir + "/music/a.wav")
        _ = try library.scan(folder: dir + "/music")
        #expect(try library.catalogValues(.artist).map(\.value) == ["ABBA", "Can"])
        #expect(try library.catalogValues(.albumArtistOrArtist).map(\.value) == ["ABBA", "Can"])
        // A filtered list is never taken from the whole column's.
        #expect(try library.catalogValues(.artist, CatalogPrefilter([.equals(.artist, "Can")])).map(\.value) == ["Can"])

        var kept = ValueLists()
        kept.keep([(nil, "x")], for: .artist, version: 1)
        #expect(kept.values(.artist, version: 1)?.map(\.value) == ["x"])
        #expect(kept.values(.artist, version: 2) == nil)
        kept.keep(Array(repeating: (nil, String(repeating: "y", count: 1_000)), count: ValueLists.maxBytes / 1_000 + 1), for: .title, version: 1)
        #expect(kept.values(.title, version: 1) == nil, "a list over the bound is not kept")
        #expect(kept.values(.artist, version: 1) != nil)
    }

    @Test func keptListingsAreBounded() {
        var kept = FolderListings()
        for i in 0..<(FolderListings.maxFolders + 5) {
            kept.keep(.init(folders: ["f\(i)"], songIDs: []), for: Array("/m/\(i)/".utf8), version: 1)
        }
        #expect(kept.listing(Array("/m/0/".utf8), version: 1) == nil)
        #expect(kept.listing(Array("/m/\(FolderListings.maxFolders + 4)/".utf8), version: 1)?.folders == ["f\(FolderListings.maxFolders + 4)"])
        #expect(kept.listing(Array("/m/\(FolderListings.maxFolders + 4)/".utf8), version: 2) == nil)
        kept.keep(.init(folders: [], songIDs: Array(repeating: 1, count: FolderListings.maxEntries + 1)), for: Array("/big/".utf8), version: 1)
        #expect(kept.listing(Array("/big/".utf8), version: 1) == nil)
    }
}
