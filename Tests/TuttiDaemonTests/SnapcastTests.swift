import Foundation
import Synchronization
import Testing
import TuttiControlClient
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiNet
import TuttiTestSupport

/// Stock Snapcast clients and tools against a Tutti leader: Debian's real
/// snapclient (0.26) as a room, and python-snapcast, the library Home
/// Assistant's integration is built on, driving the leader.
@Suite(.serialized) struct SnapcastTests {
    static let snapclient = "/usr/bin/snapclient"
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static var tutti: String {
        URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("tutti").path
    }

    /// 1 kHz at half scale: RMS 0.5/√2 of full scale.
    static func tone(seconds: Int) -> [UInt8] {
        let frames = 48_000 * seconds
        var samples = [Int16](repeating: 0, count: frames * 2)
        for i in 0..<frames {
            let v = Int16(16_384 * sin(2 * Double.pi * 1_000 * Double(i) / 48_000))
            samples[2 * i] = v; samples[2 * i + 1] = v
        }
        return wavImage(samples)
    }

    /// RMS and zero crossings per second of the last `seconds` of an S16LE stereo file.
    static func level(_ path: String, lastSeconds seconds: Double) -> (rms: Double, hz: Double, frames: Int) {
        let s = readRaw(path)
        let frames = s.count / 2
        let n = min(frames, Int(seconds * 48_000))
        guard n > 0 else { return (0, 0, frames) }
        var sum = 0.0, crossings = 0
        for i in (frames - n)..<frames {
            let v = Double(s[2 * i]); sum += v * v
            if i > frames - n, (s[2 * i - 2] < 0) != (s[2 * i] < 0) { crossings += 1 }
        }
        return ((sum / Double(n)).squareRoot(), Double(crossings) / 2 / (Double(n) / 48_000), frames)
    }

    /// Stops the snapclients a test started (a test that ends early must not leave them playing).
    static func stopSnapclients(id: String) { _ = try? runProgram("/usr/bin/pkill", ["-f", "--", "--hostID \(id) "]) }

    /// Runs snapclient for `seconds` on a thread of its own (it is stopped then, or by `stopSnapclients`).
    static func startSnapclient(port: UInt16, id: String, output: String, seconds: Double) -> Thread {
        let thread = Thread {
            _ = try? runProgram(snapclient, ["-h", "127.0.0.1", "-p", String(port), "--hostID", id, "--player", "file:filename=\(output)"],
                                mergeErrors: true, timeout: seconds, stopAtTimeout: true)
        }
        thread.start()
        return thread
    }

    @Test func aStockSnapclientIsARoomThatPlaysTheStreamAndTakesItsVolume() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.snapclient), "snapclient is missing: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", Self.tone(seconds: 30))
        let leader = try startLeader(files: [dir + "/tone.wav"], codec: .opus, loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastStream = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let port = try #require(leader.snapcastEndpoint).port
        let output = dir + "/snap.raw"
        _ = Self.startSnapclient(port: port, id: "kitchen-snap", output: output, seconds: 9)
        defer { Self.stopSnapclients(id: "kitchen-snap") }
        #expect(waitUntil(timeout: 5) { leader.followerNames.contains("kitchen-snap") }, "\(leader.followerNames)")
        let control = try #require(leader.controlEndpoint)
        let rooms = try #require(try ControlClient(endpoint: control).call("rooms.list").object)
        let room = (rooms["rooms"]?.objectArray ?? []).first { $0["name"]?.string == "kitchen-snap" }
        #expect(room?["connected"]?.bool == true, "\(rooms)")
        usleep(2_500_000)
        let full = Self.level(output, lastSeconds: 1)
        // The tone, through Opus and snapclient: its pitch exactly, its level within a dB.
        #expect(abs(full.hz - 1_000) < 10, "\(full.hz) Hz")
        #expect(abs(full.rms - 16_384 / 2.0.squareRoot()) < 16_384 / 2.0.squareRoot() * 0.11, "RMS \(full.rms)")
        // Volume 30 from Tutti reaches the snapclient as server settings: its output drops.
        leader.configure(room: "kitchen-snap", RoomSettings(volume: 30))
        usleep(2_000_000)
        let quiet = Self.level(output, lastSeconds: 1)
        #expect(quiet.rms < full.rms * 0.5 && quiet.rms > 0, "RMS \(full.rms) → \(quiet.rms) at volume 30")
        #expect(abs(quiet.hz - 1_000) < 10)
        // Muted: silence.
        leader.configure(room: "kitchen-snap", RoomSettings(volume: 30, muted: true))
        usleep(1_500_000)
        #expect(Self.level(output, lastSeconds: 0.5).rms < 50)
    }

    @Test func homeAssistantsSnapcastLibraryDrivesTheLeader() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.snapclient), "snapclient is missing: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        for name in ["a", "b", "c"] { writeFile(dir + "/\(name).wav", Self.tone(seconds: 20)) }
        let leader = try startLeader(files: ["a", "b", "c"].map { dir + "/\($0).wav" }, codec: .opus) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastStream = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastControl = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let living = try startFollower(leader: leader.endpoint, name: "living", output: .file(path: dir + "/living.raw", ppm: 0, delayMilliseconds: 0))
        defer { living.stop() }
        let snapPort = try #require(leader.snapcastEndpoint).port
        _ = Self.startSnapclient(port: snapPort, id: "kitchen-snap", output: dir + "/snap.raw", seconds: 30)
        defer { Self.stopSnapclients(id: "kitchen-snap") }
        let snapControl = try #require(leader.snapcastControlEndpoint).port, control = try #require(leader.controlEndpoint).port
        #expect(waitUntil(timeout: 8) { Set(leader.followerNames) == ["kitchen-snap", "living"] }, "\(leader.followerNames)")
        let r = try runProgram("/usr/bin/env", ["python3", Self.repository + "/Tests/Snapcast/control_test.py",
                                               "--port", String(snapControl), "--tutti-control", String(control),
                                               "--tutti", Self.tutti, "--snapclient", "kitchen-snap", "--room", "living"],
                               mergeErrors: true, timeout: 60)
        print(r.out)
        #expect(r.status == 0, "\(r.out)")
        #expect(r.out.contains("all checks passed"))
    }
}

