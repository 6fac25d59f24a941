/// The server's side of Sendspin's two pairing-code methods, as aiosendspin
/// 10.2.1 runs them (its `run_static_pairing_code_server` and
/// `run_dynamic_pairing_code_server`): a person types a code into the leader,
/// and CPace (CPACE-X25519-SHA512) proves the player knows the same code
/// without either side showing it; the player's new long-term PSK then comes
/// wrapped under a key only the two hold.
///
/// - **static** (`static_pairing_code`): eight digits printed on the player.
///   One round per attempt: a wrong code ends it (the client sends
///   `pair/abort` `pairing_code_mismatch`).
/// - **dynamic** (`dynamic_pairing_code`, format `digits`): six digits the
///   player shows, derived from the Noise handshake hash and a nonce from
///   each side (`nonce_B` committed to in `client/pair-init`, revealed only
///   wrapped at the end), so they belong to this connection only. A wrong
///   code costs a round (`client/pair-retry`, a new `server/pair-init`), at
///   most `maximumRounds` per attempt.
///
/// The exchange, after the pairing `server/activate` (`activateText`):
/// `client/pair-init` (a `client/pair-pending` first while the player waits
/// for its owner's gesture) → [dynamic: `server/pair-init {nonce_A}`] → the
/// person's code (`enter`) → `server/pair-auth {pake_msg_1}` ↔
/// `client/pair-auth {pake_msg_2}` → `server/pair-confirm {server_kc}` →
/// `client/pair-confirm {client_kc[, wrapped_nonce_B]}` (or, dynamic,
/// `client/pair-retry`) → `client/pair-finalize {wrapped_psk}` → the caller
/// stores the PSK, then `stored()` sends `server/pair-finalize`.
///
/// Pure: messages and the person's code in, actions out; time is given (`now`,
/// monotonic ns). One value is one attempt; a connection runs one.
public struct SendspinCodePairing: Sendable {
    public enum Action: Equatable, Sendable {
        /// Send this text message to the client, in order.
        case send(String)
        /// The player is ready for the person's code (for the dynamic method: it shows it now).
        case awaitCode
        /// The code the person typed was not the player's (`roundsLeft` more may be tried in this attempt).
        case wrongCode(roundsLeft: Int)
        /// Store `psk` as the client's long-term PSK (on disk), then call `stored()`.
        case store(psk: [UInt8])
        /// The attempt ended without pairing: close the connection.
        case fail(Failure)
    }

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case timedOut(String)
        case tooManyWrongCodes(Int)
        /// `pair/abort` from the client, with its reason.
        case aborted(String)
        /// A message that has no place now (out of order, replayed, or of the other method).
        case unexpected(String)
        /// A field that is missing, or does not check (length, tag, commitment).
        case malformed(String)

