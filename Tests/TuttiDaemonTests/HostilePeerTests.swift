import Foundation
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiNet
import TuttiTestSupport

/// Peers that are no clients: random bytes, oversized lines, half lines
/// left hanging, and more connections than a port serves. Each is closed;
/// a real client beside them keeps being answered.
@Suite(.serialized) struct HostilePeerTests {
    func open(_ port: UInt16) throws -> TCPConnection { try TCPConnection.connect(to: Endpoint(host: "127.0.0.1", port: port)) }

    /// Reads until the leader closes the connection (true) or `seconds` pass (false).
    func closedWithin(_ c: TCPConnection, seconds: Int) -> Bool {
        c.setReceiveTimeout(milliseconds: seconds * 1000)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { buffer.deallocate() }
        let deadline = Monotonic.now() + Int64(seconds) * nanosecondsPerSecond
        while Monotonic.now() < deadline {
            do {
                let (n, _) = try c.receive(into: buffer)
                if n == 0 { return true }
            } catch NetError.timedOut { return false } catch { return true }
        }
        return false
    }

    @Test func garbageOversizedAndSilentControlClientsAreClosedWhileARealOneIsServed() throws {
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let port = leader.controlEndpoint!.port, mpd = leader.mpdEndpoint!.port
        let real = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: port))
        _ = try real.call("player.status")

        // Random bytes with newlines: a few malformed requests, then closed.
        let garbage = try open(port)
        var rng = SplitMix64(seed: 7)
        var bytes = (0..<4_096).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        for i in stride(from: 0, to: bytes.count, by: 100) { bytes[i] = 10 }
        try garbage.send(bytes)
        #expect(closedWithin(garbage, seconds: 5), "random bytes: still open")

        // Oversized lines, one after another: each an error, and after a few, closed.
        let big = try open(port)
        for _ in 0..<10 { try? big.send([UInt8](repeating: 65, count: 100_000) + [10]) }
        #expect(closedWithin(big, seconds: 5), "oversized lines: still open")

        // MPD: unknown commands one after another.
        let m = try open(mpd)
        try m.send(Array(String(repeating: "xyzzy\n", count: 20).utf8))
        #expect(closedWithin(m, seconds: 5), "MPD garbage: still open")

        // Silent, and a half line left hanging: closed after 10 s.
        let silent = try open(port), slow = try open(port)
        try slow.send(Array("{\"jsonrpc\":".utf8))
        let t0 = Monotonic.now()
        #expect(closedWithin(silent, seconds: 15), "a silent connection: still open")
        #expect(closedWithin(slow, seconds: 5), "a half line: still open")
        let waited = Double(Monotonic.now() - t0) / 1e9
        #expect(waited >= 9, "closed after \(waited) s, before the 10 s a client is given")

        // The real client was answered all along.
        #expect((try real.call("player.status").object) != nil)
    }

    /// Whether the leader has closed `c` (reads what is waiting, 1 ms at most).
    func hasClosed(_ c: TCPConnection) -> Bool {
        c.setReceiveTimeout(milliseconds: 1)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4_096, alignment: 1)
        defer { buffer.deallocate() }
        while true {
            do {
                let (n, _) = try c.receive(into: buffer)
                if n == 0 { return true }
            } catch NetError.timedOut { return false } catch { return true }
        }
    }

    @Test func aSlowlorisSendingAByteEveryHalfSecondIsClosedAfterTenSeconds() throws {
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        // A read never times out at this pace, so only a clock on the half line can end it.
        let slow = ["JSON-RPC": try open(leader.controlEndpoint!.port), "MPD": try open(leader.mpdEndpoint!.port)]
        let t0 = Monotonic.now()
        var closedAfter: [String: Double] = [:]
        while closedAfter.count < slow.count, Monotonic.now() - t0 < 20 * nanosecondsPerSecond {
            for (name, c) in slow where closedAfter[name] == nil {
                if (try? c.send([UInt8(ascii: "s")])) == nil || hasClosed(c) {
                    closedAfter[name] = Double(Monotonic.now() - t0) / 1e9
                }
            }
            usleep(500_000)
        }
        print("slowloris closed after: \(closedAfter)")
        for name in slow.keys {
            let after = try #require(closedAfter[name], "\(name): still open after 20 s")
            #expect(after >= 9.5 && after <= 13, "\(name): closed after \(after) s (the limit is 10 s)")
        }
    }

    /// Sends one HTTP/1.1 request and returns the whole answer (the server closes after it).
    func http(_ port: UInt16, _ request: [UInt8]) throws -> String {
        let c = try open(port)
        try c.send(request)
        c.setReceiveTimeout(milliseconds: 5_000)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { buffer.deallocate() }
        var answer: [UInt8] = []
        while let (n, _) = try? c.receive(into: buffer), n > 0 { answer += buffer[0..<n] }
        return String(decoding: answer, as: UTF8.self)
    }

    @Test func deeplyNestedJSONIsRefusedOnEveryPortAndKillsNothing() throws {
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
        }
        defer { leader.stop() }
        let web = try #require(leader.webEndpoint), control = try #require(leader.controlEndpoint)
        // 100 levels killed the leader on civetweb's 100 KiB stack; 100,000 would on any stack.
        for depth in [100, 100_000] {
            let body = Array(#"{"jsonrpc":"2.0","id":1,"method":"player.status","params":{"x":"#.utf8)
                + [UInt8](repeating: UInt8(ascii: "["), count: depth) + [UInt8](repeating: UInt8(ascii: "]"), count: depth) + Array("}}".utf8)
            let head = "POST /api HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            let answer = try http(web.port, Array(head.utf8) + body)
            #expect(answer.contains("nested deeper than 32 levels"), "POST /api, \(depth) deep: \(answer.prefix(300))")
            let rpc = try ControlClient(endpoint: control)
            #expect(throws: (any Error).self, "JSON-RPC, \(depth) deep") { _ = try rpc.call("player.status", ["x": nestedArray(depth)]) }
        }
        // Both still serve.
        let ok = try http(web.port, Array("POST /api HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 50\r\nConnection: close\r\n\r\n".utf8) + Array(#"{"jsonrpc":"2.0","id":1,"method":"player.status"} "#.utf8))
        #expect(ok.contains("\"state\""), "\(ok.prefix(300))")
        #expect((try ControlClient(endpoint: control).call("player.status").object) != nil)
    }

    @Test func connectionsThatSayNothingDoNotKeepTheWebAppFromABrowser() throws {
        let leader = try startLeader(files: []) { c in
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
        }
        defer { leader.stop() }
        let web = try #require(leader.webEndpoint)
        // Twice the web server's workers, each of which would be held for the 10 s request timeout.
        let idle = (0..<96).compactMap { _ in try? open(web.port) }
        defer { for c in idle { c.close() } }
        #expect(idle.count == 96)
        usleep(300_000)
        let page = try http(web.port, Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        #expect(page.hasPrefix("HTTP/1.1 200"), "answered within 5 s beside 96 silent connections: \(page.prefix(200))")
    }

    func nestedArray(_ depth: Int) -> JSONValue {
        var value: JSONValue = []
        for _ in 0..<min(depth, 200) { value = [value] }
        return value
    }

    @Test func aPortHoldsAtMostItsBudgetAndTheClientsAlreadyThereGoOn() throws {
        let leader = try startLeader(files: []) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        let port = leader.controlEndpoint!.port
        let real = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: port))
        _ = try real.call("player.status")
        var flood: [TCPConnection] = []
        for _ in 0..<400 { if let c = try? open(port) { flood.append(c) } }
        usleep(500_000)
        // Each refused connection was closed as it came; a host's share is 16, the real client holds one.
        var stillOpen = 0
        for c in flood {
            c.setReceiveTimeout(milliseconds: 1)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)
            defer { buffer.deallocate() }
            do { let (n, _) = try c.receive(into: buffer); if n > 0 { stillOpen += 1 } } catch NetError.timedOut { stillOpen += 1 } catch {}
        }
        print("400 connections at once: \(stillOpen) held, \(flood.count - stillOpen) closed at once")
        // All from 127.0.0.1, which holds the real client's place too: its share is 16 of the port's 256.
        #expect(stillOpen == 15, "\(stillOpen) held")
        #expect((try real.call("player.status").object) != nil, "the client already there is answered")
        for c in flood { c.close() }
    }

    /// An open leader (any speaker joins) lists a room that has joined even
    /// when its speaker is off; one host joining under a new name on each of
    /// 400 connections must not grow that list for good, nor push out the
    /// rooms people set up.
    @Test func aPeerJoiningUnderANewNameEachTimeLeavesTheRoomListBounded() throws {
        let leader = try startLeader(files: []) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        func join(_ name: String) throws -> Bool {
            let speaker = try TCPConnection.connect(to: leader.endpoint)
            defer { speaker.close() }
            try speaker.send(Message.hello(version: WireProtocol.streamDelayVersion, name: name).encoded())
            speaker.setReceiveTimeout(milliseconds: 5_000)
            let reader = MessageReader(connection: speaker)
            guard case .welcome? = try reader.next() else { return false }
            // A v6 speaker's welcome is followed by its EQ, then the leader counts it as joined:
            // leaving before that is leaving before joining (not remembered).
            while let message = try reader.next() { if case .equalizer = message { return true } }
            return false
        }
        #expect(try join("kitchen"))
        #expect(waitUntil(timeout: 10) { leader.knownRooms.contains("kitchen") && leader.followerNames.isEmpty })
        let control = try ControlClient(endpoint: leader.controlEndpoint!)
        _ = try control.call("rooms.set", ["room": "kitchen", "volume": 40])
        var welcomed = 0
        for i in 0..<400 where try join("guest-\(i)") { welcomed += 1 }
        #expect(welcomed == 400)
        #expect(waitUntil(timeout: 10) { leader.followerNames.isEmpty }, "every guest connection ended")
        let listed = try control.call("rooms.list").object?["rooms"]?.array ?? []
        let names = listed.compactMap { $0.object?["name"]?.string }
        print("400 names joined from one host: rooms.list lists \(names.count)")
        #expect(names.count == SeenRooms.defaultLimit, "\(names.count) rooms listed")
        #expect(names.contains("kitchen"), "the room with a volume set is kept")
        #expect(names.contains("guest-399") && !names.contains("guest-0"), "the newest names are listed, the oldest forgotten")
    }
}
