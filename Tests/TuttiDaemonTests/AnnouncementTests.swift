import Foundation
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiControlKit
import TuttiCore
import TuttiDaemon
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// Announcements as heard: what each room's virtual DAC played while the
/// leader mixed one over the music of some rooms (docs/sound.md "Announcements").
@Suite(.serialized) struct AnnouncementTests {
    static let musicAmplitude = 0.2
    static let toneAmplitude = 0.3
    static let volume = 0.7

    /// Serves the files of a folder on a free loopback port, which it prints first.
    static let fileServerScript = """
    import functools, http.server, sys
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """

    /// A 2 s chime: 1 kHz at 0.3, with a click (4 frames at 0.9) 0.5 s in, to time it by.
    static func chime() -> [Int16] {
        var out: [Int16] = []
        for i in 0..<96_000 {
            let click = (24_000..<24_004).contains(i)
            let v = click ? 0.9 : toneAmplitude * sin(2 * Double.pi * 1_000 * Double(i) / 48_000)
            out.append(sampleToInt16(Float(v))); out.append(sampleToInt16(Float(v)))
        }
        return out
    }

    /// The frame of `path` that left its DAC at monotonic `time` (from its timing log).
    static func frame(at time: Int64, _ path: String, ppm: Double) -> Int? {
        guard let block = readTiming(path).last(where: { $0.time <= time }) else { return nil }
        return block.frame + Int((Double(time - block.time) * 48_000 * (1 + ppm * 1e-6) / 1e9).rounded())
    }

    /// dB of `frequency` on the left output over 0.25 s from `start`, against `reference`.
    static func level(_ samples: [Int16], _ start: Int, _ frequency: Double, _ reference: Double) -> Double {
        20 * log10(max(channelToneAmplitude(samples, channel: 0, start: start, count: 12_000, frequency: frequency), 1e-12) / reference)
    }

