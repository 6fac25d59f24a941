/// The speaker ↔ leader handshake (protocol v7, docs/protocol.md "Handshake"),
/// as pure state machines: messages in, messages and decisions out. The
/// primitives come from a `HandshakeCrypto` (libsodium's in TuttiAuth, a
/// deterministic fake in tests), so nothing here does I/O or picks randomness.
///
/// Shape (Noise KK with the leader first): both sides hold static X25519
/// keys; the speaker sends an ephemeral key and a nonce; the leader answers
/// with its static key, an ephemeral key, a nonce and a confirmation that
/// only the holder of its static key can compute (DH(l, e_S)). A speaker
/// that pinned its leader checks that before it sends anything that depends
/// on a secret of its own. Then the speaker sends its static key (sealed)
/// and its confirmation (over DH(s, e_L) and DH(s, L)); both sides derive
/// one key per direction, a clock key and a clock tag from all four DH
/// results, both nonces and the transcript.

/// The primitives the handshake composes. Thread contract: any thread; no state.
public protocol HandshakeCrypto: Sendable {
    /// `count` bytes from a cryptographic random source.
    func random(_ count: Int) -> [UInt8]
    /// The X25519 public key of `secret` (32 bytes each).
    func publicKey(secret: [UInt8]) -> [UInt8]
    /// X25519(secret, public); nil for a public key that yields all zeros (a low-order point).
    func dh(secret: [UInt8], public: [UInt8]) -> [UInt8]?
    /// A 32-byte hash (keyed with `key` when given) of `parts`, each length-prefixed.
    func hash(_ parts: [[UInt8]], key: [UInt8]) -> [UInt8]
    /// AEAD with a 32-byte key and a 64-bit nonce: ciphertext plus 16-byte tag.
    func seal(key: [UInt8], nonce: UInt64, _ plaintext: [UInt8], ad: [UInt8]) -> [UInt8]
    func open(key: [UInt8], nonce: UInt64, _ sealed: [UInt8], ad: [UInt8]) -> [UInt8]?
    /// Constant-time comparison of two equally long secrets.
    func same(_ a: [UInt8], _ b: [UInt8]) -> Bool
    /// CPace: the group element (32 bytes) for a code and a session id.
    func pakeGenerator(code: String, sessionID: [UInt8]) -> [UInt8]
    /// A random scalar of the PAKE's group (32 bytes).
    func pakeScalar() -> [UInt8]
    /// `scalar`·`point` in the PAKE's group; nil for an invalid point or the identity.
    func pakeMultiply(_ scalar: [UInt8], _ point: [UInt8]) -> [UInt8]?
}

/// A static X25519 key pair (the leader's, or one speaker's).
public struct StaticKey: Sendable {
    public let secret: [UInt8]
    public let publicKey: [UInt8]
    public init(secret: [UInt8], publicKey: [UInt8]) { self.secret = secret; self.publicKey = publicKey }
    public init(secret: [UInt8], crypto: some HandshakeCrypto) { self.init(secret: secret, publicKey: crypto.publicKey(secret: secret)) }
}

/// A key's short fingerprint, for people and TXT records: 16 hex digits of its hash.
public func keyFingerprint(_ key: [UInt8], crypto: some HandshakeCrypto) -> String {
    hexString(Array(crypto.hash([Array("tutti fingerprint".utf8), key], key: []).prefix(8)))
}

public func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
    return String(decoding: out, as: UTF8.self)
}

public func bytes(fromHex text: some StringProtocol) -> [UInt8]? {
    let u = Array(text.utf8)
    guard u.count % 2 == 0 else { return nil }
    func v(_ c: UInt8) -> UInt8? {
        switch c {
        case 48...57: c - 48
        case 97...102: c - 87
        case 65...70: c - 55
        default: nil
        }
    }
    var out: [UInt8] = []
    out.reserveCapacity(u.count / 2)
    var i = 0
    while i < u.count {
        guard let hi = v(u[i]), let lo = v(u[i + 1]) else { return nil }
        out.append(hi << 4 | lo)
        i += 2
    }
    return out
}

/// What a speaker asks for in its offer.
public enum PairIntent: UInt8, Sendable {
    /// It has a pinned leader (or joins an open one).
    case join = 0
    /// It has none: pair when a person allows it on the leader.
    case approval = 1
    /// `sudo tutti-follower pair`: pair with the six-digit code it shows.
    case code = 2
}