        public var description: String {
            switch self {
            case .timedOut(let what): "\(what) did not come in time"
            case .tooManyWrongCodes(let n): "\(n) wrong codes in one attempt"
            case .aborted(let reason): "the player abandoned pairing (\(reason))"
            case .unexpected(let what): "\(what) out of place"
            case .malformed(let what): what
            }
        }
    }

    /// Why a code the person typed was not taken.
    public enum CodeRefusal: Error, Equatable, Sendable {
        /// Not `digits` decimal digits (spaces and hyphens between groups are fine).
        case notDigits(digits: Int)
        /// The player is not ready for it yet (the dynamic code is not shown before `server/pair-init`).
        case notYet
        /// A code is being tried, or the attempt is over.
        case busy
    }

    public let method: SendspinTrust.PairMethod
    public let pairingIndex: Int
    private let handshakeHash: [UInt8]
    private let cipher: NoiseCipher
    private let crypto: any NoiseCrypto
    private let sha512: CPace.SHA512
    public let maximumRounds: Int

    enum Phase {
        case awaitingInit
        case gesture
        case awaitingCode
        case awaitingAuth(CPace)
        case awaitingConfirm(CPace)
        case awaitingFinalize(wrapKey: [UInt8])
        case storing
        case finished
        case failed
    }

    private var phase = Phase.awaitingInit
    public private(set) var round = 1
    private var commitB: [UInt8] = []
    private var nonceA: [UInt8] = []
    private var code: [UInt8] = []
    /// A static code typed before the player sent `client/pair-init`: used when it does.
    private var heldCode: [UInt8]?
    private var sid: [UInt8] = []
    /// When the phase's bound runs out (monotonic ns), and what it waits for.
    public private(set) var deadline: Int64?
    private var waitingFor = ""

    // aiosendspin's server bounds.
    public static let pairInitSeconds: Int64 = 60
    public static let gestureSeconds: Int64 = 360
    public static let attemptSeconds: Int64 = 180
    /// Wrong dynamic codes one attempt may try (aiosendspin's client retries up to 20).
    public static let defaultMaximumRounds = 5

    static let sidLabel = Array("sendspin-pair-pake-v1".utf8)
    static let adServer = Array("server".utf8)
    static let adClient = Array("client".utf8)
    static let pskWrapLabel = Array("sendspin-pair-psk-wrap-v1".utf8)
    static let nonceWrapLabel = Array("sendspin-pair-nonce-wrap-v1".utf8)
    static let commitLabel = Array("sendspin-pair-commit-v1".utf8)
    static let deriveLabel = Array("sendspin-pairing-code-derive-v1".utf8)
    static let shareBytes = 32, tagBytes = 64, nonceBytes = 32, aeadTagBytes = 16

    public init(method: SendspinTrust.PairMethod, peer: SendspinPeer, pairingIndex: Int = 1, now: Int64, crypto: any NoiseCrypto,
                sha512: @escaping CPace.SHA512, maximumRounds: Int = defaultMaximumRounds) {
        precondition(method != .pairingPSK, "the Pairing PSK method has no code")
        self.method = method; self.pairingIndex = pairingIndex; self.crypto = crypto; self.sha512 = sha512
        handshakeHash = peer.handshakeHash; cipher = peer.cipher
        self.maximumRounds = max(1, maximumRounds)
        wait(Self.pairInitSeconds, for: "client/pair-init", now: now)
    }

    /// The `server/activate` that starts the attempt (send it first).
    public var activateText: String {
        Sendspin.serverActivatePairing(method: method, format: method == .dynamicPairingCode ? "digits" : nil)
    }

    /// Digits the method's code has.
    public var digits: Int { method == .dynamicPairingCode ? 6 : 8 }

    public var isFinished: Bool { if case .finished = phase { true } else { false } }
    public var isOver: Bool {
        switch phase {
        case .finished, .failed: true
        default: false
        }
    }

    /// Waiting for the person's code now.
    public var awaitsCode: Bool { if case .awaitingCode = phase { true } else { false } }

    private mutating func wait(_ seconds: Int64, for what: String, now: Int64) {
        deadline = now + seconds * 1_000_000_000
        waitingFor = what
    }

    private mutating func fail(_ failure: Failure, abort reason: String? = nil) -> [Action] {
        phase = .failed
        deadline = nil
        return (reason.map { [.send(Sendspin.pairAbort(reason: $0))] } ?? []) + [.fail(failure)]
    }

    // MARK: Time

    /// Ends the attempt once its bound has passed (no `pair/abort`: a server has no reason for its own timeout).
    public mutating func tick(now: Int64) -> [Action] {
        guard let deadline, now >= deadline, !isOver else { return [] }
        return fail(.timedOut(waitingFor))
    }

    // MARK: The client's messages

    /// A pairing message from the client (others are not this machine's).
    public mutating func receive(_ message: SendspinClientMessage, now: Int64) -> [Action] {
        if isOver { return [] }
        switch (message, phase) {
        case (.pairAbort(let reason), _):
            if case .awaitingConfirm = phase, reason == "pairing_code_mismatch" {
                // The static method's client found server_kc wrong: the code typed was not its own.
                return [.wrongCode(roundsLeft: 0)] + fail(.aborted(reason))
            }
            return fail(.aborted(reason))

        case (.pairPending(let index), .awaitingInit):
            if index < pairingIndex { return [] } // a leftover of an earlier activation
            if index > pairingIndex { return fail(.unexpected("client/pair-pending for activation \(index), ahead of \(pairingIndex)")) }
            phase = .gesture
            wait(Self.gestureSeconds, for: "the player owner's gesture (client/pair-init)", now: now)
            return []

        case (.pairInit(let index, let commitment), .awaitingInit), (.pairInit(let index, let commitment), .gesture):
            if index < pairingIndex, case .awaitingInit = phase { return [] }
            if index != pairingIndex { return fail(.unexpected("client/pair-init for activation \(index), not \(pairingIndex)")) }
            wait(Self.attemptSeconds, for: "the rest of the pairing", now: now)
            switch method {
            case .dynamicPairingCode:
                guard let commitment else { return fail(.malformed("client/pair-init without commit_B")) }
                commitB = commitment
                nonceA = crypto.random(Self.nonceBytes)
                phase = .awaitingCode
                return [.send(Sendspin.serverPairInit(nonceA: nonceA)), .awaitCode]
            default:
                guard commitment == nil else { return fail(.malformed("client/pair-init carries commit_B, which the static code has not")) }
                phase = .awaitingCode
                if let held = heldCode {
                    heldCode = nil
                    return startRound(code: held)
                }
                return [.awaitCode]
            }

        case (.pairAuth(let share), .awaitingAuth(var cpace)):
            do { try cpace.derive(peerShare: share, peerAD: Self.adClient) } catch {
                return fail(.malformed("pake_msg_2 is not a usable CPace share"))
            }
            guard let kc = try? cpace.tag() else { return fail(.malformed("CPace gave no tag")) }
            phase = .awaitingConfirm(cpace)
            return [.send(Sendspin.serverPairConfirm(serverKC: kc))]

        case (.pairConfirm(let kc, let wrappedNonce), .awaitingConfirm(let cpace)):
            guard cpace.verify(kc), let isk = cpace.isk else {
                return fail(.malformed("client_kc does not verify"), abort: "pairing_code_mismatch")
            }
            if method == .dynamicPairingCode {
                guard let wrappedNonce else { return fail(.malformed("client/pair-confirm without wrapped_nonce_B")) }
                guard let nonceB = crypto.open(cipher, key: wrapKey(Self.nonceWrapLabel, isk), nonce: cipher.nonce(0), wrappedNonce, ad: []),
                      nonceB.count == Self.nonceBytes else {
                    return fail(.malformed("wrapped_nonce_B does not open"))
                }
                guard constantTimeEqual(crypto.sha256([Self.commitLabel, nonceB]), commitB) else {
                    return fail(.malformed("the revealed nonce_B does not match commit_B"))
                }
                guard constantTimeEqual(Array(Self.dynamicCode(handshakeHash: handshakeHash, nonceA: nonceA, nonceB: nonceB, sha256: crypto.sha256).utf8), code) else {
                    return fail(.malformed("the code typed is not this connection's"))
                }
            } else if wrappedNonce != nil {
                return fail(.malformed("client/pair-confirm carries wrapped_nonce_B, which the static code has not"))
            }
            phase = .awaitingFinalize(wrapKey: wrapKey(Self.pskWrapLabel, isk))
            return []

        case (.pairRetry, .awaitingConfirm) where method == .dynamicPairingCode:
            // The client found server_kc wrong: the person typed another code.
            guard round < maximumRounds else {
                return [.wrongCode(roundsLeft: 0)] + fail(.tooManyWrongCodes(round), abort: "pairing_code_mismatch")
            }
            round += 1
            phase = .awaitingCode
            return [.wrongCode(roundsLeft: maximumRounds - round + 1), .send(Sendspin.serverPairInit(nonceA: nil)), .awaitCode]

        case (.pairFinalizeWrapped(let wrapped), .awaitingFinalize(let key)):
            guard let psk = crypto.open(cipher, key: key, nonce: cipher.nonce(0), wrapped, ad: []), psk.count == 32 else {
                return fail(.malformed("wrapped_psk does not open"))
            }
            phase = .storing
            deadline = nil
            return [.store(psk: psk)]

        case (.pairFinalize, .awaitingFinalize):
            return fail(.malformed("client/pair-finalize sends the PSK in the clear; a pairing-code method wraps it"))

        case (.pairInit(let index, _), _) where index < pairingIndex,
             (.pairPending(let index), _) where index < pairingIndex:
            return [] // leftovers of an earlier activation

        case (.pairInit, _), (.pairPending, _), (.pairAuth, _), (.pairConfirm, _), (.pairRetry, _), (.pairFinalize, _), (.pairFinalizeWrapped, _):
            return fail(.unexpected("\(Self.name(message))"))

        default:
            return [] // not a pairing message
        }
    }

    /// The record is on disk: acknowledge it. The client keeps its record on this.
    public mutating func stored() -> [Action] {
        guard case .storing = phase else { return [] }
        phase = .finished
        return [.send(Sendspin.serverPairFinalize())]
    }

    // MARK: The person's code

    /// The code the person typed. A static code typed before the player is
    /// ready is held until its `client/pair-init`.
    public mutating func enter(code typed: String, now: Int64) throws(CodeRefusal) -> [Action] {
        guard let digits = Self.normalized(typed, digits: digits) else { throw .notDigits(digits: self.digits) }
        switch phase {
        case .awaitingCode:
            return startRound(code: digits)
        case .awaitingInit, .gesture:
            guard method == .staticPairingCode else { throw .notYet }
            heldCode = digits
            return []
        default:
            throw .busy
        }
    }

    private mutating func startRound(code: [UInt8]) -> [Action] {
        self.code = code
        sid = Self.sidLabel + handshakeHash + Self.bigEndian32(pairingIndex) + Self.bigEndian32(round)
        let cpace: CPace
        do { cpace = try CPace(role: .initiator, prs: code, sid: sid, ad: Self.adServer, crypto: crypto, sha512: sha512) } catch {
            return fail(.malformed("CPace could not start"))
        }
        phase = .awaitingAuth(cpace)
        return [.send(Sendspin.serverPairAuth(share: cpace.publicShare))]
    }

    private func wrapKey(_ label: [UInt8], _ isk: [UInt8]) -> [UInt8] { crypto.sha256([label, sid, isk]) }

    // MARK: Helpers

    /// `digits` ASCII digits, with the spaces and hyphens a person types between groups dropped; nil otherwise.
    public static func normalized(_ text: String, digits: Int) -> [UInt8]? {
        guard text.utf8.count <= 32 else { return nil }
        let kept = Array(text.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "-") })
        guard kept.count == digits, kept.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return kept
    }

    /// The six digits of the dynamic method: SHA-256(label ‖ handshake hash ‖ nonce_A ‖ nonce_B), big-endian, mod 10^6.
    public static func dynamicCode(handshakeHash: [UInt8], nonceA: [UInt8], nonceB: [UInt8], sha256: ([[UInt8]]) -> [UInt8]) -> String {
        var r: UInt64 = 0
        for b in sha256([deriveLabel, handshakeHash, nonceA, nonceB]) { r = (r << 8 | UInt64(b)) % 1_000_000 }
        let s = String(r)
        return String(repeating: "0", count: 6 - s.count) + s
    }

    static func bigEndian32(_ n: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: UInt32(truncatingIfNeeded: n) >> UInt32(24 - 8 * $0)) } }

    static func name(_ message: SendspinClientMessage) -> String {
        switch message {
        case .pairInit: "client/pair-init"
        case .pairPending: "client/pair-pending"
        case .pairAuth: "client/pair-auth"
        case .pairConfirm: "client/pair-confirm"
        case .pairRetry: "client/pair-retry"
        case .pairFinalize, .pairFinalizeWrapped: "client/pair-finalize"
        case .pairAbort: "pair/abort"
        default: "a message"
        }
    }

    /// The pairing-code method a client's `supported_pair_methods` offers that this server runs.
    /// As the spec asks, a `dynamic_pairing_code` with a format and an out-channel the spec knows
    /// makes the server disregard a `static_pairing_code` beside it, even where this server cannot
    /// run that dynamic code: its `qr_code` format alone, or a speaker that wants the server's
    /// digit audio pack (`digit_audio`; Tutti has none), leave no code method here (nil).
    public static func offeredMethod(_ methods: JSONValue?) -> SendspinTrust.PairMethod? {
        guard let m = methods?.object else { return nil }
        if let d = m["dynamic_pairing_code"]?.object,
           let formats = d["formats"]?.strings, formats.count <= 8, let channels = d["out_channels"]?.strings, channels.count <= 8 {
            // A speaker with a pack codec the spec does not know counts as no speaker; one with no
            // `digit_audio` at all (aiosendspin 10.2.1) speaks the digits without a pack.
            enum Speaker { case none, speaksItself, wantsPack }
            let speaker: Speaker = if !channels.contains("speaker") { .none } else if let pack = d["digit_audio"] {
                ["opus", "flac", "pcm"].contains(pack["codec"]?.string ?? "") ? .wantsPack : .none
            } else { .speaksItself }
            if formats.contains(where: { $0 == "digits" || $0 == "qr_code" }), channels.contains("display") || speaker != .none {
                return formats.contains("digits") && speaker != .wantsPack ? .dynamicPairingCode : nil
            }
        }
        return m["static_pairing_code"]?.object != nil ? .staticPairingCode : nil
    }
}

