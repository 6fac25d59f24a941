import Foundation
import Testing
import TuttiControlClient
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// Index of the last frame where either channel is non-zero.
func lastSoundingFrame(_ samples: [Int16]) -> Int? {
    var i = samples.count / 2 - 1
    while i >= 0 {
        if samples[2 * i] != 0 || samples[2 * i + 1] != 0 { return i }
        i -= 1
    }
    return nil
}

/// Frequency of the left channel from its upward zero crossings (interpolated) within `frames`.
func zeroCrossingFrequency(_ samples: [Int16], frames: Range<Int>) -> Double {
    var first: Double?, last = 0.0, crossings = 0
    for i in max(1, frames.lowerBound)..<min(frames.upperBound, samples.count / 2) {
        let a = Double(samples[2 * (i - 1)]), b = Double(samples[2 * i])
        if a < 0 && b >= 0 {
            let t = Double(i - 1) + (-a / (b - a))
            if first == nil { first = t }
            last = t
            crossings += 1
        }
    }
    guard let first, crossings > 1 else { return 0 }
    return Double(crossings - 1) * 48_000 / (last - first)
}

/// Speed and pitch per group, measured from what the speakers played.
@Suite(.serialized) struct TempoTests {
    /// When a room's first and last sounding frames left its DAC (ns), and the file's samples.
    func heardSpan(_ path: String, ppm: Double) throws -> (start: Int64, end: Int64, samples: [Int16], first: Int, last: Int) {
        let samples = readRaw(path)
        let timing = readTiming(path)
        let first = try #require(firstSoundingFrame(samples), "\(path) played nothing")
        let last = try #require(lastSoundingFrame(samples))
        let start = try #require(leaveTime(ofFrame: first, timing: timing, ppm: ppm))
        let end = try #require(leaveTime(ofFrame: last, timing: timing, ppm: ppm))
        return (start, end, samples, first, last)
    }

