import Foundation
import Testing
import TuttiAudio
import TuttiControlKit
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// Tuning rooms end to end: `tutti calibrate --play` in two real speakers on
/// file DACs (different DAC delays and trims), a recording synthesised from
/// what each DAC actually played and when (acoustic delays, a reverb tail,
/// noise at 20 dB SNR), `tutti calibrate --analyse --apply`, then again.
@Suite(.serialized) struct CalibrationPlayTests {
    static let rate = 48_000

    /// A room as heard at the listening spot.
    struct Acoustics {
        var path: String
        var delay: Double
        var reflections: [(samples: Int, gain: Double)]
    }

    /// The recording from leader time `from` for `seconds`: each room's DAC
    /// output placed at its leave time plus its acoustic delay (windowed-sinc
    /// fractional delay), its reflections, and noise `snr` dB under a sweep
    /// at `level` (a fraction of full scale, as recorded).
    func synthesise(_ rooms: [Acoustics], from: Int64, seconds: Double, level: Double, snr: Double, seed: UInt64) -> [Float] {
        let count = Int(seconds * Double(Self.rate))
        var out = [Double](repeating: 0, count: count)
        let taps = 16
        for room in rooms {
            let samples = readRaw(room.path), timing = readTiming(room.path)
            var direct = [Double](repeating: 0, count: count)
            for frame in 0..<(samples.count / 2) where samples[2 * frame] != 0 {
                guard let left = leaveTime(ofFrame: frame, timing: timing, ppm: 0) else { continue }
                let position = Double(left - from) / 1e9 * Double(Self.rate) + room.delay * Double(Self.rate)
                guard position > Double(taps), position < Double(count - taps - 1) else { continue }
                let v = 0.5 * Double(samples[2 * frame]) / 32768 // the microphone's gain: −6 dB
                let base = Int(position.rounded(.down))
                for n in (base - taps + 1)...(base + taps) {
                    let x = Double(n) - position
                    let sinc = x == 0 ? 1 : sin(Double.pi * x) / (Double.pi * x)
                    let window = 0.42 + 0.5 * cos(Double.pi * x / Double(taps)) + 0.08 * cos(2 * Double.pi * x / Double(taps))
                    direct[n] += v * sinc * window
                }
            }
            for n in 0..<count { out[n] += direct[n] }
            for r in room.reflections {
                for n in r.samples..<count { out[n] += r.gain * direct[n - r.samples] }
            }
        }
        var rng = SplitMix64(seed: seed)
        let sigma = level / 2.0.squareRoot() * pow(10, -snr / 20)
        for n in 0..<count {
            let u = max(rng.unit(), 1e-300), v = rng.unit()
            out[n] += sigma * (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
        }
        return out.map { Float($0) }
    }

    func writeFloatWAV(_ path: String, _ samples: [Float]) {
        var bytes = wavHeader(sampleRate: Self.rate, channels: 1, bitsPerSample: 32, float: true, dataBytes: samples.count * 4)
        samples.withUnsafeBytes { bytes.append(contentsOf: $0) }
        writeFile(path, bytes)
    }

    /// When slot `slot`'s sweep started leaving a room's DAC: the first frame
    /// over a threshold in the output, less where that frame is in the sweep.
    func sweepStart(_ path: String, near expected: Int64) -> Double? {
        let sweep = CalibrationSweep.standard.samples(sampleRate: Self.rate, amplitude: 0.5).map { sampleToInt16(Float($0)) }
        guard let k0 = sweep.firstIndex(where: { abs(Int($0)) >= 1_000 }) else { return nil }
        let samples = readRaw(path), timing = readTiming(path)
        for frame in 0..<(samples.count / 2) where abs(Int(samples[2 * frame])) >= 1_000 {
            guard let t = leaveTime(ofFrame: frame, timing: timing, ppm: 0), abs(t - expected) < 500_000_000 else { continue }
            return Double(t) - Double(k0) / Double(Self.rate) * 1e9
        }
        return nil
    }

    /// The JSON document `tutti --json` printed (from the first line that opens one).
    func jsonDocument(_ output: String) -> JSONValue? {
        guard let start = output.range(of: "\n{")?.lowerBound ?? (output.hasPrefix("{") ? output.startIndex : nil) else { return nil }
        return JSONValue.parsing(String(output[start...]))
    }

    struct Run {
        var plan: CalibrationPlan
        var analysis: JSONValue
        /// Each room's true arrival at the listening spot less its slot's start (ns), from the DAC's output.
        var arrivals: [String: Double]
    }

    /// `names` are the rooms asked for; `speakers` (default: the same) name each of `rooms`' speakers, a pair's two apart.
    func calibrate(port: UInt16, dir: String, rooms: [Acoustics], names: [String], speakers: [String]? = nil, apply: Bool, round: Int) throws -> Run {
        let played = try runTutti(port: port, ["--json", "calibrate", "--play", names.joined(separator: ",")])
        #expect(played.status == 0, "\(played.out)")
        let planJSON = try #require(jsonDocument(played.out), "\(played.out)")
        let plan = try #require(CalibrationPlan(json: planJSON), "\(played.out)")
        let start = try #require(plan.startLeaderNanoseconds)
        let from = start - 300_000_000, seconds = plan.duration + 0.6
        #expect(waitUntilPlayed(rooms.map(\.path), through: from + Int64(seconds * 1e9)))
        var arrivals: [String: Double] = [:]
        for (room, name) in zip(rooms, speakers ?? names) {
            let slot = plan.slots.firstIndex(of: name)!
            let slotStart = start + Int64(slot) * plan.slotNanoseconds
            let left = try #require(sweepStart(room.path, near: slotStart), "room \(name) played no sweep")
            arrivals[name] = left + room.delay * 1e9 - Double(slotStart)
        }
        let recording = synthesise(rooms, from: from, seconds: seconds, level: 0.25, snr: 20, seed: UInt64(round))
        let path = dir + "/recording-\(round).wav"
        writeFloatWAV(path, recording)
        let analysed = try runTutti(port: port, ["--json", "calibrate", "--analyse", path, "--rooms", names.joined(separator: ",")] + (apply ? ["--apply"] : []))
        #expect(analysed.status == 0, "\(analysed.out)")
        let analysis = try #require(jsonDocument(analysed.out), "\(analysed.out)")
        return Run(plan: plan, analysis: analysis, arrivals: arrivals)
    }

    @Test func delaysFoundWithinATenthOfAMillisecondAndTrimsLineTheRoomsUp() throws {
        let dir = makeTemporaryDirectory()
        // Music in the main group: paused while the sweeps play, and back after.
        writeFile(dir + "/music.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 60, amplitude: 0.01).flatMap { [$0, $0] })))
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.allowedFolders = [dir]
        }
        defer { leader.stop() }
        let port = try #require(leader.controlEndpoint?.port)
        // Room a: a DAC with no delay after it. Room b: 7 ms after its DAC, trimmed 3 ms.
        let a = try startFollower(leader: leader.endpoint, name: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        let b = try startFollower(leader: leader.endpoint, name: "b", output: .file(path: dir + "/b.raw", ppm: 0, delayMilliseconds: 7))
        defer { a.stop(); b.stop() }
        #expect(waitUntilInStep(leader, [a, b], timeout: 20))
        leader.configure(room: "b", RoomSettings(volume: 100, muted: false, latencyTrimNanoseconds: 3_000_000))
        _ = try leader.perform(.add(uris: [dir + "/music.wav"], next: false))
        _ = try leader.perform(.play)
        #expect(waitUntil(timeout: 10) { leader.nowPlaying.positionSeconds > 0.5 })
        let groupsBefore = leader.groups.map { "\($0.id):\($0.rooms)" }

        var rng = SplitMix64(seed: 5)
        func reverb() -> [(Int, Double)] {
            (0..<20).map { _ in
                let after = 0.002 + rng.unit() * 0.3
                return (Int(after * Double(Self.rate)), 0.5 * pow(10, -3 * after / 0.3) * (rng.unit() < 0.5 ? -1 : 1))
            }
        }
        let rooms = [Acoustics(path: dir + "/a.raw", delay: 0.0029, reflections: reverb()),
                     Acoustics(path: dir + "/b.raw", delay: 0.0113, reflections: reverb())]
        let resyncs = leader.health["a"]?.hardResyncs ?? 0
        let first = try calibrate(port: port, dir: dir, rooms: rooms, names: ["a", "b"], apply: true, round: 1)

        // Everything as it was: groups, settings, the music playing.
        #expect(leader.groups.map { "\($0.id):\($0.rooms)" } == groupsBefore)
        #expect(!leader.settings(of: "a").muted && !leader.settings(of: "b").muted)
        #expect(waitUntil(timeout: 5) { leader.nowPlaying.state == .playing })
        #expect(leader.queue.entries.map(\.uri) == [dir + "/music.wav"])

        let measured = try #require(first.analysis["rooms"]?.array)
        #expect(first.analysis["usable"]?.bool == true, "\(first.analysis.serialized)")
        let delays = Dictionary(uniqueKeysWithValues: measured.compactMap { r in r["room"]?.string.flatMap { n in r["delayMs"]?.number.map { (n, $0) } } })
        let truth = (first.arrivals["b"]! - first.arrivals["a"]!) / 1e6
        let delayA = try #require(delays["a"]), delayB = try #require(delays["b"])
        let found = delayB - delayA
        print("calibration: b after a by \(found) ms measured, \(truth) ms from the DACs; \(first.analysis.serialized)")
        #expect(abs(found - truth) < 0.1, "measured \(found) ms, the DACs say \(truth) ms")
        // The trims: the earlier room delayed by the difference, the later one kept.
        let trimA = leader.settings(of: "a").latencyTrimNanoseconds, trimB = leader.settings(of: "b").latencyTrimNanoseconds
        #expect(trimB == 3_000_000)
        #expect(abs(Double(trimA) / 1e6 - (-found)) < 0.002, "trim a \(trimA)")

        // Played again with the trims, once the speakers have moved to them
        // (a hard resync for room a's 12 ms, then steering settles): the rooms arrive together.
        #expect(waitUntil(timeout: 30) {
            let h = leader.health
            return (h["a"]?.hardResyncs ?? 0) > resyncs && ["a", "b"].allSatisfy { r in
                h[r].map { abs($0.outputErrorNanoseconds) < 20_000 && abs($0.resampleRatioPPB) < 10_000 } ?? false
            }
        }, "\(leader.health)")
        let second = try calibrate(port: port, dir: dir, rooms: rooms, names: ["a", "b"], apply: false, round: 2)
        let apart = (second.arrivals["b"]! - second.arrivals["a"]!) / 1e6
        let again = Dictionary(uniqueKeysWithValues: (second.analysis["rooms"]?.array ?? []).compactMap { r in
            r["room"]?.string.flatMap { n in r["delayMs"]?.number.map { (n, $0) } }
        })
        print("calibration after the trims: \(apart) ms apart at the listening spot (DACs); measured \(second.analysis.serialized)")
        #expect(abs(apart) < 0.1, "after the trims the rooms arrive \(apart) ms apart")
        #expect(abs((again["b"] ?? 99) - (again["a"] ?? 0)) < 0.1)

        // Room correction from the same recording: a "Tuned" preset per room, cuts and at most +3 dB.
        let tuned = try runTutti(port: port, ["calibrate", "--analyse", dir + "/recording-2.wav", "--rooms", "a,b", "--eq"])
        #expect(tuned.status == 0, "\(tuned.out)")
        for room in ["a", "b"] {
            let eq = leader.equalizer(of: room)
            #expect(eq.preset?.hasPrefix("Tuned ") == true && eq.preset?.hasSuffix(" \(room)") == true, "\(tuned.out)")
            #expect(eq.settings.gains.allSatisfy { $0 <= 3 && $0 >= -12 })
        }
        print(tuned.out)
    }