/// Where a pairing request stands (leader → speaker, sealed).
public enum PairStatus: UInt8, Sendable {
    case waitingForApproval = 0
    case waitingForCode = 1
    case wrongCode = 2
}

/// What both sides derive from a completed handshake.
public struct SessionKeys: Sendable, Equatable {
    public var toSpeaker: [UInt8]
    public var toLeader: [UInt8]
    /// MACs the clock datagrams of this session.
    public var clock: [UInt8]
    /// Names this session in clock requests.
    public var clockTag: UInt64
    /// Binds a PAKE run to this session (CPace's sid).
    public var pakeSessionID: [UInt8]
}

/// Why a handshake ended. Each says what the person can do.
public enum HandshakeFailure: Error, Equatable, CustomStringConvertible {
    /// The leader's static key is not the pinned one.
    case notOurLeader(fingerprint: String, pinned: String)
    /// The confirmation did not verify: the peer lacks the key it claims, or the room key differs.
    case badConfirmation(String)
    case malformed(String)
    case unexpected(String)
    /// The room key was required by one side and not used by the other.
    case roomKeyMismatch(String)
    /// Too many wrong pairing codes.
    case tooManyWrongCodes

    public var description: String {
        switch self {
        case .notOurLeader(let f, let p): "the leader's key (\(f)) is not the one this speaker is paired with (\(p)): refusing to play for it (run `sudo tutti-follower pair` to pair with another leader)"
        case .badConfirmation(let what): "\(what) did not prove its key"
        case .malformed(let what): "malformed handshake: \(what)"
        case .unexpected(let what): "unexpected \(what) during the handshake"
        case .roomKeyMismatch(let what): what
        case .tooManyWrongCodes: "three wrong pairing codes: this pairing request is over (run `sudo tutti-follower pair` again for a new code)"
        }
    }
}

/// The leader's flags in its reply.
public struct LeaderFlags: OptionSet, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The leader admits speakers it has not paired.
    public static let open = LeaderFlags(rawValue: 1)
    /// The room key (a passphrase run through pwhash) is mixed into this handshake.
    public static let roomKey = LeaderFlags(rawValue: 2)
}

/// The speaker's offer flags.
public enum HandshakeLimits {
    public static let keyBytes = 32
    public static let nonceBytes = 32
    public static let confirmBytes = 32
    public static let sealedKeyBytes = 48
    public static let maxWrongCodes = 3
}

/// The transcript and key schedule both sides run.
struct KeySchedule {
    static let label = Array("tutti handshake v7".utf8)

    static func transcript(_ c: some HandshakeCrypto, name: String, intent: UInt8, speakerFlags: UInt8, eS: [UInt8], nS: [UInt8],
                           flags: UInt8, leaderKey: [UInt8], eL: [UInt8], nL: [UInt8]) -> [UInt8] {
        c.hash([label, Array(name.utf8), [intent, speakerFlags], eS, nS, [flags], leaderKey, eL, nL], key: [])
    }

    static func k1(_ c: some HandshakeCrypto, h: [UInt8], dh1: [UInt8], dh2: [UInt8], psk: [UInt8]?) -> [UInt8] {
        c.hash([Array("k1".utf8), h, dh1, dh2], key: psk ?? [])
    }
    static func leaderConfirm(_ c: some HandshakeCrypto, k1: [UInt8], h: [UInt8]) -> [UInt8] { c.hash([Array("leader".utf8), h], key: k1) }
    static func staticKey(_ c: some HandshakeCrypto, k1: [UInt8]) -> [UInt8] { c.hash([Array("static".utf8)], key: k1) }
    static func k2(_ c: some HandshakeCrypto, k1: [UInt8], h: [UInt8], speakerKey: [UInt8], dh3: [UInt8], dh4: [UInt8]) -> [UInt8] {
        c.hash([Array("k2".utf8), h, speakerKey, dh3, dh4], key: k1)
    }
    static func speakerConfirm(_ c: some HandshakeCrypto, k2: [UInt8], h: [UInt8]) -> [UInt8] { c.hash([Array("speaker".utf8), h], key: k2) }
    static func keys(_ c: some HandshakeCrypto, k2: [UInt8]) -> SessionKeys {
        let tag = c.hash([Array("clock tag".utf8)], key: k2)
        return SessionKeys(toSpeaker: c.hash([Array("leader to speaker".utf8)], key: k2),
                           toLeader: c.hash([Array("speaker to leader".utf8)], key: k2),
                           clock: c.hash([Array("clock".utf8)], key: k2),
                           clockTag: tag.prefix(8).reduce(0) { $0 << 8 | UInt64($1) },
                           pakeSessionID: c.hash([Array("pake sid".utf8)], key: k2))
    }
}

