import Foundation
import Testing
import TuttiAudio
import TuttiControlKit
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// Tuning rooms from the web app in real Chromium: two speakers on file
/// DACs (7 ms apart after their DACs, one trimmed 3 ms) play the sweeps; a
/// recording is synthesised from what their DACs played (acoustic delays
/// 2.9 and 11.3 ms, reverb, noise at 20 dB SNR, CalibrationPlayTests'
/// synthesis) and fed to `getUserMedia` by Chromium's fake capture device.
/// The page (#/tune) plays the sweeps again, records, uploads to the
/// leader, shows each room's delay, applies the trims and the Tuned EQ,
/// and does the same from the file input; axe-core finds nothing on the
/// screen, which works from the keyboard (Tests/Web/tune_test.py).
@Suite(.serialized) struct TuneRoomsWebTests {
    static let rate = 48_000

    @Test func thePhoneFindsTheRoomsDelaysInChromiumAndApplies() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let axe = try runProgram("/usr/bin/python3", ["-c", "import axe_selenium_python"], mergeErrors: true)
        try #require(axe.status == 0, "axe-selenium-python is missing for /usr/bin/python3: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: WebAppTests.repository + "/web")
        }
        defer { leader.stop() }
        let port = try #require(leader.controlEndpoint?.port), web = try #require(leader.webEndpoint)
        let a = try startFollower(leader: leader.endpoint, name: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        let b = try startFollower(leader: leader.endpoint, name: "b", output: .file(path: dir + "/b.raw", ppm: 0, delayMilliseconds: 7))
        defer { a.stop(); b.stop() }
        #expect(waitUntilInStep(leader, [a, b], timeout: 20))
        leader.configure(room: "b", RoomSettings(volume: 100, muted: false, latencyTrimNanoseconds: 3_000_000))

        // The sweeps once, as the phone will hear them: the DACs' output, placed in the room.
        let synthesis = CalibrationPlayTests()
        var rng = SplitMix64(seed: 11)
        func reverb() -> [(Int, Double)] {
            (0..<20).map { _ in
                let after = 0.002 + rng.unit() * 0.3
                return (Int(after * Double(Self.rate)), 0.5 * pow(10, -3 * after / 0.3) * (rng.unit() < 0.5 ? -1 : 1))
            }
        }
        let rooms = [CalibrationPlayTests.Acoustics(path: dir + "/a.raw", delay: 0.0029, reflections: reverb()),
                     CalibrationPlayTests.Acoustics(path: dir + "/b.raw", delay: 0.0113, reflections: reverb())]
        let played = try runTutti(port: port, ["--json", "calibrate", "--play", "a,b"])
        #expect(played.status == 0, "\(played.out)")
        let plan = try #require(synthesis.jsonDocument(played.out).flatMap { CalibrationPlan(json: $0) }, "\(played.out)")
        let start = try #require(plan.startLeaderNanoseconds)
        // Half a second before the first sweep to 0.6 s after the last (Chromium starts the file when the page opens the microphone).
        let from = start - 500_000_000, seconds = plan.duration + 1.1
        #expect(waitUntilPlayed(rooms.map(\.path), through: from + Int64(seconds * 1e9)))
        var arrivals: [String: Double] = [:]
        for (room, name) in zip(rooms, ["a", "b"]) {
            let slotStart = start + Int64(plan.slots.firstIndex(of: name)!) * plan.slotNanoseconds
            let left = try #require(synthesis.sweepStart(room.path, near: slotStart), "room \(name) played no sweep")
            arrivals[name] = left + room.delay * 1e9 - Double(slotStart)
        }
        let truth = (arrivals["b"]! - arrivals["a"]!) / 1e6
        let recording = synthesis.synthesise(rooms, from: from, seconds: seconds, level: 0.25, snr: 20, seed: 3)
        // 16-bit PCM: what every Chromium's fake capture device reads.
        writeFile(dir + "/phone.wav", wavImage(recording.map { sampleToInt16($0) }, rate: Self.rate, channels: 1))
        #expect(waitUntil(timeout: 10) { !leader.calibrationRunning })

        var args = [WebAppTests.repository + "/Tests/Web/tune_test.py", "--url", "http://127.0.0.1:\(web.port)",
                    "--control-port", String(port), "--recording", dir + "/phone.wav", "--rooms", "a,b",
                    "--truth-ms", String(truth)]
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"] { args += ["--screenshots", shots] }
        let r = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 300)
        print("tune: b after a by \(truth) ms at the listening spot (from the DACs)\n\(r.out)")
        #expect(r.status == 0 && r.out.contains("all checks passed"), "the Tune rooms browser test failed:\n\(r.out)")
        // Applied from the page: room a delayed by the difference, b kept, a Tuned preset in each.
        #expect(leader.settings(of: "b").latencyTrimNanoseconds == 3_000_000)
        let trimA = Double(leader.settings(of: "a").latencyTrimNanoseconds) / 1e6
        #expect(abs(trimA + truth) < 0.1, "trim a \(trimA) ms, b after a by \(truth) ms")
        for room in ["a", "b"] { #expect(leader.equalizer(of: room).preset?.hasPrefix("Tuned ") == true) }
    }

    /// A stereo pair tuned from the phone: ticked as one room, its two
    /// speakers play their sweeps one after the other; the page shows one
    /// card with a Left and a Right row, finds the right speaker's delay after
    /// the left's within 0.1 ms, and Apply trims each speaker by its own name
    /// (the right, 7 ms late after its DAC and trimmed 3 ms, keeps its trim)
    /// and sets one Tuned EQ on the pair (`tune_test.py --pair-only`).
    @Test func aStereoPairIsTunedFromThePhoneAsOneRoomWithTwoSides() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let axe = try runProgram("/usr/bin/python3", ["-c", "import axe_selenium_python"], mergeErrors: true)
        try #require(axe.status == 0, "axe-selenium-python is missing for /usr/bin/python3: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: WebAppTests.repository + "/web")
        }
        defer { leader.stop() }
        let port = try #require(leader.controlEndpoint?.port), web = try #require(leader.webEndpoint)
        let l = try startFollower(leader: leader.endpoint, name: "sofa-l", output: .file(path: dir + "/l.raw", ppm: 0, delayMilliseconds: 0))
        let r = try startFollower(leader: leader.endpoint, name: "sofa-r", output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 7))
        defer { l.stop(); r.stop() }
        #expect(waitUntilInStep(leader, [l, r], timeout: 20))
        _ = try leader.pair(left: "sofa-l", right: "sofa-r", name: "Sofa")
        leader.configure(room: "sofa-r", RoomSettings(volume: 100, muted: false, latencyTrimNanoseconds: 3_000_000))

        let synthesis = CalibrationPlayTests()
        var rng = SplitMix64(seed: 13)
        func reverb() -> [(Int, Double)] {
            (0..<20).map { _ in
                let after = 0.002 + rng.unit() * 0.3
                return (Int(after * Double(Self.rate)), 0.5 * pow(10, -3 * after / 0.3) * (rng.unit() < 0.5 ? -1 : 1))
            }
        }
        let speakers = [CalibrationPlayTests.Acoustics(path: dir + "/l.raw", delay: 0.0041, reflections: reverb()),
                        CalibrationPlayTests.Acoustics(path: dir + "/r.raw", delay: 0.0113, reflections: reverb())]
        let played = try runTutti(port: port, ["--json", "calibrate", "--play", "Sofa"])
        #expect(played.status == 0, "\(played.out)")
        let plan = try #require(synthesis.jsonDocument(played.out).flatMap { CalibrationPlan(json: $0) }, "\(played.out)")
        #expect(plan.slots == ["sofa-l", "sofa-r", "sofa-l"])
        let start = try #require(plan.startLeaderNanoseconds)
        let from = start - 500_000_000, seconds = plan.duration + 1.1
        #expect(waitUntilPlayed(speakers.map(\.path), through: from + Int64(seconds * 1e9)))
        var arrivals: [String: Double] = [:]
        for (speaker, name) in zip(speakers, ["sofa-l", "sofa-r"]) {
            let slotStart = start + Int64(plan.slots.firstIndex(of: name)!) * plan.slotNanoseconds
            let left = try #require(synthesis.sweepStart(speaker.path, near: slotStart), "\(name) played no sweep")
            arrivals[name] = left + speaker.delay * 1e9 - Double(slotStart)
        }
        let truth = (arrivals["sofa-r"]! - arrivals["sofa-l"]!) / 1e6
        let recording = synthesis.synthesise(speakers, from: from, seconds: seconds, level: 0.25, snr: 20, seed: 5)
        writeFile(dir + "/phone.wav", wavImage(recording.map { sampleToInt16($0) }, rate: Self.rate, channels: 1))
        #expect(waitUntil(timeout: 10) { !leader.calibrationRunning })

        var args = [WebAppTests.repository + "/Tests/Web/tune_test.py", "--url", "http://127.0.0.1:\(web.port)",
                    "--control-port", String(port), "--recording", dir + "/phone.wav", "--rooms", "Sofa",
                    "--truth-ms", String(truth), "--pair-only"]
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"] { args += ["--screenshots", shots + "/pair"] }
        let run = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 300)
        print("tune a pair: sofa-r after sofa-l by \(truth) ms at the listening spot (from the DACs)\n\(run.out)")
        #expect(run.status == 0 && run.out.contains("all checks passed"), "the Tune rooms browser test of a pair failed:\n\(run.out)")
        #expect(leader.settings(of: "sofa-r").latencyTrimNanoseconds == 3_000_000)
        let trimL = Double(leader.settings(of: "sofa-l").latencyTrimNanoseconds) / 1e6
        #expect(abs(trimL + truth) < 0.1, "trim of sofa-l \(trimL) ms, sofa-r after sofa-l by \(truth) ms")
        #expect(leader.equalizer(of: "Sofa").preset?.hasPrefix("Tuned ") == true)
        #expect(leader.stereoPairList == [StereoPair(name: "Sofa", left: "sofa-l", right: "sofa-r")])
    }
}
