import Foundation
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiLibrary
import TuttiNet
import TuttiTestSupport

/// The aiosendspin-based player script, run in TuttiTestSupport's
/// `SendspinPython` venv (scripts/setup.sh makes it for CI).
enum SendspinVenv {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sendspin/sendspin_player.py").path

    static func ready() throws -> String { try SendspinPython.interpreter().get() }
}

/// One run of the aiosendspin-based player (Tests/Sendspin/sendspin_player.py).
final class SendspinClientRun {
    let process = Process()
    let input = Pipe()
    let prefix: String

    convenience init(port: UInt16, name: String, codec: String = "pcm", roles: String = "player", seconds: Double, prefix: String, extra: [String] = []) throws {
        try self.init(script: SendspinVenv.script, arguments: ["--url", "ws://127.0.0.1:\(port)/sendspin", "--id", name, "--name", name,
                                                               "--codec", codec, "--roles", roles, "--seconds", String(seconds), "--stdin", "--out", prefix] + extra,
                      prefix: prefix)
    }

    /// `script` (one that writes PREFIX.jsonl and PREFIX.raw as sendspin_player.py does) with `arguments`.
    init(script: String, arguments: [String], prefix: String) throws {
        self.prefix = prefix
        process.executableURL = URL(fileURLWithPath: try SendspinVenv.ready())
        process.arguments = [script] + arguments
        process.standardInput = input
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let errors = prefix + ".stderr"
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: errors)
        try process.run()
    }

    /// Sends a message to the server as this client (a line on its stdin).
    func send(_ message: JSONValue) { input.fileHandleForWriting.write(Data((message.serialized + "\n").utf8)) }

    func stop() {
        // SIGKILL: a test process may have SIGTERM blocked, and its children inherit the mask.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    var errors: String { (try? String(contentsOfFile: prefix + ".stderr", encoding: .utf8)) ?? "" }

    /// What it logged: chunks played and messages received.
    var records: [[String: JSONValue]] {
        guard let text = try? String(contentsOfFile: prefix + ".jsonl", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { JSONValue.parsing(String($0))?.object }
    }

    func messages(_ type: String) -> [[String: JSONValue]] {
        records.filter { $0["kind"]?.string == "message" && $0["type"]?.string == type }.compactMap { $0["payload"]?.object }
    }

    /// (message payload, local ns it came) of each message of `type`.
    func timedMessages(_ type: String) -> [(payload: [String: JSONValue], at: Int64)] {
        records.filter { $0["kind"]?.string == "message" && $0["type"]?.string == type }
            .compactMap { r in r["payload"]?.object.map { ($0, Int64(r["at"]?.number ?? 0)) } }
    }

    /// (records' index, server µs) of each chunk played, and (index, local ns) of each message of `type`, in log order.
    var chunkStamps: [(index: Int, ts: Int64)] {
        records.enumerated().compactMap { i, r in r["kind"]?.string == "chunk" ? r["ts"]?.integer.map { (i, Int64($0)) } : nil }
    }
    func messageIndexes(_ type: String) -> [(index: Int, at: Int64)] {
        records.enumerated().compactMap { i, r in
            r["kind"]?.string == "message" && r["type"]?.string == type ? r["at"]?.number.map { (i, Int64($0)) } : nil
        }
    }

    /// Each chunk played: when (local ns), where in PREFIX.raw, how long, and its server time (µs).
    var chunks: [(local: Int64, offset: Int, frames: Int, ts: Int64)] {
        records.filter { $0["kind"]?.string == "chunk" }.compactMap { r in
            guard let local = r["local"]?.number, let offset = r["offset"]?.integer, let frames = r["frames"]?.integer,
                  let ts = r["ts"]?.number else { return nil }
            return (Int64(local), offset, frames, Int64(ts))
        }
    }

    /// Local instants (ns) at which the reference time filter plays each click onset.
    func clickTimes(threshold: Int16 = 20_000, quietFrames: Int = 4_800) -> [Int64] {
        clicks(threshold: threshold, quietFrames: quietFrames) { chunk, frames in chunk.local + Int64(frames) * 1_000_000_000 / 48_000 }
    }

    /// The server's own time (ns on its clock) of each click onset: where it put it on its timeline.
    func clickServerTimes(threshold: Int16 = 20_000, quietFrames: Int = 4_800) -> [Int64] {
        clicks(threshold: threshold, quietFrames: quietFrames) { chunk, frames in chunk.ts * 1_000 + Int64(frames) * 1_000_000_000 / 48_000 }
    }

    /// For each click onset in PREFIX.raw: `time` of the chunk it is in and the frames into it.
    private func clicks(threshold: Int16, quietFrames: Int, time: ((local: Int64, offset: Int, frames: Int, ts: Int64), Int) -> Int64) -> [Int64] {
        let samples = readRaw(prefix + ".raw")
        let played = chunks
        var times: [Int64] = []
        var quiet = quietFrames
        var c = 0
        for i in 0..<(samples.count / 2) {
            if abs(Int(samples[2 * i])) >= Int(threshold) {
                if quiet >= quietFrames {
                    while c < played.count, played[c].offset + played[c].frames <= i { c += 1 }
                    if c < played.count, played[c].offset <= i {
                        times.append(time(played[c], i - played[c].offset))
                    }
                }
                quiet = 0
            } else {
                quiet += 1
            }
        }
        return times
    }
}

/// For each reference click from 3 s after the first (its filter settled),
/// reference − Tutti for the nearest Tutti click within 0.5 s (ns), and the
/// median and p99 of their sizes.
func clickAgreement(reference: [Int64], tutti: [Int64]) throws -> (signed: [Int64], median: Int64, p99: Int64) {
    let start = try #require(reference.first) + 3_000_000_000
    let signed = reference.filter { $0 >= start }.compactMap { t -> Int64? in
        guard let nearest = tutti.min(by: { abs($0 - t) < abs($1 - t) }), abs(nearest - t) < 500_000_000 else { return nil }
        return t - nearest
    }
    let sizes = signed.map { abs($0) }.sorted()
    guard !sizes.isEmpty else { return ([], 0, 0) }
    return (signed, sizes[sizes.count / 2], sizes[min(sizes.count - 1, Int((Double(sizes.count) * 0.99).rounded(.up)) - 1)])
}

/// Sendspin players from PyPI's aiosendspin 10 against a real Tutti leader:
/// each joins as a room, and its reference time filter is the judge of sync.
@Suite(.serialized) struct SendspinTests {
    func leader(_ files: [String], codec: Codec) throws -> Leader {
        try startLeader(files: files, codec: codec, loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
        }
    }

    /// A player joins as a listed room, gets PCM, and its reference time
    /// filter plays each click where a Tutti speaker on a file DAC does.
    @Test func aSendspinPlayerIsARoomInStepWithATuttiSpeaker() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/clicks.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
        let leader = try leader([dir + "/clicks.wav"], codec: .pcm)
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let speaker = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        defer { speaker.stop() }
        let client = try SendspinClientRun(port: port, name: "kitchen-sendspin", seconds: 20, prefix: dir + "/ss")
        defer { client.stop() }
        #expect(waitUntil(timeout: 20) { leader.followerNames.contains("kitchen-sendspin") }, "\(leader.followerNames) \(client.errors)")
        let control = try #require(leader.controlEndpoint)
        let rooms = try #require(try ControlClient(endpoint: control).call("rooms.list").object)
        let room = (rooms["rooms"]?.objectArray ?? []).first { $0["name"]?.string == "kitchen-sendspin" }
        #expect(room?["connected"]?.bool == true, "\(rooms)")
        // 14 s of clicks played by the client (its filter settled for the first few).
        #expect(waitUntil(timeout: 30) { client.chunks.count >= 700 }, "\(client.chunks.count) chunks; \(client.errors)")
        let hello = try #require(client.messages("server/hello").first)
        #expect(hello["active_roles"]?.strings == ["player@v1"])
        #expect(client.messages("stream/start").first?["player"]?["codec"]?.string == "pcm")
        let last = try #require(client.chunks.last).local
        #expect(waitUntilPlayed([dir + "/den.raw"], through: last))
        client.stop()
        speaker.stop()

        let reference = client.clickTimes()
        let tutti = clickTimes(dir + "/den.raw", ppm: 0)
        let (signed, median, p99) = try clickAgreement(reference: reference, tutti: tutti)
        #expect(signed.count >= 6, "\(signed.count) clicks compared: reference \(reference.count), Tutti \(tutti.count)")
        print("Sendspin PCM vs Tutti speaker: click difference median \(median / 1000) µs, p99 \(p99 / 1000) µs over \(signed.count) clicks (signed µs: \(signed.map { $0 / 1000 }))")
        #expect(median < 1_000_000, "median \(median / 1000) µs: the spec asks ±1 ms")
        #expect(p99 < 2_000_000, "p99 \(p99 / 1000) µs")
    }

    /// FLAC from an Opus leader, and the commands: Tutti's volume, seek,
    /// next and pause reach the player as the spec says; its controller's
    /// volume and play reach Tutti's group; metadata names the track.
    @Test func flacCommandsControllerAndMetadataReachAPlayer() throws {
        let dir = makeTemporaryDirectory()
        for name in ["a", "b"] { writeFile(dir + "/\(name).wav", wavImage(quantize(TestSignal.sine(frequency: 1_000, seconds: 20, amplitude: 0.5)))) }
        let leader = try leader([dir + "/a.wav", dir + "/b.wav"], codec: .opus)
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let client = try SendspinClientRun(port: port, name: "study", codec: "flac", roles: "player,controller,metadata", seconds: 30, prefix: dir + "/ss")
        defer { client.stop() }
        #expect(waitUntil(timeout: 20) { client.chunks.count >= 100 }, "\(client.chunks.count) chunks; \(client.errors)")
        let start = try #require(client.messages("stream/start").first?["player"]?.object)
        #expect(start["codec"]?.string == "flac" && start["codec_header"]?.string?.hasPrefix("ZkxhQw") == true, "\(start)") // "fLaC"
        // The FLAC decoded by aiosendspin's decoder: the 1 kHz tone at half scale, through Opus.
        let level = SnapcastTests.level(dir + "/ss.raw", lastSeconds: 1)
        #expect(abs(level.hz - 1_000) < 10 && abs(level.rms - 16_384 / 2.0.squareRoot()) < 16_384 / 2.0.squareRoot() * 0.11, "\(level)")
        #expect(client.messages("server/state").contains { $0["metadata"]?["title"]?.string == "a.wav" }, "\(client.messages("server/state"))")

        // Tutti's room volume reaches the player as server/command.
        leader.configure(room: "study", RoomSettings(volume: 30))
        #expect(waitUntil(timeout: 5) { client.messages("server/command").contains { $0["player"]?["volume"]?.integer == 30 } })
        // Seek, next: stream/clear (never stream/end), and the metadata follows.
        let clears = client.messages("stream/clear").count
        _ = try leader.perform(.seek(seconds: 10))
        #expect(waitUntil(timeout: 5) { client.messages("stream/clear").count > clears })
        _ = try leader.perform(.next)
        #expect(waitUntil(timeout: 5) { client.messages("stream/clear").count > clears + 1 })
        #expect(waitUntil(timeout: 5) { client.messages("server/state").contains { $0["metadata"]?["title"]?.string == "b.wav" } })
        #expect(client.messages("stream/end").isEmpty)
        // Pause: cleared, and the group says paused.
        _ = try leader.perform(.pause)
        #expect(waitUntil(timeout: 5) { client.messages("group/update").last?["playback_state"]?.string == "paused" })
        // The player's controller: group volume and play reach Tutti.
        client.send(["type": "client/command", "payload": ["controller": ["command": "volume", "volume": 55]]])
        #expect(waitUntil(timeout: 5) { leader.volume(ofGroup: "main") == 55 }, "\(String(describing: leader.volume(ofGroup: "main")))")
        client.send(["type": "client/command", "payload": ["controller": ["command": "play"]]])
        #expect(waitUntil(timeout: 5) { leader.nowPlaying.state == .playing })
        #expect(waitUntil(timeout: 5) { client.messages("server/state").contains { $0["controller"]?["volume"]?.integer == 55 } })
        // A room like any other: grouped on its own, it is told its new group; party mode brings it back.
        let rpc = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        _ = try rpc.call("groups.create", ["name": "Study group", "rooms": ["study"]])
        #expect(waitUntil(timeout: 5) { client.messages("group/update").last?["group_name"]?.string == "Study group" },
                "\(client.messages("group/update").suffix(2))")
        _ = try rpc.call("party.on")
        #expect(waitUntil(timeout: 5) { client.messages("group/update").last?["group_id"]?.string == "main" },
                "\(client.messages("group/update").suffix(2))")
        #expect(client.errors.isEmpty || !client.errors.contains("Traceback"), "\(client.errors)")
    }

    /// aiosendspin's own `SendspinClient`, as Music Assistant's players run it:
    /// on a leader whose speakers must be paired, it connects encrypted (Noise
    /// `KKpsk2` under the Sentinel, unpaired access on), is activated with no
    /// roles and waits in the speakers list beside Tutti's own; once a person
    /// allows it there, it is activated for playback on the same connection,
    /// becomes a room and gets audio. The approval is kept on disk.
    @Test(arguments: ["chachapoly", "aesgcm"]) func aStockClientConnectsEncryptedWaitsForAPersonThenPlays(suite: String) throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
        let leader = try startLeader(files: [dir + "/tone.wav"], codec: .pcm, loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
            c.pairedSpeakersOnly = true
            c.stateDirectory = dir
        }
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let client = try SendspinScriptRun("sendspin_stock_client.py", ["--url", "ws://127.0.0.1:\(port)/sendspin", "--name", "Garden", "--seconds", "60", "--suite", suite], out: dir + "/stock")
        let control = try #require(leader.controlEndpoint)
        // A connection per call: the waits below may outlast an idle control connection's welcome.
        func pending() throws -> [[String: JSONValue]] { try ControlClient(endpoint: control).call("speakers.pending").object?["pending"]?.objectArray ?? [] }

        // Encrypted under the Sentinel, admitted with nothing to do, and shown to a person.
        #expect(waitUntil(timeout: 30) { client.records().contains { $0["kind"]?.string == "connected" } }, "\(client.records()) \(client.stderr())")
        let connected = try #require(client.records().first { $0["kind"]?.string == "connected" })
        #expect(connected["psk"]?.string == "sentinel" && connected["server"]?.string != nil, "\(connected)")
        #expect(waitUntil(timeout: 10) { (try? pending())?.contains { $0["name"]?.string == "Garden" && $0["via"]?.string == "sendspin" } == true },
                "\(String(describing: try? pending()))")
        let early = client.records().filter { $0["kind"]?.string == "chunks" }.count
        #expect(early == 0, "no audio before a person allows it")
        #expect(!leader.followerNames.contains("Garden"), "not a room yet: \(leader.followerNames)")

        // Allowed where Tutti's speakers are: activated for playback, a room, audio.
        _ = try ControlClient(endpoint: control).call("speakers.allow", ["name": "Garden"])
        #expect(waitUntil(timeout: 10) { leader.followerNames.contains("Garden") }, "\(leader.followerNames)")
        #expect(waitUntil(timeout: 10) { client.records().contains { $0["kind"]?.string == "activities" && $0["activities"]?.strings == ["playback"] } },
                "\(client.records())")
        #expect(waitUntil(timeout: 20) { (client.records().last { $0["kind"]?.string == "chunks" }?["count"]?.integer ?? 0) >= 150 }, "\(client.records()) \(client.stderr())")
        let audio = try #require(client.records().last { $0["kind"]?.string == "chunks" })
        #expect(audio["synced"]?.bool == true, "its time filter synchronised over the encrypted channel: \(audio)")
        #expect(client.records().contains { $0["kind"]?.string == "stream" && $0["codec"]?.string == "pcm" })
        let left = try pending().count
        #expect(left == 0)
        // Kept: the trust file names it as approved (mode 0600).
        let trust = try String(contentsOfFile: dir + "/sendspin-trust.json", encoding: .utf8)
        #expect(trust.contains("Garden"), "\(trust)")
        let mode = try #require(FileManager.default.attributesOfItem(atPath: dir + "/sendspin-trust.json")[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        #expect(!client.stderr().contains("Traceback"), "\(client.stderr())")
    }

    /// The Pairing PSK method, with aiosendspin's own `SendspinClient` (10.2.1)
    /// on a leader whose speakers must be paired: the player shows its pairing
    /// token, a person pastes it into the leader's API (`speakers.sendspinToken`);
    /// the player connects under that pairing PSK, is activated for pairing
    /// only, and its own client runs `client/pair-init` and
    /// `client/pair-finalize`; the leader stores the long-term PSK (on disk,
    /// 0600) and acknowledges. Reconnecting, the handshake names the long-term
    /// PSK (`lt`), and the player becomes a room and gets audio with no person
    /// asked again.
    @Test(arguments: ["chachapoly", "aesgcm"]) func aStockClientPairsByPairingPSKThenPlaysUnderItsLongTermPSK(suite: String) throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
        let leader = try startLeader(files: [dir + "/tone.wav"], codec: .pcm, loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
            c.pairedSpeakersOnly = true
            c.stateDirectory = dir
        }
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let client = try SendspinScriptRun("sendspin_pairing_client.py", ["--url", "ws://127.0.0.1:\(port)/sendspin", "--name", "Porch", "--seconds", "30", "--suite", suite], out: dir + "/pair")
        let control = try #require(leader.controlEndpoint)

        // The token a person reads off the player, pasted into the leader.
        #expect(waitUntil(timeout: 30) { client.records().contains { $0["kind"]?.string == "token" } }, "\(client.records()) \(client.stderr())")
        let shown = try #require(client.records().first { $0["kind"]?.string == "token" })
        let token = try #require(shown["token"]?.string)
        #expect(token.hasPrefix("SP:0"))
        let staged = try ControlClient(endpoint: control).call("speakers.sendspinToken", ["token": .string(token)])
        #expect(staged.object?["staged"]?.string == shown["client_id"]?.string, "\(staged)")
        #expect(throws: (any Error).self) { try ControlClient(endpoint: control).call("speakers.sendspinToken", ["token": "SP:0NOTATOKEN"]) }
        writeFile(dir + "/pair.staged", [])

        // Admitted under the pairing PSK, for pairing only; the client finalizes and keeps its record.
        #expect(waitUntil(timeout: 30) { client.records().contains { $0["kind"]?.string == "paired" } }, "\(client.records()) \(client.stderr())")
        let first = try #require(client.records().first { $0["kind"]?.string == "connected" })
        #expect(first["psk"]?.string == "pairing", "\(first)")
        #expect(client.records().contains { $0["kind"]?.string == "activities" && $0["activities"]?.strings == ["pairing"] }, "\(client.records())")
        let trust = try String(contentsOfFile: dir + "/sendspin-trust.json", encoding: .utf8)
        let file = try #require(JSONValue.parsing(trust)?.object)
        let paired = file["paired"]?.objectArray ?? []
        #expect(paired.count == 1 && paired.first?["client_id"]?.string == shown["client_id"]?.string
                && paired.first?["pair_methods"]?.strings == ["pairing_psk"], "\(trust)")
        let stagedLeft = file["staged"]?.array ?? []
        #expect(stagedLeft.isEmpty, "the record supersedes the staged PSK: \(trust)")
        let mode = try #require(FileManager.default.attributesOfItem(atPath: dir + "/sendspin-trust.json")[.posixPermissions] as? Int)
        #expect(mode == 0o600)

        // Back under its long-term PSK: a room, with audio, and nobody asked.
        #expect(waitUntil(timeout: 30) { client.records().filter { $0["kind"]?.string == "connected" }.count == 2 }, "\(client.records()) \(client.stderr())")
        let second = try #require(client.records().last { $0["kind"]?.string == "connected" })
        #expect(second["psk"]?.string == "long_term", "\(second)")
        #expect(waitUntil(timeout: 10) { leader.followerNames.contains("Porch") }, "\(leader.followerNames)")
        #expect(waitUntil(timeout: 20) { (client.records().last { $0["kind"]?.string == "chunks" }?["count"]?.integer ?? 0) >= 150 }, "\(client.records()) \(client.stderr())")
        let audio = try #require(client.records().last { $0["kind"]?.string == "chunks" })
        #expect(audio["synced"]?.bool == true, "\(audio)")
        let pending = try ControlClient(endpoint: control).call("speakers.pending").object?["pending"]?.objectArray ?? []
        #expect(pending.isEmpty, "\(pending)")
        #expect(!client.records().contains { $0["kind"]?.string == "error" }, "\(client.records())")
        #expect(!client.stderr().contains("Traceback"), "\(client.stderr())")
    }

    /// A display built on aiosendspin's own `SendspinClient` (10.2.1), with
    /// the artwork role only, asks for one album channel of 300×300 JPEG in
    /// its `client/state`: it gets the playing track's embedded cover (a
    /// 640×480 JPEG made by ffmpeg) as a 300×300 JPEG that Pillow decodes,
    /// and on `next` the other track's cover (480×640), also 300×300. A
    /// legacy display beside it (plain, channels in its hello) gets the same
    /// covers, each as one message.
    @Test func aStockArtworkClientGetsTheCoverAtTheSizeItAsksAndAnotherOnNext() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/lame"), "lame is missing: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        writeFile(dir + "/tone.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 20, amplitude: 0.5))))
        let encoded = try runProgram("/usr/bin/lame", ["--quiet", "-b", "64", dir + "/tone.wav", dir + "/tone.mp3"])
        #expect(encoded.status == 0, "\(encoded.err)")
        let audio = try Array(Data(contentsOf: URL(fileURLWithPath: dir + "/tone.mp3")))
        for (name, source) in [("a", "testsrc=size=640x480"), ("b", "testsrc2=size=480x640")] {
            let made = try runProgram("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", source, "-frames:v", "1", dir + "/\(name).jpg"])
            #expect(made.status == 0, "\(made.err)")
            let cover = try Array(Data(contentsOf: URL(fileURLWithPath: dir + "/\(name).jpg")))
            writeFile(music + "/\(name).mp3", ID3v2Writer.tag(version: 3, frames: [.text("TIT2", name.uppercased()), .frontCover(mime: "image/jpeg", bytes: cover)]) + audio)
        }
        let leader = try startLeader(files: [music + "/a.mp3", music + "/b.mp3"], codec: .pcm, loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        let library = try #require(leader.library)
        #expect(waitUntil(timeout: 20) { (try? library.track(atPath: music + "/b.mp3")?.coverHash) != nil }, "library scan")
        let port = try #require(leader.sendspinEndpoint).port
        let script = URL(fileURLWithPath: SendspinVenv.script).deletingLastPathComponent().appendingPathComponent("sendspin_stock_client.py").path
        let client = Process()
        client.executableURL = URL(fileURLWithPath: try SendspinVenv.ready())
        client.arguments = [script, "--url", "ws://127.0.0.1:\(port)/sendspin", "--name", "Frame", "--seconds", "60",
                            "--roles", "artwork", "--artwork", "300x300:jpeg", "--out", dir + "/art"]
        client.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        _ = FileManager.default.createFile(atPath: dir + "/art.stderr", contents: nil)
        client.standardError = FileHandle(forWritingAtPath: dir + "/art.stderr")
        try client.run()
        // SIGKILL: a test process may have SIGTERM blocked, and its children inherit the mask.
        defer { if client.isRunning { kill(client.processIdentifier, SIGKILL) }; client.waitUntilExit() }
        func images() -> [[String: JSONValue]] {
            let text = (try? String(contentsOfFile: dir + "/art.jsonl", encoding: .utf8)) ?? ""
            return text.split(separator: "\n").compactMap { JSONValue.parsing(String($0))?.object }
                .filter { $0["kind"]?.string == "artwork" && ($0["bytes"]?.integer ?? 0) > 0 }
        }
        func stderr() -> String { (try? String(contentsOfFile: dir + "/art.stderr", encoding: .utf8)) ?? "" }
        let legacy = try SendspinClientRun(port: port, name: "old-frame", roles: "artwork", seconds: 60, prefix: dir + "/legacy")
        defer { legacy.stop() }
        func legacyImages() -> [[String: JSONValue]] {
            legacy.records.filter { $0["kind"]?.string == "artwork" && ($0["bytes"]?.integer ?? 0) > 0 }
        }

        #expect(waitUntil(timeout: 30) { !images().isEmpty }, "\(stderr())")
        let first = try #require(images().first)
        #expect(first["channel"]?.integer == 0 && first["width"]?.integer == 300 && first["height"]?.integer == 300, "\(first)")
        #expect(!leader.followerNames.contains("Frame"), "a display is not a room")
        #expect(waitUntil(timeout: 30) { !legacyImages().isEmpty }, "\(legacy.records) \(legacy.errors)")

        _ = try leader.perform(.next)
        #expect(waitUntil(timeout: 10) { images().contains { $0["sha256"] != first["sha256"] } }, "\(images()) \(stderr())")
        let second = try #require(images().first { $0["sha256"] != first["sha256"] })
        #expect(second["width"]?.integer == 300 && second["height"]?.integer == 300, "\(second)")
        #expect(!stderr().contains("Traceback") && !stderr().contains("protocol error"), "\(stderr())")
        // The legacy display: the same two covers (the same sizes in bytes: scaled once, kept), one message each.
        #expect(waitUntil(timeout: 10) { Set(legacyImages().compactMap { $0["bytes"]?.integer }).count >= 2 }, "\(legacy.records) \(legacy.errors)")
        let sizes = Set(legacyImages().compactMap { $0["bytes"]?.integer })
        #expect(sizes == Set([first["bytes"]?.integer, second["bytes"]?.integer].compactMap { $0 }), "\(sizes) \(first) \(second)")
        #expect(legacyImages().allSatisfy { $0["width"]?.integer == 300 && $0["height"]?.integer == 300 && $0["channel"]?.integer == 0 })
        #expect(legacy.messages("stream/start").contains { $0["artwork"]?["channels"]?.array?.count == 1 }, "\(legacy.messages("stream/start"))")
    }

    /// The stock `sendspin` CLI (sendspin 9 from PyPI), as a person runs it:
    /// `sendspin daemon --url …` into a private PulseAudio's null sink. It
    /// connects encrypted, is listed as a room, and the 440 Hz tone the
    /// leader plays comes out of the sink at the level it was written.
    @Test func theStockSendspinCLIPlaysAudibleAudioAsARoom() throws {
        guard PulseLineIn.available else {
            Issue.record("needs pulseaudio and libasound2-plugins (scripts/setup.sh installs them)")
            return
        }
        let dir = makeTemporaryDirectory()
        try LineInSourceTests.toneFile(dir + "/tone.wav", seconds: 10)
        let pulse = try PulseLineIn(dir)
        defer { pulse.stop() }
        let leader = try startLeader(files: [dir + "/tone.wav"], codec: .opus, loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let cli = Process()
        cli.executableURL = URL(fileURLWithPath: try SendspinVenv.ready())
        // Its console script is not used: the venv was made under another name and renamed.
        cli.arguments = ["-c", "import sys; from sendspin.cli import main; sys.argv[0] = 'sendspin'; sys.exit(main())",
                         "daemon", "--url", "ws://127.0.0.1:\(port)/sendspin", "--name", "Porch", "--audio-device", "pulse",
                         "--hardware-volume", "false", "--disable-mpris", "--settings-dir", dir + "/sendspin-settings"]
        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = pulse.server
        cli.environment = environment
        _ = FileManager.default.createFile(atPath: dir + "/cli.log", contents: nil)
        cli.standardOutput = FileHandle(forWritingAtPath: dir + "/cli.log")
        cli.standardError = FileHandle(forWritingAtPath: dir + "/cli.log")
        try cli.run()
        defer { if cli.isRunning { kill(cli.processIdentifier, SIGKILL) }; cli.waitUntilExit() }
        func log() -> String { (try? String(contentsOfFile: dir + "/cli.log", encoding: .utf8)) ?? "" }
        #expect(waitUntil(timeout: 30) { leader.followerNames.contains("Porch") }, "\(leader.followerNames) \(log())")
        let rooms = try ControlClient(endpoint: try #require(leader.controlEndpoint)).call("rooms.list").object?["rooms"]?.objectArray ?? []
        #expect(rooms.contains { $0["name"]?.string == "Porch" && $0["connected"]?.bool == true }, "\(rooms)")
        #expect(waitUntil(timeout: 20) { log().contains("Stream STARTED") }, "\(log())")
        // Three seconds from the sink's monitor, once it plays, in quarter seconds: a Python player on a
        // loaded machine may underrun now and then, so the tone is looked for in whole windows.
        let recording = dir + "/porch.raw"
        _ = try runProgram("/usr/bin/parecord", ["-d", "line.monitor", "--rate=48000", "--channels=2", "--format=s16le", "--raw", recording],
                           environment: ["PULSE_SERVER": pulse.server], timeout: 3, stopAtTimeout: true)
        let samples = readRaw(recording)
        let window = 12_000
        var windows: [(rms: Double, hz: Double)] = []
        for start in stride(from: 0, to: samples.count / 2 - window, by: window) {
            var sum = 0.0, crossings = 0
            for i in start..<(start + window) {
                let v = Double(samples[2 * i]); sum += v * v
                if i > start, (samples[2 * i - 2] < 0) != (samples[2 * i] < 0) { crossings += 1 }
            }
            windows.append(((sum / Double(window)).squareRoot(), Double(crossings) / 2 / (Double(window) / 48_000)))
        }
        // The file's 440 Hz at half scale (16,384 peak: RMS 11,585), through Opus and the CLI's FLAC.
        let tone = windows.filter { abs($0.hz - 440) < 5 && abs($0.rms - 11_585) < 11_585 * 0.11 }
        print("sendspin CLI into PulseAudio: \(tone.count) of \(windows.count) quarter seconds hold the tone")
        #expect(tone.count >= 2, "\(windows) \(log())")
    }

    /// A player that needs 250 ms to start (`required_lead_time_ms`) is never
    /// sent audio that plays sooner than that after a `stream/clear`: on
    /// `next` it joins the new track 250 ms on, in step, while the group's
    /// command still takes effect 100 ms ahead for every other room.
    @Test func aPlayerThatNeedsALongerLeadStartsTheNewTrackThatLateInStep() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(toneWithClicks(seconds: 20, frequency: 440)))
        writeFile(dir + "/b.wav", wavImage(toneWithClicks(seconds: 20, frequency: 880)))
        let leader = try leader([dir + "/a.wav", dir + "/b.wav"], codec: .pcm)
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let client = try SendspinClientRun(port: port, name: "porch", seconds: 30, prefix: dir + "/ss", extra: ["--required-lead-ms", "250"])
        defer { client.stop() }
        #expect(waitUntil(timeout: 20) { client.chunks.count >= 100 }, "\(client.chunks.count) chunks; \(client.errors)")
        let outcome = try leader.perform(.next)
        #expect(outcome.effectiveAt - outcome.acceptedAt <= 150_000_000, "the group's command lead stays Tutti's")
        #expect(waitUntil(timeout: 10) { client.chunkStamps.last.map { $0.ts * 1_000 > outcome.effectiveAt + 500_000_000 } ?? false })
        let clear = try #require(client.messageIndexes("stream/clear").last)
        // Chunks after the clear that play after the cut: none sooner than 250 ms after the clear left (20 ms: the loop's step).
        let after = client.chunkStamps.filter { $0.index > clear.index && $0.ts * 1_000 >= outcome.effectiveAt }
        let first = try #require(after.first)
        #expect(first.ts * 1_000 - clear.at >= 230_000_000, "first new chunk \((first.ts * 1_000 - clear.at) / 1_000_000) ms after the clear")
        #expect(first.ts * 1_000 - clear.at <= 300_000_000, "and not much later: \((first.ts * 1_000 - clear.at) / 1_000_000) ms")
    }
}

/// One of Tests/Sendspin's Python clients in the Sendspin venv: its JSON
/// lines in OUT.jsonl, its errors in OUT.stderr; killed when the test ends
/// (SIGKILL: a test process may have SIGTERM blocked, and its children
/// inherit the mask).
final class SendspinScriptRun {
    private let process = Process()
    private let out: String

    init(_ script: String, _ arguments: [String], out: String) throws {
        self.out = out
        let path = URL(fileURLWithPath: SendspinVenv.script).deletingLastPathComponent().appendingPathComponent(script).path
        process.executableURL = URL(fileURLWithPath: try SendspinVenv.ready())
        process.arguments = [path] + arguments + ["--out", out]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        _ = FileManager.default.createFile(atPath: out + ".stderr", contents: nil)
        process.standardError = FileHandle(forWritingAtPath: out + ".stderr")
        try process.run()
    }

    /// What it has written so far, a record a line.
    func records() -> [[String: JSONValue]] {
        let text = (try? String(contentsOfFile: out + ".jsonl", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { JSONValue.parsing(String($0))?.object }
    }

    func stderr() -> String { (try? String(contentsOfFile: out + ".stderr", encoding: .utf8)) ?? "" }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) }; process.waitUntilExit() }
}