    /// A stereo pair measured as two sources: the pair's left speaker and its
    /// right play their sweeps one after the other, so each side gets its own
    /// trim (the right speaker 7 ms late after its DAC and trimmed 3 ms, heard
    /// 11.3 ms away; the left 4.1 ms away; a third room, the kitchen, 2.9 ms).
    /// `tutti calibrate --play "kitchen,Living room"` and `--analyse --apply`
    /// find each side's delay within 0.1 ms of what the DACs played, the pair
    /// shows as one room with its two sides, and played again with the trims
    /// the three speakers arrive within 0.1 ms. The web app's upload (`POST
    /// /calibrate` with the plan the page sends when it did not play the
    /// sweeps, rooms only) finds the same sides.
    @Test func aStereoPairsTwoSpeakersAreMeasuredApartAndEachTrimmed() throws {
        let dir = makeTemporaryDirectory()
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: WebAppTests.repository + "/web")
        }
        defer { leader.stop() }
        let port = try #require(leader.controlEndpoint?.port), web = try #require(leader.webEndpoint).port
        let k = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dir + "/k.raw", ppm: 0, delayMilliseconds: 0))
        let l = try startFollower(leader: leader.endpoint, name: "living-l", output: .file(path: dir + "/l.raw", ppm: 0, delayMilliseconds: 0))
        let r = try startFollower(leader: leader.endpoint, name: "living-r", output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 7))
        defer { k.stop(); l.stop(); r.stop() }
        #expect(waitUntilInStep(leader, [k, l, r], timeout: 20))
        _ = try leader.pair(left: "living-l", right: "living-r", name: "Living room")
        leader.configure(room: "living-r", RoomSettings(volume: 100, muted: false, latencyTrimNanoseconds: 3_000_000))
        #expect(leader.settings(of: "living-l").latencyTrimNanoseconds == 0)

        var rng = SplitMix64(seed: 7)
        func reverb() -> [(Int, Double)] {
            (0..<20).map { _ in
                let after = 0.002 + rng.unit() * 0.3
                return (Int(after * Double(Self.rate)), 0.5 * pow(10, -3 * after / 0.3) * (rng.unit() < 0.5 ? -1 : 1))
            }
        }
        let rooms = [Acoustics(path: dir + "/k.raw", delay: 0.0029, reflections: reverb()),
                     Acoustics(path: dir + "/l.raw", delay: 0.0041, reflections: reverb()),
                     Acoustics(path: dir + "/r.raw", delay: 0.0113, reflections: reverb())]
        let speakers = ["kitchen", "living-l", "living-r"]
        let resyncs = speakers.map { leader.health[$0]?.hardResyncs ?? 0 }
        let first = try calibrate(port: port, dir: dir, rooms: rooms, names: ["kitchen", "Living room"], speakers: speakers, apply: false, round: 1)
        // As a person reads it, and applied: the pair once, with a line per side.
        let text = try runTutti(port: port, ["calibrate", "--analyse", dir + "/recording-1.wav", "--rooms", "kitchen,Living room", "--apply"])
        print(text.out)
        #expect(text.status == 0 && text.out.contains("\nLiving room (stereo pair):\n  left living-l: delay ") && text.out.contains("\n  right living-r: delay ")
                && text.out.hasSuffix("applied\n"), "\(text.out)")
        #expect(first.plan.slots == ["kitchen", "living-l", "living-r", "kitchen"])
        #expect(first.plan.rooms == ["kitchen", "Living room"])
        #expect(first.analysis["usable"]?.bool == true, "\(first.analysis.serialized)")

        // The report: the kitchen, and the pair once with its two sides.
        let entries = try #require(first.analysis["rooms"]?.array)
        #expect(entries.map { $0["room"]?.string } == ["kitchen", "Living room"])
        let sides = try #require(entries.last?["sides"]?.array)
        #expect(sides.map { $0["side"]?.string } == ["left", "right"] && sides.map { $0["speaker"]?.string } == ["living-l", "living-r"])
        var delays = ["kitchen": entries[0]["delayMs"]?.number ?? .nan]
        for s in sides { delays[s["speaker"]?.string ?? ""] = s["delayMs"]?.number ?? .nan }
        for speaker in ["living-l", "living-r"] {
            let found = delays[speaker]! - delays["kitchen"]!, truth = (first.arrivals[speaker]! - first.arrivals["kitchen"]!) / 1e6
            print("calibration: \(speaker) after the kitchen by \(found) ms measured, \(truth) ms from the DACs")
            #expect(abs(found - truth) < 0.1, "\(speaker): measured \(found) ms, the DACs say \(truth) ms")
        }
        // Each side trimmed by its own name: the latest (the right speaker) keeps its 3 ms, the others are delayed.
        let latest = delays.values.max()!
        #expect(leader.settings(of: "living-r").latencyTrimNanoseconds == 3_000_000)
        let trimL = Double(leader.settings(of: "living-l").latencyTrimNanoseconds) / 1e6
        let trimK = Double(leader.settings(of: "kitchen").latencyTrimNanoseconds) / 1e6
        #expect(abs(trimL - (0 - (latest - delays["living-l"]!))) < 0.002, "trim of living-l \(trimL) ms")
        #expect(abs(trimK - (0 - (latest - delays["kitchen"]!))) < 0.002, "trim of the kitchen \(trimK) ms")
        #expect(abs((sides[0]["trimMs"]?.number ?? .nan) - trimL) < 0.001 && sides[1]["trimMs"]?.number == 3, "\(sides)")
        // The pair is still one room, its speakers' sides as they were.
        #expect(leader.stereoPairList == [StereoPair(name: "Living room", left: "living-l", right: "living-r")])
        #expect(!leader.settings(of: "living-l").muted && !leader.settings(of: "living-r").muted && !leader.settings(of: "kitchen").muted)

        // The web app's upload of the same recording, with the plan a page sends when it did not play the sweeps itself.
        let plan = #"{"rooms":["kitchen","Living room"],"slotMs":2000}"#
        let wav = try Data(contentsOf: URL(fileURLWithPath: dir + "/recording-1.wav"))
        let path = "/calibrate?plan=" + (plan.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        let head = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(web)\r\nConnection: close\r\nContent-Type: audio/wav\r\nContent-Length: \(wav.count)\r\n\r\n"
        let answer = exchange(port: web, Array(head.utf8) + Array(wav))
        let uploaded = try #require(JSONValue.parsing(httpBody(answer)), "\(answer)")
        let webSides = try #require(uploaded["rooms"]?.array?.last?["sides"]?.array, "\(uploaded.serialized)")
        #expect(webSides.map { $0["speaker"]?.string } == ["living-l", "living-r"])
        for (s, speaker) in zip(webSides, ["living-l", "living-r"]) {
            #expect(abs((s["delayMs"]?.number ?? .nan) - delays[speaker]!) < 0.001, "\(uploaded.serialized)")
            #expect(s["currentTrimMs"]?.number == (speaker == "living-l" ? trimL : 3)) // each speaker's own trim now
        }

        // Played again once the speakers have moved to their trims: all three arrive together.
        #expect(waitUntil(timeout: 30) {
            let h = leader.health
            return zip(speakers, resyncs).dropLast().allSatisfy { (h[$0]?.hardResyncs ?? 0) > $1 } && speakers.allSatisfy { s in
                h[s].map { abs($0.outputErrorNanoseconds) < 20_000 && abs($0.resampleRatioPPB) < 10_000 } ?? false
            }
        }, "\(leader.health)")
        let second = try calibrate(port: port, dir: dir, rooms: rooms, names: ["Living room", "kitchen"], speakers: speakers, apply: false, round: 2)
        #expect(second.plan.slots == ["living-l", "living-r", "kitchen", "living-l"])
        let arrivals = speakers.map { second.arrivals[$0]! / 1e6 }
        print("calibration after the trims: arrivals \(arrivals) ms after their slots (DACs); measured \(second.analysis.serialized)")
        #expect(arrivals.max()! - arrivals.min()! < 0.1, "after the trims the speakers arrive \(arrivals) ms after their slots")
    }

    /// A leader stopped while the sweeps play saves the rooms as they were, not muted in a temporary group.
    @Test func aLeaderStoppedMidPlanPutsTheRoomsBack() throws {
        let dir = makeTemporaryDirectory()
        let leader = try startLeader(files: []) { c in c.stateDirectory = dir + "/state" }
        let a = try startFollower(leader: leader.endpoint, name: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        let b = try startFollower(leader: leader.endpoint, name: "b", output: .file(path: dir + "/b.raw", ppm: 0, delayMilliseconds: 0))
        defer { a.stop(); b.stop() }
        #expect(waitUntilInStep(leader, [a, b], timeout: 20))
        let groupsBefore = leader.groups.map { "\($0.id):\($0.rooms)" }
        _ = try leader.playCalibration(rooms: ["a", "b"], slotNanoseconds: 2_000_000_000)
        #expect(throws: CalibrationPlayError.busy) { try leader.playCalibration(rooms: ["a"], slotNanoseconds: 2_000_000_000) }
        #expect(leader.calibrationRunning && leader.settings(of: "b").muted && leader.groups.count == 2)
        leader.stop()
        #expect(!leader.calibrationRunning)
        #expect(!leader.settings(of: "a").muted && !leader.settings(of: "b").muted)
        #expect(leader.groups.map { "\($0.id):\($0.rooms)" } == groupsBefore)
    }
}
