/// The Noise Protocol Framework (revision 34) as Sendspin uses it: the
/// `KKpsk2` pattern over X25519 and SHA-256, with ChaCha20-Poly1305 or
/// AES-256-GCM. Pure: the primitives come from a `NoiseCrypto` (TuttiAuth's
/// `NoisePrimitives`), and every state here is a value that can be copied,
/// which is how a server retries message 2 under a second PSK.
///
/// ```
/// KKpsk2:
///   -> s
///   <- s
///   ...
///   -> e, es, ss
///   <- e, ee, se, psk
/// ```

/// The primitives Noise needs, injected so that the state machines stay pure.
/// Thread contract: every method may be called from any thread; none throws.
public protocol NoiseCrypto: Sendable {
    /// `count` bytes from a cryptographic random source.
    func random(_ count: Int) -> [UInt8]
    /// The X25519 public key of a 32-byte secret.
    func publicKey(secret: [UInt8]) -> [UInt8]
    /// X25519(secret, public); nil when the result is all zeros (a low-order point).
    func dh(secret: [UInt8], public: [UInt8]) -> [UInt8]?
    /// SHA-256 of the parts, concatenated.
    func sha256(_ parts: [[UInt8]]) -> [UInt8]
    /// HMAC-SHA-256 of the parts, concatenated, under `key` (any length).
    func hmacSHA256(key: [UInt8], _ parts: [[UInt8]]) -> [UInt8]
    /// AEAD with a 32-byte key and a 12-byte nonce: ciphertext plus 16-byte tag.
    func seal(_ cipher: NoiseCipher, key: [UInt8], nonce: [UInt8], _ plaintext: [UInt8], ad: [UInt8]) -> [UInt8]
    /// The plaintext, or nil when the tag does not authenticate.
    func open(_ cipher: NoiseCipher, key: [UInt8], nonce: [UInt8], _ sealed: [UInt8], ad: [UInt8]) -> [UInt8]?
}

/// The AEAD of a Noise suite.
public enum NoiseCipher: String, Sendable, CaseIterable {
    case chaChaPoly = "ChaChaPoly"
    case aesGCM = "AESGCM"

    /// Noise's 96-bit nonce: 32 zero bits, then the counter (little-endian
    /// for ChaChaPoly, big-endian for AESGCM; spec section 12).
    public func nonce(_ n: UInt64) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 {
            let byte = UInt8(truncatingIfNeeded: n >> UInt64(8 * i))
            switch self {
            case .chaChaPoly: b[4 + i] = byte
            case .aesGCM: b[11 - i] = byte
            }
        }
        return b
    }
}

/// Noise's limits (spec section 3).
public enum NoiseLimits {
    /// The largest Noise message, handshake or transport.
    public static let maxMessage = 65535
    public static let tagBytes = 16
    public static let keyBytes = 32
    /// The most plaintext one transport message carries.
    public static let maxPlaintext = maxMessage - tagBytes
}

/// A CipherState: a key (or none yet) and the next nonce.
public struct NoiseCipherState: Sendable {
    public let cipher: NoiseCipher
    var key: [UInt8]?
    /// The next nonce; 2^64-1 is reserved, so a state that reaches it refuses.
    public private(set) var nonce: UInt64 = 0

    init(cipher: NoiseCipher, key: [UInt8]? = nil) { self.cipher = cipher; self.key = key }

    var hasKey: Bool { key != nil }

    /// Seals (or passes through, with no key yet); nil once the nonces are spent.
    mutating func encrypt(_ crypto: any NoiseCrypto, ad: [UInt8], _ plaintext: [UInt8]) -> [UInt8]? {
        guard let key else { return plaintext }
        guard nonce < UInt64.max else { return nil }
        let out = crypto.seal(cipher, key: key, nonce: cipher.nonce(nonce), plaintext, ad: ad)
        nonce += 1
        return out
    }

