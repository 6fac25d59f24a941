import Foundation
import Testing
import TuttiCore
import TuttiLibrary
import TuttiTestSupport

/// `bench/library/run.sh`: our scanner and search against MPD on the same
/// files and queries. Skipped unless TUTTI_BENCH=1 (it takes minutes).
/// TUTTI_BENCH_FILES (10000) and TUTTI_BENCH_TRACKS (100000) size it.
@Suite(.serialized) struct LibraryBenchmarkTests {
    static let enabled = ProcessInfo.processInfo.environment["TUTTI_BENCH"] == "1"
    static var files: Int { Int(ProcessInfo.processInfo.environment["TUTTI_BENCH_FILES"] ?? "") ?? 10_000 }
    static var tracks: Int { Int(ProcessInfo.processInfo.environment["TUTTI_BENCH_TRACKS"] ?? "") ?? 100_000 }

    @Test(.enabled(if: enabled)) func scanAndSearchAgainstMPD() throws {
        let dir = makeTemporaryDirectory("bench")
        defer { if ProcessInfo.processInfo.environment["TUTTI_BENCH_KEEP"] == nil { try? FileManager.default.removeItem(atPath: dir) } }
        print("bench folder: \(dir)")

        // One 0.5 s MP3, copied with different ID3v2.3 tags.
        write(dir + "/template.wav", wavBytes(frames: 22_050))
        try runTool(["lame", "--quiet", "-b", "128", dir + "/template.wav", dir + "/template.mp3"])
        let template = read(dir + "/template.mp3")
        let entries = LibraryBenchmark.entries(count: Self.files)
        var t = LibraryBenchmark.now()
        try LibraryBenchmark.writeCorpus(entries, template: template, directory: dir + "/music")
        print("generated \(entries.count) tagged MP3s in \(format(LibraryBenchmark.now() - t)) s")

        // Ours: scan.
        let library = try Library(path: dir + "/tutti.db")
        t = LibraryBenchmark.now()
        let cold = try library.scan(folder: dir + "/music")
        let oursCold = LibraryBenchmark.now() - t
        t = LibraryBenchmark.now()
        let warm = try library.scan(folder: dir + "/music")
        let oursRescan = LibraryBenchmark.now() - t
        #expect(cold.added == entries.count && cold.skipped.isEmpty, "\(cold)")
        #expect(warm.unchanged == entries.count && warm.filesRead == 0)

        // MPD: scan the same folder.
        let mpdScan = try MPD(dir: dir + "/mpd-scan", music: dir + "/music", database: nil)
        t = LibraryBenchmark.now()
        try mpdScan.mpc(["-w", "update"])
        let mpdCold = LibraryBenchmark.now() - t
        t = LibraryBenchmark.now()
        try mpdScan.mpc(["-w", "update"])
        let mpdRescan = LibraryBenchmark.now() - t
        let mpdSongs = try mpdScan.songCount()
        mpdScan.stop()
        #expect(mpdSongs == entries.count)

        // Search over a large library: the same synthetic rows in both.
        let big = LibraryBenchmark.entries(count: Self.tracks, seed: 2)
        let searchLibrary = try Library(path: dir + "/tutti-100k.db")
        try LibraryBenchmark.insertSynthetic(big, into: searchLibrary)
        let queries = LibraryBenchmark.queries()
        let ours = try LibraryBenchmark.searchLatencies(searchLibrary, queries: queries)

        try MPD.writeDatabase(big, to: dir + "/mpd-100k.db")
        try FileManager.default.createDirectory(atPath: dir + "/empty", withIntermediateDirectories: true)
        let mpdSearch = try MPD(dir: dir + "/mpd-search", music: dir + "/empty", database: dir + "/mpd-100k.db")
        #expect(try mpdSearch.songCount() == big.count)
        let connection = try MPDConnection(port: mpdSearch.port)
        for q in queries { _ = try connection.command(MPD.searchCommand(q)) } // warm-up, as for ours
        var theirs: [Double] = []
        var mpdHits = 0
        for q in queries {
            let start = LibraryBenchmark.now()
            let reply = try connection.command(MPD.searchCommand(q))
            theirs.append(LibraryBenchmark.now() - start)
            mpdHits += reply.split(separator: "\n").filter { $0.hasPrefix("file: ") }.count
        }
        mpdSearch.stop()
        var ourHits = 0
        for q in queries { ourHits += try searchLibrary.search(q, limit: 50).tracks.count }

        let n = Double(entries.count)
        func ms(_ s: Double) -> String { format(s * 1_000, digits: 2) + " ms" }
        func ratio(_ a: Double, _ b: Double) -> String { format(a / b, digits: 1) + "×" }
        let p50 = LibraryBenchmark.percentile(ours, 0.5), p99 = LibraryBenchmark.percentile(ours, 0.99)
        let m50 = LibraryBenchmark.percentile(theirs, 0.5), m99 = LibraryBenchmark.percentile(theirs, 0.99)
        print("""

            == bench/library: \(entries.count) tagged MP3s (0.5 s, 128 kbit/s, ID3v2.3), \(big.count) tracks for search, \(queries.count) queries ==
            measure                          Tutti              MPD 0.23           Tutti vs MPD
            scan, empty library (files/s)    \(pad(format(n / oursCold, digits: 0)))\(pad(format(n / mpdCold, digits: 0)))\(ratio(mpdCold, oursCold)) faster
            rescan, unchanged (files/s)      \(pad(format(n / oursRescan, digits: 0)))\(pad(format(n / mpdRescan, digits: 0)))\(ratio(mpdRescan, oursRescan)) faster
            search p50                       \(pad(ms(p50)))\(pad(ms(m50)))\(ratio(m50, p50)) faster
            search p99                       \(pad(ms(p99)))\(pad(ms(m99)))\(ratio(m99, p99)) faster
            results returned (≤50/query)     \(pad("\(ourHits)"))\(pad("\(mpdHits)"))
            scan wall times: Tutti \(format(oursCold)) s cold, \(format(oursRescan)) s rescan; MPD \(format(mpdCold)) s, \(format(mpdRescan)) s (mpc -w update)
            Tutti search is an in-process call (FTS5, bm25-ranked, prefix + diacritic folding); MPD search is `search any "…" window 0:50`
            over one loopback connection (unranked case-insensitive substring match on every song).

            """)
    }

