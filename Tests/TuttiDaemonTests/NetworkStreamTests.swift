import Foundation
import Glibc
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiNet

/// A network track in the queue plays through the leader; cached, it plays
/// with the server gone. The server is Python's http.server on loopback.
@Suite(.serialized) struct NetworkStreamTests {
    @Test func urlInTheQueuePlaysAndTheCacheKeepsItOffline() throws {
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/www", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.sine(frequency: 440, seconds: 2, amplitude: 0.4)))
        let lame = Process()
        lame.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        lame.arguments = ["lame", "--quiet", "-b", "128", dir + "/tone.wav", dir + "/www/tone.mp3"]
        try lame.run(); lame.waitUntilExit()

        let port = Int.random(in: 20_000...40_000)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", dir + "/www"]
        server.standardError = FileHandle.nullDevice
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        // SIGKILL: the server may have inherited an ignored SIGTERM from the test process.
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let url = "http://127.0.0.1:\(port)/tone.mp3"
        #expect(waitUntil(timeout: 5) { (try? TCPConnection.connect(to: Endpoint(host: "127.0.0.1", port: UInt16(port)))) != nil })

        let leader = try startLeader(files: []) { c in
            c.musicDirectory = dir + "/music"
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "r", output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() } // also when an expectation throws; stopping twice is harmless
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        _ = try c.call("queue.add", ["uris": [url]])
        func loudFrames(_ x: ArraySlice<Int16>) -> Int { stride(from: x.startIndex, to: x.endIndex, by: 2).filter { abs(Int(x[$0])) > 3_000 }.count }
        _ = try c.call("queue.play", ["index": 0])
        // Wait for the sound rather than a fixed time: a slow machine takes longer to fetch and start.
        // 2 s of a 0.4 sine has about 82,000 frames above the threshold.
        _ = waitUntil(timeout: 15) { loudFrames(readRaw(dir + "/r.raw")[...]) > 70_000 }

        // Cache it, stop the server, and play it again from the cache.
        let cached = try #require(try c.call("cache.add", ["url": url]) as? [String: Any])
        let size = try FileManager.default.attributesOfItem(atPath: dir + "/www/tone.mp3")[.size] as? Int
        #expect(cached["size"] as? Int == size)
        #expect(((try c.call("cache.list") as? [String: Any])?["entries"] as? [[String: Any]])?.first?["url"] as? String == url)
        kill(server.processIdentifier, SIGKILL); server.waitUntilExit()
        let before = readRaw(dir + "/r.raw").count
        _ = try c.call("queue.play", ["index": 0])
        _ = waitUntil(timeout: 15) { loudFrames(readRaw(dir + "/r.raw")[before...]) > 70_000 }
        follower.stop()

        let all = readRaw(dir + "/r.raw")
        let firstPlay = all[0..<before], secondPlay = all[before...]
        #expect(loudFrames(firstPlay) > 48_000, "the stream played: \(loudFrames(firstPlay)) loud frames")
        #expect(loudFrames(secondPlay) > 48_000, "the cached copy played with the server gone: \(loudFrames(secondPlay)) loud frames")
        _ = try c.call("cache.clear")
        #expect((try c.call("cache.size") as? [String: Any])?["entries"] as? Int == 0)
    }
}
