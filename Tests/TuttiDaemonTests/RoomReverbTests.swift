import Foundation
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// Reverb per room as heard: what each room's virtual DAC played
/// (docs/sound.md, "Reverb"). TuttiCoreTests' ReverbTests measure the
/// processor alone; these measure it on the speaker, after the leader sent it.
@Suite(.serialized) struct RoomReverbTests {
    /// 0.25 s of silence, a full-scale click (one frame, both channels), 5 s
    /// of silence for the tail, then 1 s of a 440 Hz tone (so the bit-exact
    /// comparison covers music too).
    static func impulseTrack() -> [Int16] {
        let click = 12_000, tone = 5 * 48_000 + click, frames = tone + 48_000
        var out = [Int16](repeating: 0, count: 2 * frames)
        out[2 * click] = 30_000; out[2 * click + 1] = 30_000
        for i in tone..<frames {
            let v = sampleToInt16(Float(0.3 * sin(2 * Double.pi * 440 * Double(i - tone) / 48_000)))
            out[2 * i] = v; out[2 * i + 1] = v
        }
        return out
    }

    /// RT60 of the left channel from frame `start` on, over `frames` frames,
    /// in the 500 Hz–1 kHz band (an RBJ band-pass at 707 Hz, an octave wide),
    /// from the energy decay curve (Schroeder's backward integral), −5 to
    /// −25 dB extended to 60 dB (T20, as ISO 3382 measures rooms and as
    /// TuttiCoreTests' ReverbTests do).
    static func decaySeconds(_ samples: [Int16], start: Int, frames: Int) -> Double {
        let w0 = 2 * Double.pi * 707 / 48_000, q = 1.41, alpha = sin(w0) / (2 * q)
        let a0 = 1 + alpha, a1 = -2 * cos(w0), a2 = 1 - alpha
        var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0
        var band = [Double](repeating: 0, count: frames)
        for i in 0..<frames where 2 * (start + i) < samples.count {
            let v = Double(samples[2 * (start + i)]) / 32_768
            let y = (alpha * v - alpha * x2 - a1 * y1 - a2 * y2) / a0
            x2 = x1; x1 = v; y2 = y1; y1 = y
            band[i] = y
        }
        var energy = [Double](repeating: 0, count: frames + 1)
        for i in stride(from: frames - 1, through: 0, by: -1) { energy[i] = energy[i + 1] + band[i] * band[i] }
        func firstBelow(_ db: Double) -> Int { (0..<frames).first { energy[$0] < energy[0] * pow(10, db / 10) } ?? frames }
        return 3 * Double(firstBelow(-25) - firstBelow(-5)) / 48_000
    }