    private func pad(_ s: String) -> String { s + String(repeating: " ", count: max(1, 19 - s.count)) }
}

func format(_ v: Double, digits: Int = 2) -> String { String(format: "%.\(digits)f", v) }

/// One `mpd --no-daemon` on loopback with a null output, in its own folder.
final class MPD {
    let port: Int
    private let process = Process()
    private let conf: String

    init(dir: String, music: String, database: String?) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        port = try Self.freePort()
        conf = dir + "/mpd.conf"
        let text = """
            music_directory "\(music)"
            database {
                plugin "simple"
                path "\(database ?? dir + "/db")"
                compress "no"
            }
            log_file "\(dir)/log"
            bind_to_address "127.0.0.1"
            port "\(port)"
            auto_update "no"
            zeroconf_enabled "no"
            audio_output {
                type "null"
                name "null"
            }
            """
        write(conf, Array(text.utf8))
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mpd")
        process.arguments = ["--no-daemon", conf]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when it answers on its port (loading a large database takes a moment).
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if (try? MPDConnection(port: port)) != nil { return }
            usleep(50_000)
        }
        stop()
        throw CommandFailed(description: "mpd did not start on port \(port); see \(dir)/log")
    }

    deinit { stop() }

    func stop() {
        stopProcess(process)
    }

    func mpc(_ arguments: [String]) throws {
        try runTool(["mpc", "-h", "127.0.0.1", "-p", "\(port)"] + arguments)
    }

    func songCount() throws -> Int {
        let stats = try MPDConnection(port: port).command("stats")
        let line = stats.split(separator: "\n").first { $0.hasPrefix("songs: ") }
        return line.flatMap { Int($0.dropFirst(7)) } ?? -1
    }

    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { throw CommandFailed(description: "no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// The closest MPD request to our query: each word (or field:value) a
    /// case-insensitive substring filter, ANDed, first 50 results.
    static func searchCommand(_ query: String) -> String {
        var parts: [String] = []
        for term in SearchQuery(query).terms {
            let tag: String
            switch term.field {
            case .artist?: tag = "artist"
            case .album?: tag = "album"
            case .title?: tag = "title"
            case .genre?: tag = "genre"
            case .albumArtist?: tag = "albumartist"
            case nil: tag = "any"
            }
            parts.append(tag + " " + quote(term.text))
        }
        return "search " + parts.joined(separator: " ") + " window 0:50"
    }

    static func quote(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// MPD's "simple" database text format (as MPD 0.23 writes it, uncompressed),
    /// with artist/album/song folders.
    static func writeDatabase(_ entries: [LibraryBenchmark.Entry], to path: String) throws {
        var out = "info_begin\nformat: 2\nmpd_version: 0.23.12\nfs_charset: UTF-8\n"
        // MPD discards a database whose tag list differs from the tags it has enabled.
        let tags = ["Artist", "ArtistSort", "Album", "AlbumSort", "AlbumArtist", "AlbumArtistSort", "Title", "Track", "Name",
                    "Genre", "Date", "OriginalDate", "Composer", "ComposerSort", "Performer", "Conductor", "Work", "Movement",
                    "MovementNumber", "Ensemble", "Location", "Grouping", "Disc", "Label", "MUSICBRAINZ_ARTISTID",
                    "MUSICBRAINZ_ALBUMID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID", "MUSICBRAINZ_RELEASETRACKID",
                    "MUSICBRAINZ_WORKID"]
        for tag in tags { out += "tag: \(tag)\n" }
        out += "info_end\n"
        // Group by folder path, keeping the generated order.
        var folders: [(String, [LibraryBenchmark.Entry])] = []
        for e in entries {
            let folder = (e.relativePath as NSString).deletingLastPathComponent
            if folders.last?.0 == folder { folders[folders.count - 1].1.append(e) } else { folders.append((folder, [e])) }
        }
        var byArtist: [(String, [(String, [LibraryBenchmark.Entry])])] = []
        for (folder, songs) in folders {
            let artist = String(folder.split(separator: "/")[0])
            if byArtist.last?.0 == artist { byArtist[byArtist.count - 1].1.append((folder, songs)) } else { byArtist.append((artist, [(folder, songs)])) }
        }
        for (artist, albums) in byArtist {
            out += "directory: \(artist)\nmtime: 0\nbegin: \(artist)\n"
            for (folder, songs) in albums {
                let name = (folder as NSString).lastPathComponent
                out += "directory: \(name)\nmtime: 0\nbegin: \(folder)\n"
                for s in songs {
                    out += "song_begin: \((s.relativePath as NSString).lastPathComponent)\nTime: 200.000000\n"
                    out += "Artist: \(s.artist)\nTitle: \(s.title)\nAlbum: \(s.album)\nTrack: \(s.trackNumber)\nDate: \(s.year)\nGenre: \(s.genre)\n"
                    out += "Format: 48000:16:2\nmtime: 0\nsong_end\n"
                }
                out += "end: \(folder)\n"
            }
            out += "end: \(artist)\n"
        }
        write(path, Array(out.utf8))
    }
}

/// A blocking MPD protocol client: one command, the reply up to OK or ACK.
final class MPDConnection {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let ok = withUnsafePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard ok else { close(fd); throw CommandFailed(description: "connect to mpd: \(String(cString: strerror(errno)))") }
        _ = try readLine() // "OK MPD 0.23.x"
    }

    deinit { close(fd) }

    private func readLine() throws -> String {
        while true {
            if let nl = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw CommandFailed(description: "mpd closed the connection") }
            buffer += chunk[..<n]
        }
    }

    func command(_ command: String) throws -> String {
        let bytes = Array((command + "\n").utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var reply = ""
        while true {
            let line = try readLine()
            if line == "OK" { return reply }
            if line.hasPrefix("ACK ") { throw CommandFailed(description: "mpd: \(line) for \(command)") }
            reply += line + "\n"
        }
    }
}
