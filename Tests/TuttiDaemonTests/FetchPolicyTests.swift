import Foundation
import Glibc
import Testing
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// What a control client can make the leader fetch, read or write (issue 26,
/// finding 4): no page of this machine through queue.add, cache.add, MPD
/// add or playlists.import; playlists written only into the playlist folder;
/// a file named on the command line allowed alone, not its folder.
@Suite(.serialized) struct FetchPolicyTests {
    private func remoteError(_ body: () throws -> JSONValue?) -> String? {
        do { _ = try body(); return nil } catch let e as ControlClient.RemoteError { return e.message } catch { return "\(error)" }
    }

    /// With local streams off (the default), a client cannot make the
    /// leader fetch a page of this machine: literal addresses and localhost
    /// are refused at once; other spellings (0x7f000001, 127.1) are refused
    /// at the connection, by the address libcurl connects to. The server
    /// never sees a request.
    @Test func aLeaderRefusesToFetchFromThisMachineByDefault() throws {
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/www", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        writeFile(dir + "/www/secret", Array("#EXTM3U\nadmin-password=hunter2\n".utf8))
        let server = try LocalFileServer(folder: dir + "/www", log: dir + "/http.log")
        let leader = try startLeader(files: []) { c in
            c.musicDirectory = dir + "/music"
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        let port = server.port
        for url in ["http://127.0.0.1:\(port)/secret", "http://localhost:\(port)/secret", "http://[::1]:\(port)/secret",
                    "http://[::ffff:127.0.0.1]:\(port)/secret", "http://169.254.169.254/latest/meta-data/"] {
            let queued = remoteError { try c.call("queue.add", ["uris": [JSONValue(url)]]) }
            #expect(queued?.contains("refused to fetch") == true, "queue.add \(url): \(queued ?? "accepted")")
            let cached = remoteError { try c.call("cache.add", ["url": JSONValue(url)]) }
            #expect(cached?.contains("refused to fetch") == true, "cache.add \(url): \(cached ?? "accepted")")
        }
        #expect(remoteError { try c.call("queue.add", ["uris": ["http://127.0.0.1:\(port)/secret"]]) }?.contains("local-streams = yes") == true)
        #expect(leader.queue.count == 0)
        // MPD add (mpc) takes no URL at all ("Unsupported URI scheme"): nothing is fetched that way either.
        let mpc = try runProgram("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(leader.mpdEndpoint!.port), "add", "http://127.0.0.1:\(port)/secret"], mergeErrors: true)
        #expect(mpc.status != 0, "\(mpc.out)")
        // playlists.import reads files, never URLs.
        let imported = remoteError { try c.call("playlists.import", ["path": "http://127.0.0.1:\(port)/secret", "name": "x"]) }
        #expect(imported?.contains("does not fetch URLs") == true, "\(imported ?? "accepted")")

        // Spellings the text check does not know reach libcurl, which resolves them to 127.0.0.1 and is refused there.
        for url in ["http://0x7f000001:\(port)/secret", "http://127.1:\(port)/secret"] {
            let cached = remoteError { try c.call("cache.add", ["url": JSONValue(url)]) }
            #expect(cached?.contains("refused to fetch from 127.0.0.1") == true, "cache.add \(url): \(cached ?? "accepted")")
        }
        _ = try c.call("queue.add", ["uris": ["http://0x7f000001:\(port)/secret"]])
        _ = try c.call("queue.play", ["index": 0])
        let status = { (try? c.call("player.status"))?.object ?? [:] }
        #expect(waitUntil(timeout: 10) { status()["state"]?.string == "error" }, "\(status())")
        #expect((status()["error"]?.string ?? "").contains("refused to fetch from 127.0.0.1"), "\(status())")
        #expect(server.requests.isEmpty, "the server was asked for \(server.requests)")
    }

    /// With local streams on, the same server plays; a redirect from it to
    /// an address that is never allowed (cloud metadata) is still refused.
    @Test func localStreamsOnAllowsThisMachineButNotARedirectToMetadata() throws {
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/www", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        let wav = wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 1, amplitude: 0.4)))
        writeFile(dir + "/tone.wav", wav)
        try runTool(["lame", "--quiet", "-b", "128", dir + "/tone.wav", dir + "/www/tone.mp3"])
        let server = try LocalFileServer(folder: dir + "/www", log: dir + "/http.log")
        let leader = try startLeader(files: []) { c in
            c.musicDirectory = dir + "/music"
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true)
            c.network.connectTimeout = 3
        }
        defer { leader.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        let cached = try #require(try c.call("cache.add", ["url": "http://127.0.0.1:\(server.port)/tone.mp3"]).object)
        #expect(cached["size"]?.integer == (try FileManager.default.attributesOfItem(atPath: dir + "/www/tone.mp3")[.size] as? Int))
        for target in ["http://169.254.169.254/latest/meta-data/", "http://0.0.0.0:\(server.port)/tone.mp3"] {
            let redirected = remoteError { try c.call("cache.add", ["url": "http://127.0.0.1:\(server.port)/to?\(target)"]) }
            #expect(redirected?.contains("refused to fetch from") == true, "\(target): \(redirected ?? "accepted")")
        }
        #expect(server.requests.filter { $0.hasPrefix("GET /tone.mp3") }.count == 1, "0.0.0.0 never reached the server: \(server.requests)")
    }

    /// A file on the leader that is not a playlist is refused whole: none of
    /// its lines comes back (a page kept in the cache, notes in the music folder).
    @Test func importingAFileThatIsNotAPlaylistEchoesNothing() throws {
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/db/cache", withIntermediateDirectories: true)
        writeFile(dir + "/music/notes.m3u", Array("#EXTM3U\nwifi password: hunter2\n/music/a.mp3\n".utf8))
        writeFile(dir + "/db/cache/page.m3u", Array("<html><body>router admin: hunter2</body></html>\n".utf8))
        let leader = try startLeader(files: []) { c in
            c.musicDirectory = dir + "/music"
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        for path in [dir + "/music/notes.m3u", dir + "/db/cache/page.m3u"] {
            let message = remoteError { try c.call("playlists.import", ["path": JSONValue(path), "name": "x"]) }
            #expect(message?.contains("is not a playlist") == true, "\(message ?? "accepted")")
            #expect(message?.contains("hunter2") == false)
        }
        #expect(((try c.call("playlists.list").object)?["playlists"]?.array)?.isEmpty == true)
    }

    /// playlists.export writes only `NAME.m3u`/`.m3u8` into the playlist
    /// folder: never over a track, through a link, with `..`, or over a
    /// file that is not a playlist. The files it refused to touch keep their bytes.
    @Test func exportWritesOnlyPlaylistsIntoThePlaylistFolder() throws {
        let dir = makeTemporaryDirectory()
        let music = dir + "/music", playlists = dir + "/db/playlists", outside = dir + "/private"
        for folder in [music, playlists, outside] { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        let track = wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 1, amplitude: 0.2)))
        writeFile(music + "/in.wav", track)
        writeFile(outside + "/target.m3u", Array("#EXTM3U\nmine\n".utf8))
        writeFile(outside + "/authorized_keys", Array("ssh-ed25519 AAAA me\n".utf8))
        writeFile(playlists + "/notes.m3u", Array("not a playlist\n".utf8))
        try FileManager.default.createSymbolicLink(atPath: playlists + "/link.m3u", withDestinationPath: outside + "/target.m3u")
        try FileManager.default.createSymbolicLink(atPath: playlists + "/keys.m3u", withDestinationPath: outside + "/authorized_keys")
        let leader = try startLeader(files: []) { c in
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        #expect(waitUntil(timeout: 10) { ((try? leader.library?.trackCount()) ?? 0) >= 1 })
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        let pid = try #require((try c.call("playlists.create", ["name": "P"]).object)?["id"]?.integer)
        func bytes(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }
        let before = [music + "/in.wav", outside + "/target.m3u", outside + "/authorized_keys", playlists + "/notes.m3u"].map { ($0, bytes($0)) }
        let refusals: [(String, String)] = [
            (music + "/in.wav", "only into the playlist folder"),       // over a track
            ("in.wav", "not a playlist file name"),                     // a track's name in the playlist folder
            ("link.m3u", "symbolic link"),                              // a link pointing outside
            (playlists + "/keys.m3u", "symbolic link"),
            ("../private/target.m3u", "only into the playlist folder"), // climbing out
            (playlists + "/../../private/out.m3u", "only into the playlist folder"),
            ("notes.m3u", "not a playlist"),                            // a file that is not one
            (".hidden.m3u", "not a playlist file name"),
        ]
        for (path, why) in refusals {
            let message = remoteError { try c.call("playlists.export", ["id": JSONValue(pid), "path": JSONValue(path)]) }
            #expect(message?.contains(why) == true, "export to \(path): \(message ?? "accepted")")
        }
        for (path, was) in before { #expect(bytes(path) == was, "\(path) changed") }
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: playlists + "/link.m3u") == outside + "/target.m3u")
        #expect(!FileManager.default.fileExists(atPath: outside + "/out.m3u"))
        // A plain name, and a path in the playlist folder, are written; the second export replaces the first.
        let written = try #require(try c.call("playlists.export", ["id": JSONValue(pid), "path": "Road Trip.m3u8"]).object)
        #expect((written["path"]?.string)?.hasSuffix("/playlists/Road Trip.m3u8") == true)
        _ = try c.call("playlists.export", ["id": JSONValue(pid), "path": JSONValue(playlists + "/Road Trip.m3u8")])
        #expect(bytes(playlists + "/Road Trip.m3u8").map { $0.starts(with: Array("#EXTM3U".utf8)) } == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: playlists).sorted() == ["Road Trip.m3u8", "keys.m3u", "link.m3u", "notes.m3u"])
    }

    /// `tuttid leader --play ~/song.wav` allows that file, not its folder:
    /// a sibling (a key beside it) cannot be queued.
    @Test func aFileNamedOnTheCommandLineIsAllowedAloneNotItsFolder() throws {
        let dir = makeTemporaryDirectory()
        let home = dir + "/home"
        try FileManager.default.createDirectory(atPath: home + "/.ssh", withIntermediateDirectories: true)
        let tone = wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 2, amplitude: 0.2)))
        writeFile(home + "/song.wav", tone)
        writeFile(home + "/other.wav", tone)
        writeFile(home + "/.ssh/id_ed25519", Array("-----BEGIN OPENSSH PRIVATE KEY-----\n".utf8))
        let leader = try startLeader(files: [home + "/song.wav"], loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        for path in [home + "/other.wav", home + "/.ssh/id_ed25519", "file://" + home + "/other.wav"] {
            let message = remoteError { try c.call("queue.add", ["uris": [JSONValue(path)]]) }
            #expect(message?.contains("outside the music folder") == true, "queue.add \(path): \(message ?? "accepted")")
        }
        #expect(leader.queue.count == 1)
        _ = try c.call("queue.add", ["uris": [JSONValue(home + "/song.wav")]])
        #expect(leader.queue.count == 2)
        let status = { (try? c.call("player.status"))?.object ?? [:] }
        #expect(waitUntil(timeout: 10) { status()["state"]?.string == "playing" }, "\(status())")
    }
}
