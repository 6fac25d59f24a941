import Foundation
import Glibc
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiMPD
import TuttiNet
import TuttiTestSupport

/// The MPD server against real clients: Debian's `mpc` and python-mpd2,
/// with a real leader, library and followers on loopback.
@Suite(.serialized) struct MPDClientTests {
    /// A music folder: three tagged MP3s (one with an embedded PNG cover) and a WAV.
    struct Fixture {
        let dir: String
        let leader: Leader
        let followers: [Follower]
        var port: UInt16 { leader.mpdEndpoint!.port }

        func stop() {
            for f in followers { f.stop() }
            leader.stop()
        }
    }

    static let png: [UInt8] = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] + (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 >> 3) }

    func makeFixture(rooms: [String] = [], _ name: String = #function) throws -> Fixture {
        let dir = makeTemporaryDirectory(name)
        let music = dir + "/music"
        for sub in ["Alpha Band/Album A", "Misc"] {
            try FileManager.default.createDirectory(atPath: music + "/" + sub, withIntermediateDirectories: true)
        }
        let source = dir + "/source.wav"
        writeFile(source, wavImage(counterFrames(count: 48_000 * 6)))
        writeFile(dir + "/cover.png", Self.png)
        try run("/usr/bin/lame", ["--quiet", "--tt", "First Song", "--ta", "Alpha Band", "--tl", "Album A", "--tn", "1", "--ty", "2001",
                                  "--tg", "Rock", "--ti", dir + "/cover.png", source, music + "/Alpha Band/Album A/01 First.mp3"])
        try run("/usr/bin/lame", ["--quiet", "--tt", "Second Song", "--ta", "Alpha Band", "--tl", "Album A", "--tn", "2", "--ty", "2001",
                                  "--tg", "Rock", source, music + "/Alpha Band/Album A/02 Second.mp3"])
        try run("/usr/bin/lame", ["--quiet", "--tt", "Other Tune", "--ta", "Beta Crew", "--tl", "Bee Sides", "--tn", "1", "--ty", "2010",
                                  "--tg", "Jazz", source, music + "/Misc/other.mp3"])
        writeFile(music + "/Misc/tone.wav", wavImage(counterFrames(count: 48_000 * 4)))
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        #expect(waitUntil(timeout: 20) { (try? leader.library?.trackCount()) == 4 }, "library scan")
        var followers: [Follower] = []
        for room in rooms {
            followers.append(try startFollower(leader: leader.endpoint, name: room,
                                               output: .file(path: dir + "/\(room).raw", ppm: 0, delayMilliseconds: 0)))
        }
        #expect(waitUntil(timeout: 10) { leader.followerNames == rooms.sorted() }, "rooms joined")
        return Fixture(dir: dir, leader: leader, followers: followers)
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String], input: String? = nil) throws -> (out: String, err: String, status: Int32) {
        let r = try runProgram(tool, arguments, input: input)
        return (r.out, r.err, r.status)
    }

    /// Runs `mpc -h 127.0.0.1 -p PORT ARGS…`; stdout.
    @discardableResult
    func mpc(_ f: Fixture, _ arguments: String..., expectSuccess: Bool = true) throws -> String {
        let r = try run("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(f.port)] + arguments)
        if expectSuccess { #expect(r.status == 0, "mpc \(arguments): \(r.err)") }
        return r.out + (expectSuccess ? "" : r.err)
    }

    func lines(_ s: String) -> [String] { s.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    /// mpc's own status, condensed: "playing #2/4 random=off repeat=off single=off"
    /// (mpc prints no state line when stopped; its `%state%` says "paused" then).
    func state(_ f: Fixture) throws -> String {
        let out = lines(try mpc(f, "status"))
        let options = out.last ?? ""
        func option(_ name: String) -> String {
            guard let r = options.range(of: name + ": ") else { return "?" }
            return String(options[r.upperBound...].prefix { $0 != " " })
        }
        var head = "stopped"
        if out.count == 3 {
            let words = out[1].split(separator: " ", omittingEmptySubsequences: true)
            head = words[0].dropFirst().dropLast() + " " + words[1]
        }
        return "\(head) random=\(option("random")) repeat=\(option("repeat")) single=\(option("single"))"
    }

    // MARK: mpc

    @Test func mpcQueueAndTransport() throws {
        let f = try makeFixture()
        defer { f.stop() }
        #expect(try state(f) == "stopped random=off repeat=off single=off")
        try mpc(f, "add", "Alpha Band")
        try mpc(f, "add", "Misc/other.mp3")
        #expect(lines(try mpc(f, "-f", "%file%", "playlist")) == ["Alpha Band/Album A/01 First.mp3", "Alpha Band/Album A/02 Second.mp3", "Misc/other.mp3"])
        #expect(lines(try mpc(f, "playlist")) == ["Alpha Band - First Song", "Alpha Band - Second Song", "Beta Crew - Other Tune"])
        try mpc(f, "play", "2")
        #expect(try state(f) == "playing #2/3 random=off repeat=off single=off")
        #expect(try mpc(f, "-f", "%artist% / %title% / %album%", "current") == "Alpha Band / Second Song / Album A\n")
        try mpc(f, "insert", "Misc/tone.wav") // right after the current song
        #expect(lines(try mpc(f, "-f", "%position% %file%", "playlist"))
                == ["1 Alpha Band/Album A/01 First.mp3", "2 Alpha Band/Album A/02 Second.mp3", "3 Misc/tone.wav", "4 Misc/other.mp3"])
        try mpc(f, "next")
        #expect(try mpc(f, "-f", "%file%", "current") == "Misc/tone.wav\n")
        try mpc(f, "prev")
        #expect(try mpc(f, "-f", "%file%", "current") == "Alpha Band/Album A/02 Second.mp3\n")
        try mpc(f, "seek", "3")
        let elapsed = try mpc(f, "status", "%currenttime%").trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(elapsed == "0:03" || elapsed == "0:04", "after seek 3: \(elapsed)") // a second may pass on a loaded machine
        try mpc(f, "pause")
        #expect(try state(f) == "paused #2/4 random=off repeat=off single=off")
        try mpc(f, "toggle")
        #expect(try state(f) == "playing #2/4 random=off repeat=off single=off")
        try mpc(f, "random", "on")
        try mpc(f, "repeat", "on")
        #expect(try state(f) == "playing #2/4 random=on repeat=on single=off")
        #expect(f.leader.nowPlaying.shuffle && f.leader.nowPlaying.repeatMode == .all)
        try mpc(f, "single", "on")
        #expect(f.leader.nowPlaying.repeatMode == .one, "repeat with single repeats the song")
        try mpc(f, "repeat", "off") // single without repeat: stop after the current song
        #expect(try state(f) == "playing #2/4 random=on repeat=off single=on")
        #expect(f.leader.nowPlaying.repeatMode == .off && f.leader.nowPlaying.single == .on)
        try mpc(f, "single", "once") // sent as "single oneshot"
        #expect(try state(f) == "playing #2/4 random=on repeat=off single=once")
        #expect(f.leader.nowPlaying.single == .oneshot)
        try mpc(f, "consume", "on")
        let consumeStatus = lines(try mpc(f, "status")).last ?? ""
        #expect(f.leader.nowPlaying.consume && consumeStatus.contains("consume: on"), "\(consumeStatus)")
        try mpc(f, "consume", "off")
        try mpc(f, "single", "off")
        try mpc(f, "random", "off")
        #expect(f.leader.nowPlaying.repeatMode == .off && !f.leader.nowPlaying.shuffle)
        try mpc(f, "del", "1")
        try mpc(f, "move", "1", "3")
        #expect(lines(try mpc(f, "-f", "%file%", "playlist")) == ["Misc/tone.wav", "Misc/other.mp3", "Alpha Band/Album A/02 Second.mp3"])
        #expect(f.leader.queue.entries.map { ($0.uri as NSString).lastPathComponent } == ["tone.wav", "other.mp3", "02 Second.mp3"])
        // shuffle reorders the queue itself (ncmpcpp's Z); priorities exist only as 0.
        try mpc(f, "shuffle")
        #expect(Set(lines(try mpc(f, "-f", "%file%", "playlist"))) == ["Misc/tone.wav", "Misc/other.mp3", "Alpha Band/Album A/02 Second.mp3"])
        #expect(f.leader.queue.count == 3)
        try mpc(f, "prio", "0", "1")
        let prio = try mpc(f, "prio", "5", "1", expectSuccess: false)
        #expect(prio.contains("song priorities are not supported"), "\(prio)")
        try mpc(f, "stop")
        #expect(try state(f) == "stopped random=off repeat=off single=off")
        #expect(try mpc(f, "current") == "")
        try mpc(f, "clear")
        #expect(try state(f) == "stopped random=off repeat=off single=off")
        #expect(f.leader.queue.isEmpty)
        let bad = try mpc(f, "add", "No/Such/File.mp3", expectSuccess: false)
        #expect(bad.contains("No such song or folder"), "\(bad)")
    }

    @Test func mpcLibraryAndStoredPlaylists() throws {
        let f = try makeFixture()
        defer { f.stop() }
        #expect(lines(try mpc(f, "ls")) == ["Alpha Band", "Misc"])
        #expect(lines(try mpc(f, "ls", "Alpha Band/Album A")) == ["Alpha Band/Album A/01 First.mp3", "Alpha Band/Album A/02 Second.mp3"])
        #expect(lines(try mpc(f, "listall")) == ["Alpha Band/Album A/01 First.mp3", "Alpha Band/Album A/02 Second.mp3", "Misc/other.mp3", "Misc/tone.wav"])
        #expect(lines(try mpc(f, "listall", "Misc")) == ["Misc/other.mp3", "Misc/tone.wav"])
        #expect(lines(try mpc(f, "search", "artist", "alpha")) == ["Alpha Band/Album A/01 First.mp3", "Alpha Band/Album A/02 Second.mp3"])
        #expect(lines(try mpc(f, "search", "any", "TUNE")) == ["Misc/other.mp3"])
        #expect(lines(try mpc(f, "find", "album", "Album A", "title", "Second Song")) == ["Alpha Band/Album A/02 Second.mp3"])
        #expect(try mpc(f, "find", "artist", "alpha") == "") // find is exact
        #expect(lines(try mpc(f, "list", "artist")) == ["Alpha Band", "Beta Crew"])
        #expect(lines(try mpc(f, "list", "album")) == ["Album A", "Bee Sides"])
        #expect(lines(try mpc(f, "list", "title", "artist", "Alpha Band")) == ["First Song", "Second Song"])
        #expect(lines(try mpc(f, "list", "date")) == ["2001", "2010"])

        try mpc(f, "add", "Misc")
        try mpc(f, "add", "Alpha Band/Album A/01 First.mp3")
        try mpc(f, "save", "evening")
        #expect(lines(try mpc(f, "lsplaylists")) == ["evening"])
        #expect(lines(try mpc(f, "-f", "%file%", "playlist", "evening")) == ["Misc/other.mp3", "Misc/tone.wav", "Alpha Band/Album A/01 First.mp3"])
        let again = try mpc(f, "save", "evening", expectSuccess: false)
        #expect(again.contains("Playlist already exists"), "\(again)")
        try mpc(f, "clear")
        try mpc(f, "load", "evening")
        #expect(lines(try mpc(f, "-f", "%file%", "playlist")) == ["Misc/other.mp3", "Misc/tone.wav", "Alpha Band/Album A/01 First.mp3"])
        #expect(try f.leader.library!.playlists().map(\.name) == ["evening"])
        try mpc(f, "rm", "evening")
        #expect(try mpc(f, "lsplaylists") == "")
        #expect(try f.leader.library!.playlists().isEmpty)
        let missing = try mpc(f, "load", "evening", expectSuccess: false)
        #expect(missing.contains("No such playlist"), "\(missing)")
    }

    /// `stats` is counted once per change of the tracks: an `update` that
    /// adds or removes songs shows in it, an unchanged one keeps the count
    /// and its time (MPD's `db_update`) as they were.
    @Test func statsFollowUpdatesThatChangeTracksOnly() throws {
        let f = try makeFixture()
        defer { f.stop() }
        func stat(_ key: String) throws -> String? {
            lines(try mpc(f, "stats")).first { $0.hasPrefix(key + ":") }.map { $0.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces) }
        }
        #expect(try stat("Songs") == "4")
        let music = f.dir + "/music"
        try FileManager.default.copyItem(atPath: music + "/Misc/other.mp3", toPath: music + "/Misc/other copy.mp3")
        try mpc(f, "-w", "update")
        #expect(try stat("Songs") == "5")
        let counted = try stat("DB Updated")
        sleep(1) // a count made now would carry another second
        try mpc(f, "-w", "update")
        #expect(try stat("Songs") == "5")
        #expect(try stat("DB Updated") == counted, "an unchanged update counts nothing again")
        try FileManager.default.removeItem(atPath: music + "/Misc/tone.wav")
        try mpc(f, "-w", "update")
        #expect(try stat("Songs") == "4")
        #expect(try stat("Artists") == "2")
    }

    @Test func mpcVolumeAndOutputsAreRooms() throws {
        let f = try makeFixture(rooms: ["kitchen", "den"])
        defer { f.stop() }
        #expect(lines(try mpc(f, "outputs")) == ["Output 1 (den) is enabled", "Output 2 (kitchen) is enabled"])
        try mpc(f, "volume", "40")
        #expect(f.leader.settings(of: "den").volume == 40 && f.leader.settings(of: "kitchen").volume == 40)
        #expect(try mpc(f, "volume") == "volume: 40%\n")
        try mpc(f, "volume", "+15")
        #expect(f.leader.settings(of: "kitchen").volume == 55)
        // An output is a room in the main group (the one MPD controls): disabling one takes that room out into a group of its own.
        try mpc(f, "disable", "2")
        #expect(f.leader.group(ofRoom: "kitchen").name == "kitchen" && f.leader.group(ofRoom: "den").id == "main")
        #expect(lines(try mpc(f, "outputs")) == ["Output 1 (den) is enabled", "Output 2 (kitchen) is disabled"])
        // The JSON-RPC surface sees the same rooms.
        let client = try ControlClient(endpoint: f.leader.controlEndpoint!)
        let rooms = (try client.call("rooms.list").object)?["rooms"]?.objectArray ?? []
        #expect(rooms.map { "\($0["name"]?.string ?? "?") \($0["volume"]?.integer ?? -1) \($0["group"]?.string ?? "?")" }
                == ["den 55 main", "kitchen 55 g2"])
        try mpc(f, "enable", "2")
        #expect(f.leader.group(ofRoom: "kitchen").id == "main")
        try mpc(f, "toggleoutput", "1")
        #expect(f.leader.group(ofRoom: "den").name == "den")
        try mpc(f, "toggleoutput", "1")
        #expect(f.leader.group(ofRoom: "den").id == "main", "a second toggle brings it back")
        let bad = try mpc(f, "enable", "9", expectSuccess: false)
        #expect(bad.contains("No such audio output") || bad.contains("Unknown output"), "\(bad)")
    }

    @Test func idleIsWokenByJSONRPCAndMpcChangesReachJSONRPC() throws {
        let f = try makeFixture()
        defer { f.stop() }
        try mpc(f, "add", "Misc")
        try mpc(f, "play")
        // mpc idle, woken by a JSON-RPC pause.
        let idle = Process()
        idle.executableURL = URL(fileURLWithPath: "/usr/bin/mpc")
        idle.arguments = ["-h", "127.0.0.1", "-p", String(f.port), "idle", "player"]
        let out = Pipe()
        idle.standardOutput = out
        try idle.run()
        usleep(500_000)
        #expect(idle.isRunning, "idle must wait for a change")
        let rpc = try ControlClient(endpoint: f.leader.controlEndpoint!)
        _ = try rpc.call("player.pause")
        #expect(waitUntil(timeout: 5) { !idle.isRunning })
        stopProcess(idle)
        #expect(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "player\n")

        // A change through mpc becomes a JSON-RPC notification.
        let watcher = try ControlClient(endpoint: f.leader.controlEndpoint!)
        _ = try watcher.call("player.status")
        try mpc(f, "volume", "50") // no rooms: kept for the rooms that join
        try mpc(f, "play")
        watcher.setReceiveTimeout(milliseconds: 3_000)
        var seen: [(String, JSONValue)] = []
        while let n = try? watcher.nextNotification() {
            seen.append(n)
            if n.0 == "player.changed", n.1["state"]?.string == "playing" { break }
        }
        #expect(seen.contains { $0.0 == "player.changed" && $0.1["state"]?.string == "playing" }, "\(seen.map(\.0))")
        try mpc(f, "random", "on")
        var options = false
        while let n = try? watcher.nextNotification() { if n.0 == "player.changed", n.1["shuffle"]?.bool == true { options = true; break } }
        #expect(options)
    }

    // MARK: python-mpd2

    @Test func pythonMPD2() throws {
        let f = try makeFixture(rooms: ["den"])
        defer { f.stop() }
        let script = f.dir + "/client.py"
        try """
        import json, socket, sys, threading, time
        import mpd
        port, rpc_port = int(sys.argv[1]), int(sys.argv[2])
        out = {}
        c = mpd.MPDClient(); c.timeout = 10; c.connect("127.0.0.1", port)
        out["version"] = c.mpd_version
        c.command_list_ok_begin()
        c.clear(); c.add("Alpha Band/Album A"); c.addid("Misc/other.mp3", 0); c.playlistinfo()
        out["list"] = c.command_list_end()
        out["queue"] = [(s["pos"], s["id"], s["file"]) for s in c.playlistinfo()]
        out["playlistid"] = c.playlistid(out["queue"][1][1])[0]["title"]
        c.play(1)
        st = c.status()
        out["status"] = {k: st.get(k) for k in ["state", "song", "songid", "nextsong", "nextsongid", "playlistlength", "volume",
                                                  "random", "repeat", "single", "consume", "duration", "audio"]}
        out["elapsed_is_number"] = float(st["elapsed"]) >= 0
        out["time"] = st["time"].split(":")[1]
        out["current"] = {k: v for k, v in c.currentsong().items() if k != "last-modified"}
        out["plchanges_same"] = c.plchanges(st["playlist"])
        out["plchanges_old"] = len(c.plchanges(0))
        art = c.albumart("Alpha Band/Album A/01 First.mp3")
        out["albumart"] = [len(art["binary"]), art["binary"][:8].hex()]
        c.binarylimit(4096)
        raw = c.readpicture("Alpha Band/Album A/01 First.mp3")
        out["readpicture"] = [raw.get("type"), len(raw["binary"])]
        out["readpicture_none"] = c.readpicture("Misc/other.mp3")
        try:
            c.albumart("Misc/other.mp3")
        except mpd.CommandError as e:
            out["albumart_none"] = str(e)
        s = c.stats(); out["stats"] = [s["artists"], s["albums"], s["songs"], s["db_playtime"]]
        out["tagtypes"] = c.tagtypes()
        out["commands"] = [x for x in ["status", "idle", "albumart", "readpicture", "plchanges", "outputs"] if x in c.commands()]
        out["notcommands"] = c.notcommands()
        out["urlhandlers"] = c.urlhandlers()
        out["decoders"] = [d["plugin"] for d in c.decoders()]
        out["outputs"] = c.outputs()
        c.disableoutput(0); out["disabled"] = c.outputs()[0]["outputenabled"]; c.enableoutput(0)
        c.setvol(30); out["getvol"] = c.status()["volume"]
        out["find"] = [s["file"] for s in c.find("(artist == 'Alpha Band')", "sort", "-track")]
        out["search_window"] = [s["title"] for s in c.search("any", "song", "window", "1:2")]
        out["count"] = c.count("artist", "Alpha Band")
        out["list_group"] = c.list("album", "group", "artist")
        out["lsinfo_song"] = c.lsinfo("Misc/other.mp3")[0]["title"]
        out["listallinfo"] = len(c.listallinfo())
        out["ping"] = c.ping()
        out["password"] = c.password("anything")
        try:
            c.command_list_ok_begin(); c.status(); c.play(99); c.ping(); c.command_list_end()
        except mpd.CommandError as e:
            out["list_error"] = str(e)
        try:
            c.seekid(9999, 1)
        except mpd.CommandError as e:
            out["seekid_error"] = str(e)
        # idle on a fresh connection, woken by JSON-RPC
        w = mpd.MPDClient(); w.timeout = 10; w.connect("127.0.0.1", port)
        def change():
            time.sleep(0.4)
            s = socket.create_connection(("127.0.0.1", rpc_port))
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"queue.clear"}\\n'); s.recv(65536); s.close()
        t = threading.Thread(target=change); t.start()
        out["idle"] = sorted(w.idle("playlist"))
        t.join()
        w.disconnect()
        c.close(); c.disconnect()
        print(json.dumps(out))
        """.write(toFile: script, atomically: true, encoding: .utf8)
        let r = try run("/usr/bin/env", ["python3", script, String(f.port), String(f.leader.controlEndpoint!.port)])
        #expect(r.status == 0, "python-mpd2 client failed (is python-mpd2 installed? scripts/setup.sh): \(r.err)")
        let out = try #require(try JSONSerialization.jsonObject(with: Data(r.out.utf8)) as? [String: Any], "\(r.out) \(r.err)")
        #expect(out["version"] as? String == MPDServer.protocolVersion)
        let queue = out["queue"] as? [[String]] ?? []
        #expect(queue.map { $0[0] + " " + $0[2] } == ["0 Misc/other.mp3", "1 Alpha Band/Album A/01 First.mp3", "2 Alpha Band/Album A/02 Second.mp3"])
        let ids = queue.map { $0[1] }
        let list = out["list"] as? [Any] ?? []
        #expect(list.count == 4 && list[2] as? String == ids[0], "\(list)")
        #expect(out["playlistid"] as? String == "First Song")
        #expect(out["status"] as? [String: String] == [
            "state": "play", "song": "1", "songid": ids[1], "nextsong": "2", "nextsongid": ids[2], "playlistlength": "3",
            "volume": "100", "random": "0", "repeat": "0", "single": "0", "consume": "0", "duration": "6.000", "audio": "48000:f:2",
        ])
        #expect(out["elapsed_is_number"] as? Bool == true)
        #expect(out["time"] as? String == "6")
        #expect(out["current"] as? [String: String] == [
            "file": "Alpha Band/Album A/01 First.mp3", "artist": "Alpha Band", "title": "First Song", "album": "Album A", "track": "1",
            "genre": "Rock", "date": "2001", "time": "6", "duration": "6.000", "pos": "1", "id": ids[1],
        ])
        #expect((out["plchanges_same"] as? [Any])?.isEmpty == true)
        #expect(out["plchanges_old"] as? Int == 3)
        #expect(out["albumart"] as? [AnyHashable] == [Self.png.count, "89504e470d0a1a0a"])
        #expect(out["readpicture"] as? [AnyHashable] == ["image/png", Self.png.count])
        #expect((out["readpicture_none"] as? [String: Any])?.isEmpty == true)
        #expect(out["albumart_none"] as? String == "[50@0] {albumart} No file exists")
        #expect(out["stats"] as? [String] == ["2", "2", "4", "22"])
        #expect(out["tagtypes"] as? [String] == ["Artist", "AlbumArtist", "Title", "Album", "Track", "Disc", "Genre", "Date"])
        #expect(out["commands"] as? [String] == ["status", "idle", "albumart", "readpicture", "plchanges", "outputs"])
        #expect((out["notcommands"] as? [Any])?.isEmpty == true)
        #expect(out["urlhandlers"] as? [String] == ["file://"])
        #expect(out["decoders"] as? [String] == ["mpg123", "wave", "flac", "ffmpeg"])
        #expect(out["outputs"] as? [[String: String]] == [["outputid": "0", "outputname": "den", "plugin": "tutti", "outputenabled": "1"]])
        #expect(out["disabled"] as? String == "0")
        #expect(out["getvol"] as? String == "30")
        #expect(f.leader.settings(of: "den").volume == 30 && !f.leader.settings(of: "den").muted)
        #expect(out["find"] as? [String] == ["Alpha Band/Album A/02 Second.mp3", "Alpha Band/Album A/01 First.mp3"])
        #expect(out["search_window"] as? [String] == ["Second Song"])
        #expect(out["count"] as? [String: String] == ["songs": "2", "playtime": "12"])
        #expect(out["list_group"] as? [[String: String]] == [["artist": "Alpha Band", "album": "Album A"], ["artist": "Beta Crew", "album": "Bee Sides"]])
        #expect(out["lsinfo_song"] as? String == "Other Tune")
        #expect(out["listallinfo"] as? Int == 7) // 3 folders + 4 songs
        #expect(out["list_error"] as? String == "[2@1] {play} Bad song index")
        #expect(out["seekid_error"] as? String == "[50@0] {seekid} No such song")
        #expect(out["idle"] as? [String] == ["playlist"])
        #expect(f.leader.queue.isEmpty)
    }

    // MARK: Raw socket

    /// Sends bytes, reads until the peer closes or `timeout` passes.
    func exchange(_ f: Fixture, _ bytes: [UInt8], timeout: Int = 2_000) throws -> (text: String, closed: Bool) {
        let c = try TCPConnection.connect(to: f.leader.mpdEndpoint!)
        defer { c.close() }
        c.setReceiveTimeout(milliseconds: timeout)
        try? c.send(bytes)
        var received: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { buffer.deallocate() }
        var closed = false
        while true {
            guard let (n, _) = try? c.receive(into: buffer) else { break }
            if n == 0 { closed = true; break }
            received += buffer[0..<n]
        }
        return (String(decoding: received, as: UTF8.self), closed)
    }

    @Test func malformedAndOversizedInputNeverCrashTheServer() throws {
        let f = try makeFixture()
        defer { f.stop() }
        let greeting = "OK MPD \(MPDServer.protocolVersion)\n"
        var r = try exchange(f, Array("frobnicate 1 2\nplay x\nplay 1 2\nstatus \"open\nadd a\"b\n\nping\nclose\n".utf8))
        #expect(r.text == greeting + """
            ACK [5@0] {frobnicate} unknown command "frobnicate"
            ACK [2@0] {play} Integer expected: x
            ACK [2@0] {play} too many arguments for "play"
            ACK [2@0] {status} Missing closing '"'
            ACK [2@0] {add} Invalid unquoted character
            ACK [5@0] {} No command given
            OK

            """)
        #expect(r.closed)
        // Binary junk, NULs and invalid UTF-8.
        r = try exchange(f, [0, 0xff, 0xfe, 10, 0x70, 0x6c, 0x61, 0x79, 0x20, 0xc3, 0x28, 10] + Array("ping\nclose\n".utf8))
        #expect(r.text == greeting + "ACK [2@0] {} Invalid UTF-8 in the command name\nACK [2@0] {play} Invalid UTF-8 in an argument\nOK\n")
        // An overlong line: MPD closes the connection.
        r = try exchange(f, Array(repeating: UInt8(ascii: "a"), count: MPDServer.maxLineBytes + 10) + Array("\nping\n".utf8))
        #expect(r.text == greeting + "ACK [2@0] {} Line too long\n")
        #expect(r.closed)
        // Too many commands in a list.
        var list = "command_list_begin\n"
        for _ in 0...MPDServer.maxListCommands { list += "ping\n" }
        r = try exchange(f, Array((list + "command_list_end\n").utf8))
        #expect(r.text == greeting + "ACK [2@\(MPDServer.maxListCommands)] {ping} Command list too long (more than \(MPDServer.maxListCommands) commands)\n")
        #expect(r.closed)
        // Anything but noidle during idle closes; noidle ends an idle with nothing changed.
        r = try exchange(f, Array("idle\nnoidle\nidle database\nstatus\n".utf8))
        #expect(r.text == greeting + "OK\n")
        #expect(r.closed)
        r = try exchange(f, Array("idle nonsense\ncommand_list_ok_begin\nping\nping\ncommand_list_end\nclose\n".utf8))
        #expect(r.text == greeting + "ACK [2@0] {idle} Unrecognized idle event: nonsense\nlist_OK\nlist_OK\nOK\n")
        // Albumart chunks by offset, past the end is an error.
        r = try exchange(f, Array("albumart \"Alpha Band/Album A/01 First.mp3\" 20000\nalbumart \"Alpha Band/Album A/01 First.mp3\" 99999\nclose\n".utf8))
        let tail = Self.png.count - 20_000
        #expect(r.text.hasPrefix(greeting + "size: \(Self.png.count)\nbinary: \(tail)\n"))
        #expect(r.text.hasSuffix("\nOK\nACK [2@0] {albumart} Bad file offset\n"))
        // Still serving after all that, with the same leader.
        #expect(try state(f) == "stopped random=off repeat=off single=off")
    }
}