/// Outcomes of codes a person typed for Sendspin players, while the person's
/// request waits for them (the leader's API polls; the player's connection
/// reports). Bounded: one offer per client, 16 clients.
public struct SendspinCodeOffers: Sendable {
    public enum Outcome: Equatable, Sendable {
        case paired(name: String)
        case wrongCode(roundsLeft: Int)
        case failed(String)
    }

    struct Offer { var id: UInt64; var clientID: String; var code: String; var taken = false; var outcome: Outcome? }
    private var offers: [Offer] = []
    private var nextID: UInt64 = 1
    public static let limit = 16

    public init() {}

    /// A code for `clientID`'s attempt; replaces one it had not taken yet.
    public mutating func offer(clientID: String, code: String) -> UInt64 {
        offers.removeAll { $0.clientID == clientID }
        let id = nextID
        nextID += 1
        offers.append(Offer(id: id, clientID: clientID, code: code))
        if offers.count > Self.limit { offers.removeFirst(offers.count - Self.limit) }
        return id
    }

    /// The connection of `clientID` takes the code offered to it (once).
    public mutating func take(clientID: String) -> (id: UInt64, code: String)? {
        guard let i = offers.firstIndex(where: { $0.clientID == clientID && !$0.taken }) else { return nil }
        offers[i].taken = true
        return (offers[i].id, offers[i].code)
    }

