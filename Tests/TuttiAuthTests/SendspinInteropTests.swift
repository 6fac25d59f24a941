import Foundation
import Glibc
import Testing
import TuttiAuth
import TuttiCore
import TuttiTestSupport

/// Sendspin's Noise against PyPI's aiosendspin 10.2.1 (its own driver,
/// transport wrapper and the `noise` package underneath): our server channel
/// against its client (`run_handshake_client`), our client channel against its
/// server (`run_handshake_server`, strict), for each suite and PSK kind.
/// The frames go over a loopback TCP socket (no WebSocket: that is the surface's),
/// each as kind (0 text, 1 binary), 4-byte length, bytes (sendspin_noise_peer.py).
@Suite(.serialized) struct SendspinInteropTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("sendspin_noise_peer.py").path
    let crypto = NoisePrimitives()

    /// A listening loopback socket; its port.
    static func listen() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && Glibc.listen(fd, 1) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw CommandFailed(description: "cannot listen on loopback: \(String(cString: strerror(errno)))") }
        return (fd, UInt16(bigEndian: addr.sin_port))
    }

    struct Wire {
        let fd: Int32
        func readExactly(_ n: Int) -> [UInt8]? {
            var out = [UInt8](repeating: 0, count: n), got = 0
            while got < n {
                let r = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, n - got) }
                if r < 0 && errno == EINTR { continue }
                if r <= 0 { return nil }
                got += r
            }
            return out
        }
        func receive() -> (Bool, [UInt8])? {
            guard let head = readExactly(5) else { return nil }
            let n = Int(head[1]) << 24 | Int(head[2]) << 16 | Int(head[3]) << 8 | Int(head[4])
            guard n <= 1 << 24, let body = readExactly(n) else { return nil }
            return (head[0] == 1, body)
        }
        func send(_ binary: Bool, _ bytes: [UInt8]) {
            let n = UInt32(bytes.count)
            let frame = [binary ? 1 : 0, UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + bytes
            var at = 0
            while at < frame.count {
                let w = frame.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + at, frame.count - at) }
                if w < 0 && errno == EINTR { continue }
                guard w > 0 else { return }
                at += w
            }
        }
    }

    /// Runs the Python peer against `channel`: the handshake, its probe and 200,001-byte binary,
    /// then our text and 150,001-byte binary echoed back. What our side received, in order.
    func converse<C: SendspinChannelSecurity>(_ channel: inout C, start: [SendspinChannelEvent], arguments: [String]) throws -> [SendspinChannelEvent] {
        let python: String
        switch SendspinPython.interpreter() {
        case .success(let p): python = p
        case .failure(let why):
            print("SKIP: \(why)") // only where no Python 3.12 exists
            return []
        }
        let (listener, port) = try Self.listen()
        defer { close(listener) }
        let log = makeTemporaryDirectory() + "/peer.log"
        let peer = try BackgroundProgram(python, [Self.script, arguments[0], String(port)] + arguments.dropFirst(), log: log)
        defer { peer.stop() }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let fd = accept(listener, nil, nil)
        guard fd >= 0 else { throw CommandFailed(description: "the Python peer did not connect: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")") }
        defer { close(fd) }
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let wire = Wire(fd: fd)
        func perform(_ events: [SendspinChannelEvent], into got: inout [SendspinChannelEvent]) {
            for e in events {
                if case .sendRaw(let b, let bytes) = e { wire.send(b, bytes) } else { got.append(e) }
            }
        }
        var got: [SendspinChannelEvent] = []
        perform(start, into: &got)
        let ours: [UInt8] = [6] + (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        var sentOurs = false
        // Probe, big binary, echo of the text, echo of the binary: four messages, or a close.
        while got.count < 4 {
            guard let (binary, bytes) = wire.receive() else {
                throw CommandFailed(description: "the peer stopped after \(got.count) messages: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            }
            perform(channel.received(binary: binary, bytes: bytes), into: &got)
            if got.contains(where: { if case .close = $0 { true } else { false } }) { break }
            if got.count >= 2 && !sentOurs {
                sentOurs = true
                perform(channel.sealText("ping from Tutti"), into: &got)
                perform(channel.sealBinary(ours), into: &got)
            }
        }
        perform(channel.sealText("bye"), into: &got)
        return got
    }

    func check(_ got: [SendspinChannelEvent], peer: SendspinPeer?, expectedPeerID: String, category: String, cipher: NoiseCipher, mismatch: Bool = false) throws {
        guard !got.isEmpty else { return } // skipped
        #expect(got.count == 4)
        let peer = try #require(peer)
        guard case .message(let probeText) = got[0], let probe = JSONValue.parsing(probeText) else { Issue.record("no probe: \(got)"); return }
        #expect(probe["handshake_hash"]?.string == hexString(peer.handshakeHash))
        #expect(probe["category"]?.string == category && peer.category.name == category)
        #expect(probe["suite"]?.string == SendspinSuite.name(cipher))
        #expect(probe["peer"]?.string == expectedPeerID)
        #expect(probe["mismatch"]?.bool == mismatch && peer.credentialMismatch == mismatch)
        let theirs: [UInt8] = [4] + (0..<200_000).map { UInt8(($0 * 7 + 3) % 251) }
        #expect(got[1] == .binary(theirs))
        #expect(got[2] == .message(text: "echo:ping from Tutti"))
        let ours: [UInt8] = [6] + (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let echo: [UInt8] = [5] + crypto.sha256([ours]) + Array(ours.dropFirst())
        #expect(got[3] == .binary(echo))
    }

    static let cases: [(NoiseCipher, Bool)] = [(.chaChaPoly, false), (.aesGCM, false), (.chaChaPoly, true), (.aesGCM, true)]

    @Test(arguments: cases)
    func ourServerAgainstAiosendspinsClient(cipher: NoiseCipher, paired: Bool) throws {
        let server = NoiseKeyPair(secret: crypto.random(32), crypto: crypto)
        let clientSecret = crypto.random(32)
        let clientID = Base64URL.encode(crypto.publicKey(secret: clientSecret))
        let psk = SendspinPSK(key: crypto.random(32), category: .longTerm, crypto: crypto)
        let credentials = paired ? SendspinCredentials(psk: psk, known: true) : .stranger
        var channel = SendspinServerChannel(identity: server, crypto: crypto) { id in id == clientID ? credentials : .stranger }
        let got = try converse(&channel, start: [], arguments: ["client", cipher == .aesGCM ? "aesgcm" : "chacha", hexString(clientSecret),
                                                                Base64URL.encode(server.publicKey), paired ? hexString(psk.key) : "-"])
        try check(got, peer: channel.peer, expectedPeerID: Base64URL.encode(server.publicKey), category: paired ? "long_term" : "sentinel", cipher: cipher)
        if !got.isEmpty { #expect(channel.peer?.id == clientID) }
    }

    @Test(arguments: cases)
    func ourClientAgainstAiosendspinsServer(cipher: NoiseCipher, paired: Bool) throws {
        let serverSecret = crypto.random(32)
        let serverID = Base64URL.encode(crypto.publicKey(secret: serverSecret))
        let client = NoiseKeyPair(secret: crypto.random(32), crypto: crypto)
        let psk = SendspinPSK(key: crypto.random(32), category: .longTerm, crypto: crypto)
        var channel = SendspinClientChannel(identity: client, cipher: cipher, crypto: crypto, expectedServerID: serverID) { id, _, server in
            paired && id == psk.id && server == serverID ? psk : nil
        }
        let start = channel.start()
        let got = try converse(&channel, start: start, arguments: ["server", cipher == .aesGCM ? "aesgcm" : "chacha", hexString(serverSecret),
                                                                   Base64URL.encode(client.publicKey), paired ? hexString(psk.key) : "-"])
        try check(got, peer: channel.peer, expectedPeerID: Base64URL.encode(client.publicKey), category: paired ? "long_term" : "sentinel", cipher: cipher)
    }

    /// aiosendspin's server references a long-term PSK our client lost: both fall back to the Sentinel.
    @Test func aClientThatLostItsRecordIsAdmittedOnTheSentinelWithTheMismatchSeenOnBothSides() throws {
        let serverSecret = crypto.random(32)
        let serverID = Base64URL.encode(crypto.publicKey(secret: serverSecret))
        let client = NoiseKeyPair(secret: crypto.random(32), crypto: crypto)
        var channel = SendspinClientChannel(identity: client, cipher: .chaChaPoly, crypto: crypto, expectedServerID: serverID) { _, _, _ in nil }
        let start = channel.start()
        let got = try converse(&channel, start: start, arguments: ["server", "chacha", hexString(serverSecret), Base64URL.encode(client.publicKey), hexString(crypto.random(32))])
        try check(got, peer: channel.peer, expectedPeerID: Base64URL.encode(client.publicKey), category: "sentinel", cipher: .chaChaPoly, mismatch: true)
    }
}
