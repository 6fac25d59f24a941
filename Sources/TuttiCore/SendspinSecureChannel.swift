/// A Sendspin server's side of a connection's security: the first message
/// decides plain (a legacy `client/hello`, where allowed) or Noise (a
/// `client/init`), then the Noise `KKpsk2` handshake as its initiator, then
/// sealed transport. Pure: the trust store's answer for a client comes in
/// through `credentials`, a lookup in memory that must not block.
///
/// Thread contract: a value owned by one connection; not shared.
/// The connection closes one that has not reached `isEstablished` within
/// `handshakeTimeoutSeconds` (aiosendspin waits 30 s per message).
public struct SendspinServerChannel: SendspinChannelSecurity {
    public struct Configuration: Sendable {
        /// Admit legacy clients that start with a plain `client/hello` (no encryption).
        public var allowPlain: Bool
        /// The suites a client may pick (AES-GCM only where it can run here).
        public var ciphers: [NoiseCipher]
        /// The largest message a client may send, reassembled from fragments.
        public var maxMessageBytes: Int
        public init(allowPlain: Bool = false, ciphers: [NoiseCipher] = NoiseCipher.allCases, maxMessageBytes: Int = 1 << 20) {
            self.allowPlain = allowPlain; self.ciphers = ciphers; self.maxMessageBytes = maxMessageBytes
        }
    }

    public static let handshakeTimeoutSeconds = 30

    private enum State: Sendable {
        case awaitingFirst
        case plain(PlainSendspinChannel)
        /// Message 1 is out; `beforeMessage2` is the handshake as it stood, to try message 2 again under the Sentinel.
        case awaitingMessage2(beforeMessage2: NoiseKKpsk2Handshake, clientID: String, psk: SendspinPSK)
        case established(SendspinSecureSession)
        case closed
    }

    private var state = State.awaitingFirst
    private let identity: NoiseKeyPair
    private let crypto: any NoiseCrypto
    private let configuration: Configuration
    private let credentials: @Sendable (String) -> SendspinCredentials
    /// The client, once the handshake has authenticated it; nil on a plain connection.
    public private(set) var peer: SendspinPeer?

    /// - Parameters:
    ///   - identity: the server's static key pair (`SendspinServerIdentity` keeps it on disk).
    ///   - credentials: what the trust store knows of a `client_id` (`SendspinTrust.credentials(for:)`).
    public init(identity: NoiseKeyPair, crypto: any NoiseCrypto, configuration: Configuration = Configuration(),
                credentials: @escaping @Sendable (String) -> SendspinCredentials) {
        self.identity = identity; self.crypto = crypto; self.configuration = configuration; self.credentials = credentials
    }

    /// The server's id as clients see it (base64url of its public key).
    public var serverID: String { Base64URL.encode(identity.publicKey) }
    /// Whether messages flow: a finished handshake, or a plain connection.
    public var isEstablished: Bool {
        switch state {
        case .plain, .established: true
        default: false
        }
    }
    public var isPlain: Bool { if case .plain = state { true } else { false } }

    private mutating func close(_ event: SendspinChannelEvent) -> [SendspinChannelEvent] {
        state = .closed
        return [event]
    }

    private mutating func refuseInit(_ reason: String, _ why: String) -> [SendspinChannelEvent] {
        state = .closed
        return [.sendRaw(binary: false, bytes: Array(SendspinHandshakeText.serverError(reason).utf8)), SendspinClose.protocolError(why)]
    }

    public mutating func received(binary: Bool, bytes: [UInt8]) -> [SendspinChannelEvent] {
        switch state {
        case .closed:
            return []
        case .plain(var plain):
            let out = plain.received(binary: binary, bytes: bytes)
            state = .plain(plain)
            return out
        case .established(var session):
            let out = session.received(binary: binary, bytes: bytes)
            state = .established(session)
            if out.contains(where: { if case .close = $0 { true } else { false } }) { state = .closed }
            return out
        case .awaitingFirst:
            return first(binary: binary, bytes: bytes)
        case .awaitingMessage2(let before, let clientID, let psk):
            return message2(binary: binary, bytes: bytes, before: before, clientID: clientID, psk: psk)
        }
    }

