import Foundation
import Glibc
import Testing
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiFollower
import TuttiNet
import TuttiSystem
import TuttiTestSupport

/// "Play here" on the web app's WebSocket, spoken by a raw client (no
/// browser): the clock reply's stamps, a bad message, a page that joins and
/// then stops reading.
@Suite(.serialized) struct PlayHereSocketTests {
    /// A WebSocket client on a plain socket: it sends masked frames and reads whole messages.
    final class Page {
        let fd: Int32
        var reader = WebSocketFrameReader(maximumMessageBytes: 1 << 20)

        init(port: UInt16) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard rc == 0 else { close(fd); throw CommandFailed(description: "connect: \(String(cString: strerror(errno)))") }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            send(Array("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
            var head: [UInt8] = []
            while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
                var b: UInt8 = 0
                guard recv(fd, &b, 1, 0) == 1 else { throw CommandFailed(description: "no upgrade: \(String(decoding: head, as: UTF8.self))") }
                head.append(b)
            }
            guard String(decoding: head, as: UTF8.self).hasPrefix("HTTP/1.1 101") else {
                throw CommandFailed(description: "no upgrade: \(String(decoding: head, as: UTF8.self))")
            }
        }
        deinit { close(fd) }

        func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        func send(binary: [UInt8]) { send(WebSocketClientFrame.frame(opcode: WebSocketClientFrame.binary, payload: binary, mask: (1, 2, 3, 4))) }

        /// The next binary message whose type byte is `type`; nil once the server closed the connection.
        func next(type: UInt8) throws -> [UInt8]? {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                while let message = try reader.next() {
                    if case .binary(let b) = message, b.first == type { return b }
                    if case .close = message { return nil }
                }
                let n = recv(fd, &buffer, buffer.count, 0)
                guard n > 0 else { return nil }
                reader.append(Array(buffer[0..<n]))
            }
        }
    }

    static func ping(_ pageTime: Double) -> [UInt8] {
        [0x01] + (0..<8).map { UInt8(truncatingIfNeeded: pageTime.bitPattern >> UInt64(56 - 8 * $0)) }
    }

    static func int64(_ b: [UInt8], _ at: Int) -> Int64 { Int64(bitPattern: (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(b[at + $1]) }) }

    @Test func aClockPingIsAnsweredWithTheLeadersArrivalAndSendTimes() throws {
        let leader = try startLeader(files: []) { c in
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
        }
        defer { leader.stop() }
        let page = try Page(port: try #require(leader.webEndpoint).port)
        for _ in 0..<5 {
            let before = Condition.now()
            page.send(binary: Self.ping(1234.5))
            let reply = try #require(try page.next(type: 0x81))
            let after = Condition.now()
            #expect(reply.count == 25)
            #expect(Double(bitPattern: UInt64(bitPattern: Self.int64(reply, 1))) == 1234.5, "the page's time comes back as it was")
            let received = Self.int64(reply, 9), sent = Self.int64(reply, 17)
            #expect(before <= received && received <= sent && sent <= after, "\(before) ≤ \(received) ≤ \(sent) ≤ \(after)")
        }
        // A message of no known type ends the connection.
        page.send(binary: [0x09, 1])
        #expect(try page.next(type: 0x81) == nil, "closed")
    }

    @Test func aPageThatJoinsAndStopsReadingLosesItsRoomAndHoldsUpNobody() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(counterFrames(count: 48_000 * 30)))
        let log = CapturingLog()
        let leader = try startLeader(files: [dir + "/a.wav"], loop: true, log: log.logger) { c in
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
        }
        defer { leader.stop() }
        let dac = dir + "/kitchen.raw"
        let kitchen = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dac, ppm: 0, delayMilliseconds: 0))
        defer { kitchen.stop() }
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["kitchen"] })
        let page = try Page(port: try #require(leader.webEndpoint).port)
        var small: Int32 = 2_048
        setsockopt(page.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        page.send(binary: [0x02] + Array("kitchen".utf8))
        // Its name is taken by the speaker: it gets the next one, and its room is listed.
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["kitchen", "kitchen 2"] }, "\(leader.followerNames)")
        let heardBefore = (try? FileManager.default.attributesOfItem(atPath: dac)[.size] as? Int) ?? 0
        let start = Condition.now()
        // It never reads: PCM piles up in its queue until it is 3 s old, and its socket is closed.
        #expect(waitUntil(timeout: 15) { leader.followerNames == ["kitchen"] }, "\(leader.followerNames)")
        let dropped = Double(Condition.now() - start) / 1e9
        let reason = log.lines.first { $0.contains("Play here kitchen 2") && $0.contains("disconnected:") } ?? ""
        #expect(!reason.isEmpty, "\(log.lines.suffix(5))")
        // Meanwhile the speaker heard on, in real time.
        let heard = Double(((try? FileManager.default.attributesOfItem(atPath: dac)[.size] as? Int) ?? 0) - heardBefore) / 192_000
        print("the stalled page lost its room after \(String(format: "%.1f", dropped)) s (\(reason)); the speaker played \(String(format: "%.1f", heard)) s meanwhile")
        #expect(heard >= dropped - 1, "the speaker played \(heard) s in \(dropped) s")
    }
}