    @Test func aChimeOverTheMusicOfTwoRoomsIsHeardInStepWithTheMusicDucked() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/music.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 16, amplitude: Self.musicAmplitude))))
        writeFile(dir + "/chime.wav", wavImage(Self.chime()))
        // The chime by its URL, from a web server on this machine.
        try Self.fileServerScript.write(toFile: dir + "/server.py", atomically: true, encoding: .utf8)
        let server = try BackgroundServer(script: dir + "/server.py", arguments: [dir])
        defer { server.stop() }
        let leader = try startLeader(files: [], codec: .opus) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.allowedFolders = [dir]
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the server is on 127.0.0.1
        }
        defer { leader.stop() }
        let rooms = [("kitchen", -100.0), ("living", 120.0), ("study", 0.0)]
        var followers: [Follower] = []
        for (room, ppm) in rooms {
            followers.append(try startFollower(leader: leader.endpoint, name: room, output: .file(path: "\(dir)/\(room).raw", ppm: ppm, delayMilliseconds: 0)))
        }
        defer { for f in followers { f.stop() } }
        #expect(waitUntilInStep(leader, followers))
        let rpc = try ControlClient(endpoint: leader.controlEndpoint!)
        for (room, _) in rooms { _ = try rpc.call("rooms.set", ["room": .string(room), "volume": 100]) }

        let started = Monotonic.now()
        _ = try leader.perform(.add(uris: [dir + "/music.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        #expect(waitUntilPlayed(rooms.map { "\(dir)/\($0.0).raw" }, through: started + 3_000_000_000))
        let queueBefore = try rpc.call("queue.list")
        let before = try rpc.call("player.status").object
        let asked = Monotonic.now()

        let answer = try rpc.call("announce", ["rooms": ["kitchen", "living"], "url": .string("http://127.0.0.1:\(server.port)/chime.wav"), "volume": .number(Self.volume)]).object
        #expect(answer?["speakers"]?.strings == ["kitchen", "living"])
        #expect(abs((answer?["seconds"]?.number ?? 0) - 2) < 0.001)
        #expect(waitUntilPlayed(rooms.map { "\(dir)/\($0.0).raw" }, through: asked + 4_000_000_000))

        // The group's queue, track and position go on as if nothing happened.
        #expect(try rpc.call("queue.list") == queueBefore)
        let after = try rpc.call("player.status").object
        let elapsed = Double(Monotonic.now() - asked) / 1e9
        let moved = (after?["position"]?.number ?? 0) - (before?["position"]?.number ?? 0)
        #expect(after?["state"]?.string == "playing" && after?["track"] == before?["track"])
        #expect(abs(moved - elapsed) < 0.3, "position moved \(moved) s in \(elapsed) s")
        for f in followers { f.stop() }

        // In step: the chime's click in both rooms (DACs −100 and +120 ppm).
        let kitchenClicks = clickTimes(dir + "/kitchen.raw", ppm: -100, threshold: 16_000)
        let livingClicks = clickTimes(dir + "/living.raw", ppm: 120, threshold: 16_000)
        #expect(kitchenClicks.count == 1 && livingClicks.count == 1, "clicks: \(kitchenClicks.count), \(livingClicks.count)")
        let step = abs((kitchenClicks.first ?? 0) - (livingClicks.first ?? .max / 2))
        print("announcement click, kitchen against living: \(step / 1000) µs")
        #expect(step < 1_000_000, "\(step / 1000) µs apart")

        // The duck in step too: when the music (440 Hz, before the chime starts)
        // first falls below half its level, by each DAC's clock. The 50 ms ramp
        // starts at one frame of the leader's timeline in every room, not
        // at a period boundary of each speaker's own.
        var halfway: [Int64] = []
        for ((room, ppm), click) in zip(rooms.prefix(2), [kitchenClicks.first, livingClicks.first]) {
            let path = "\(dir)/\(room).raw"
            let samples = readRaw(path)
            let chimeStart = try #require(click.flatMap { Self.frame(at: $0, path, ppm: ppm) }) - 24_000
            // Peaks of each half cycle of the music (55 frames), from 150 ms before the chime to its start.
            let half = 55, threshold = Int(0.5 * Self.musicAmplitude * 32_768)
            var at: Int?
            for window in stride(from: chimeStart - 7_200, to: chimeStart - half, by: half) {
                let peak = (window..<(window + half)).map { abs(Int(samples[2 * $0])) }.max() ?? 0
                if peak < threshold { at = window; break }
            }
            let frame = try #require(at, "\(room): the music did not duck before the chime")
            halfway.append(try #require(leaveTime(ofFrame: frame, timing: readTiming(path), ppm: ppm)))
            print("\(room): the music half down \(chimeStart - frame) frames before the chime")
        }
        let duckApart = abs(halfway[0] - halfway[1])
        print("duck, kitchen against living: half down \(Double(duckApart) / 1e6) ms apart")
        // Half-cycle windows: 1.15 ms of resolution; a period late in one room was 9–29 ms.
        #expect(duckApart < 3_000_000, "the duck is \(Double(duckApart) / 1e6) ms apart")

        // Levels around the chime in each room that heard it.
        let music = Self.musicAmplitude, tone = Self.toneAmplitude * Self.volume
        for ((room, ppm), click) in zip(rooms.prefix(2), [kitchenClicks.first, livingClicks.first]) {
            let path = "\(dir)/\(room).raw"
            let samples = readRaw(path)
            let clickFrame = try #require(click.flatMap { Self.frame(at: $0, path, ppm: ppm) })
            let start = clickFrame - 24_000, end = start + 96_000
            let baseline = Self.level(samples, start - 60_000, 440, music)
            let during = max(Self.level(samples, start + 30_000, 440, music), Self.level(samples, start + 54_000, 440, music))
            let back = Self.level(samples, end + 12_000, 440, music)
            let chimeLevel = Self.level(samples, start + 30_000, 1_000, tone)
            print(String(format: "%@: music %+.2f dB before, %+.2f dB during, %+.2f dB 0.25–0.5 s after; chime %+.2f dB", room, baseline, during, back, chimeLevel))
            #expect(abs(baseline) < 0.5, "\(room) music before: \(baseline) dB")
            #expect(during - baseline <= -15, "\(room) music during the chime: \(during - baseline) dB")
            #expect(abs(back - baseline) < 1, "\(room) music after the chime: \(back - baseline) dB")
            #expect(abs(chimeLevel) < 1, "\(room) chime: \(chimeLevel) dB")
        }

        // The third room: the music alone, at one level throughout.
        let study = readRaw(dir + "/study.raw")
        let at = try #require(kitchenClicks.first.flatMap { Self.frame(at: $0, dir + "/study.raw", ppm: 0) })
        let studyLevels = stride(from: at - 84_000, to: at + 96_000, by: 12_000).map { Self.level(study, $0, 440, music) }
        let studyChime = stride(from: at - 84_000, to: at + 96_000, by: 12_000).map { Self.level(study, $0, 1_000, tone) }
        print(String(format: "study: music %+.2f…%+.2f dB, chime at most %.1f dB", studyLevels.min()!, studyLevels.max()!, studyChime.max()!))
        #expect(studyLevels.allSatisfy { abs($0) < 0.5 }, "study music: \(studyLevels)")
        #expect(studyChime.allSatisfy { $0 < -60 }, "study heard the chime: \(studyChime)")
        #expect(clickTimes(dir + "/study.raw", ppm: 0, threshold: 16_000).isEmpty)
    }

    /// Home Assistant's `rest_command` (docs/sound.md): the exact request,
    /// with curl, to the leader's `/api` with a Bearer token; the text
    /// spoken by espeak-ng in two silent rooms, which play it alone, in step.
    @Test func homeAssistantsRequestSpeaksTextInTwoSilentRoomsInStep() throws {
        let dir = makeTemporaryDirectory()
        let password = "kitchen-secret-42"
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
            c.password = password
            c.passwordOnLoopback = true // loopback stands for Home Assistant on another machine
        }
        defer { leader.stop() }
        let rooms = [("kitchen", -100.0), ("living", 120.0)]
        var followers: [Follower] = []
        for (room, ppm) in rooms {
            followers.append(try startFollower(leader: leader.endpoint, name: room, output: .file(path: "\(dir)/\(room).raw", ppm: ppm, delayMilliseconds: 0)))
        }
        defer { for f in followers { f.stop() } }
        #expect(waitUntilInStep(leader, followers))
        let web = try #require(leader.webEndpoint).port
        let login = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json")],
                                body: #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"password":"kitchen-secret-42"}}"#)
        let token = try #require(login.firstMatch(of: /"token":"([0-9a-f]{64})"/)?.1).description

        // As docs/sound.md's rest_command sends it (content_type, the Authorization header, the JSON-RPC body).
        let asked = Monotonic.now()
        let body = #"{"jsonrpc":"2.0","id":1,"method":"announce","params":{"rooms":["kitchen","living"],"text":"Dinner is ready","lang":"en"}}"#
        let curl = try runProgram("/usr/bin/curl", ["-s", "-X", "POST", "-H", "Authorization: Bearer \(token)", "-H", "Content-Type: application/json",
                                                    "-d", body, "http://127.0.0.1:\(web)/api"], timeout: 30)
        #expect(curl.status == 0)
        #expect(curl.out.contains(#""speakers":["kitchen","living"]"#), "\(curl.out)")
        // Without the token: refused, nothing said.
        let anonymous = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json")], body: body)
        #expect(!anonymous.contains("speakers") && anonymous.contains("-32001"), "\(anonymous)")
        // Korean has a voice too.
        let korean = try runProgram("/usr/bin/curl", ["-s", "-X", "POST", "-H", "Authorization: Bearer \(token)", "-H", "Content-Type: application/json",
                                                      "-d", #"{"jsonrpc":"2.0","id":2,"method":"announce","params":{"rooms":["kitchen"],"text":"저녁 먹어요","lang":"ko"}}"#,
                                                      "http://127.0.0.1:\(web)/api"], timeout: 30)
        #expect(korean.out.contains(#""speakers":["kitchen"]"#), "\(korean.out)")
        let seconds = (try JSONValue.parse(Array(curl.out.utf8))).object?["result"]?.object?["seconds"]?.number ?? 0
        #expect(seconds > 0.5 && seconds < 5, "\(seconds) s of speech")
        #expect(waitUntilPlayed(rooms.map { "\(dir)/\($0.0).raw" }, through: asked + Int64((seconds + 2) * 1e9), timeout: 20))
        for f in followers { f.stop() }

        // The speech starts at the same instant in both rooms (silent before: nothing else played).
        var onsets: [Int64] = []
        for (room, ppm) in rooms {
            let path = "\(dir)/\(room).raw"
            let samples = readRaw(path)
            var first: Int?
            for i in 0..<(samples.count / 2) where abs(Int(samples[2 * i])) > 300 { first = i; break }
            let frame = try #require(first, "\(room) played no speech")
            onsets.append(try #require(leaveTime(ofFrame: frame, timing: readTiming(path), ppm: ppm)))
        }
        let step = abs(onsets[0] - onsets[1])
        print("spoken announcement onset, kitchen against living: \(step / 1000) µs")
        #expect(step < 1_000_000, "\(step / 1000) µs apart")
    }
}

extension AnnouncementTests {
    /// A speaker too old to mix one is skipped and named in the result (the
    /// doorbell still rings in the rest of the house); refused, naming it,
    /// only when it is all there is.
    @Test func aSpeakerTooOldIsSkippedAndNamed() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/chime.wav", wavImage(Self.chime()))
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.allowedFolders = [dir]
        }
        defer { leader.stop() }
        let new = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dir + "/k.raw", ppm: 0, delayMilliseconds: 0))
        let old = try startFollower(leader: leader.endpoint, name: "study", output: .file(path: dir + "/s.raw", ppm: 0, delayMilliseconds: 0)) { c in
            c.protocolVersion = WireProtocol.channelMapVersion
        }
        defer { new.stop(); old.stop() }
        #expect(waitUntilInStep(leader, [new, old]))
        let rpc = try ControlClient(endpoint: leader.controlEndpoint!)
        func refusal(_ params: [String: JSONValue]) -> String {
            do { _ = try rpc.call("announce", params); return "accepted" } catch { return "\(error)" }
        }
        let all = try rpc.call("announce", ["rooms": "all", "url": .string(dir + "/chime.wav")]).object
        #expect(all?["speakers"]?.strings == ["kitchen"], "\(String(describing: all))")
        #expect(all?["cannotMix"]?.strings == ["study (protocol v8)"], "\(String(describing: all))")
        #expect(refusal(["rooms": ["study"], "url": .string(dir + "/chime.wav")])
            .contains("these speakers cannot play announcements: study (protocol v8)"))
        // The old speaker was sent nothing (no overlay reaches a v8 speaker): its DAC stays silent while the kitchen's rings.
        let asked = Monotonic.now()
        #expect(waitUntilPlayed([dir + "/k.raw", dir + "/s.raw"], through: asked + 3_000_000_000, timeout: 20))
        let kitchenPeak = readRaw(dir + "/k.raw").map { abs(Int($0)) }.max() ?? 0, studyPeak = readRaw(dir + "/s.raw").map { abs(Int($0)) }.max() ?? 0
        print("announce all with a v8 speaker: kitchen peak \(kitchenPeak), study peak \(studyPeak)")
        #expect(kitchenPeak > 1_000 && studyPeak == 0, "kitchen \(kitchenPeak), study \(studyPeak)")
        // Outside the music folders: refused like a queue.add.
        let outside = refusal(["rooms": ["kitchen"], "url": "/etc/passwd"])
        #expect(outside.contains("/etc/passwd") && outside != "accepted", "\(outside)")
        #expect(refusal(["rooms": ["attic"], "text": "hi"]).hasPrefix("no room 'attic'"))
        // The kitchen alone: heard.
        let ok = try rpc.call("announce", ["rooms": ["kitchen"], "url": .string(dir + "/chime.wav")]).object
        #expect(ok?["speakers"]?.strings == ["kitchen"])
    }
}
