import Foundation
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// The JSON-RPC control socket, with a real client over loopback.
@Suite(.serialized) struct ControlTests {
    func leaderWithControl(_ dir: String) throws -> Leader {
        writeFile(dir + "/one.wav", wavImage(counterFrames(count: 48_000 * 8)))
        writeFile(dir + "/two.wav", wavImage(counterFrames(count: 48_000 * 8)))
        return try startLeader(files: [dir + "/one.wav", dir + "/two.wav"]) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
        }
    }

    /// Sends raw lines, returns the parsed replies in order.
    func exchange(_ endpoint: Endpoint, _ lines: [String]) throws -> [[String: Any]] {
        let c = try TCPConnection.connect(to: endpoint)
        c.setReceiveTimeout(milliseconds: 3_000)
        defer { c.close() }
        try c.send(Array(lines.joined(separator: "\n").utf8) + [10])
        var replies: [[String: Any]] = []
        var pending: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { buffer.deallocate() }
        let expected = lines.filter { $0.contains("\"id\"") || !$0.contains("\"method\"") }.count
        while replies.count < expected {
            let (n, _) = try c.receive(into: buffer)
            if n == 0 { break }
            pending += buffer[0..<n]
            while let nl = pending.firstIndex(of: 10) {
                let line = Array(pending[..<nl]); pending.removeSubrange(...nl)
                if let o = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], o["method"] == nil { replies.append(o) }
            }
        }
        return replies
    }

    @Test func malformedRequestsGetErrorsAndTheConnectionStaysUsable() throws {
        let dir = makeTemporaryDirectory()
        let leader = try leaderWithControl(dir)
        defer { leader.stop() }
        let endpoint = try #require(leader.controlEndpoint)
        let replies = try exchange(endpoint, [
            "{not json",
            "[1,2,3]",
            #"{"jsonrpc":"2.0","id":1,"method":"no.such"}"#,
            #"{"jsonrpc":"2.0","id":2,"method":"player.seek","params":{"position":"soon"}}"#,
            #"{"jsonrpc":"2.0","id":3,"method":"player.seek","params":{"position":-4}}"#,
            #"{"jsonrpc":"2.0","id":4,"method":"rooms.set","params":{"room":"x","volume":1000}}"#,
            #"{"jsonrpc":"2.0","id":5,"method":"rooms.set","params":{"room":"x","muted":"yes"}}"#,
            #"{"jsonrpc":"2.0","id":6,"method":"player.status","params":[1]}"#,
            #"{"id":7,"method":"player.status"}"#,
            String(repeating: "x", count: 70_000),
            #"{"jsonrpc":"2.0","id":"last","method":"player.status"}"#,
        ])
        let codes = replies.map { (($0["error"] as? [String: Any])?["code"] as? Int) ?? 0 }
        #expect(codes == [-32700, -32600, -32601, -32602, -32602, -32602, -32602, -32602, -32600, -32700, 0], "\(codes)")
        let last = try #require(replies.last)
        #expect(last["id"] as? String == "last")
        #expect((last["result"] as? [String: Any])?["state"] as? String == "playing")
        for reply in replies.dropLast() {
            let message = (reply["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(!message.isEmpty)
        }
    }

    @Test func transportCommandsAndNotifications() throws {
        let dir = makeTemporaryDirectory()
        let leader = try leaderWithControl(dir)
        defer { leader.stop() }
        let endpoint = try #require(leader.controlEndpoint)
        let follower = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        let watcher = try ControlClient(endpoint: endpoint)
        _ = try watcher.call("player.status")
        let client = try ControlClient(endpoint: endpoint)
        func status() -> [String: JSONValue] { ((try? client.call("player.status"))?.object) ?? [:] }
        // 1.5 s into the first track, as the room hears it.
        #expect(waitUntil(timeout: 10) { (status()["position"]?.number ?? 0) >= 1.5 })

        let paused = try #require(try client.call("player.pause").object)
        #expect(paused["state"]?.string == "paused")
        let accepted = try #require(paused["acceptedAt"]?.integer), effective = try #require(paused["effectiveAt"]?.integer)
        #expect(effective - accepted > 0 && effective - accepted < 150_000_000)
        // The other client hears about it without asking.
        var seen: [String: JSONValue]?
        for _ in 0..<10 {
            let (method, params) = try watcher.nextNotification()
            if method == "player.changed" { seen = params.object; break }
        }
        #expect(seen?["state"]?.string == "paused")

        let position = try #require((try client.call("player.status").object)?["position"]?.number)
        // The room plays on 300 ms past the pause's instant: the position holds.
        #expect(waitUntilPlayed([dir + "/den.raw"], through: Int64(effective) + 300_000_000))
        let still = try #require((try client.call("player.status").object)?["position"]?.number)
        #expect(position == still && position > 1, "paused position holds: \(position) → \(still)")

        let next = try #require(try client.call("player.next").object)
        #expect(next["state"]?.string == "playing")
        #expect(waitUntil(timeout: 5) { status()["track"]?.integer == 1 })
        let afterNext = try #require(try client.call("player.status").object)
        #expect(afterNext["track"]?.integer == 1)
        #expect((afterNext["position"]?.number ?? 9) < 1)

        _ = try client.call("player.seek", ["position": 5.0])
        #expect(waitUntil(timeout: 5) { (status()["position"]?.number ?? 0) > 5 })
        let seeked = try #require((try client.call("player.status").object)?["position"]?.number)
        #expect(seeked > 5 && seeked < 6, "\(seeked)")

        // previous within 3 s of a track's start goes back a track; later it restarts the track.
        _ = try client.call("player.previous")
        // Heard from the track's start again, within 3 s of it.
        #expect(waitUntil(timeout: 5) { (status()["position"]?.number ?? 9) < 1 })
        #expect((try client.call("player.status").object)?["track"]?.integer == 1)
        _ = try client.call("player.previous")
        #expect(waitUntil(timeout: 5) { status()["track"]?.integer == 0 })
        #expect((try client.call("player.status").object)?["track"]?.integer == 0)
        do { _ = try client.call("player.next"); _ = try client.call("player.next"); Issue.record("next past the last track") } catch let e as ControlClient.RemoteError {
            #expect(e.code == -32000 && e.message.contains("last track"))
        }

        let room = try #require(try client.call("rooms.set", ["room": "den", "volume": 40, "latencyMs": 12.5]).object)
        #expect(room["volume"]?.integer == 40 && room["latencyMs"]?.number == 12.5)
        #expect(waitUntil(timeout: 2) { follower.settings.volume == 40 && follower.settings.latencyTrimNanoseconds == 12_500_000 })
        #expect(waitUntil(timeout: 4) {
            let rooms = ((try? client.call("rooms.list"))?.object)?["rooms"]?.objectArray ?? []
            return rooms.first?["health"] != nil
        })
    }

    @Test func tuttiClientBinary() throws {
        let dir = makeTemporaryDirectory()
        let leader = try leaderWithControl(dir)
        defer { leader.stop() }
        let port = try #require(leader.controlEndpoint).port
        func tutti(_ args: [String]) throws -> (Int32, String) { try runTutti(port: port, args) }
        let (s1, status) = try tutti(["status"])
        #expect(s1 == 0 && status.contains("playing") && status.contains("one"), "\(status)")
        let (s2, paused) = try tutti(["pause"])
        #expect(s2 == 0 && paused.hasPrefix("paused"), "\(paused)")
        let (s3, json) = try tutti(["--json", "status"])
        #expect(s3 == 0)
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        #expect((object?["player"] as? [String: Any])?["state"] as? String == "paused")
        let (s4, _) = try tutti(["seek", "later"])
        #expect(s4 == 64)
        let (s5, _) = try tutti(["frobnicate"])
        #expect(s5 == 64)
        let unreachable = try runTutti(port: 1, ["status"])
        #expect(unreachable.status == 2, "unreachable leader: \(unreachable.out)")
    }
}