    private mutating func first(binary: Bool, bytes: [UInt8]) -> [SendspinChannelEvent] {
        guard !binary else { return refuseInit("malformed", "a binary first message") }
        guard let text = String(validating: bytes, as: UTF8.self), let json = SendspinHandshakeText.parse(bytes) else {
            return refuseInit("malformed", "a first message that is not JSON")
        }
        if json["type"]?.string == "client/hello" {
            guard configuration.allowPlain else { return refuseInit("malformed", "unencrypted clients are not allowed") }
            // A client known to the trust store has connected encrypted before: never downgrade it.
            if let id = json["payload"]?["client_id"]?.string, credentials(id).known {
                return close(SendspinClose.policy("unencrypted connection claiming a known client"))
            }
            var plain = PlainSendspinChannel()
            let out = plain.received(binary: false, bytes: bytes)
            state = .plain(plain)
            return out
        }
        // Checked in aiosendspin's order: envelope, version, suite, client_id.
        guard json["type"]?.string == "client/init", let payload = json["payload"], payload.object != nil else {
            return refuseInit("malformed", "not a client/init")
        }
        guard let versionValue = payload["version"], case .number = versionValue, let version = versionValue.integer else {
            return refuseInit("malformed", "client/init without a whole version")
        }
        guard version == 1 else { return refuseInit("unsupported_version", "client/init version \(version)") }
        guard let suite = payload["suite"]?.string else { return refuseInit("malformed", "client/init without a suite") }
        guard let cipher = SendspinSuite.cipher(named: suite), configuration.ciphers.contains(cipher) else {
            return refuseInit("unsupported_suite", "client/init suite not offered here")
        }
        guard let clientID = payload["client_id"]?.string, let clientKey = SendspinHandshakeText.key(clientID) else {
            return refuseInit("malformed", "client/init client_id is not a key")
        }
        let known = credentials(clientID)
        let psk = known.psk ?? SendspinPSK.sentinel(crypto: crypto)
        let serverInit = SendspinHandshakeText.serverInit(serverID: serverID)
        var handshake = NoiseKKpsk2Handshake(role: .initiator, cipher: cipher, prologue: Array(text.utf8) + Array(serverInit.utf8),
                                             localStatic: identity, remoteStatic: clientKey, psk: psk.key, crypto: crypto)
        let message1: [UInt8]
        do { message1 = try handshake.writeMessage(SendspinHandshakeText.message1Payload(psk)) } catch {
            return close(SendspinClose.policy("client/init key refused: \(error)"))
        }
        state = .awaitingMessage2(beforeMessage2: handshake, clientID: clientID, psk: psk)
        return [.sendRaw(binary: false, bytes: Array(serverInit.utf8)),
                .sendRaw(binary: false, bytes: Array(SendspinHandshakeText.handshake(message1).utf8))]
    }

    private mutating func message2(binary: Bool, bytes: [UInt8], before: NoiseKKpsk2Handshake, clientID: String, psk: SendspinPSK) -> [SendspinChannelEvent] {
        guard !binary, let noise = SendspinHandshakeText.noiseBytes(bytes) else {
            return close(SendspinClose.protocolError("expected noise/handshake message 2"))
        }
        var handshake = before
        var used = psk
        var mismatch = false
        var payload: [UInt8]
        do {
            payload = try handshake.readMessage(noise)
        } catch .authentication where psk.category != .sentinel {
            // The client could not use the PSK we referenced (a lost record): a message 2 that
            // verifies under the Sentinel is still authenticated by both static keys.
            handshake = before
            handshake.psk = SendspinPSK.sentinel(crypto: crypto).key
            do { payload = try handshake.readMessage(noise) } catch { return close(SendspinClose.policy("Noise message 2 did not authenticate")) }
            used = SendspinPSK.sentinel(crypto: crypto)
            mismatch = true
        } catch {
            return close(SendspinClose.policy("Noise message 2 refused: \(error)"))
        }
        guard JSONValue.parsing(payload)?.object != nil else { return close(SendspinClose.protocolError("Noise message 2 payload is not a JSON object")) }
        let transport: NoiseTransport
        do { transport = try handshake.transport() } catch { return close(SendspinClose.policy("\(error)")) }
        peer = SendspinPeer(id: clientID, cipher: handshake.cipher, category: used.category, handshakeHash: transport.handshakeHash, credentialMismatch: mismatch)
        state = .established(SendspinSecureSession(transport: transport, reassembler: SendspinReassembler(limit: configuration.maxMessageBytes)))
        return []
    }

