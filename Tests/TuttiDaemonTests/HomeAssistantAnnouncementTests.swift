import Foundation
import Testing
import TuttiAudio
import TuttiControlKit
import TuttiCore
import TuttiDaemon
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// Home Assistant's route for announcements, end to end, as docs/sound.md
/// sets it up: the `rest_command` and the automation are read from the page
/// itself and rendered with Jinja2 (Home Assistant's template engine, whose
/// `tojson` escapes `'`, `<`, `&` and every non-ASCII letter as `\uXXXX`),
/// the `!secret` bearer token from `auth.login`, and the request sent as
/// Home Assistant sends it (Tests/HomeAssistant/rest_command.py). Music
/// plays in three rooms; the text is spoken by espeak-ng in two of them.
///
/// The music is a 15 kHz tone: espeak-ng speaks at 22.05 kHz, so nothing
/// of the speech reaches 15 kHz, and the tone's level is the music's level
/// while the speech plays over it.
@Suite(.serialized) struct HomeAssistantAnnouncementTests {
    static let music = 0.2
    static let tone = 15_000.0

    /// The 15 kHz tone's amplitude on the left output over `count` frames from `start`.
    static func toneLevel(_ samples: [Int16], _ start: Int, count: Int) -> Double {
        guard start >= 0, start + count <= samples.count / 2 else { return .nan }
        return channelToneAmplitude(samples, channel: 0, start: start, count: count, frequency: tone) / music
    }

    static func dB(_ ratio: Double) -> Double { 20 * log10(max(ratio, 1e-9)) }

