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