    /// Opens (or passes through, with no key yet); nil when it does not authenticate.
    /// A failed open does not advance the nonce.
    mutating func decrypt(_ crypto: any NoiseCrypto, ad: [UInt8], _ ciphertext: [UInt8]) -> [UInt8]? {
        guard let key else { return ciphertext }
        guard nonce < UInt64.max, ciphertext.count >= NoiseLimits.tagBytes,
              let out = crypto.open(cipher, key: key, nonce: cipher.nonce(nonce), ciphertext, ad: ad) else { return nil }
        nonce += 1
        return out
    }
}

/// A SymmetricState: chaining key, handshake hash and the cipher state.
struct NoiseSymmetricState: Sendable {
    var ck: [UInt8]
    var h: [UInt8]
    var cipherState: NoiseCipherState

    init(protocolName: String, cipher: NoiseCipher, crypto: any NoiseCrypto) {
        let name = Array(protocolName.utf8)
        h = name.count <= 32 ? name + [UInt8](repeating: 0, count: 32 - name.count) : crypto.sha256([name])
        ck = h
        cipherState = NoiseCipherState(cipher: cipher)
    }

    /// HKDF with HMAC-SHA-256 (spec section 4.3): two or three 32-byte outputs.
    static func hkdf(_ crypto: any NoiseCrypto, chainingKey: [UInt8], _ input: [UInt8], outputs: Int) -> [[UInt8]] {
        let temp = crypto.hmacSHA256(key: chainingKey, [input])
        var out: [[UInt8]] = [crypto.hmacSHA256(key: temp, [[1]])]
        for i in 2...outputs { out.append(crypto.hmacSHA256(key: temp, [out[out.count - 1], [UInt8(i)]])) }
        return out
    }

    mutating func mixHash(_ crypto: any NoiseCrypto, _ data: [UInt8]) { h = crypto.sha256([h, data]) }

    mutating func mixKey(_ crypto: any NoiseCrypto, _ input: [UInt8]) {
        let o = Self.hkdf(crypto, chainingKey: ck, input, outputs: 2)
        ck = o[0]
        cipherState = NoiseCipherState(cipher: cipherState.cipher, key: o[1])
    }

    mutating func mixKeyAndHash(_ crypto: any NoiseCrypto, _ input: [UInt8]) {
        let o = Self.hkdf(crypto, chainingKey: ck, input, outputs: 3)
        ck = o[0]
        mixHash(crypto, o[1])
        cipherState = NoiseCipherState(cipher: cipherState.cipher, key: o[2])
    }

    mutating func encryptAndHash(_ crypto: any NoiseCrypto, _ plaintext: [UInt8]) -> [UInt8]? {
        guard let c = cipherState.encrypt(crypto, ad: h, plaintext) else { return nil }
        mixHash(crypto, c)
        return c
    }

    mutating func decryptAndHash(_ crypto: any NoiseCrypto, _ ciphertext: [UInt8]) -> [UInt8]? {
        guard let p = cipherState.decrypt(crypto, ad: h, ciphertext) else { return nil }
        mixHash(crypto, ciphertext)
        return p
    }

    func split(_ crypto: any NoiseCrypto) -> (NoiseCipherState, NoiseCipherState) {
        let o = Self.hkdf(crypto, chainingKey: ck, [], outputs: 2)
        return (NoiseCipherState(cipher: cipherState.cipher, key: o[0]), NoiseCipherState(cipher: cipherState.cipher, key: o[1]))
    }
}

/// Why a handshake or transport message was refused. Every one is silent on
/// the wire: the connection closes.
public enum NoiseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A message that does not authenticate (a wrong PSK or key, or tampering).
    case authentication
    /// A message too short or too long for its place.
    case malformedMessage
    /// A peer key that makes a zero Diffie-Hellman output.
    case badKey
    /// The handshake is not at the step this call needs.
    case outOfOrder
    /// 2^64-1 messages sent under one key.
    case nonceExhausted

    public var description: String {
        switch self {
        case .authentication: "a Noise message did not authenticate"
        case .malformedMessage: "a Noise message had the wrong length"
        case .badKey: "a Noise key gave an invalid Diffie-Hellman result"
        case .outOfOrder: "a Noise message came out of order"
        case .nonceExhausted: "a Noise session ran out of nonces"
        }
    }
}

