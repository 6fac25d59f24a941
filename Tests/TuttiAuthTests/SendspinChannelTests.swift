import Testing
import TuttiAuth
import TuttiCore

/// Carries every raw message between a server channel and a client channel,
/// as a WebSocket would; collects what each side delivers.
struct ChannelPair {
    var server: SendspinServerChannel
    var client: SendspinClientChannel
    var toServer: [(Bool, [UInt8])] = []
    var toClient: [(Bool, [UInt8])] = []
    var serverGot: [SendspinChannelEvent] = []
    var clientGot: [SendspinChannelEvent] = []

    mutating func route(fromServer events: [SendspinChannelEvent]) {
        for e in events {
            if case .sendRaw(let b, let bytes) = e { toClient.append((b, bytes)) } else { serverGot.append(e) }
        }
    }
    mutating func route(fromClient events: [SendspinChannelEvent]) {
        for e in events {
            if case .sendRaw(let b, let bytes) = e { toServer.append((b, bytes)) } else { clientGot.append(e) }
        }
    }
    /// Delivers until nothing is in flight.
    mutating func pump() {
        while !toServer.isEmpty || !toClient.isEmpty {
            if !toServer.isEmpty { let (b, m) = toServer.removeFirst(); route(fromServer: server.received(binary: b, bytes: m)) }
            if !toClient.isEmpty { let (b, m) = toClient.removeFirst(); route(fromClient: client.received(binary: b, bytes: m)) }
        }
    }
}

@Suite struct SendspinChannelTests {
    let crypto = NoisePrimitives()
    var serverKey: NoiseKeyPair { NoiseKeyPair(secret: [UInt8](repeating: 1, count: 32), crypto: crypto) }
    var clientKey: NoiseKeyPair { NoiseKeyPair(secret: [UInt8](repeating: 2, count: 32), crypto: crypto) }
    var clientID: String { Base64URL.encode(clientKey.publicKey) }

    func pair(cipher: NoiseCipher, serverKnows: SendspinCredentials, clientHolds: SendspinPSK?, config: SendspinServerChannel.Configuration = .init()) -> ChannelPair {
        let crypto = crypto
        let server = SendspinServerChannel(identity: serverKey, crypto: crypto, configuration: config) { _ in serverKnows }
        let client = SendspinClientChannel(identity: clientKey, cipher: cipher, crypto: crypto) { id, _, _ in clientHolds?.id == id ? clientHolds : nil }
        return ChannelPair(server: server, client: client)
    }

