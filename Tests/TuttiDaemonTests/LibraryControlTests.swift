import Foundation
import Glibc
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// The library through JSON-RPC and the `tutti` client, against a real
/// leader with a scanned music folder (tagged MP3s made by lame).
@Suite(.serialized) struct LibraryControlTests {
    struct Song { var file: String; var title: String; var artist: String; var album: String }
    let songs = [
        Song(file: "a1.mp3", title: "Morning Light", artist: "Beyoncé", album: "Dawn"),
        Song(file: "a2.mp3", title: "Noon Heat", artist: "Beyoncé", album: "Dawn"),
        Song(file: "b1.mp3", title: "Night Drive", artist: "Kraftwerk", album: "Autobahn"),
    ]

    func musicLeader(_ dir: String) throws -> Leader {
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.music(seconds: 3)))
        for (i, s) in songs.enumerated() {
            try runTool(["lame", "--quiet", "-b", "128", "--tt", s.title, "--ta", s.artist, "--tl", s.album, "--tn", "\(i + 1)",
                         dir + "/tone.wav", dir + "/music/" + s.file])
        }
        let leader = try startLeader(files: []) { c in
            c.musicDirectory = dir + "/music"
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
        }
        #expect(waitUntil(timeout: 10) { ((try? leader.library?.trackCount()) ?? 0) == 3 })
        return leader
    }

    @Test func libraryMethodsOverJSONRPC() throws {
        let dir = makeTemporaryDirectory()
        let leader = try musicLeader(dir)
        defer { leader.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        func obj(_ method: String, _ params: [String: JSONValue] = [:]) throws -> [String: JSONValue] { try #require(try c.call(method, params).object) }

        #expect(try obj("library.stats")["tracks"]?.integer == 3)
        let found = try obj("library.search", ["query": "beyonce", "record": true])["tracks"]?.objectArray ?? []
        #expect(Set(found.compactMap { $0["title"]?.string }) == ["Morning Light", "Noon Heat"])
        let prefix = try obj("library.search", ["query": "nig"])["tracks"]?.objectArray ?? []
        #expect(prefix.first?["title"]?.string == "Night Drive")
        let filtered = try obj("library.search", ["query": "album:dawn noon"])["tracks"]?.objectArray ?? []
        #expect(filtered.map { $0["title"]?.string } == ["Noon Heat"])
        #expect(try obj("searches.recent")["searches"]?.strings == ["beyonce"])
        _ = try obj("searches.clear")
        #expect((try obj("searches.recent")["searches"]?.strings)?.isEmpty == true)

        // Queue from the library: an album, then a search result, then track ids.
        _ = try obj("queue.add", ["album": "Dawn"])
        _ = try obj("queue.add", ["search": "kraftwerk"])
        let kraftwerkID = try #require(prefix.first?["id"]?.integer)
        _ = try obj("queue.add", ["trackIds": [JSONValue(kraftwerkID)]])
        #expect((try obj("queue.list")["entries"]?.objectArray)?.count == 4)
        _ = try obj("queue.play", ["index": 0])
        // Until the first track has been heard for 1.5 s (the history below needs over a second of it).
        waitUntil(timeout: 10) {
            let s = try? obj("player.status")
            return s?["title"]?.string == "Morning Light" && (s?["position"]?.number ?? 0) >= 1.5
        }
        let status = try obj("player.status")
        #expect(status["title"]?.string == "Morning Light" && status["artist"]?.string == "Beyoncé" && status["album"]?.string == "Dawn")

        // Like what is playing, list, unlike.
        #expect(try obj("favourites.like")["title"]?.string == "Morning Light")
        #expect((try obj("favourites.list")["favourites"]?.objectArray)?.map { $0["title"]?.string } == ["Morning Light"])
        _ = try obj("favourites.unlike", ["id": JSONValue(try #require(status["trackId"]?.integer))])
        #expect((try obj("favourites.list")["favourites"]?.objectArray)?.isEmpty == true)

        // Heard for over a second, then skipped: it is in the history with how long it played.
        _ = try obj("player.next")
        #expect(waitUntil(timeout: 3) { ((try? obj("history.list")["plays"]?.objectArray) ?? []).count == 1 })
        let play = try #require((try obj("history.list")["plays"]?.objectArray)?.first)
        #expect(play["title"]?.string == "Morning Light")
        #expect((play["playedMs"]?.integer ?? 0) >= 1_000)

        // Playlists: save the queue, edit, export, import, load, delete.
        let saved = try obj("playlists.saveQueue", ["name": "Evening"])
        let pid = try #require(saved["id"]?.integer)
        #expect(saved["entries"]?.integer == 4)
        _ = try obj("playlists.move", ["id": JSONValue(pid), "from": 2, "to": 0])
        _ = try obj("playlists.remove", ["id": JSONValue(pid), "index": 1])
        _ = try obj("playlists.rename", ["id": JSONValue(pid), "name": "Late"])
        let entries = try obj("playlists.entries", ["id": JSONValue(pid)])["entries"]?.objectArray ?? []
        #expect(entries.map { $0["title"]?.string } == ["Night Drive", "Noon Heat", "Night Drive"])
        // A playlist edit that cannot be done is said in the request's language (the message catalogue's playlist.*, library.*).
        let korean = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        korean.language = .korean
        func refusal(_ client: ControlClient, _ method: String, _ params: [String: JSONValue]) -> String? {
            do { _ = try client.call(method, params); return nil } catch let e as ControlClient.RemoteError { return e.message } catch { return "\(error)" }
        }
        #expect(refusal(korean, "playlists.remove", ["id": JSONValue(pid), "index": 9]) == "\(pid)번 재생 목록에 9번 항목이 없습니다 (항목 3개)")
        #expect(refusal(c, "playlists.remove", ["id": JSONValue(pid), "index": 9]) == "no entry 9 in playlist \(pid) (it has 3)")
        #expect(refusal(korean, "playlists.entries", ["id": 99_999]) == "99999번 재생 목록을 찾을 수 없습니다")
        #expect(refusal(korean, "favourites.like", ["id": 99_999]) == "ID가 99999인 곡이 없습니다")
        // In the playlist folder (beside the library); anywhere else is refused.
        let m3u = dir + "/db/playlists/late.m3u"
        _ = try obj("playlists.export", ["id": JSONValue(pid), "path": JSONValue(m3u)])
        let imported = try obj("playlists.import", ["path": JSONValue(m3u), "name": "Again"])
        #expect(imported["added"]?.integer == 3 && (imported["unresolved"]?.array)?.isEmpty == true)
        _ = try obj("queue.clear")
        _ = try obj("queue.add", ["playlist": JSONValue(pid)])
        #expect((try obj("queue.list")["entries"]?.objectArray)?.count == 3)
        _ = try obj("playlists.delete", ["id": JSONValue(pid)])
        #expect((try obj("playlists.list")["playlists"]?.objectArray)?.map { $0["name"]?.string } == ["Again"])

        // A file deleted from the music folder leaves the library and the queue on the next scan.
        try FileManager.default.removeItem(atPath: dir + "/music/b1.mp3")
        let scan = try obj("library.scan")
        #expect(scan["removed"]?.integer == 1)
        #expect(waitUntil(timeout: 3) { leader.queue.entries.allSatisfy { !$0.uri.hasSuffix("b1.mp3") } })

        // Errors name what is wrong.
        for (method, params) in [("library.search", [:]), ("playlists.delete", ["id": "x"]), ("favourites.like", ["id": 99_999]),
                                 ("playlists.entries", ["id": -1]), ("queue.add", ["trackIds": [123_456]])] as [(String, [String: JSONValue])] {
            do { _ = try c.call(method, params); Issue.record("\(method) accepted \(params)") } catch let e as ControlClient.RemoteError {
                #expect(!e.message.isEmpty && (e.code == -32602 || e.code == -32000), "\(method): \(e.code) \(e.message)")
            }
        }
    }

    /// Genre browsing (the web app's Genres): library.genres lists each tagged
    /// genre with its album and track counts, library.albums {genre} its albums.
    @Test func genresOverJSONRPC() throws {
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.music(seconds: 1)))
        let tagged = [("g1.mp3", "Blue Train", "Coltrane", "Blue Train", "Jazz"), ("g2.mp3", "Moment's Notice", "Coltrane", "Blue Train", "Jazz"),
                      ("g3.mp3", "So What", "Miles Davis", "Kind of Blue", "jazz"), ("g4.mp3", "Roxanne", "The Police", "Outlandos", "Rock"),
                      ("g5.mp3", "Untagged", "Nobody", "Nothing", "")]
        for (i, s) in tagged.enumerated() {
            var args = ["lame", "--quiet", "-b", "32", "--tt", s.1, "--ta", s.2, "--tl", s.3, "--tn", "\(i + 1)"]
            if !s.4.isEmpty { args += ["--tg", s.4] }
            try runTool(args + [dir + "/tone.wav", dir + "/music/" + s.0])
        }
        let leader = try startLeader(files: []) { c in
            c.musicDirectory = dir + "/music"
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        #expect(waitUntil(timeout: 10) { ((try? leader.library?.trackCount()) ?? 0) == 5 })
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        func obj(_ method: String, _ params: [String: JSONValue] = [:]) throws -> [String: JSONValue] { try #require(try c.call(method, params).object) }

        // "Jazz" and "jazz" are one genre; by name; the untagged track is in none.
        let genres = try obj("library.genres")["genres"]?.objectArray ?? []
        #expect(genres.map { $0["name"]?.string ?? "" } == ["Jazz", "Rock"], "\(genres)")
        #expect(genres.first?["albums"]?.integer == 2 && genres.first?["tracks"]?.integer == 3, "\(genres)")
        let albums = try obj("library.albums", ["genre": "jazz"])["albums"]?.objectArray ?? []
        #expect(albums.map { $0["name"]?.string } == ["Blue Train", "Kind of Blue"] && albums.first?["tracks"]?.integer == 2, "\(albums)")
        #expect((try obj("library.albums", ["genre": "Rock", "artist": "The Police"])["albums"]?.objectArray)?.count == 1)
        #expect((try obj("library.albums", ["genre": "Rock", "artist": "Coltrane"])["albums"]?.objectArray)?.isEmpty == true)
        #expect((try obj("library.albums", ["genre": "Polka"])["albums"]?.objectArray)?.isEmpty == true)
        // A second look is the cached copy, the same answer.
        #expect(try obj("library.genres")["genres"]?.objectArray?.count == 2)
        do { _ = try c.call("library.albums", ["genre": 5]); Issue.record("a number was taken as a genre") } catch let e as ControlClient.RemoteError {
            #expect(e.code == -32602, "\(e.message)")
        }
    }

    /// The methods no other test calls directly, each with the result it must give.
    @Test func remainingMethodsOverJSONRPC() throws {
        let dir = makeTemporaryDirectory()
        let leader = try musicLeader(dir)
        defer { leader.stop() }
        let den = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        defer { den.stop() }
        #expect(waitUntil(timeout: 5) { leader.followerNames == ["den"] })
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        func obj(_ method: String, _ params: [String: JSONValue] = [:]) throws -> [String: JSONValue] { try #require(try c.call(method, params).object) }

        // Library: one track by path and by id; a search recorded without searching.
        let night = try obj("library.track", ["path": JSONValue(dir + "/music/" + songs[2].file)])
        #expect(night["title"]?.string == "Night Drive")
        #expect(try obj("library.track", ["id": JSONValue(try #require(night["id"]?.integer))])["artist"]?.string == "Kraftwerk")
        #expect(try obj("searches.record", ["query": "neon"])["searches"]?.strings == ["neon"])
        // Playlists: create, add tracks by id.
        let pid = try #require(try obj("playlists.create", ["name": "Drive"])["id"]?.integer)
        _ = try obj("playlists.add", ["id": JSONValue(pid), "trackIds": [JSONValue(try #require(night["id"]?.integer))]])
        #expect((try obj("playlists.entries", ["id": JSONValue(pid)])["entries"]?.objectArray)?.map { $0["title"]?.string } == ["Night Drive"])

        // Queue and transport: move, remove, toggle, stop, shuffle, single, consume.
        _ = try obj("queue.add", ["album": "Dawn"])
        _ = try obj("queue.add", ["trackIds": [JSONValue(try #require(night["id"]?.integer))]])
        let moved = try obj("queue.move", ["from": 2, "to": 0])
        #expect(moved["trackCount"]?.integer == 3)
        #expect(leader.queue.entries.first?.uri.hasSuffix(songs[2].file) == true)
        _ = try obj("queue.remove", ["index": 2])
        #expect(leader.queue.count == 2)
        _ = try obj("queue.play", ["index": 0])
        #expect(try obj("player.toggle")["state"]?.string == "paused")
        #expect(try obj("player.toggle")["state"]?.string == "playing")
        #expect(try obj("player.shuffle", ["on": true])["shuffle"]?.bool == true)
        #expect(try obj("player.single", ["mode": "on"])["single"]?.string == "on")
        #expect(try obj("player.single")["single"]?.string == "off", "no mode: toggles")
        #expect(try obj("player.consume", ["on": true])["consume"]?.bool == true)
        #expect(try obj("player.stop")["state"]?.string == "stopped")
        #expect(leader.queue.count == 2, "a stopped track is not consumed")

        // Groups: a room taken out into a group of its own; party status.
        let own = try obj("groups.separate", ["room": "den"])
        #expect(own["name"]?.string == "den" && own["rooms"]?.strings == ["den"])
        #expect(try obj("party.status")["party"]?.bool == false)

        // Cache: removing what is not there says so.
        #expect(try obj("cache.remove", ["url": "http://127.0.0.1:9/none.mp3"])["removed"]?.bool == false)

        // Bad values for the new methods are refused and name the parameter.
        for (method, params) in [("player.single", ["mode": "twice"]), ("player.consume", ["on": "yes"]),
                                 ("groups.separate", ["room": "attic"]), ("queue.move", ["from": 0, "to": 9])] as [(String, [String: JSONValue])] {
            do { _ = try c.call(method, params); Issue.record("\(method) accepted \(params)") } catch let e as ControlClient.RemoteError {
                #expect(e.code == -32602 || e.code == -32000, "\(method): \(e.code) \(e.message)")
            }
        }
    }

    /// `tutti watch` prints changes as they happen; `tutti cache` lists and sizes the cache.
    @Test func tuttiWatchAndCache() throws {
        let dir = makeTemporaryDirectory()
        let leader = try musicLeader(dir)
        defer { leader.stop() }
        let port = try #require(leader.controlEndpoint).port
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        _ = try c.call("queue.add", ["album": "Dawn"])
        let binary = URL(fileURLWithPath: DaemonBinaryTests.binary).deletingLastPathComponent().appendingPathComponent("tutti").path
        let watch = Process()
        watch.executableURL = URL(fileURLWithPath: binary)
        watch.arguments = ["--port", String(port), "watch"]
        let out = Pipe()
        watch.standardOutput = out
        try watch.run()
        // SIGKILL: the client may have inherited a blocked SIGTERM from the test thread that started it.
        defer { if watch.isRunning { kill(watch.processIdentifier, SIGKILL) } }
        usleep(500_000) // it subscribes by connecting
        _ = try c.call("queue.play", ["index": 1])
        _ = try c.call("player.pause")
        _ = try c.call("groups.create", ["name": "Porch"])
        usleep(800_000)
        kill(watch.processIdentifier, SIGKILL)
        watch.waitUntilExit()
        let seen = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(seen.contains("paused: ") && seen.contains("Noon Heat"), "\(seen)")
        #expect(seen.contains("groups:") && seen.contains("Porch (g2): no rooms"), "\(seen)")

        let size = try runTutti(port: port, ["cache", "size"])
        #expect(size.status == 0 && size.out.hasPrefix("0 tracks, 0 MiB of 2048 MiB"), "\(size.out)")
        let list = try runTutti(port: port, ["--json", "cache", "list"])
        #expect((try JSONSerialization.jsonObject(with: Data(list.out.utf8)) as? [String: Any])?["entries"] as? [Any] != nil, "\(list.out)")
        #expect(try runTutti(port: port, ["cache", "fetch"]).status == 64)
    }

    @Test func tuttiSubcommands() throws {
        let dir = makeTemporaryDirectory()
        let leader = try musicLeader(dir)
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        let port = try #require(leader.controlEndpoint).port
        func tutti(_ args: String...) throws -> (Int32, String) { try runTutti(port: port, args) }
        func run(_ args: [String]) throws -> (Int32, String) { try runTutti(port: port, args) }
        func ok(_ args: String..., contains: String? = nil) throws {
            let (status, out) = try run(args)
            #expect(status == 0, "tutti \(args.joined(separator: " ")): \(out)")
            if let contains { #expect(out.contains(contains), "tutti \(args.joined(separator: " ")): \(out)") }
        }
        try ok("search", "kraft", contains: "Night Drive")
        try ok("searches", contains: "kraft")
        try ok("queue", "add-album", "Dawn", contains: "added 2")
        try ok("queue", "add", dir + "/music/b1.mp3", contains: "added 1")
        try ok("queue", contains: "a1.mp3")
        try ok("queue", "move", "3", "1")
        try ok("queue", "play", "1", contains: "playing")
        waitUntil(timeout: 5) { (try? run(["status"]))?.1.contains("Night Drive") == true }
        try ok("status", contains: "Night Drive")
        try ok("like", contains: "Night Drive")
        try ok("favorites", contains: "Night Drive")
        try ok("unlike")
        try ok("shuffle", "on", contains: "shuffle on")
        try ok("repeat", "one", contains: "repeat one")
        try ok("repeat", contains: "repeat off")
        try ok("seek", "+1")
        try ok("pause", contains: "paused")
        try ok("toggle", contains: "playing")
        try ok("next")
        try ok("prev")
        try ok("stop", contains: "stopped")
        try ok("playlist", "save", "Mix")
        try ok("playlist", contains: "Mix")
        try ok("queue", "del", "1")
        try ok("queue", "clear", contains: "cleared")
        try ok("rooms", contains: "den")
        try ok("vol", "den", "30", contains: "volume 30")
        try ok("mute", "den", contains: "muted")
        try ok("unmute", "den")
        try ok("latency", "den", "12", contains: "latency +12.0 ms")
        try ok("history")
        try ok("library", "scan", contains: "unchanged")
        try ok("library", "scan", contains: "scanning: 100% (3/3)")
        try ok("queue", "--help", contains: "queue del N")
        let (badStatus, _) = try tutti("queue", "del", "zero")
        #expect(badStatus == 64)
        let (refused, message) = try tutti("queue", "play", "99")
        #expect(refused == 1 && message.contains("no queue entry"), "\(message)")
    }
}