/// The two transport cipher states of a finished handshake.
public struct NoiseTransport: Sendable {
    public private(set) var sending: NoiseCipherState
    public private(set) var receiving: NoiseCipherState
    /// The handshake hash `h`, which channel-binds what follows (pairing codes).
    public let handshakeHash: [UInt8]
    private let crypto: any NoiseCrypto

    init(sending: NoiseCipherState, receiving: NoiseCipherState, handshakeHash: [UInt8], crypto: any NoiseCrypto) {
        self.sending = sending; self.receiving = receiving; self.handshakeHash = handshakeHash; self.crypto = crypto
    }

    /// One transport message (at most `NoiseLimits.maxPlaintext` bytes in).
    public mutating func seal(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard plaintext.count <= NoiseLimits.maxPlaintext else { throw .malformedMessage }
        guard let out = sending.encrypt(crypto, ad: [], plaintext) else { throw .nonceExhausted }
        return out
    }

    /// The plaintext of one transport message.
    public mutating func open(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard message.count >= NoiseLimits.tagBytes, message.count <= NoiseLimits.maxMessage else { throw .malformedMessage }
        guard let out = receiving.decrypt(crypto, ad: [], message) else { throw .authentication }
        return out
    }
}

/// One side of a `KKpsk2` handshake. The initiator writes message 1 and reads
/// message 2; the responder reads 1 and writes 2. (In Sendspin the server is
/// the initiator.) A value: copy it after message 1 to try message 2 again
/// under another PSK.
public struct NoiseKKpsk2Handshake: Sendable {
    public enum Role: Sendable { case initiator, responder }

    public let role: Role
    public let cipher: NoiseCipher
    private var symmetric: NoiseSymmetricState
    private let localStatic: NoiseKeyPair
    private let remoteStatic: [UInt8]
    private var ephemeral: NoiseKeyPair?
    private var remoteEphemeral: [UInt8]?
    /// The PSK mixed in at message 2; the responder may set it after reading message 1.
    public var psk: [UInt8]
    private var step = 0
    private let crypto: any NoiseCrypto

    /// The protocol name, `Noise_KKpsk2_25519_<cipher>_SHA256`.
    public static func protocolName(_ cipher: NoiseCipher) -> String { "Noise_KKpsk2_25519_\(cipher.rawValue)_SHA256" }

    /// `ephemeral` is for test vectors only; a real handshake draws a new one.
    public init(role: Role, cipher: NoiseCipher, prologue: [UInt8], localStatic: NoiseKeyPair, remoteStatic: [UInt8],
                psk: [UInt8], crypto: any NoiseCrypto, ephemeral: NoiseKeyPair? = nil) {
        precondition(remoteStatic.count == 32 && psk.count == 32, "KKpsk2 needs a 32-byte remote static key and PSK")
        self.role = role; self.cipher = cipher; self.localStatic = localStatic; self.remoteStatic = remoteStatic
        self.psk = psk; self.crypto = crypto; self.ephemeral = ephemeral
        symmetric = NoiseSymmetricState(protocolName: Self.protocolName(cipher), cipher: cipher, crypto: crypto)
        symmetric.mixHash(crypto, prologue)
        // Pre-messages: the initiator's static key, then the responder's.
        let (initiatorStatic, responderStatic) = role == .initiator ? (localStatic.publicKey, remoteStatic) : (remoteStatic, localStatic.publicKey)
        symmetric.mixHash(crypto, initiatorStatic)
        symmetric.mixHash(crypto, responderStatic)
    }

    /// True once both messages have gone through.
    public var isComplete: Bool { step == 2 }

    private mutating func dh(_ secret: [UInt8], _ pub: [UInt8]) throws(NoiseError) {
        guard let shared = crypto.dh(secret: secret, public: pub) else { throw .badKey }
        symmetric.mixKey(crypto, shared)
    }

