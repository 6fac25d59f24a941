import Foundation
import Glibc
import Synchronization
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiGestures
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiNet
import TuttiTestSupport

/// A TCP connection from a chosen loopback address (127.0.0.2: the
/// attacker; real clients stay on 127.0.0.1), plain blocking descriptor.
final class SourcedConnection {
    let fd: Int32

    init?(from source: String, to port: UInt16) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = port.bigEndian
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let size = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } } == 0
            && withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } } == 0
        if !ok { Glibc.close(fd); return nil }
    }

    deinit { Glibc.close(fd) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// What arrives within `milliseconds` (until the peer closes or the time is up).
    func receive(milliseconds: Int) -> (bytes: [UInt8], closed: Bool) {
        var out: [UInt8] = []
        let deadline = Monotonic.now() + Int64(milliseconds) * nanosecondsPerMillisecond
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = deadline - Monotonic.now()
            if left <= 0 { return (out, false) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, Int32(max(1, left / nanosecondsPerMillisecond))) <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (out, true) }
            out += buffer[0..<n]
        }
    }

    /// Whether the leader has closed it (reads what waits, `milliseconds` at most).
    func isClosed(within milliseconds: Int = 1) -> Bool { receive(milliseconds: milliseconds).closed }
}

/// Threads of this process now (the test runs the leader in process),
/// or those whose name starts with `prefix`.
func threadCount(named prefix: String? = nil) -> Int {
    guard let dir = opendir("/proc/self/task") else { return -1 }
    defer { closedir(dir) }
    var n = 0
    while let entry = readdir(dir) {
        let id = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard !id.hasPrefix(".") else { continue }
        if let prefix {
            guard let name = try? String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8), name.hasPrefix(prefix) else { continue }
        }
        n += 1
    }
    return n
}

/// `count` GET requests for `path` from `source`, each on its own connection,
/// held open: the connections and how each was answered (its status line's
/// first 12 bytes; empty when it was closed unanswered within 300 ms).
func heldRequests(_ count: Int, from source: String, to port: UInt16, path: String) -> (connections: [SourcedConnection], answers: [String]) {
    var connections: [SourcedConnection] = []
    var answers: [String] = []
    for _ in 0..<count {
        guard let c = SourcedConnection(from: source, to: port) else { continue }
        c.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        let (bytes, _) = c.receive(milliseconds: 300)
        answers.append(String(decoding: bytes.prefix(12), as: UTF8.self))
        connections.append(c)
    }
    return (connections, answers)
}

