import Foundation
import Glibc
import Testing
import TuttiControlClient
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiNet
import TuttiTestSupport

/// No client can hold up another: a client that connects and stops
/// reading (a phone asleep with its socket open) is disconnected, and
/// everyone else's commands and notifications go on meanwhile.
@Suite(.serialized) struct ControlPlaneTests {
    /// A TCP client with a tiny receive window that sends `request` and never reads.
    final class StalledPeer {
        let fd: Int32
        init(port: UInt16, request: [UInt8]) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var small: Int32 = 2_048
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else { close(fd); throw CommandFailed(description: "connect: \(String(cString: strerror(errno)))") }
            _ = request.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        deinit { close(fd) }
    }

    static func webRoot() -> String {
        let dir = makeTemporaryDirectory("webroot")
        try! "<!doctype html><title>Tutti</title>".write(toFile: dir + "/index.html", atomically: true, encoding: .utf8)
        return dir
    }

    @Test func aClientThatStopsReadingIsDroppedAndHoldsUpNobody() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(counterFrames(count: 48_000 * 20)))
        let log = CapturingLog()
        let leader = try startLeader(files: [dir + "/a.wav"], loop: true, log: log.logger) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: Self.webRoot())
            c.clientStallMilliseconds = 1_500
        }
        defer { leader.stop() }
        let control = try #require(leader.controlEndpoint)
        let web = try #require(leader.webEndpoint)
        let status = Array(#"{"jsonrpc":"2.0","id":1,"method":"player.status"}"#.utf8) + [10]
        let upgrade = Array("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(web.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8)
        let sleepers = [try StalledPeer(port: control.port, request: status), try StalledPeer(port: control.port, request: status),
                        try StalledPeer(port: web.port, request: upgrade)]
        #expect(waitUntil(timeout: 5) { leader.controlClientCount == 3 }, "\(leader.controlClientCount) clients")

        // Another client changes a room's volume as fast as it can, reading every reply and notification.
        let active = try ControlClient(endpoint: control)
        var notified = 0
        active.onNotification = { method, _ in if method == "rooms.changed" { notified += 1 } }
        for i in 0..<3_000 { _ = try active.call("rooms.set", ["room": "den", "volume": JSONValue(i % 101)]) }
        #expect(notified > 0, "the active client hears its own changes")
        // Its notifications outran the sleepers' sockets: they are dropped within the stall limit.
        #expect(waitUntil(timeout: 8) { leader.controlClientCount == 1 }, "\(leader.controlClientCount) clients still connected")
        let reasons = log.lines.filter { $0.contains("disconnected:") }
        #expect(reasons.count >= 3, "\(reasons)")
        #expect(reasons.contains { $0.contains("JSON-RPC") && $0.contains("did not read for 1 s") }, "\(reasons)")
        #expect(reasons.contains { $0.contains("web page") }, "\(reasons)")
        // And the active client carries on.
        let room = try #require(try active.call("rooms.set", ["room": "den", "volume": 33]).object)
        #expect(room["volume"]?.integer == 33)
        withExtendedLifetime(sleepers) {}
    }

    @Test func anMPDClientThatAsksWithoutReadingIsDropped() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(counterFrames(count: 48_000 * 20)))
        let log = CapturingLog()
        let leader = try startLeader(files: [dir + "/a.wav"], loop: true, log: log.logger) { c in
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.clientStallMilliseconds = 1_500
            c.clientOutbox = ClientOutbox.Limits(maximumBytes: 1 << 20, maximumMessages: 256)
        }
        defer { leader.stop() }
        let mpd = try #require(leader.mpdEndpoint)
        // 5,000 status commands, never reading one answer.
        let flood = try StalledPeer(port: mpd.port, request: Array(String(repeating: "status\n", count: 5_000).utf8))
        #expect(waitUntil(timeout: 8) { log.lines.contains { $0.contains("MPD") && $0.contains("disconnected:") } }, "\(log.lines.suffix(5))")
        let reason = log.lines.first { $0.contains("disconnected:") } ?? ""
        #expect(reason.contains("not reading fast enough") || reason.contains("did not read"), "\(reason)")
        // Another MPD client is served meanwhile (mpc, the real one).
        let r = try runProgram("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(mpd.port), "status"], timeout: 10)
        #expect(r.status == 0 && r.out.contains("[playing]"), "\(r.out) \(r.err)")
        withExtendedLifetime(flood) {}
    }
}
