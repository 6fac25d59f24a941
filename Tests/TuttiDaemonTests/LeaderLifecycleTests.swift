import Foundation
import Glibc
import Testing
import TuttiCore
import TuttiNet
import TuttiTestSupport

/// The leader's runtime shape, seen from outside: the built `tuttid` and
/// `tutti-follower` processes, stopped as systemd stops them (SIGTERM).
@Suite(.serialized) struct LeaderLifecycleTests {
    static var binaries: URL {
        URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0]).deletingLastPathComponent()
    }

    /// SIGTERM while three speakers play PCM and control clients are
    /// connected on every surface: every speaker hears the leader's goodbye
    /// (not a dropped connection), the control clients are closed, and the
    /// leader exits 0 with no thread of its own left running.
    @Test func sigtermWithSpeakersPlayingSaysGoodbyeAndJoinsEveryThread() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.sine(frequency: 440, seconds: 2, amplitude: 0.4)))
        let base = Int.random(in: 20_000...40_000)
        let leader = Process()
        leader.executableURL = Self.binaries.appendingPathComponent("tuttid")
        leader.arguments = ["leader", "--listen", "127.0.0.1:\(base)", "--control", "127.0.0.1:\(base + 1)", "--mpd", "127.0.0.1:\(base + 2)",
                            "--web", "127.0.0.1:\(base + 3)", "--snapcast-stream", "127.0.0.1:\(base + 4)",
                            "--snapcast-control", "127.0.0.1:\(base + 5)", "--snapcast-http", "127.0.0.1:\(base + 6)",
                            "--no-announce", "--no-airplay", "--db", dir + "/library.db", "--codec", "pcm",
                            "--play", dir + "/tone.wav", "--loop", "--log-level", "debug"]
        FileManager.default.createFile(atPath: dir + "/leader.log", contents: nil)
        leader.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/leader.log"))
        try leader.run()
        defer { if leader.isRunning { kill(leader.processIdentifier, SIGKILL); leader.waitUntilExit() } }

        var speakers: [Process] = []
        defer { for s in speakers where s.isRunning { kill(s.processIdentifier, SIGKILL); s.waitUntilExit() } }
        for room in ["kitchen", "hall", "study"] {
            let s = Process()
            s.executableURL = Self.binaries.appendingPathComponent("tutti-follower")
            s.arguments = ["--leader", "127.0.0.1:\(base)", "--name", room, "--no-realtime", "--output", "file:\(dir)/\(room).raw"]
            FileManager.default.createFile(atPath: "\(dir)/\(room).log", contents: nil)
            s.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(dir)/\(room).log"))
            try s.run()
            speakers.append(s)
        }
        func bytes(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
        // Playing: a second of audio in every room.
        #expect(waitUntil(timeout: 20) { ["kitchen", "hall", "study"].allSatisfy { bytes("\(dir)/\($0).raw") > 48_000 * 4 } },
                "every speaker plays")
        // A client on JSON-RPC, MPD and Snapcast control, each connected and idle.
        let clients = try [1, 2, 5].map { try TCPConnection.connect(to: Endpoint(host: "127.0.0.1", port: UInt16(base + $0))) }
        let rpc = clients[0]
        try rpc.send(Array(#"{"jsonrpc":"2.0","id":1,"method":"player.status"}"#.utf8) + [10])
        let reply = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        defer { reply.deallocate() }
        rpc.setReceiveTimeout(milliseconds: 5_000)
        #expect(try rpc.receive(into: reply).0 > 0, "the JSON-RPC client is served")

        kill(leader.processIdentifier, SIGTERM)
        #expect(waitUntil(timeout: 10) { !leader.isRunning }, "SIGTERM ends the leader")
        leader.waitUntilExit()
        #expect(leader.terminationReason == .exit && leader.terminationStatus == 0)
        let log = (try? String(contentsOfFile: dir + "/leader.log", encoding: .utf8)) ?? ""
        let stopped = try #require(log.split(separator: "\n").last { $0.contains("stopped in") }, "the leader logs its stop")
        let left = stopped.components(separatedBy: "ms, ").last?.split(separator: " ").first.flatMap { Int($0) }
        #expect(left == 0, "every thread the leader started was joined: \(stopped)")
        for room in ["kitchen", "hall", "study"] {
            #expect(waitUntil(timeout: 5) {
                ((try? String(contentsOfFile: "\(dir)/\(room).log", encoding: .utf8)) ?? "").contains("leader closed the connection: leader stopping")
            }, "\(room) heard the leader's goodbye")
        }
        for (i, client) in clients.enumerated() {
            client.setReceiveTimeout(milliseconds: 2_000)
            var n = 1
            // What the surface still sent before closing is read through; then the end.
            for _ in 0..<64 where n > 0 { n = (try? client.receive(into: reply).0) ?? -1 } // -1: timed out, still open
            #expect(n == 0, "control client \(i) was closed")
            client.close()
        }
    }
}
