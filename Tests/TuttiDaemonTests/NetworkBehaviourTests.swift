import Foundation
import Glibc
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

@Suite(.serialized) struct NetworkBehaviourTests {
    /// A follower that connects two seconds in hears the stream from the
    /// live position, not from the start of the file, and in step with the first.
    @Test func lateFollowerStartsAtTheLivePosition() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000 * 6)))
        let leader = try startLeader(files: [dir + "/count.wav"])
        let early = try startFollower(leader: leader.endpoint, name: "early", output: .file(path: dir + "/early.raw", ppm: 80, delayMilliseconds: 0))
        // Two seconds into the stream, as the rooms hear it.
        #expect(waitUntil(timeout: 10) { leader.nowPlaying.positionSeconds >= 2 })
        let joinedAt = Monotonic.now()
        let late = try startFollower(leader: leader.endpoint, name: "late", output: .file(path: dir + "/late.raw", ppm: -80, delayMilliseconds: 0))
        waitForPlayout(leader)
        early.stop(); late.stop(); leader.stop()

        let lateOut = readRaw(dir + "/late.raw")
        let first = try #require(firstSoundingFrame(lateOut))
        let firstIndex = try #require(counterIndex(lateOut[2 * first], lateOut[2 * first + 1]))
        // 2 s of a stream scheduled 250 ms ahead: the live position is about 1.75 s in.
        #expect(firstIndex > 48_000 * 3 / 2, "late follower started at stream frame \(firstIndex)")
        let lateTiming = readTiming(dir + "/late.raw")
        let firstHeard = try #require(leaveTime(ofFrame: first, timing: lateTiming, ppm: -80))
        #expect(firstHeard - joinedAt < 2_000_000_000, "heard \(Double(firstHeard - joinedAt) / 1e9) s after joining")

        // Both play stream frame F at the same instant (loose bound: 1 ms).
        let earlyOut = readRaw(dir + "/early.raw")
        let earlyTiming = readTiming(dir + "/early.raw")
        var worst: Int64 = 0
        var compared = 0
        for probe in stride(from: firstIndex + 48_000, to: 48_000 * 6 - 4_800, by: 24_000) {
            guard let a = frame(of: probe, in: earlyOut), let b = frame(of: probe, in: lateOut),
                  let ta = leaveTime(ofFrame: a, timing: earlyTiming, ppm: 80),
                  let tb = leaveTime(ofFrame: b, timing: lateTiming, ppm: -80) else { continue }
            worst = max(worst, abs(ta - tb))
            compared += 1
        }
        #expect(compared >= 3)
        #expect(worst < 1_000_000, "followers \(Double(worst) / 1000) µs apart")
    }

    /// A follower that stops reading is dropped; the other never starves.
    @Test func stalledFollowerDoesNotStallOthers() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000 * 8)))
        let leader = try startLeader(files: [dir + "/count.wav"])
        // A raw client that says hello and then never reads, with a tiny receive buffer.
        let stalled = try TCPConnection.connect(to: leader.endpoint)
        try stalled.send(Message.hello(version: WireProtocol.streamDelayVersion, name: "stalled").encoded())
        let good = try startFollower(leader: leader.endpoint, name: "good", output: .file(path: dir + "/good.raw", ppm: 0, delayMilliseconds: 0))
        #expect(waitUntil(timeout: 3) { leader.followerNames.contains("stalled") })
        let stalledAt = Monotonic.now()
        let dropped = waitUntil(timeout: 30) { !leader.followerNames.contains("stalled") }
        print("stalled follower dropped after \(Double(Monotonic.now() - stalledAt) / 1e9) s")
        waitForPlayout(leader)
        good.stop(); leader.stop(); stalled.close()

        #expect(dropped, "the stalled follower was disconnected")
        // The good follower plays the whole file without a silent gap (starving shows as silence).
        let out = readRaw(dir + "/good.raw")
        let start = try #require(firstSoundingFrame(out))
        var silentRun = 0, played = 0
        var i = start
        while 2 * i + 1 < out.count {
            if out[2 * i] == 0 && out[2 * i + 1] == 0 { silentRun += 1 } else { silentRun = 0 }
            if silentRun >= 240 { break }
            played += 1
            i += 1
        }
        #expect(played - silentRun > 48_000 * 79 / 10, "good follower played \(played - silentRun) frames before a gap")
        #expect(good.engine.statistics.hardResyncs == 0)
    }

    @Test func garbageAndOversizedInputOnlyCloseThatConnection() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000 * 3)))
        let leader = try startLeader(files: [dir + "/count.wav"], loop: true)
        defer { leader.stop() }
        let attacks: [[UInt8]] = [
            Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8),                 // not our protocol
            [0x7f, 0xff, 0xff, 0xff, 1],                                     // 2 GiB length
            [0, 0, 0, 0],                                                    // zero length
            [0, 0, 0, 3, 1, 0, 1],                                           // truncated hello
            [0, 0, 0, 1, 99],                                                // unknown type
            Message.chunk(Chunk(streamID: 1, sequence: 0, pts: LeaderTime(nanoseconds: 0), frames: 1, payload: [0])).encoded(), // wrong direction
        ]
        for attack in attacks {
            let c = try TCPConnection.connect(to: leader.endpoint)
            c.setReceiveTimeout(milliseconds: 3_000)
            try c.send(attack)
            // The leader answers with at most a bye and closes.
            let reader = MessageReader(connection: c)
            var closed = false
            for _ in 0..<3 {
                do {
                    guard let m = try reader.next() else { closed = true; break }
                    if case .bye = m { continue }
                } catch { closed = true; break }
            }
            #expect(closed, "connection closed after \(attack.prefix(8))")
            c.close()
        }
        // Still serving.
        let follower = try startFollower(leader: leader.endpoint, name: "after", output: .file(path: dir + "/after.raw", ppm: 0, delayMilliseconds: 0))
        #expect(waitUntil(timeout: 5) { follower.engine.statistics.playing })
        follower.stop()
    }

    @Test func protocolVersionMismatchIsAClearError() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000)))
        let leader = try startLeader(files: [dir + "/count.wav"], loop: true)
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "old", output: .file(path: dir + "/x.raw", ppm: 0, delayMilliseconds: 0)) { c in
            c.protocolVersion = WireProtocol.version + 1
        }
        defer { follower.stop() }
        #expect(waitUntil(timeout: 5) { follower.lastFailure != nil })
        let message = follower.lastFailure ?? ""
        #expect(message.contains("version"), "\(message)")
        #expect(message.contains("v\(WireProtocol.version)"), "\(message)")
        // A newer speaker then speaks the leader's version (as a v8 one does with a v7 leader) and plays.
        #expect(waitUntil(timeout: 5) { follower.connected && leader.followerNames == ["old"] }, "\(follower.lastFailure ?? "")")
    }

    @Test func followerReconnectsWhenTheLeaderComesBack() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000 * 2)))
        let first = try startLeader(files: [dir + "/count.wav"], loop: true)
        let port = first.endpoint.port
        let follower = try startFollower(leader: first.endpoint, name: "f", output: .file(path: dir + "/f.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        #expect(waitUntil(timeout: 5) { follower.engine.statistics.playing })
        first.stop()
        #expect(waitUntil(timeout: 5) { !follower.connected })
        // At least one attempt fails while no leader listens; when the next
        // comes is ReconnectBackoff's (JoinTimingTests, on simulated time).
        let second = try startLeader(files: [dir + "/count.wav"], loop: true) { c in c.listen = Endpoint(host: "127.0.0.1", port: port) }
        defer { second.stop() }
        #expect(waitUntil(timeout: 10) { follower.connectionCount == 2 && follower.connected })
        let before = follower.engine.lastBlockTiming?.pts
        #expect(waitUntil(timeout: 5) { (follower.engine.lastBlockTiming?.pts).map { $0 != before } ?? false && follower.engine.statistics.playing })
    }

    @Test func followerPlaysOnTheALSANullDevice() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000 * 2)))
        let leader = try startLeader(files: [dir + "/count.wav"], codec: .opus, loop: true)
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "null", output: .alsa(device: "null"))
        defer { follower.stop() }
        #expect(waitUntil(timeout: 5) { follower.engine.statistics.playing })
        // It plays on: a second of the stream leaves the device.
        let first = try #require(follower.engine.lastBlockTiming?.pts)
        #expect(waitUntil(timeout: 5) { (follower.engine.lastBlockTiming?.pts).map { $0 - first >= nanosecondsPerSecond } ?? false })
        #expect(follower.engine.statistics.playing)
        #expect(leader.followerNames == ["null"])
    }

    @Test func healthReachesTheLeader() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000 * 2)))
        let leader = try startLeader(files: [dir + "/count.wav"], loop: true)
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "h", output: .file(path: dir + "/h.raw", ppm: 100, delayMilliseconds: 0)) { c in
            c.clockOffsetMilliseconds = 2_500
        }
        defer { follower.stop() }
        #expect(waitUntil(timeout: 8) { leader.health["h"] != nil })
        let report = try #require(leader.health["h"])
        // The follower's clock reads 2.5 s ahead, so leader − local ≈ −2.5 s.
        #expect(abs(report.clockOffsetNanoseconds + 2_500_000_000) < 1_000_000, "offset \(report.clockOffsetNanoseconds)")
        #expect(report.roundTripNanoseconds > 0 && report.roundTripNanoseconds < 50_000_000)
        #expect(report.bufferedNanoseconds > 100_000_000)
    }
}

/// Where stream frame `index` sits in a counter-signal output.
private func frame(of index: Int, in samples: [Int16]) -> Int? {
    guard let start = firstSoundingFrame(samples), let first = counterIndex(samples[2 * start], samples[2 * start + 1]) else { return nil }
    var guess = start + (index - first)
    // Steering may have shifted by a few frames: search nearby.
    for delta in 0..<200 {
        for g in [guess + delta, guess - delta] where g >= 0 && 2 * g + 1 < samples.count {
            if counterIndex(samples[2 * g], samples[2 * g + 1]) == index { guess = g; return guess }
        }
    }
    return nil
}