    public mutating func report(_ id: UInt64, _ outcome: Outcome) {
        guard let i = offers.firstIndex(where: { $0.id == id }) else { return }
        offers[i].outcome = outcome
    }

    public func outcome(_ id: UInt64) -> Outcome? { offers.first { $0.id == id }?.outcome }
}

extension Sendspin {
    /// `server/pair-init`: `nonce_A` in the first round of the dynamic method, nothing in later rounds.
    public static func serverPairInit(nonceA: [UInt8]?) -> String {
        var payload: [String: JSONValue] = [:]
        if let nonceA { payload["nonce_A"] = .string(Base64URL.encode(nonceA)) }
        return message("server/pair-init", .object(payload))
    }

    public static func serverPairAuth(share: [UInt8]) -> String { message("server/pair-auth", ["pake_msg_1": .string(Base64URL.encode(share))]) }

    public static func serverPairConfirm(serverKC: [UInt8]) -> String { message("server/pair-confirm", ["server_kc": .string(Base64URL.encode(serverKC))]) }

    /// A base64url field of exactly `bytes` bytes, checked before it is decoded (length of the text) and after.
    static func field(_ payload: [String: JSONValue], _ name: String, bytes: Int) throws(SendspinError) -> [UInt8] {
        guard let text = payload[name]?.string else { throw .malformed("\(name) missing") }
        guard text.utf8.count <= (bytes + 2) / 3 * 4, let raw = Base64URL.decode(text), raw.count == bytes else {
            throw .malformed("\(name) is not \(bytes) bytes in base64url")
        }
        return raw
    }
}