    @Test func theDocumentedRestCommandSpeaksOverTheMusicOfTwoRoomsDuckedAndInStep() throws {
        let deps = try runProgram("/usr/bin/python3", ["-c", "import jinja2, yaml"], mergeErrors: true)
        try #require(deps.status == 0, "python3-jinja2 and python3-yaml are missing for /usr/bin/python3: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/music.wav", wavImage(quantize(TestSignal.sine(frequency: Self.tone, seconds: 30, amplitude: Self.music))))
        let password = "doorbell-secret-7"
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
            c.password = password
            c.passwordOnLoopback = true // loopback stands for Home Assistant on another machine
            c.allowedFolders = [dir]
        }
        defer { leader.stop() }
        let rooms = [("kitchen", -100.0), ("living", 120.0), ("study", 0.0)]
        var followers: [Follower] = []
        for (room, ppm) in rooms {
            followers.append(try startFollower(leader: leader.endpoint, name: room, output: .file(path: "\(dir)/\(room).raw", ppm: ppm, delayMilliseconds: 0)))
        }
        defer { for f in followers { f.stop() } }
        #expect(waitUntilInStep(leader, followers))
        for (room, _) in rooms { leader.configure(room: room, RoomSettings(volume: 100, muted: false, latencyTrimNanoseconds: 0)) }
        let started = Monotonic.now()
        _ = try leader.perform(.add(uris: [dir + "/music.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        #expect(waitUntilPlayed(rooms.map { "\(dir)/\($0.0).raw" }, through: started + 3_000_000_000))
        let queueBefore = leader.queue.entries.map(\.uri), before = leader.nowPlaying, beforeAt = Monotonic.now()

        let web = try #require(leader.webEndpoint).port
        let login = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json")],
                                body: #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"password":"doorbell-secret-7"}}"#)
        let token = try #require(login.firstMatch(of: /"token":"([0-9a-f]{64})"/)?.1).description

        // Home Assistant runs the automation: the document's rooms, a message that needs escaping.
        let message = #"Dinner's "ready" <now> & hot"#
        let asked = Monotonic.now()
        let ha = try runProgram("/usr/bin/python3", [WebAppTests.repository + "/Tests/HomeAssistant/rest_command.py",
                                                     "--doc", WebAppTests.repository + "/docs/sound.md", "--host", "127.0.0.1:\(web)",
                                                     "--secret", "tutti_bearer=Bearer \(token)", "--message", message], mergeErrors: true, timeout: 60)
        #expect(ha.status == 0, "\(ha.out)")
        let sent = try #require(JSONValue.parsing(ha.out), "\(ha.out)")
        let payload = sent["payload"]?.string ?? ""
        print("Home Assistant sent: \(payload)")
        #expect(payload.contains(#"Dinner\u0027s \"ready\" \u003cnow\u003e \u0026 hot"#), "Jinja2's tojson escapes as Home Assistant's does: \(payload)")
        #expect(sent["status"]?.integer == 200)
        let result = try #require(sent["response"]?["result"], "\(ha.out)")
        #expect(result["speakers"]?.strings == ["kitchen", "living"])
        let seconds = result["seconds"]?.number ?? 0
        #expect(seconds > 1 && seconds < 6, "\(seconds) s of speech")
        #expect(waitUntilPlayed(rooms.map { "\(dir)/\($0.0).raw" }, through: asked + Int64((seconds + 3.5) * 1e9), timeout: 20))

        // The group's queue, track and position go on as if nothing happened.
        let after = leader.nowPlaying, elapsed = Double(Monotonic.now() - beforeAt) / 1e9
        #expect(leader.queue.entries.map(\.uri) == queueBefore && after.state == .playing && after.track == before.track)
        let moved = after.positionSeconds - before.positionSeconds
        #expect(abs(moved - elapsed) < 0.3, "position moved \(moved) s in \(elapsed) s")
        for f in followers { f.stop() }

        // Each room's music level in 10 ms windows, from 1 s before the request to 3.5 s after the speech.
        var onsets: [String: Int64] = [:]
        for (room, ppm) in rooms {
            let path = "\(dir)/\(room).raw", samples = readRaw(path), timing = readTiming(path)
            let first = try #require(AnnouncementTests.frame(at: asked - 1_000_000_000, path, ppm: ppm))
            let last = try #require(AnnouncementTests.frame(at: asked + Int64((seconds + 3.5) * 1e9), path, ppm: ppm))
            let windows = stride(from: first, to: last - 480, by: 480).map { ($0, Self.dB(Self.toneLevel(samples, $0, count: 480))) }
            let ducked = windows.filter { $0.1 < -10 }
            if room == "study" {
                let range = (windows.map(\.1).min()!, windows.map(\.1).max()!)
                let loudest = samples[(2 * first)..<(2 * last)].map { abs(Int($0)) }.max() ?? 0
                print(String(format: "study: music %+.2f…%+.2f dB throughout, loudest sample %.3f", range.0, range.1, Double(loudest) / 32768))
                #expect(abs(range.0) < 0.5 && abs(range.1) < 0.5, "study's music moved: \(range)")
                #expect(Double(loudest) / 32768 < Self.music * 1.05, "study heard the speech")
                continue
            }
            let duckStart = try #require(ducked.first?.0, "\(room)'s music was never ducked"), duckEnd = ducked.last!.0 + 480
            let baseline = windows.filter { $0.0 < duckStart - 4_800 }.map(\.1)
            // During: from 0.1 s into the speech to its end, every 10 ms of music at least 15 dB down.
            let speechEnd = duckStart + Int(seconds * 48_000)
            let during = windows.filter { $0.0 >= duckStart + 4_800 && $0.0 + 480 <= speechEnd }.map(\.1)
            // After: from 0.5 s after the speech ended, back at its level.
            let back = windows.filter { $0.0 >= speechEnd + 24_000 }.map(\.1)
            let speech = samples[(2 * (duckStart + 4_800))..<(2 * speechEnd)].map { abs(Int($0)) }.max() ?? 0
            print(String(format: "%@: music %+.2f dB before, at most %+.2f dB during the speech (%.2f s ducked for %.2f s of speech), %+.2f…%+.2f dB from 0.5 s after; speech peak %.3f",
                         room, baseline.max() ?? .nan, during.max() ?? .nan, Double(duckEnd - duckStart) / 48_000, seconds,
                         back.min() ?? .nan, back.max() ?? .nan, Double(speech) / 32768))
            #expect(baseline.count > 50 && baseline.allSatisfy { abs($0) < 0.5 }, "\(room) music before: \(baseline.min() ?? .nan)…\(baseline.max() ?? .nan) dB")
            #expect(during.count > 50 && during.allSatisfy { $0 <= -15 }, "\(room) music during the speech: up to \(during.max() ?? .nan) dB")
            #expect(back.count > 50 && back.allSatisfy { abs($0) < 0.5 }, "\(room) music 0.5 s after the speech: \(back.min() ?? .nan)…\(back.max() ?? .nan) dB")
            #expect(abs(Double(duckEnd - duckStart) / 48_000 - seconds) < 0.4, "\(room) ducked \(Double(duckEnd - duckStart) / 48_000) s for \(seconds) s")
            #expect(Double(speech) / 32768 > 2 * Self.music * 0.1, "\(room): no speech over the ducked music")
            // When the speech starts: the mean of 16 frames (five periods of the tone) cancels the music and keeps the voice.
            var onset: Int?
            var sum = 0
            let from = max(0, duckStart - 9_600)
            for f in from..<(from + 16) { sum += Int(samples[2 * f]) }
            for f in from..<(duckStart + 24_000) {
                if abs(sum) > 300 * 16 { onset = f; break }
                sum += Int(samples[2 * (f + 16)]) - Int(samples[2 * f])
            }
            let at = try #require(onset.flatMap { leaveTime(ofFrame: $0, timing: timing, ppm: ppm) }, "\(room): no speech onset")
            onsets[room] = at
            print("\(room): speech from frame \(onset!) (duck window from \(duckStart)), leaving its DAC at \(at) ns")
        }
        let step = abs((onsets["kitchen"] ?? 0) - (onsets["living"] ?? .max / 2))
        print("Home Assistant's announcement: the speech started in the kitchen and the living room \(step / 1000) µs apart")
        #expect(step < 1_000_000, "\(step / 1000) µs apart")
    }
}