/// CPace over the handshake's session: one side's part.
public struct PakeRun: Sendable {
    let scalar: [UInt8]
    public let share: [UInt8]
    let generator: [UInt8]
    let sessionID: [UInt8]

    /// nil if the generator is unusable (never with a real hash to the group).
    public init?(code: String, sessionID: [UInt8], crypto: some HandshakeCrypto) {
        generator = crypto.pakeGenerator(code: code, sessionID: sessionID)
        scalar = crypto.pakeScalar()
        guard let s = crypto.pakeMultiply(scalar, generator) else { return nil }
        share = s
        self.sessionID = sessionID
    }

    /// The confirmation tags (leader's, speaker's) for the other side's share; nil for an invalid share.
    public func tags(leaderShare: [UInt8], speakerShare: [UInt8], peer: [UInt8], crypto: some HandshakeCrypto) -> (leader: [UInt8], speaker: [UInt8])? {
        guard peer.count == HandshakeLimits.keyBytes, let k = crypto.pakeMultiply(scalar, peer) else { return nil }
        let isk = crypto.hash([Array("tutti cpace isk".utf8), sessionID, leaderShare, speakerShare], key: k)
        return (crypto.hash([Array("leader confirms".utf8)], key: isk), crypto.hash([Array("speaker confirms".utf8)], key: isk))
    }
}

/// The speaker's side. Drive it with `offer()`, then every handshake message.
public struct SpeakerHandshake<Crypto: HandshakeCrypto>: Sendable {
    public enum Step: Equatable, Sendable {
        /// Send `keyProof` (in the clear), then seal and open everything with `keys`.
        case proveAndSeal(Message, SessionKeys, leaderKey: [UInt8], flags: LeaderFlags)
        /// A pairing request waits on the leader.
        case waiting(PairStatus, attemptsLeft: UInt8)
        /// Send these (sealed): our PAKE share and confirmation.
        case send([Message])
        /// The PAKE succeeded: pin `leaderKey` (the welcome follows).
        case paired(leaderKey: [UInt8])
    }

    let crypto: Crypto
    let identity: StaticKey
    let pinned: [UInt8]?
    let psk: [UInt8]?
    let name: String
    public let intent: PairIntent
    let code: String?
    private let ephemeral: [UInt8]
    private let nonce: [UInt8]
    private var h: [UInt8] = []
    private var keys: SessionKeys?
    private var leaderKey: [UInt8] = []
    private var pake: PakeRun?
    private var expectedLeaderTag: [UInt8]?
    public private(set) var wrongCodes = 0
    private var offered = false

    /// `pinned`: the leader's key this speaker is paired with (nil: none yet).
    /// `psk`: the legacy room key, already stretched. `code`: for intent `.code`.
    public init(crypto: Crypto, identity: StaticKey, pinned: [UInt8]?, psk: [UInt8]?, name: String, intent: PairIntent, code: String? = nil) {
        self.crypto = crypto
        self.identity = identity
        self.pinned = pinned
        self.psk = psk
        self.name = name
        self.intent = intent
        self.code = code
        ephemeral = crypto.random(32)
        nonce = crypto.random(HandshakeLimits.nonceBytes)
    }

    private var speakerFlags: UInt8 { psk != nil ? 1 : 0 }

    /// The first message after hello.
    public mutating func offer() -> Message {
        offered = true
        return .keyOffer(intent: intent, flags: speakerFlags, ephemeral: crypto.publicKey(secret: ephemeral), nonce: nonce)
    }