    @Test func oneAndAHalfTimesEndsASixSecondTrackInFourSecondsInEveryRoomAtOnce() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/six.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 6, amplitude: 0.5))))
        let leader = try startLeader(files: [])
        defer { leader.stop() }
        let rooms = [("a", -100.0), ("b", 120.0)]
        var followers: [Follower] = []
        for (name, ppm) in rooms {
            followers.append(try startFollower(leader: leader.endpoint, name: name, output: .file(path: "\(dir)/\(name).raw", ppm: ppm, delayMilliseconds: 0)))
        }
        #expect(waitUntilInStep(leader, followers))
        _ = try leader.perform(.speed(1.5))
        _ = try leader.perform(.add(uris: [dir + "/six.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        // Now playing runs in track time, 1.5 s of it per second.
        #expect(waitUntil(timeout: 10) { leader.nowPlaying.positionSeconds >= 1.5 })
        let p1 = leader.nowPlaying, t1 = Monotonic.now()
        #expect(waitUntil(timeout: 10) { leader.nowPlaying.positionSeconds >= p1.positionSeconds + 3 })
        let p2 = leader.nowPlaying, t2 = Monotonic.now()
        #expect(p1.speed == 1.5 && p2.state == .playing)
        let rate = (p2.positionSeconds - p1.positionSeconds) / (Double(t2 - t1) / 1e9)
        #expect(abs(rate - 1.5) < 0.1, "position moved \(rate) s per second")
        #expect(p2.durationSeconds.map { abs($0 - 6) < 0.01 } == true, "duration stays the track's: \(String(describing: p2.durationSeconds))")
        #expect(waitUntilHeardOut(leader, rooms.map { "\(dir)/\($0.0).raw" }))
        for f in followers { f.stop() }

        var spans: [(start: Int64, end: Int64)] = []
        for (name, ppm) in rooms {
            let span = try heardSpan("\(dir)/\(name).raw", ppm: ppm)
            let seconds = Double(span.end - span.start) / 1e9
            print(String(format: "room %@ at 1.5×: the 6 s track sounded for %.4f s; pitch %.2f Hz", name, seconds,
                         zeroCrossingFrequency(span.samples, frames: (span.first + 24_000)..<(span.last - 24_000))))
            // One chunk is 20 ms.
            #expect(abs(seconds - 4) <= 0.020, "room \(name): \(seconds) s")
            let f = zeroCrossingFrequency(span.samples, frames: (span.first + 24_000)..<(span.last - 24_000))
            #expect(abs(f - 440) / 440 < 0.01, "room \(name): pitch moved to \(f) Hz")
            spans.append((span.start, span.end))
        }
        let startGap = abs(spans[0].start - spans[1].start), endGap = abs(spans[0].end - spans[1].end)
        print("rooms apart at the start \(startGap / 1000) µs, at the end \(endGap / 1000) µs")
        #expect(startGap < 1_000_000 && endGap < 1_000_000, "rooms apart: start \(startGap) ns, end \(endGap) ns")
    }

    @Test func threeSemitonesUpTurnsA440SineInto523Hz() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a440.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 3, amplitude: 0.5))))
        let leader = try startLeader(files: [])
        defer { leader.stop() }
        let room = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        #expect(waitUntilInStep(leader, [room]))
        _ = try leader.perform(.pitch(semitones: 3))
        _ = try leader.perform(.add(uris: [dir + "/a440.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        #expect(waitUntilHeardOut(leader, [dir + "/den.raw"]))
        room.stop()
        let span = try heardSpan(dir + "/den.raw", ppm: 0)
        let f = zeroCrossingFrequency(span.samples, frames: (span.first + 12_000)..<(span.last - 12_000))
        let target = 440 * PlaybackTempo.pitchScale(semitones: 3)
        print(String(format: "pitch +3 semitones: heard %.2f Hz (target %.2f), for %.3f s", f, target, Double(span.end - span.start) / 1e9))
        #expect(abs(f - target) / target < 0.01, "heard \(f) Hz")
        #expect(abs(Double(span.end - span.start) / 1e9 - 3) <= 0.020, "the speed must not change")
    }

    @Test func aSpeedChangeMidTrackIsHeardAtOnceAndPositionsStayInTrackTime() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/ten.wav", wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 10, amplitude: 0.5))))
        let leader = try startLeader(files: [])
        defer { leader.stop() }
        let room = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        #expect(waitUntilInStep(leader, [room]))
        _ = try leader.perform(.add(uris: [dir + "/ten.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        #expect(waitUntil(timeout: 10) { leader.nowPlaying.positionSeconds >= 2 })
        let tBefore = Monotonic.now()
        let before = leader.nowPlaying.positionSeconds
        let outcome = try leader.perform(.speed(2))
        let heardAt = outcome.effectiveAt
        // The track position heard when the change is, in every room.
        let atChange = before + Double(heardAt - tBefore) / 1e9
        // A second at 2× heard (position and time read together, as before).
        #expect(waitUntil(timeout: 10) { leader.nowPlaying.positionSeconds >= atChange + 2 })
        let tAfter = Monotonic.now()
        let after = leader.nowPlaying.positionSeconds
        let predicted = atChange + 2 * Double(tAfter - heardAt) / 1e9
        #expect(abs(after - predicted) < 0.1, "after the change now playing says \(after) s, expected \(predicted)")
        #expect(waitUntilHeardOut(leader, [dir + "/den.raw"]))
        room.stop()
        let span = try heardSpan(dir + "/den.raw", ppm: 0)
        // 10 s of track: the part before the change at 1×, the rest at 2×.
        let expected = atChange + (10 - atChange) / 2
        let heard = Double(span.end - span.start) / 1e9
        print(String(format: "speed 1× → 2× at %.2f s of track: heard for %.3f s (expected %.3f)", atChange, heard, expected))
        #expect(abs(heard - expected) < 0.06, "heard \(heard) s, expected \(expected)")
        // Back at 1×, the stretcher is gone and the samples are the track's own again.
        _ = try leader.perform(.speed(1))
        #expect(leader.nowPlaying.speed == 1)
    }

    @Test func rangesAreCheckedAndTheClientSetsSpeedAndPitch() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/t.wav", wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 60, amplitude: 0.2))))
        let leader = try startLeader(files: [dir + "/t.wav"]) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        #expect(throws: PlayerError.self) { try leader.perform(.speed(2.5)) }
        #expect(throws: PlayerError.self) { try leader.perform(.pitch(semitones: -13)) }
        #expect(throws: PlayerError.self) { try leader.perform(.speed(.nan)) }
        let port = leader.controlEndpoint!.port
        let client = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: port))
        #expect(throws: (any Error).self) { try client.call("player.setSpeed", ["speed": 3]) }
        #expect(throws: (any Error).self) { try client.call("player.setSpeed", ["speed": "fast"]) }
        #expect(throws: (any Error).self) { try client.call("player.setPitch", [:]) }
        let status = try #require(try client.call("player.setSpeed", ["speed": 1.5]).object)
        #expect(status["speed"]?.number == 1.5)
        // A 60 s track at 1.5× ends after 40 s of listening: now playing says so.
        let remaining = try #require(status["remaining"]?.number)
        #expect(abs(remaining - (60 - (status["position"]?.number ?? 0)) / 1.5) < 0.01, "remaining \(remaining)")
        let speed = try runTutti(port: port, ["speed", "1.25"])
        #expect(speed.status == 0 && speed.out.contains("speed 1.25×") && speed.out.contains("ends in"), "\(speed.out)")
        let pitch = try runTutti(port: port, ["pitch", "-2"])
        #expect(pitch.status == 0 && pitch.out.contains("pitch -2.0"), "\(pitch.out)")
        #expect(leader.nowPlaying.pitchSemitones == -2 && leader.nowPlaying.speed == 1.25)
        let bad = try runTutti(port: port, ["speed", "9"])
        #expect(bad.status == 1 && bad.out.contains("0.5"), "\(bad.out)")
        let help = try runTutti(port: port, ["--help"])
        #expect(help.out.contains("speed [0.5-2.0]") && help.out.contains("pitch [-12..+12]"))
    }
}