    @Test func offIsBitExactAndEachRoomDecaysInItsPresetsTime() throws {
        let dir = makeTemporaryDirectory()
        let track = Self.impulseTrack()
        writeFile(dir + "/impulse.wav", wavImage(track))
        let leader = try startLeader(files: []) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        // "dry" never has a reverb; "zero" has a Large hall at 0 %; the others at 100 % (wet alone: the tail is all there is to measure).
        let rooms: [(String, ReverbPreset?)] = [("dry", nil), ("zero", .largeHall), ("small", .smallRoom), ("hall", .largeHall), ("cathedral", .cathedral)]
        var followers: [Follower] = []
        for (room, _) in rooms {
            followers.append(try startFollower(leader: leader.endpoint, name: room, output: .file(path: "\(dir)/\(room).raw", ppm: 0, delayMilliseconds: 0), steering: false))
        }
        defer { for f in followers { f.stop() } }
        #expect(waitUntilInStep(leader, followers))
        let rpc = try ControlClient(endpoint: leader.controlEndpoint!)
        for (room, preset) in rooms {
            guard let preset else { continue }
            let r = try rpc.call("rooms.setReverb", ["room": .string(room), "preset": .string(preset.rawValue), "mix": .number(room == "zero" ? 0 : 100)]).object
            #expect((r?["reverb"]?.object)?["preset"]?.string == preset.rawValue)
        }
        #expect(waitUntil(timeout: 5) {
            followers[1].reverb == (try? ReverbSettings(preset: .largeHall, mix: 0)) && followers[3].reverb == (try? ReverbSettings(preset: .largeHall, mix: 100))
                && followers[0].reverb == .off
        })

        _ = try leader.perform(.add(uris: [dir + "/impulse.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        #expect(waitUntilHeardOut(leader, rooms.map { "\(dir)/\($0.0).raw" }))
        for f in followers { f.stop() }

        // 0 %, and never set: exactly the samples sent.
        for room in ["dry", "zero"] {
            let played = readRaw("\(dir)/\(room).raw")
            let first = try #require(firstSoundingFrame(played), "\(room) played nothing") - (firstSoundingFrame(track) ?? 0)
            let same = first >= 0 && played.count >= 2 * first + track.count && played[(2 * first)..<(2 * first + track.count)].elementsEqual(track)
            #expect(same, "\(room): a reverb at 0 % must leave the samples untouched")
        }
        // The wet rooms: the click's tail, from where it begins (the first sound: wet only, after the pre-delay).
        var measured: [Double] = []
        for (room, preset) in rooms.dropFirst(2) {
            let preset = try #require(preset)
            let played = readRaw("\(dir)/\(room).raw")
            let start = try #require(firstSoundingFrame(played), "\(room) played nothing")
            let t = Self.decaySeconds(played, start: start, frames: Int(1.2 * preset.decaySeconds * 48_000))
            measured.append(t)
            print("reverb on the file DAC, \(room) (\(preset.rawValue)): stated RT60 \(preset.decaySeconds) s, measured \((t * 1000).rounded() / 1000) s (500 Hz–1 kHz, T20)")
            #expect(abs(t - preset.decaySeconds) <= 0.2 * preset.decaySeconds, "\(room): \(t) s for \(preset.decaySeconds) s")
        }
        #expect(measured == measured.sorted(), "the decay grows with the room: \(measured)")
    }

    /// When the music stops, the tail rings out in silence as a room's would:
    /// it decays in the preset's time, is still there at one RT60 (−60 dB, not
    /// cut short), and ends 1.5 × RT60 after the music, when the kernel rests
    /// (exact zeros: no endless noise on an idle speaker).
    @Test func theTailRingsOutAfterTheMusicStopsThenTheSpeakerRests() throws {
        let dir = makeTemporaryDirectory()
        // 0.25 s of silence, then 1 s of 440 Hz at half scale, and the list ends.
        var track = [Int16](repeating: 0, count: 2 * 12_000)
        for i in 0..<48_000 { let v = sampleToInt16(Float(0.5 * sin(2 * Double.pi * 440 * Double(i) / 48_000))); track += [v, v] }
        writeFile(dir + "/burst.wav", wavImage(track))
        let preset = ReverbPreset.largeHall, rt60 = preset.decaySeconds
        let leader = try startLeader(files: [])
        defer { leader.stop() }
        let room = try startFollower(leader: leader.endpoint, name: "hall", output: .file(path: dir + "/hall.raw", ppm: 0, delayMilliseconds: 0), steering: false)
        defer { room.stop() }
        #expect(waitUntilInStep(leader, [room]))
        try leader.setReverb(room: "hall", try ReverbSettings(preset: preset, mix: 50))
        #expect(waitUntil(timeout: 5) { !room.reverb.isOff })
        _ = try leader.perform(.add(uris: [dir + "/burst.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        #expect(waitUntilHeardOut(leader, [dir + "/hall.raw"]))
        // The list has ended; the DAC goes on for the whole ring-out and a second more.
        #expect(waitUntilPlayed([dir + "/hall.raw"], through: Monotonic.now() + Int64((1.5 * rt60 + 1.2) * 1e9)))
        room.stop()

        let played = readRaw(dir + "/hall.raw")
        // The dry half starts with the tone (its first sample is sin 0 = 0: one frame later).
        let onset = try #require(firstSoundingFrame(played), "hall played nothing") - 1
        let end = onset + 48_000
        let frames = played.count / 2
        func rms(from: Int, count: Int) -> Double {
            var sum = 0.0, n = 0
            for i in max(0, from)..<min(frames, from + count) { let v = Double(played[2 * i]); sum += v * v; n += 1 }
            return n == 0 ? 0 : (sum / Double(n)).squareRoot()
        }
        let window = 4_800
        let atEnd = rms(from: end + 480, count: window), atRT60 = rms(from: end + Int(rt60 * 48_000) - window / 2, count: window)
        let dropAtRT60 = 20 * log10(max(atRT60, 1e-9) / max(atEnd, 1e-9))
        let t = Self.decaySeconds(played, start: end + 480, frames: Int(1.2 * rt60 * 48_000))
        // Where the kernel rests: the last frame that is not silence.
        var last = frames - 1
        while last > end && played[2 * last] == 0 && played[2 * last + 1] == 0 { last -= 1 }
        let rangOn = Double(last - end) / 48_000
        print("ring-out after the music (\(preset.rawValue) at 50 %): T20 \((t * 1000).rounded() / 1000) s for \(rt60) s; \((dropAtRT60 * 10).rounded() / 10) dB at one RT60 (RMS \(Int(atEnd)) → \((atRT60 * 10).rounded() / 10)); last sound \((rangOn * 1000).rounded() / 1000) s after the music (1.5 × RT60 = \(1.5 * rt60) s); \(Double(frames - end) / 48_000) s written after it")
        #expect(Double(frames - end) / 48_000 > 1.5 * rt60 + 0.5, "the DAC stopped \(Double(frames - end) / 48_000) s after the music")
        #expect(abs(t - rt60) <= 0.2 * rt60, "the tail in silence decays in \(t) s for \(rt60) s")
        #expect(atEnd > 1_000, "the tail starts at RMS \(atEnd)")
        #expect(dropAtRT60 > -70 && dropAtRT60 < -50, "one RT60 after the music the tail is \(dropAtRT60) dB (−60 expected): cut short or not decaying")
        #expect(rangOn > rt60 && rangOn <= 1.5 * rt60 + 0.1, "the last sound \(rangOn) s after the music; it should end by 1.5 × RT60 = \(1.5 * rt60) s")
    }

    @Test func clicksLineUpInARoomWithReverb() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(toneWithClicks(seconds: 14, frequency: 440)))
        let leader = try startLeader(files: [])
        defer { leader.stop() }
        let a = try startFollower(leader: leader.endpoint, name: "a", output: .file(path: dir + "/a.raw", ppm: -100, delayMilliseconds: 0))
        let b = try startFollower(leader: leader.endpoint, name: "b", output: .file(path: dir + "/b.raw", ppm: 120, delayMilliseconds: 0))
        #expect(waitUntilInStep(leader, [a, b]))
        try leader.setReverb(room: "b", try ReverbSettings(preset: .largeHall, mix: 30))
        #expect(waitUntil(timeout: 5) { !b.reverb.isOff })
        let started = Monotonic.now()
        _ = try leader.perform(.add(uris: [dir + "/a.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        #expect(waitUntilPlayed([dir + "/a.raw", dir + "/b.raw"], through: started + 13_000_000_000))
        a.stop(); b.stop()
        let ta = clickTimes(dir + "/a.raw", ppm: -100, threshold: 12_000), tb = clickTimes(dir + "/b.raw", ppm: 120, threshold: 12_000)
        let diffs = pairedDifferences(ta, tb, from: started + 3_000_000_000).sorted()
        #expect(diffs.count >= 8, "\(diffs.count) clicks compared")
        let median = diffs.isEmpty ? 0 : diffs[diffs.count / 2]
        print("clicks, a dry room (−100 ppm) against one with a Large hall at 30 % (+120 ppm): median \(median / 1000) µs, max \((diffs.last ?? 0) / 1000) µs over \(diffs.count) clicks")
        // As for the EQ (SoundTests): a reverb that delayed its room's dry sound would put it
        // milliseconds behind at every click; the figures are the print and bench/sync's.
        #expect(median < 1_000_000 && (diffs.last ?? .max) < 5_000_000, "median \(median / 1000) µs, max \((diffs.last ?? 0) / 1000) µs")
    }

    /// The mix changed four times while a sine plays: what the file DAC
    /// wrote has no click, only the sine's own curve (its largest second
    /// difference, 14 at half scale for 220 Hz, against ~0.3 full scale for a
    /// mix changed at once).
    @Test func mixChangesWhilePlayingMakeNoClickOnTheDAC() throws {
        let dir = makeTemporaryDirectory()
        var sine: [Int16] = []
        for i in 0..<(48_000 * 7) { let v = Int16(16_384 * sin(2 * Double.pi * 220 * Double(i) / 48_000)); sine += [v, v] }
        writeFile(dir + "/sine.wav", wavImage(sine))
        let leader = try startLeader(files: [])
        defer { leader.stop() }
        let room = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0), steering: false)
        defer { room.stop() }
        #expect(waitUntilInStep(leader, [room]))
        let started = Monotonic.now()
        _ = try leader.perform(.add(uris: [dir + "/sine.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        for (second, mix) in [(2, 60.0), (3, 10.0), (4, 80.0), (5, 0.0)] {
            #expect(waitUntilPlayed([dir + "/den.raw"], through: started + Int64(second) * 1_000_000_000))
            try leader.setReverb(room: "den", try ReverbSettings(preset: .mediumRoom, mix: mix))
        }
        #expect(waitUntilPlayed([dir + "/den.raw"], through: started + 7_500_000_000))
        room.stop()
        let raw = readRaw(dir + "/den.raw")
        let left = stride(from: 0, to: raw.count, by: 2).map { Int(raw[$0]) }
        let first = try #require(left.firstIndex { $0 != 0 }), last = try #require(left.lastIndex { $0 != 0 })
        // Away from the sine's own start and end (its first sample is a corner of its own).
        var worst = 0
        for i in (first + 9_600)..<(last - 9_600) { worst = max(worst, abs(left[i] - 2 * left[i - 1] + left[i - 2])) }
        print("reverb mix changed 4 times on the DAC: largest second difference \(worst) (the sine's own 14)")
        #expect(last - first > 48_000 * 6, "the sine played \(Double(last - first) / 48_000) s")
        #expect(worst <= 100, "a click: a second difference of \(worst)")
    }

    @Test func setFromTheCLIAndJSONRPCRefusedWhereItCannotPlayAndKeptAcrossARestart() throws {
        let dir = makeTemporaryDirectory()
        func leader() throws -> Leader {
            try startLeader(files: []) { c in
                c.databasePath = dir + "/db/library.db"; c.control = Endpoint(host: "127.0.0.1", port: 0)
                c.snapcastStream = Endpoint(host: "127.0.0.1", port: 0)
            }
        }
        let first = try leader()
        var kitchen = try startFollower(leader: first.endpoint, name: "kitchen", output: .file(path: dir + "/k1.raw", ppm: 0, delayMilliseconds: 0))
        let attic = try startFollower(leader: first.endpoint, name: "attic", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0)) { f in
            f.protocolVersion = 9
        }
        defer { attic.stop() }
        #expect(waitUntil(timeout: 5) { first.followerNames == ["attic", "kitchen"] })
        let port = first.controlEndpoint!.port

        // The tutti client: a preset and a mix, the mix alone, show, off.
        var out = try runTutti(port: port, ["reverb", "kitchen", "Hall", "30"])
        #expect(out.status == 0 && out.out.contains("kitchen: reverb Large hall at 30 % (RT60 1.8 s)"), "\(out.out)")
        #expect(waitUntil(timeout: 5) { kitchen.reverb == (try? ReverbSettings(preset: .largeHall, mix: 30)) })
        out = try runTutti(port: port, ["reverb", "kitchen", "45"])
        #expect(out.status == 0 && out.out.contains("Large hall at 45 %"), "\(out.out)")
        out = try runTutti(port: port, ["reverb", "kitchen"])
        #expect(out.status == 0 && out.out.contains("kitchen: reverb Large hall at 45 %"), "\(out.out)")
        out = try runTutti(port: port, ["rooms"])
        #expect(out.out.contains("reverb Large hall at 45 %"), "\(out.out)")
        out = try runTutti(port: port, ["reverb", "kitchen", "off"])
        #expect(out.status == 0 && out.out.contains("kitchen: reverb off"), "\(out.out)")
        #expect(waitUntil(timeout: 5) { kitchen.reverb.isOff && kitchen.reverb.preset == .largeHall })
        // The preset is remembered at 0 %: a mix brings the same room back.
        out = try runTutti(port: port, ["reverb", "kitchen", "Small", "room", "20"])
        #expect(out.status == 0 && out.out.contains("Small room at 20 %"), "\(out.out)")

        // Refusals, each saying why.
        out = try runTutti(port: port, ["reverb", "kitchen", "bathroom"])
        #expect(out.status != 0 && out.out.contains("no reverb preset 'bathroom' (presets: Small room, Medium room, Large hall, Plate, Cathedral, or off)"), "\(out.out)")
        out = try runTutti(port: port, ["reverb", "kitchen", "Hall", "130"])
        #expect(out.status != 0 && out.out.contains("reverb mix 130 is outside 0–100 %"), "\(out.out)")
        out = try runTutti(port: port, ["reverb", "garage", "Hall"])
        #expect(out.status != 0 && out.out.contains("no room 'garage'"), "\(out.out)")
        out = try runTutti(port: port, ["reverb", "attic", "Plate", "30"])
        #expect(out.status != 0 && out.out.contains("the attic speaker speaks protocol v9 and cannot play reverb (v10 needed): update its tutti"), "\(out.out)")
        #expect(first.reverb(of: "attic").isOff)

        // JSON-RPC: custom values, rooms.list, the errors in the asker's language.
        let rpc = try ControlClient(endpoint: first.controlEndpoint!)
        let custom = try rpc.call("rooms.setReverb", ["room": "kitchen", "size": 0.5, "damping": 0.3]).object
        let reverb = (custom?["reverb"]?.object) ?? [:]
        #expect(reverb["preset"] == .null && reverb["size"]?.number == 0.5 && reverb["damping"]?.number == 0.3 && reverb["mix"]?.number == 20, "\(reverb)")
        #expect(waitUntil(timeout: 5) { kitchen.reverb.size == 0.5 && kitchen.reverb.damping == 0.3 && kitchen.reverb.preset == nil })
        let listed = (try rpc.call("rooms.list").object)?["rooms"]?.objectArray ?? []
        #expect((listed.first { $0["name"]?.string == "kitchen" }?["reverb"]?.object)?["decaySeconds"]?.number == 1)
        #expect(throws: (any Error).self) { try rpc.call("rooms.setReverb", ["room": "kitchen"]) }
        let korean = try ControlClient(endpoint: first.controlEndpoint!)
        korean.language = .korean
        do {
            _ = try korean.call("rooms.setReverb", ["room": "attic", "preset": "Plate"])
            Issue.record("a v9 speaker was given a reverb")
        } catch {
            #expect("\(error)".contains("attic 스피커는 프로토콜 v9") && "\(error)".contains("잔향"), "\(error)")
        }

        // A snapclient plays what it is sent: refused, saying so.
        if FileManager.default.isExecutableFile(atPath: SnapcastTests.snapclient), let snap = first.snapcastEndpoint {
            _ = SnapcastTests.startSnapclient(port: snap.port, id: "reverb-snap", output: dir + "/snap.raw", seconds: 8)
            defer { SnapcastTests.stopSnapclients(id: "reverb-snap") }
            #expect(waitUntil(timeout: 5) { first.followerNames.contains("reverb-snap") }, "\(first.followerNames)")
            out = try runTutti(port: port, ["reverb", "reverb-snap", "Hall"])
            #expect(out.status != 0 && out.out.contains("reverb-snap is a Snapcast client: it plays what it is sent and has no reverb"), "\(out.out)")
        }

        _ = try rpc.call("rooms.setReverb", ["room": "kitchen", "preset": "Cathedral", "mix": 20])
        #expect(waitUntil(timeout: 5) { kitchen.reverb.preset == .cathedral })
        kitchen.stop()
        first.stop()

        // The leader restarts; the speaker comes back as a new process that remembers nothing.
        let second = try leader()
        defer { second.stop() }
        kitchen = try startFollower(leader: second.endpoint, name: "kitchen", output: .file(path: dir + "/k2.raw", ppm: 0, delayMilliseconds: 0))
        let left = try startFollower(leader: second.endpoint, name: "den-l", output: .file(path: dir + "/l.raw", ppm: 0, delayMilliseconds: 0))
        let right = try startFollower(leader: second.endpoint, name: "den-r", output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 0))
        defer { kitchen.stop(); left.stop(); right.stop() }
        #expect(waitUntil(timeout: 10) { kitchen.reverb == (try? ReverbSettings(preset: .cathedral, mix: 20)) }, "kept across a restart")
        // A stereo pair is one room: its reverb reaches both speakers.
        #expect(waitUntil(timeout: 5) { second.speakerNames.contains("den-l") && second.speakerNames.contains("den-r") })
        _ = try second.pair(left: "den-l", right: "den-r", name: "Den")
        let rpc2 = try ControlClient(endpoint: second.controlEndpoint!)
        let paired = try rpc2.call("rooms.setReverb", ["room": "Den", "preset": "plate", "mix": 40]).object
        #expect((paired?["reverb"]?.object)?["preset"]?.string == "Plate")
        let plate = try ReverbSettings(preset: .plate, mix: 40)
        #expect(waitUntil(timeout: 5) { left.reverb == plate && right.reverb == plate })
        let rooms = (try rpc2.call("rooms.list").object)?["rooms"]?.objectArray ?? []
        #expect((rooms.first { $0["name"]?.string == "Den" }?["reverb"]?.object)?["mix"]?.number == 40)
    }
}