/// One host cannot take the places of the others: each port serves a
/// host at most its share, and a client from another address is served
/// while 127.0.0.2 holds all it may.
@Suite(.serialized) struct AddressShareTests {
    @Test func aClientFrom127001IsServedOnEveryPortWhile127002HoldsItsShare() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(counterFrames(count: 48_000 * 20)))
        let leader = try startLeader(files: [dir + "/a.wav"], loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastStream = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastControl = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let ports: [(String, UInt16)] = [
            ("speaker", leader.endpoint.port), ("snapcast stream", try #require(leader.snapcastEndpoint).port),
            ("JSON-RPC", try #require(leader.controlEndpoint).port), ("MPD", try #require(leader.mpdEndpoint).port),
            ("Snapcast JSON-RPC", try #require(leader.snapcastControlEndpoint).port),
        ]
        // 40 connections from 127.0.0.2 to each port (the old per-port budget of 256 held them all).
        var held: [String: [SourcedConnection]] = [:]
        for (name, port) in ports { held[name] = (0..<40).compactMap { _ in SourcedConnection(from: "127.0.0.2", to: port) } }
        usleep(500_000)
        var open: [String: Int] = [:]
        for (name, _) in ports {
            open[name] = held[name]!.filter { !$0.isClosed() }.count
            print("\(name): 40 connections from 127.0.0.2, \(open[name]!) held")
        }
        // The two speaker ports share one budget (speakers of either kind); the others have their own.
        #expect(open["speaker"]! + open["snapcast stream"]! == 16, "\(open)")
        for name in ["JSON-RPC", "MPD", "Snapcast JSON-RPC"] { #expect(open[name] == 16, "\(name): \(open[name]!) of 40 held (a host's share is 16)") }
        // The web port from 127.0.0.1, where a reverse proxy on the leader brings every phone from:
        // 16 pages at once are served, more than a host's 12 (bench/web's ten tabs were refused 26 times).
        let web = try #require(leader.webEndpoint).port
        var proxied = heldRequests(16, from: "127.0.0.1", to: web, path: "/")
        #expect(proxied.answers.filter { $0 == "HTTP/1.1 200" }.count == 16, "\(proxied.answers)")
        proxied.connections.removeAll() // closed
        usleep(300_000) // their places given back before 127.0.0.2 takes its share
        // The web port: 12 of its workers per host; the 13th connection from 127.0.0.2 is closed (or answered 503).
        let (pages, answers) = heldRequests(14, from: "127.0.0.2", to: web, path: "/")
        #expect(answers.filter { $0 == "HTTP/1.1 200" }.count == 12, "\(answers)")
        #expect(answers.suffix(2).allSatisfy { $0 == "HTTP/1.1 503" || $0.isEmpty }, "\(answers)")
        // Sendspin's port (16 clients, 18 workers): a host's share is 4; the rest are refused at once.
        let sendspin = try #require(leader.sendspinEndpoint).port
        let (players, sendspinAnswers) = heldRequests(10, from: "127.0.0.2", to: sendspin, path: "/sendspin")
        print("Sendspin: 10 connections from 127.0.0.2, answers \(sendspinAnswers)")
        #expect(sendspinAnswers.filter { $0.hasPrefix("HTTP/1.1 4") }.count == 4, "\(sendspinAnswers)")
        #expect(sendspinAnswers.suffix(6).allSatisfy { $0 == "HTTP/1.1 503" || $0.isEmpty }, "\(sendspinAnswers)")

        // Meanwhile, from 127.0.0.1: a control client, an MPD client, Snapcast's control, the web page, a speaker.
        #expect((try ControlClient(endpoint: leader.controlEndpoint!).call("player.status").object) != nil)
        let mpd = try TCPConnection.connect(to: leader.mpdEndpoint!)
        let greeting = SourcedReader.line(mpd)
        #expect(greeting.hasPrefix("OK MPD"), "MPD greeting: \(greeting)")
        let snap = try TCPConnection.connect(to: leader.snapcastControlEndpoint!)
        try snap.send(Array(#"{"id":1,"jsonrpc":"2.0","method":"Server.GetRPCVersion"}"#.utf8) + [13, 10])
        let reply = (0..<5).lazy.map { _ in SourcedReader.line(snap) }.first { $0.contains("\"id\":1") || $0.isEmpty } ?? ""
        #expect(reply.contains("\"result\""), "Snapcast control: \(reply)")
        let page = try TCPConnection.connect(to: Endpoint(host: "127.0.0.1", port: web))
        try page.send(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        #expect(SourcedReader.line(page).hasPrefix("HTTP/1.1 200"))
        let player = try TCPConnection.connect(to: Endpoint(host: "127.0.0.1", port: sendspin))
        try player.send(Array("GET /sendspin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        #expect(SourcedReader.line(player).hasPrefix("HTTP/1.1 4"), "Sendspin serves 127.0.0.1 (a plain GET is not a WebSocket)")
        let speaker = try TCPConnection.connect(to: leader.endpoint)
        try speaker.send(Message.hello(version: WireProtocol.streamDelayVersion, name: "kitchen").encoded())
        speaker.setReceiveTimeout(milliseconds: 3_000)
        let welcome = try MessageReader(connection: speaker).next()
        guard case .welcome? = welcome else { Issue.record("the speaker from 127.0.0.1 got \(String(describing: welcome))"); return }
        withExtendedLifetime((held, pages, players)) {}
    }

    @Test func tenThousandRoomCommandsLeaveTheThreadCountBoundedAndTheLeaderServing() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(counterFrames(count: 48_000 * 20)))
        writeFile(dir + "/b.wav", wavImage(counterFrames(count: 48_000 * 20)))
        let leader = try startLeader(files: [dir + "/a.wav", dir + "/b.wav"], loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let speaker = try TCPConnection.connect(to: leader.endpoint)
        try speaker.send(Message.hello(version: WireProtocol.streamDelayVersion, name: "kitchen").encoded())
        speaker.setReceiveTimeout(milliseconds: 3_000)
        let reader = MessageReader(connection: speaker)
        guard case .welcome? = try reader.next() else { Issue.record("no welcome"); return }
        let before = threadCount()
        // Count threads all along, not only at the end: a thread per frame ends soon after it starts.
        // Those for room commands by name (a7499ed named each "tutti-room-cmd"), and all of the process's
        // loosely, as other suites' tests run beside this one.
        let most = Atomic<Int>(before), mostForCommands = Atomic<Int>(0), sampling = Atomic<Bool>(true)
        let sampler = Thread {
            while sampling.load(ordering: .relaxed) {
                let n = threadCount(), c = threadCount(named: "tutti-room-cmd")
                if n > most.load(ordering: .relaxed) { most.store(n, ordering: .relaxed) }
                if c > mostForCommands.load(ordering: .relaxed) { mostForCommands.store(c, ordering: .relaxed) }
                usleep(1_000)
            }
        }
        sampler.start()
        // Keep reading what the leader sends, so it never finds this speaker too slow.
        let box = ReaderBox(reader)
        let draining = Thread { while (try? box.reader.next()) != nil {} }
        draining.start()
        let commands: [ButtonCommand] = [.next, .volumeUp, .toggle, .prev, .volumeDown, .mute]
        for batch in 0..<100 {
            var bytes: [UInt8] = []
            for i in 0..<100 { bytes += Message.roomCommand(commands[(batch * 100 + i) % commands.count]).encoded() }
            try speaker.send(bytes)
        }
        usleep(500_000)
        sampling.store(false, ordering: .relaxed)
        let peak = most.load(ordering: .relaxed), forCommands = mostForCommands.load(ordering: .relaxed)
        print("10,000 room commands: \(before) threads before, at most \(peak) during, at most \(forCommands) for room commands")
        #expect(forCommands <= 2, "\(forCommands) threads doing room commands at once (one desk per leader)")
        #expect(peak - before <= 100, "threads grew from \(before) to \(peak)")
        // Still answering, and still the speaker's leader.
        #expect((try ControlClient(endpoint: leader.controlEndpoint!).call("player.status").object) != nil)
        #expect(leader.followerNames.contains("kitchen"))
        speaker.close()
    }

    /// Every peer here holds a place and never becomes a client: each is
    /// closed about 10 s after it connected, however busy it keeps its
    /// connection; a client that logged in stays.
    @Test func peersThatNeverLogInOrFinishTheirHandshakeAreClosedAfterTenSeconds() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(counterFrames(count: 48_000 * 20)))
        let leader = try startLeader(files: [dir + "/a.wav"], loop: true) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastStream = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
            c.password = "correct horse"
            c.passwordOnLoopback = true // so that 127.0.0.2 is a stranger that must log in
        }
        defer { leader.stop() }
        let control = try #require(leader.controlEndpoint).port, mpd = try #require(leader.mpdEndpoint).port
        let web = try #require(leader.webEndpoint).port
        let status = Array(#"{"jsonrpc":"2.0","id":1,"method":"player.status"}"#.utf8) + [10]
        // Busy but never logged in: a request a second (each refused), an MPD ping a second.
        let t0 = Monotonic.now()
        let rpc = try #require(SourcedConnection(from: "127.0.0.2", to: control))
        let mpdPinger = try #require(SourcedConnection(from: "127.0.0.2", to: mpd))
        // A byte every 2 s of a hello that never ends: no read ever times out.
        let speaker = try #require(SourcedConnection(from: "127.0.0.2", to: leader.endpoint.port))
        let snapPort = try #require(leader.snapcastEndpoint).port
        let snapclient = try #require(SourcedConnection(from: "127.0.0.2", to: snapPort))
        // A WebSocket that answers every ping and never logs in.
        let page = try #require(SourcedConnection(from: "127.0.0.2", to: web))
        page.send(Array("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(web)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        let handshake = page.receive(milliseconds: 1_000)
        #expect(String(decoding: handshake.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 101"))
        // And one that logs in, from the same address: it stays.
        let member = try #require(SourcedConnection(from: "127.0.0.2", to: control))
        member.send(Array(#"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"password":"correct horse"}}"#.utf8) + [10])
        #expect(String(decoding: member.receive(milliseconds: 2_000).bytes, as: UTF8.self).contains("\"result\""))

        let peers: [(String, SourcedConnection)] = [("JSON-RPC", rpc), ("MPD", mpdPinger), ("speaker", speaker), ("snapclient", snapclient), ("web page", page)]
        let hello = Message.hello(version: WireProtocol.version, name: "kitchen").encoded()
        var closedAfter: [String: Double] = [:]
        var tick = 0
        while Monotonic.now() - t0 < 18 * nanosecondsPerSecond, closedAfter.count < peers.count {
            if tick % 10 == 0 {
                rpc.send(status)
                mpdPinger.send(Array("ping\n".utf8))
                member.send(status)
            }
            if tick % 20 == 0 && tick / 20 < hello.count - 1 {
                speaker.send([hello[tick / 20]])
                snapclient.send([0])
            }
            for (name, c) in peers where closedAfter[name] == nil {
                let (bytes, closed) = c.receive(milliseconds: 1)
                if name == "web page" { WebSocketFrames.answerPings(bytes, on: c) }
                if closed { closedAfter[name] = Double(Monotonic.now() - t0) / 1e9 }
            }
            usleep(100_000)
            tick += 1
        }
        print("closed after: \(closedAfter)")
        for (name, _) in peers {
            let after = closedAfter[name]
            #expect(after != nil, "\(name): still open after 18 s")
            #expect((after ?? 0) >= 8, "\(name): closed after \(after ?? 0) s, before its 10 s")
        }
        #expect(!member.isClosed(within: 200), "the client that logged in stays")
    }
}

// Sendable because only the draining thread uses the reader once the test hands it over.
final class ReaderBox: @unchecked Sendable {
    let reader: MessageReader
    init(_ reader: MessageReader) { self.reader = reader }
}

/// Reads one line (to LF) from a connection, 3 s at most.
enum SourcedReader {
    static func line(_ c: TCPConnection) -> String {
        c.setReceiveTimeout(milliseconds: 3_000)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4_096, alignment: 1)
        defer { buffer.deallocate() }
        var out: [UInt8] = []
        // Byte by byte: what follows the line stays for the next call.
        while out.last != 10, let (n, _) = try? c.receive(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<1])), n > 0 { out += buffer[0..<n] }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Just enough of a WebSocket client to answer the server's pings.
enum WebSocketFrames {
    /// Answers each ping frame in `bytes` (unmasked server frames) with a masked pong.
    static func answerPings(_ bytes: [UInt8], on c: SourcedConnection) {
        var i = 0
        while i + 2 <= bytes.count {
            let opcode = bytes[i] & 0x0f, length = Int(bytes[i + 1] & 0x7f)
            guard length < 126, i + 2 + length <= bytes.count else { return }
            if opcode == 0x9 {
                let payload = Array(bytes[(i + 2)..<(i + 2 + length)])
                c.send([0x8a, 0x80 | UInt8(length), 0, 0, 0, 0] + payload) // mask 0: the payload as it is
            }
            i += 2 + length
        }
    }
}