    private mutating func writeEphemeral() -> [UInt8] {
        let e = ephemeral ?? NoiseKeyPair(secret: crypto.random(32), crypto: crypto)
        ephemeral = e
        symmetric.mixHash(crypto, e.publicKey)
        symmetric.mixKey(crypto, e.publicKey) // the psk modifier: `e` also mixes the key
        return e.publicKey
    }

    private mutating func readEphemeral(_ message: [UInt8]) -> [UInt8] {
        let re = Array(message.prefix(32))
        remoteEphemeral = re
        symmetric.mixHash(crypto, re)
        symmetric.mixKey(crypto, re)
        return Array(message.dropFirst(32))
    }

    /// The next outgoing handshake message, carrying `payload` encrypted.
    public mutating func writeMessage(_ payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        switch (role, step) {
        case (.initiator, 0):
            var out = writeEphemeral()
            try dh(ephemeral!.secret, remoteStatic) // es
            try dh(localStatic.secret, remoteStatic) // ss
            guard let c = symmetric.encryptAndHash(crypto, payload) else { throw .nonceExhausted }
            out += c
            guard out.count <= NoiseLimits.maxMessage else { throw .malformedMessage }
            step = 1
            return out
        case (.responder, 1):
            guard let re = remoteEphemeral else { throw .outOfOrder }
            var out = writeEphemeral()
            try dh(ephemeral!.secret, re) // ee
            try dh(ephemeral!.secret, remoteStatic) // se: the initiator's static, our ephemeral
            symmetric.mixKeyAndHash(crypto, psk)
            guard let c = symmetric.encryptAndHash(crypto, payload) else { throw .nonceExhausted }
            out += c
            guard out.count <= NoiseLimits.maxMessage else { throw .malformedMessage }
            step = 2
            return out
        default:
            throw .outOfOrder
        }
    }

    /// Reads the next incoming handshake message; its payload.
    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard message.count >= 32 + NoiseLimits.tagBytes, message.count <= NoiseLimits.maxMessage else { throw .malformedMessage }
        switch (role, step) {
        case (.responder, 0):
            let rest = readEphemeral(message)
            try dh(localStatic.secret, remoteEphemeral!) // es, seen from the responder
            try dh(localStatic.secret, remoteStatic) // ss
            guard let p = symmetric.decryptAndHash(crypto, rest) else { throw .authentication }
            step = 1
            return p
        case (.initiator, 1):
            let rest = readEphemeral(message)
            try dh(ephemeral!.secret, remoteEphemeral!) // ee
            try dh(localStatic.secret, remoteEphemeral!) // se: our static, their ephemeral
            symmetric.mixKeyAndHash(crypto, psk)
            guard let p = symmetric.decryptAndHash(crypto, rest) else { throw .authentication }
            step = 2
            return p
        default:
            throw .outOfOrder
        }
    }

    /// The transport of a complete handshake (the initiator sends with the first key).
    public func transport() throws(NoiseError) -> NoiseTransport {
        guard isComplete else { throw .outOfOrder }
        let (first, second) = symmetric.split(crypto)
        return role == .initiator
            ? NoiseTransport(sending: first, receiving: second, handshakeHash: symmetric.h, crypto: crypto)
            : NoiseTransport(sending: second, receiving: first, handshakeHash: symmetric.h, crypto: crypto)
    }

    /// The handshake hash so far (the final one once complete).
    public var handshakeHash: [UInt8] { symmetric.h }
}

/// An X25519 key pair.
public struct NoiseKeyPair: Sendable, Equatable {
    public let secret: [UInt8]
    public let publicKey: [UInt8]
    public init(secret: [UInt8], publicKey: [UInt8]) { self.secret = secret; self.publicKey = publicKey }
    public init(secret: [UInt8], crypto: any NoiseCrypto) { self.init(secret: secret, publicKey: crypto.publicKey(secret: secret)) }
}