    public mutating func receive(_ message: Message) throws(HandshakeFailure) -> Step {
        switch message {
        case .keyReply(let rawFlags, let lKey, let eL, let nL, let confirm):
            guard offered, keys == nil else { throw .unexpected("second key reply") }
            let flags = LeaderFlags(rawValue: rawFlags)
            if let pinned, !crypto.same(pinned, lKey) {
                throw .notOurLeader(fingerprint: keyFingerprint(lKey, crypto: crypto), pinned: keyFingerprint(pinned, crypto: crypto))
            }
            if psk != nil && !flags.contains(.roomKey) && pinned == nil {
                throw .roomKeyMismatch("the leader asks no room key but this speaker has one: refusing to play for it (set the same room-key on the leader, or pair)")
            }
            let usedPSK = flags.contains(.roomKey) ? psk : nil
            if flags.contains(.roomKey) && psk == nil { throw .malformed("the leader mixed in a room key this speaker never offered") }
            let eS = crypto.publicKey(secret: ephemeral)
            h = KeySchedule.transcript(crypto, name: name, intent: intent.rawValue, speakerFlags: speakerFlags, eS: eS, nS: nonce,
                                       flags: rawFlags, leaderKey: lKey, eL: eL, nL: nL)
            guard let dh1 = crypto.dh(secret: ephemeral, public: eL), let dh2 = crypto.dh(secret: ephemeral, public: lKey) else {
                throw .malformed("the leader's keys are invalid")
            }
            let k1 = KeySchedule.k1(crypto, h: h, dh1: dh1, dh2: dh2, psk: usedPSK)
            // The leader proves its static key first; a pinned speaker that gets here talks to its own leader.
            guard crypto.same(KeySchedule.leaderConfirm(crypto, k1: k1, h: h), confirm) else {
                throw .badConfirmation(usedPSK != nil ? "the leader (wrong room key?)" : "the leader")
            }
            guard let dh3 = crypto.dh(secret: identity.secret, public: eL), let dh4 = crypto.dh(secret: identity.secret, public: lKey) else {
                throw .malformed("the leader's keys are invalid")
            }
            let sealedKey = crypto.seal(key: KeySchedule.staticKey(crypto, k1: k1), nonce: 0, identity.publicKey, ad: h)
            let k2 = KeySchedule.k2(crypto, k1: k1, h: h, speakerKey: identity.publicKey, dh3: dh3, dh4: dh4)
            let keys = KeySchedule.keys(crypto, k2: k2)
            self.keys = keys
            leaderKey = lKey
            return .proveAndSeal(.keyProof(sealedKey: sealedKey, confirm: KeySchedule.speakerConfirm(crypto, k2: k2, h: h)),
                                 keys, leaderKey: lKey, flags: flags)
        case .pairStatus(let status, let left):
            guard keys != nil, intent != .join else { throw .unexpected("pairing status for a speaker that asked none") }
            if status == .wrongCode {
                wrongCodes += 1
                pake = nil
                if wrongCodes >= HandshakeLimits.maxWrongCodes || left == 0 { throw .tooManyWrongCodes }
            }
            return .waiting(status, attemptsLeft: left)
        case .pakeShare(let leaderShare):
            guard let keys, intent == .code, let code, pake == nil else { throw .unexpected("PAKE share") }
            guard let run = PakeRun(code: code, sessionID: keys.pakeSessionID, crypto: crypto),
                  let tags = run.tags(leaderShare: leaderShare, speakerShare: run.share, peer: leaderShare, crypto: crypto) else {
                throw .malformed("invalid PAKE share")
            }
            pake = run
            expectedLeaderTag = tags.leader
            return .send([.pakeShare(point: run.share), .pakeConfirm(tag: tags.speaker)])
        case .pakeConfirm(let tag):
            guard pake != nil, let expected = expectedLeaderTag else { throw .unexpected("PAKE confirmation") }
            guard crypto.same(expected, tag) else { throw .badConfirmation("the leader's pairing confirmation") }
            pake = nil
            return .paired(leaderKey: leaderKey)
        default:
            throw .unexpected("\(message.type)")
        }
    }
}

/// The leader's side.
public struct LeaderHandshake<Crypto: HandshakeCrypto>: Sendable {
    let crypto: Crypto
    let identity: StaticKey
    let psk: [UInt8]?
    let open: Bool
    private let ephemeral: [UInt8]
    private let nonce: [UInt8]
    private var h: [UInt8] = []
    private var k1: [UInt8] = []
    private var eS: [UInt8] = []
    public private(set) var intent: PairIntent = .join
    public private(set) var flags = LeaderFlags()
    public private(set) var keys: SessionKeys?
    public private(set) var speakerKey: [UInt8] = []
    private var pake: PakeRun?

    public init(crypto: Crypto, identity: StaticKey, psk: [UInt8]?, open: Bool) {
        self.crypto = crypto
        self.identity = identity
        self.psk = psk
        self.open = open
        ephemeral = crypto.random(32)
        nonce = crypto.random(HandshakeLimits.nonceBytes)
    }