    @Test(arguments: NoiseCipher.allCases)
    func sentinelHandshakeThenMessagesBothWaysIncludingFragmented(cipher: NoiseCipher) throws {
        var p = pair(cipher: cipher, serverKnows: .stranger, clientHolds: nil)
        p.route(fromClient: p.client.start())
        p.pump()
        #expect(p.server.isEstablished && p.client.isEstablished)
        let sp = try #require(p.server.peer), cp = try #require(p.client.peer)
        #expect(sp.id == clientID && cp.id == p.server.serverID)
        #expect(sp.category == .sentinel && cp.category == .sentinel && !sp.credentialMismatch && !cp.credentialMismatch)
        #expect(sp.handshakeHash == cp.handshakeHash && sp.cipher == cipher)

        // A text, a small binary, and a 200,001-byte binary: 4 Noise frames (65,516 + 3 × 65,517 bytes of data, the last short).
        let big: [UInt8] = [4] + (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        p.route(fromServer: p.server.sealText(#"{"type":"server/hello"}"#))
        p.route(fromServer: p.server.sealBinary([4, 1, 2]))
        let bigFrames = p.server.sealBinary(big)
        #expect(bigFrames.count == 4)
        #expect(bigFrames.allSatisfy { if case .sendRaw(true, let b) = $0 { b.count <= 65535 } else { false } })
        p.route(fromServer: bigFrames)
        p.pump()
        #expect(p.clientGot == [.message(text: #"{"type":"server/hello"}"#), .binary([4, 1, 2]), .binary(big)])
        // And back, a JSON text over one frame (fragmented type 0).
        let longText = #"{"type":"client/state","x":""# + String(repeating: "é", count: 40_000) + #""}"#
        p.route(fromClient: p.client.sealText(longText))
        p.route(fromClient: p.client.sealBinary(big))
        p.pump()
        #expect(p.serverGot == [.message(text: longText), .binary(big)])
    }

    @Test func aPairedClientUsesItsLongTermPSKAndOneThatLostItFallsBackToTheSentinel() throws {
        let psk = SendspinPSK(key: [UInt8](repeating: 7, count: 32), category: .longTerm, crypto: crypto)
        var paired = pair(cipher: .chaChaPoly, serverKnows: SendspinCredentials(psk: psk, known: true), clientHolds: psk)
        paired.route(fromClient: paired.client.start())
        paired.pump()
        #expect(paired.server.peer?.category == .longTerm && paired.server.peer?.credentialMismatch == false)
        #expect(paired.client.peer?.category == .longTerm)

        var lost = pair(cipher: .aesGCM, serverKnows: SendspinCredentials(psk: psk, known: true), clientHolds: nil)
        lost.route(fromClient: lost.client.start())
        lost.pump()
        #expect(lost.server.isEstablished)
        #expect(lost.server.peer?.category == .sentinel && lost.server.peer?.credentialMismatch == true)
        #expect(lost.client.peer?.credentialMismatch == true)
        let trust = SendspinTrust()
        #expect(!trust.mayPlay(lost.server.peer!))
        lost.route(fromServer: lost.server.sealText("hi"))
        lost.pump()
        #expect(lost.clientGot == [.message(text: "hi")])

        // A client holding a *different* long-term PSK under the same id fails both tries: closed.
        let other = SendspinPSK(key: [UInt8](repeating: 8, count: 32), category: .longTerm, crypto: crypto)
        let crypto = crypto
        var wrong = pair(cipher: .chaChaPoly, serverKnows: SendspinCredentials(psk: psk, known: true), clientHolds: nil)
        wrong.client = SendspinClientChannel(identity: clientKey, cipher: .chaChaPoly, crypto: crypto) { _, _, _ in other }
        wrong.route(fromClient: wrong.client.start())
        wrong.pump()
        #expect(!wrong.server.isEstablished)
        #expect(wrong.serverGot == [.close(code: 1008, reason: "Noise message 2 did not authenticate")])
    }

    @Test func firstMessageDecidesPlainOrNoiseAndRefusesWhatItMust() {
        let hello = Array(#"{"type":"client/hello","payload":{"client_id":"abc","name":"Kitchen"}}"#.utf8)
        // Plain allowed: the hello passes through, and so does everything after.
        var plain = SendspinServerChannel(identity: serverKey, crypto: crypto, configuration: .init(allowPlain: true)) { _ in .stranger }
        #expect(plain.received(binary: false, bytes: hello) == [.message(text: String(decoding: hello, as: UTF8.self))])
        #expect(plain.isPlain && plain.peer == nil)
        #expect(plain.sealBinary([4, 9]) == [.sendRaw(binary: true, bytes: [4, 9])])
        // Plain allowed, but the id is a known client: never downgraded.
        var known = SendspinServerChannel(identity: serverKey, crypto: crypto, configuration: .init(allowPlain: true)) { _ in SendspinCredentials(psk: nil, known: true) }
        #expect(known.received(binary: false, bytes: hello) == [.close(code: 1008, reason: "unencrypted connection claiming a known client")])
        // Plain not allowed (the default): server/error malformed, as aiosendspin answers.
        func refused(_ first: [UInt8], binary: Bool = false, ciphers: [NoiseCipher] = NoiseCipher.allCases) -> String? {
            var c = SendspinServerChannel(identity: serverKey, crypto: crypto, configuration: .init(ciphers: ciphers)) { _ in .stranger }
            let out = c.received(binary: binary, bytes: first)
            guard out.count == 2, case .sendRaw(false, let text) = out[0], case .close(1002, _) = out[1] else { return nil }
            return JSONValue.parsing(text)?["payload"]?["reason"]?.string
        }
        #expect(refused(hello) == "malformed")
        #expect(refused([1, 2, 3], binary: true) == "malformed")
        let id = clientID
        func initText(version: String = "1", suite: String = "25519_ChaChaPoly_SHA256", client: String? = nil) -> [UInt8] {
            Array(#"{"type":"client/init","payload":{"client_id":"\#(client ?? id)","version":\#(version),"suite":"\#(suite)"}}"#.utf8)
        }
        #expect(refused(initText(version: "2")) == "unsupported_version")
        #expect(refused(initText(version: "true")) == "malformed")
        #expect(refused(initText(version: "1.5")) == "malformed")
        #expect(refused(initText(suite: "25519_ChaChaPoly_BLAKE2s")) == "unsupported_suite")
        #expect(refused(initText(suite: "25519_AESGCM_SHA256"), ciphers: [.chaChaPoly]) == "unsupported_suite")
        #expect(refused(initText(client: "short")) == "malformed")
        #expect(refused(Array("not json".utf8)) == "malformed")
        // A good init: server/init then noise/handshake, both text; the prologue is what was sent.
        var good = SendspinServerChannel(identity: serverKey, crypto: crypto) { _ in .stranger }
        let out = good.received(binary: false, bytes: initText())
        #expect(out.count == 2)
        if case .sendRaw(false, let text) = out[0] {
            #expect(String(decoding: text, as: UTF8.self) == #"{"type":"server/init","payload":{"server_id":"\#(good.serverID)","version":1}}"#)
        } else { Issue.record("no server/init") }
        // Nothing is sealed before the handshake ends; a binary message 2 closes.
        #expect(good.sealText("early").isEmpty)
        #expect(good.received(binary: true, bytes: [0]) == [.close(code: 1002, reason: "expected noise/handshake message 2")])
    }

    @Test func transportRefusesTamperingTextAndOversizedReassembly() throws {
        var p = pair(cipher: .chaChaPoly, serverKnows: .stranger, clientHolds: nil, config: .init(maxMessageBytes: 100_000))
        p.route(fromClient: p.client.start())
        p.pump()
        // 150,000 bytes against a 100,000-byte bound: refused at the fragment that crosses it.
        let big: [UInt8] = [4] + [UInt8](repeating: 1, count: 150_000)
        p.route(fromClient: p.client.sealBinary(big))
        p.pump()
        #expect(p.serverGot == [.close(code: 1009, reason: "a fragmented message over 100000 bytes")])
        #expect(p.server.received(binary: true, bytes: [1]).isEmpty) // closed: nothing more

        var q = pair(cipher: .chaChaPoly, serverKnows: .stranger, clientHolds: nil)
        q.route(fromClient: q.client.start())
        q.pump()
        var frames = q.client.sealText("x")
        if case .sendRaw(true, var b) = frames[0] { b[b.count - 1] ^= 1; frames[0] = .sendRaw(binary: true, bytes: b) }
        q.route(fromClient: frames)
        q.pump()
        #expect(q.serverGot == [.close(code: 1008, reason: "a transport message did not authenticate")])

        var r = pair(cipher: .chaChaPoly, serverKnows: .stranger, clientHolds: nil)
        r.route(fromClient: r.client.start())
        r.pump()
        #expect(r.server.received(binary: false, bytes: Array("{}".utf8)) == [.close(code: 1002, reason: "a text message after the Noise handshake")])
    }

    @Test func reassemblerFollowsTheFragmentRules() {
        var r = SendspinReassembler(limit: 1 << 20)
        #expect(r.accept([4, 1]) == .message([4, 1]))
        #expect(r.accept([1, 0x02, 4, 9]) == .needMore)
        #expect(r.accept([1, 0x00, 8]) == .needMore)
        #expect(r.accept([1, 0x01, 7]) == .message([4, 9, 8, 7]))
        #expect(r.accept([1, 0x03, 0] + Array("{}".utf8)) == .message([0] + Array("{}".utf8))) // first and last at once
        #expect(r.accept([1, 0x01, 7]) == .refused("a fragment with no message begun"))
        #expect(r.accept([1, 0x06, 4]) == .refused("fragment flags with reserved bits"))
        #expect(r.accept([1, 0x02, 1]) == .refused("a first fragment without a message type"))
        _ = r.accept([1, 0x02, 4, 1])
        #expect(r.accept([4, 2]) == .refused("a whole message inside a fragmented one"))
        #expect(r.inFlight == 0)
        // Legacy framing (2 more, 3 end) is read too.
        #expect(r.accept([2, 4, 1, 2]) == .needMore)
        #expect(r.accept([2, 3]) == .needMore)
        #expect(r.accept([3, 4]) == .message([4, 1, 2, 3, 4]))
        #expect(r.accept([3, 4]) == .refused("a legacy fragment with no message begun"))
        #expect(r.accept([]) == .refused("an empty plaintext"))
        // Fragments are written so that each frame fits a Noise message.
        let frames = SendspinFragments.frames([0] + [UInt8](repeating: 65, count: NoiseLimits.maxPlaintext))
        #expect(frames.map(\.count) == [NoiseLimits.maxPlaintext, 5]) // 65,516 bytes of data, then 3
        #expect(frames[0].prefix(3) == [1, 0x02, 0] && frames[1].prefix(2) == [1, 0x01])
        #expect(SendspinFragments.frames([0] + [UInt8](repeating: 65, count: NoiseLimits.maxPlaintext - 1)).count == 1)
    }

    @Test func base64urlAndPSKIDsMatchAiosendspin() {
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xfb, 0xff])
        #expect(Base64URL.decode("-_8=") == [0xfb, 0xff])
        #expect(Base64URL.decode("+/8") == nil)
        #expect(Base64URL.decode("A") == nil)
        // From aiosendspin 10.2.1: psk_id_for(SENTINEL_PSK) and SENTINEL_PSK.hex().
        let sentinel = SendspinPSK.sentinel(crypto: crypto)
        #expect(hexString(sentinel.key) == sentinelHex)
        #expect(sentinel.id == sentinelID)
    }
}

// Printed by aiosendspin 10.2.1 (see SendspinInteropTests for the live check).
let sentinelHex = "1b5e24dbc1aed95fc2a5a338a90c05df44bd10f5ec1f4cd66cbf86272767b9d3"
let sentinelID = "GFsV9tLaSQm9HcFWpKsgYQOr7wFTvNUtkmFwuVz3zoo"
