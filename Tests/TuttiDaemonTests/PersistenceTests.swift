import Foundation
import Glibc
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// The player's queue, position, shuffle order and repeat mode survive a
/// restart, and a killed process (the last checkpoint).
@Suite(.serialized) struct PlayerPersistenceTests {
    func makeMusic(_ dir: String) -> [String] {
        try? FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        return (0..<5).map { i in
            let path = dir + "/music/track\(i).wav"
            writeFile(path, wavImage(counterFrames(count: 48_000 * 10, from: i * 1_000_000 % 30_000)))
            return path
        }
    }

    @Test func queueAndPositionComeBackAfterARestart() throws {
        let dir = makeTemporaryDirectory()
        let files = makeMusic(dir)
        func leader() throws -> Leader {
            try startLeader(files: []) { c in c.musicDirectory = dir + "/music"; c.databasePath = dir + "/db/library.db" }
        }
        let first = try leader()
        _ = try first.perform(.add(uris: files, next: false))
        _ = try first.perform(.shuffle(true))
        _ = try first.perform(.repeatMode(.all))
        _ = try first.perform(.speed(1.25))
        _ = try first.perform(.pitch(semitones: -1))
        _ = try first.perform(.playIndex(2))
        #expect(waitUntil(timeout: 5) { first.nowPlaying.state == .playing && first.nowPlaying.track == 2 && first.nowPlaying.positionSeconds > 0.1 })
        _ = try first.perform(.seek(seconds: 2.5))
        #expect(waitUntil(timeout: 5) { first.nowPlaying.positionSeconds > 2.5 })
        _ = try first.perform(.pause)
        let before = first.nowPlaying
        let queueBefore = first.queue
        first.stop()

        let second = try leader()
        defer { second.stop() }
        #expect(waitUntil(timeout: 3) { second.queue.count == 5 })
        let after = second.nowPlaying
        #expect(second.queue.entries == queueBefore.entries)
        #expect(second.queue.order == queueBefore.order, "shuffle order kept")
        #expect(after.shuffle && after.repeatMode == .all)
        #expect(after.speed == 1.25 && after.pitchSemitones == -1, "speed \(after.speed), pitch \(after.pitchSemitones)")
        #expect(after.state == .paused)
        #expect(after.track == 2 && after.path == files[2])
        #expect(abs(after.positionSeconds - before.positionSeconds) < 0.05, "\(before.positionSeconds) → \(after.positionSeconds)")
        // And it plays on from there.
        _ = try second.perform(.play)
        #expect(waitUntil(timeout: 5) { second.nowPlaying.state == .playing && second.nowPlaying.positionSeconds > before.positionSeconds })
        #expect(second.nowPlaying.state == .playing && second.nowPlaying.track == 2)
        #expect(second.nowPlaying.positionSeconds > 2.5)
    }

    @Test func aKilledLeaderComesBackFromItsLastCheckpoint() throws {
        let dir = makeTemporaryDirectory()
        let files = makeMusic(dir)
        var port = UInt16.random(in: 20_000...40_000)
        func launch() throws -> Process {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: DaemonBinaryTests.binary)
            p.arguments = ["leader", "--listen", "127.0.0.1:\(port)", "--control", "127.0.0.1:\(port + 1)", "--mpd", "off",
                           "--music", dir + "/music", "--db", dir + "/db/library.db"]
            p.standardError = FileHandle.nullDevice
            try p.run()
            return p
        }
        // A random port another test holds makes the leader exit at once: try another (a loaded machine starts it slowly).
        var first = try launch()
        var client: ControlClient?
        for _ in 0..<3 {
            if waitUntil(timeout: 15, { client = try? ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: port + 1)); return client != nil || !first.isRunning }), client != nil { break }
            stopProcess(first)
            port = UInt16.random(in: 20_000...40_000)
            first = try launch()
        }
        _ = try #require(client, "the leader never answered on its control port")
        _ = try client!.call("queue.add", ["uris": JSONValue(files)])
        _ = try client!.call("player.repeat", ["mode": "one"])
        _ = try client!.call("queue.play", ["index": 3])
        usleep(6_500_000) // a checkpoint happens every 5 s while playing
        let status = try #require(try client!.call("player.status").object)
        kill(first.processIdentifier, SIGKILL)
        first.waitUntilExit()
        client = nil

        let second = try launch()
        defer { stopProcess(second) }
        #expect(waitUntil(timeout: 15) { client = try? ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: port + 1)); return client != nil })
        _ = try #require(client, "the restarted leader never answered")
        let restored = try #require(try client!.call("player.status").object)
        #expect(restored["track"]?.integer == 3)
        #expect(restored["repeat"]?.string == "one")
        #expect(restored["state"]?.string == "paused")
        #expect(restored["trackCount"]?.integer == 5)
        let lost = (status["position"]?.number ?? 0) - (restored["position"]?.number ?? 0)
        #expect(lost >= 0 && lost < 5.5, "position \(status["position"] ?? "?") → \(restored["position"] ?? "?")")
    }
}