    /// The reply to a speaker's offer (after its hello named the room).
    public mutating func reply(to offer: Message, name: String) throws(HandshakeFailure) -> Message {
        guard case .keyOffer(let intent, let speakerFlags, let e, let nS) = offer, h.isEmpty else { throw .unexpected("\(offer.type) instead of a key offer") }
        self.intent = intent
        var f = LeaderFlags()
        if open { f.insert(.open) }
        if psk != nil && speakerFlags & 1 == 1 { f.insert(.roomKey) }
        flags = f
        let eL = crypto.publicKey(secret: ephemeral)
        h = KeySchedule.transcript(crypto, name: name, intent: intent.rawValue, speakerFlags: speakerFlags, eS: e, nS: nS,
                                   flags: f.rawValue, leaderKey: identity.publicKey, eL: eL, nL: nonce)
        guard let dh1 = crypto.dh(secret: ephemeral, public: e), let dh2 = crypto.dh(secret: identity.secret, public: e) else {
            throw .malformed("the speaker's ephemeral key is invalid")
        }
        eS = e
        k1 = KeySchedule.k1(crypto, h: h, dh1: dh1, dh2: dh2, psk: f.contains(.roomKey) ? psk : nil)
        return .keyReply(flags: f.rawValue, leaderKey: identity.publicKey, ephemeral: eL, nonce: nonce,
                         confirm: KeySchedule.leaderConfirm(crypto, k1: k1, h: h))
    }

    /// Checks the speaker's proof; on success `keys` and `speakerKey` are set.
    /// Whether this speaker may join (paired, room key, open) is the caller's decision.
    public mutating func receive(proof: Message) throws(HandshakeFailure) -> SessionKeys {
        guard case .keyProof(let sealedKey, let confirm) = proof, !k1.isEmpty, keys == nil else { throw .unexpected("\(proof.type) instead of a key proof") }
        guard let sKey = crypto.open(key: KeySchedule.staticKey(crypto, k1: k1), nonce: 0, sealedKey, ad: h),
              sKey.count == HandshakeLimits.keyBytes else {
            throw .badConfirmation(flags.contains(.roomKey) ? "the speaker (wrong room key?)" : "the speaker")
        }
        guard let dh3 = crypto.dh(secret: ephemeral, public: sKey), let dh4 = crypto.dh(secret: identity.secret, public: sKey) else {
            throw .malformed("the speaker's static key is invalid")
        }
        let k2 = KeySchedule.k2(crypto, k1: k1, h: h, speakerKey: sKey, dh3: dh3, dh4: dh4)
        guard crypto.same(KeySchedule.speakerConfirm(crypto, k2: k2, h: h), confirm) else {
            throw .badConfirmation(flags.contains(.roomKey) ? "the speaker (wrong room key?)" : "the speaker")
        }
        let k = KeySchedule.keys(crypto, k2: k2)
        keys = k
        speakerKey = sKey
        return k
    }

    /// A code was typed: our PAKE share for this session (send it sealed).
    public mutating func startPake(code: String) -> Message? {
        guard let keys, intent == .code, let run = PakeRun(code: code, sessionID: keys.pakeSessionID, crypto: crypto) else { return nil }
        pake = run
        return .pakeShare(point: run.share)
    }

    /// The speaker's share and confirmation: our confirmation when the code
    /// matched (pair then), nil when it did not (a wrong code).
    public mutating func finishPake(speakerShare: [UInt8], speakerTag: [UInt8]) -> Message? {
        guard let run = pake else { return nil }
        pake = nil
        guard let tags = run.tags(leaderShare: run.share, speakerShare: speakerShare, peer: speakerShare, crypto: crypto),
              crypto.same(tags.speaker, speakerTag) else { return nil }
        return .pakeConfirm(tag: tags.leader)
    }
}

/// Seals and opens the frames of a joined session: each record is
/// `u32 length | ciphertext | 16-byte tag`, nonce = the record's number in
/// its direction, the length as associated data. A record carries whole
/// protocol messages or a part of them (the stream inside is the same
/// framed messages as in the clear).
public protocol FrameCipher: Sendable {
    /// Encrypts `count` bytes at `text` in place and writes the 16-byte tag at `tag`.
    func seal(_ text: UnsafeMutableRawPointer, count: Int, tag: UnsafeMutableRawPointer, nonce: UInt64, ad: UnsafeRawBufferPointer)
    /// Decrypts in place; false (and nothing usable) when the tag does not verify.
    func open(_ text: UnsafeMutableRawPointer, count: Int, tag: UnsafeRawPointer, nonce: UInt64, ad: UnsafeRawBufferPointer) -> Bool
}