    public mutating func sealText(_ text: String) -> [SendspinChannelEvent] {
        switch state {
        case .plain(var plain):
            let out = plain.sealText(text)
            state = .plain(plain)
            return out
        case .established(var session):
            let out = session.sealText(text)
            state = .established(session)
            return out
        default:
            return [] // nothing goes out before the handshake has finished
        }
    }

    public mutating func sealBinary(_ bytes: [UInt8]) -> [SendspinChannelEvent] {
        switch state {
        case .plain(var plain):
            let out = plain.sealBinary(bytes)
            state = .plain(plain)
            return out
        case .established(var session):
            let out = session.sealBinary(bytes)
            state = .established(session)
            return out
        default:
            return []
        }
    }
}

/// A Sendspin client's side (a Tutti speaker playing for a Sendspin server):
/// it opens with `client/init`, answers the server's message 1 as the Noise
/// responder, then seals and opens like the server.
public struct SendspinClientChannel: SendspinChannelSecurity {
    private enum State: Sendable {
        case notStarted
        case awaitingServerInit(clientInit: String)
        case awaitingMessage1(handshake: NoiseKKpsk2Handshake, serverID: String)
        case established(SendspinSecureSession)
        case closed
    }

    private var state = State.notStarted
    private let identity: NoiseKeyPair
    private let cipher: NoiseCipher
    private let crypto: any NoiseCrypto
    private let maxMessageBytes: Int
    private let expectedServerID: String?
    private let resolve: @Sendable (_ pskID: String, _ category: SendspinPSKCategory, _ serverID: String) -> SendspinPSK?
    /// The server, once authenticated.
    public private(set) var peer: SendspinPeer?

    /// - Parameters:
    ///   - expectedServerID: refuse any other server (nil: any, as for a first connection).
    ///   - resolve: the PSK a `psk_id` names in this client's store (a long-term record bound to that server, an accepted pairing PSK), or nil.
    public init(identity: NoiseKeyPair, cipher: NoiseCipher, crypto: any NoiseCrypto, expectedServerID: String? = nil, maxMessageBytes: Int = 1 << 20,
                resolve: @escaping @Sendable (_ pskID: String, _ category: SendspinPSKCategory, _ serverID: String) -> SendspinPSK?) {
        self.identity = identity; self.cipher = cipher; self.crypto = crypto; self.expectedServerID = expectedServerID
        self.maxMessageBytes = maxMessageBytes; self.resolve = resolve
    }

    public var clientID: String { Base64URL.encode(identity.publicKey) }
    public var isEstablished: Bool { if case .established = state { true } else { false } }

    /// The first message, once the WebSocket is open.
    public mutating func start() -> [SendspinChannelEvent] {
        guard case .notStarted = state else { return [] }
        let text = SendspinHandshakeText.clientInit(clientID: clientID, cipher: cipher)
        state = .awaitingServerInit(clientInit: text)
        return [.sendRaw(binary: false, bytes: Array(text.utf8))]
    }

    private mutating func close(_ event: SendspinChannelEvent) -> [SendspinChannelEvent] {
        state = .closed
        return [event]
    }