/// Snapcast control from other machines (issue 26, finding 3): letting
/// snapclients join without a key (`snapcast-unkeyed`) no longer opens
/// control; `snapcast-control-open` does. And the HTTP port takes only JSON
/// from programs or its own pages, so a page opened in the house cannot
/// post commands to it (nor to the web app's `/api`).
@Suite(.serialized) struct SnapcastControlAccessTests {
    func leader(controlOpen: Bool) throws -> Leader {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/t.wav", wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 30, amplitude: 0.2))))
        return try startLeader(files: [dir + "/t.wav"]) { c in
            c.password = "kitchen-secret-42"
            c.passwordOnLoopback = true // loopback stands for another machine
            c.snapcastWithoutKey = true
            c.snapcastControlOpen = controlOpen
            c.snapcastControl = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastHTTP = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
        }
    }

    /// The leader plays its file from the start: a command that takes effect pauses it.
    static let pause = #"{"jsonrpc":"2.0","id":1,"method":"Stream.Control","params":{"id":"main","command":"pause"}}"#

    @Test func snapcastUnkeyedLetsSnapclientsJoinButDoesNotOpenControl() throws {
        let l = try leader(controlOpen: false)
        defer { l.stop() }
        let tcp = try #require(l.snapcastControlEndpoint).port
        let reply = exchange(port: tcp, Array((Self.pause + "\r\n").utf8), untilLine: true)
        #expect(reply.contains("-32001") && reply.contains("cannot log in"), "\(reply)")
        usleep(300_000)
        #expect(l.nowPlaying.state == .playing, "still playing: the pause was refused")
    }

    @Test func snapcastControlOpenLetsOtherMachinesChangeThings() throws {
        let l = try leader(controlOpen: true)
        defer { l.stop() }
        let tcp = try #require(l.snapcastControlEndpoint).port
        // A notification of the change may come before the reply.
        let reply = exchange(port: tcp, Array((Self.pause + "\r\n").utf8), until: "\"id\":1")
        #expect(reply.contains("\"result\":\"ok\""), "\(reply)")
        #expect(waitUntil(timeout: 3) { l.nowPlaying.state == .paused })
    }

