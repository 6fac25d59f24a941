import Foundation
import Testing
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// A library of every FFmpeg format, seen through the real clients: `mpc`
/// (MPD port) lists, searches and times each file; `tutti search` finds
/// each by title, artist and album.
@Suite(.serialized) struct FFmpegMPDTests {
    @Test func mpcAndTuttiSearchSeeEveryFormat() throws {
        let dir = makeTemporaryDirectory()
        let corpus = try FFmpegCorpus(dir: dir + "/music", seconds: 1.7)
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.musicDirectory = corpus.dir
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        let count = FFmpegCorpus.entries.count
        #expect(waitUntil(timeout: 20) { (try? leader.library?.trackCount()) == count }, "library scan")
        let mpd = String(try #require(leader.mpdEndpoint).port)
        func mpc(_ args: String...) throws -> [String] {
            let r = try runProgram("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", mpd] + args)
            #expect(r.status == 0, "mpc \(args): \(r.err)")
            return r.out.split(separator: "\n").map(String.init)
        }
        let files = try mpc("listall").filter { !$0.hasSuffix(".png") }
        #expect(Set(files) == Set(FFmpegCorpus.entries.map(\.file)), "\(files)")
        // Tags through MPD: every file by its artist (Korean and accented), each by its title.
        #expect(try mpc("search", "artist", FFmpegCorpus.artist).count == count)
        #expect(try mpc("search", "album", FFmpegCorpus.album).count == count)
        for entry in FFmpegCorpus.entries {
            let found = try mpc("-f", "%file% %time%", "search", "title", FFmpegCorpus.title(of: entry))
            #expect(found == ["\(entry.file) 0:02"], "\(entry.file): \(found)")
        }
        // The control surface's search, as `tutti search` prints it.
        let control = try #require(leader.controlEndpoint).port
        for entry in FFmpegCorpus.entries {
            let word = String(FFmpegCorpus.title(of: entry).split(separator: " ").last!)
            let r = try runTutti(port: control, ["search", word])
            #expect(r.status == 0)
            #expect(r.out.contains(FFmpegCorpus.title(of: entry)), "tutti search \(word): \(r.out)")
        }
        let byArtist = try runTutti(port: control, ["search", "김민준"])
        #expect(byArtist.out.components(separatedBy: FFmpegCorpus.album).count - 1 >= count, "\(byArtist.out)")
    }
}