    public mutating func received(binary: Bool, bytes: [UInt8]) -> [SendspinChannelEvent] {
        switch state {
        case .notStarted, .closed:
            return []
        case .established(var session):
            let out = session.received(binary: binary, bytes: bytes)
            state = .established(session)
            if out.contains(where: { if case .close = $0 { true } else { false } }) { state = .closed }
            return out
        case .awaitingServerInit(let clientInit):
            guard !binary, let text = String(validating: bytes, as: UTF8.self), let json = SendspinHandshakeText.parse(bytes) else {
                return close(SendspinClose.protocolError("expected server/init"))
            }
            if json["type"]?.string == "server/error" {
                return close(SendspinClose.policy("server refused client/init: \(json["payload"]?["reason"]?.string ?? "no reason")"))
            }
            guard json["type"]?.string == "server/init", let payload = json["payload"], payload["version"]?.integer == 1,
                  let serverID = payload["server_id"]?.string, let serverKey = SendspinHandshakeText.key(serverID) else {
                return close(SendspinClose.protocolError("malformed server/init"))
            }
            if let expectedServerID, expectedServerID != serverID { return close(SendspinClose.policy("not the server this speaker pairs with")) }
            // The PSK comes from message 1's payload; the placeholder is replaced before message 2.
            let handshake = NoiseKKpsk2Handshake(role: .responder, cipher: cipher, prologue: Array(clientInit.utf8) + Array(text.utf8),
                                                 localStatic: identity, remoteStatic: serverKey, psk: [UInt8](repeating: 0, count: 32), crypto: crypto)
            state = .awaitingMessage1(handshake: handshake, serverID: serverID)
            return []
        case .awaitingMessage1(var handshake, let serverID):
            guard !binary, let noise = SendspinHandshakeText.noiseBytes(bytes) else { return close(SendspinClose.protocolError("expected noise/handshake message 1")) }
            let payload: [UInt8]
            do { payload = try handshake.readMessage(noise) } catch { return close(SendspinClose.policy("Noise message 1 refused: \(error)")) }
            guard let json = JSONValue.parsing(payload), let pskID = json["psk_id"]?.string,
                  let category = json["psk_category"]?.string.flatMap(SendspinPSKCategory.init(rawValue:)) else {
                return close(SendspinClose.protocolError("malformed Noise message 1 payload"))
            }
            var mismatch = false
            var psk: SendspinPSK
            if category == .sentinel {
                psk = SendspinPSK.sentinel(crypto: crypto)
            } else if let found = resolve(pskID, category, serverID) {
                psk = found
            } else {
                // A credential we no longer hold: answer under the Sentinel so the session can re-pair.
                psk = SendspinPSK.sentinel(crypto: crypto)
                mismatch = true
            }
            handshake.psk = psk.key
            let message2: [UInt8]
            do { message2 = try handshake.writeMessage(Array("{}".utf8)) } catch { return close(SendspinClose.policy("\(error)")) }
            let transport: NoiseTransport
            do { transport = try handshake.transport() } catch { return close(SendspinClose.policy("\(error)")) }
            peer = SendspinPeer(id: serverID, cipher: cipher, category: psk.category, handshakeHash: transport.handshakeHash, credentialMismatch: mismatch)
            state = .established(SendspinSecureSession(transport: transport, reassembler: SendspinReassembler(limit: maxMessageBytes)))
            return [.sendRaw(binary: false, bytes: Array(SendspinHandshakeText.handshake(message2).utf8))]
        }
    }

    public mutating func sealText(_ text: String) -> [SendspinChannelEvent] {
        guard case .established(var session) = state else { return [] }
        let out = session.sealText(text)
        state = .established(session)
        return out
    }

    public mutating func sealBinary(_ bytes: [UInt8]) -> [SendspinChannelEvent] {
        guard case .established(var session) = state else { return [] }
        let out = session.sealBinary(bytes)
        state = .established(session)
        return out
    }
}