    @Test func theHTTPPortsTakeOnlyJSONAndNotFromAnotherSitesPage() throws {
        let l = try leader(controlOpen: true)
        defer { l.stop() }
        let http = try #require(l.snapcastHTTPEndpoint).port, web = try #require(l.webEndpoint).port
        let status = #"{"jsonrpc":"2.0","id":1,"method":"Server.GetStatus"}"#
        // A cross-site form can send text/plain without asking the browser first: refused.
        let form = httpRequest(port: http, "POST", "/jsonrpc", headers: [("Content-Type", "text/plain")], body: Self.pause)
        #expect(form.hasPrefix("HTTP/1.1 415"), "\(form.prefix(200))")
        let crossSite = httpRequest(port: http, "POST", "/jsonrpc", headers: [("Content-Type", "application/json"), ("Origin", "http://evil.example")], body: Self.pause)
        #expect(crossSite.hasPrefix("HTTP/1.1 403"), "\(crossSite.prefix(200))")
        usleep(300_000)
        #expect(l.nowPlaying.state == .playing, "neither request paused anything")
        // A program (no Origin) and a page of this very host are served.
        let program = httpRequest(port: http, "POST", "/jsonrpc", headers: [("Content-Type", "application/json")], body: status)
        #expect(program.hasPrefix("HTTP/1.1 200") && program.contains("\"server\""), "\(program.prefix(200))")
        let own = httpRequest(port: http, "POST", "/jsonrpc", headers: [("Content-Type", "application/json"), ("Origin", "http://127.0.0.1:\(http)")], body: status)
        #expect(own.hasPrefix("HTTP/1.1 200"), "\(own.prefix(200))")
        // The web app's /api: the same Origin rule.
        let login = #"{"jsonrpc":"2.0","id":1,"method":"auth.status"}"#
        let api = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json"), ("Origin", "http://evil.example")], body: login)
        #expect(api.hasPrefix("HTTP/1.1 403"), "\(api.prefix(200))")
        let apiOwn = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json"), ("Origin", "http://127.0.0.1:\(web)")], body: login)
        #expect(apiOwn.hasPrefix("HTTP/1.1 200") && apiOwn.contains("\"access\""), "\(apiOwn.prefix(200))")
    }
}

/// Any player as a source: a real process writes PCM into a FIFO and every room plays it.
@Suite(.serialized) struct PipeSourceTests {
    @Test func aProcessWritingIntoAFIFOIsHeardAndNoWriterIsNotAnError() throws {
        let dir = makeTemporaryDirectory()
        let fifo = dir + "/airplay"
        #expect(mkfifo(fifo, 0o644) == 0)
        let leader = try startLeader(files: [], codec: .pcm) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        let room = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0), steering: false)
        defer { room.stop() }
        #expect(waitUntil(timeout: 5) { leader.followerNames == ["den"] })
        _ = try leader.perform(.add(uris: ["pipe:\(fifo)?rate=44100&format=s16le&channels=2&name=AirPlay"], next: false))
        _ = try leader.perform(.playIndex(0))
        // Nobody writes yet: waiting, not an error.
        usleep(800_000)
        let waiting = leader.nowPlaying
        #expect(waiting.state != .error && waiting.error == nil, "\(waiting)")
        let control = try #require(leader.controlEndpoint)
        let status = try #require(try ControlClient(endpoint: control).call("player.status").object)
        #expect(status["title"]?.string == "AirPlay")
        // A real process writes 3 s of a 441 Hz tone at 44.1 kHz, in real time, then goes away.
        let writer = try runProgram("/usr/bin/env", ["python3", "-c", """
            import math, struct, sys, time
            f = open(sys.argv[1], "wb", buffering=0)
            start = time.monotonic()
            for block in range(30):
                f.write(b"".join(struct.pack("<hh", v, v) for v in (int(12000 * math.sin(2 * math.pi * 441 * (block * 4410 + i) / 44100)) for i in range(4410))))
                time.sleep(max(0, start + (block + 1) * 0.1 - time.monotonic()))
            """, fifo], timeout: 30)
        #expect(writer.status == 0, "\(writer.err)")
        usleep(1_500_000)
        #expect(leader.nowPlaying.state != .error, "the writer leaving is not an error either")
        // What the room played: the tone, resampled to 48 kHz, at its pitch and level.
        let s = readRaw(dir + "/den.raw")
        let frames = s.count / 2
        let loudFrames = (0..<frames).filter { abs(Int(s[2 * $0])) > 6_000 }
        let (first, last) = (loudFrames.first ?? 0, loudFrames.last ?? 0)
        var crossings = 0
        for i in (first + 1)..<max(first + 2, last) where (s[2 * i - 2] < 0) != (s[2 * i] < 0) { crossings += 1 }
        let seconds = Double(last - first) / 48_000
        #expect(seconds > 2.5 && seconds < 3.3, "\(seconds) s of tone")
        let hz = Double(crossings) / 2 / seconds
        #expect(abs(hz - 441) < 441 * 0.02, "\(hz) Hz")
    }
}