public enum SealedRecord {
    public static let tagBytes = 16
    /// The most plaintext in one record; longer writes are split.
    public static let maxPlaintext = 64 * 1024 + 64
}

/// The sending half: owned by one connection, used under its send lock.
public struct RecordSealer: Sendable {
    let cipher: any FrameCipher
    public private(set) var counter: UInt64 = 0
    /// Reused for every record, so sealing allocates nothing once warm.
    private var scratch: [UInt8] = []

    public init(cipher: any FrameCipher) {
        self.cipher = cipher
        scratch.reserveCapacity(SealedRecord.maxPlaintext + 4 + SealedRecord.tagBytes)
    }

    /// `plain`, sealed into records, handed to `body` (valid only inside it).
    public mutating func seal<R, E: Error>(_ plain: [UInt8], _ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        scratch.removeAll(keepingCapacity: true)
        var offset = 0
        repeat {
            let n = min(plain.count - offset, SealedRecord.maxPlaintext)
            let start = scratch.count
            let length = UInt32(n + SealedRecord.tagBytes)
            scratch.append(UInt8(length >> 24)); scratch.append(UInt8(length >> 16 & 0xff))
            scratch.append(UInt8(length >> 8 & 0xff)); scratch.append(UInt8(length & 0xff))
            plain.withUnsafeBufferPointer { p in scratch.append(contentsOf: UnsafeBufferPointer(rebasing: p[offset..<(offset + n)])) }
            scratch.append(contentsOf: repeatElement(0, count: SealedRecord.tagBytes))
            let nonce = counter
            counter += 1
            let cipher = self.cipher
            scratch.withUnsafeMutableBytes { s in
                let base = s.baseAddress! + start
                cipher.seal(base + 4, count: n, tag: base + 4 + n, nonce: nonce, ad: UnsafeRawBufferPointer(start: base, count: 4))
            }
            offset += n
        } while offset < plain.count
        let result: Result<R, E> = scratch.withUnsafeBytes { b in Result { () throws(E) -> R in try body(b) } }
        return try result.get()
    }
}

/// The receiving half: records in, plaintext out; any bad record ends the stream.
public struct RecordOpener: Sendable {
    let cipher: any FrameCipher
    public private(set) var counter: UInt64 = 0
    private var buffer: [UInt8] = []
    private var start = 0

    public init(cipher: any FrameCipher) {
        self.cipher = cipher
        buffer.reserveCapacity(SealedRecord.maxPlaintext + 4 + SealedRecord.tagBytes + 16_384)
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        buffer.append(contentsOf: UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }

    /// Bytes held that are not yet a whole record.
    public var pendingBytes: Int { buffer.count - start }

    /// The next record's plaintext (handed to `body`), false when more bytes are needed.
    /// Throws for a record that is too long, too short, or does not verify (forged,
    /// replayed, reordered, cut): the connection must close.
    public mutating func next(_ body: (UnsafeRawBufferPointer) -> Void) throws(ProtocolError) -> Bool {
        let available = buffer.count - start
        guard available >= 4 else { return false }
        let length = Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
        guard length >= SealedRecord.tagBytes, length <= SealedRecord.maxPlaintext + SealedRecord.tagBytes else {
            throw .invalidField(.chunk, "sealed record of \(length) bytes")
        }
        guard available >= 4 + length else { return false }
        let nonce = counter
        counter += 1
        let n = length - SealedRecord.tagBytes
        let (cipher, first) = (self.cipher, self.start)
        let ok = buffer.withUnsafeMutableBytes { b in
            let base = b.baseAddress! + first
            return cipher.open(base + 4, count: n, tag: base + 4 + n, nonce: nonce, ad: UnsafeRawBufferPointer(start: base, count: 4))
        }
        guard ok else { throw .invalidField(.chunk, "sealed record \(nonce) does not verify (forged, replayed, reordered or cut)") }
        buffer.withUnsafeBytes { b in body(UnsafeRawBufferPointer(rebasing: b[(start + 4)..<(start + 4 + n)])) }
        start += 4 + length
        if start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
        return true
    }
}
