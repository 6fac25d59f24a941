import Glibc
import Synchronization
import TuttiCore
import TuttiSystem

/// The leader's Sendspin identity and trust, on disk in its state directory:
/// `sendspin-server.key` (the static X25519 secret, hex, 0600) and
/// `sendspin-trust.json` (paired clients' long-term PSKs, approvals, staged
/// pairing PSKs; 0600). Join requests live in memory only.
///
/// Thread contract: every method may be called from any thread (one mutex;
/// a change is written to disk before the call returns, under the lock, so
/// the file never goes back in time). The handshake's `credentials` lookup
/// only reads memory.
public final class SendspinTrustStore: Sendable {
    public let identity: NoiseKeyPair
    public let crypto: NoisePrimitives
    /// Where the trust is written; nil: kept in memory only (a leader without a state folder).
    private let path: String?
    private let state: Mutex<SendspinTrust>
    /// Codes people typed for waiting players, and how each went (not kept on disk).
    private let codes = Mutex(SendspinCodeOffers())
    /// Called after every change a person should see (a new request, an answer), outside the lock.
    private let changed: Mutex<(@Sendable () -> Void)?> = Mutex(nil)

    /// The largest trust file read: 256 records of ~250 bytes each, with room.
    public static let maxFileBytes = 1 << 20

    /// Opens (or makes) both files in `stateDirectory`; without one, a new key
    /// and an empty trust in memory (forgotten when the leader stops).
    public init(stateDirectory: String?, crypto: NoisePrimitives = NoisePrimitives()) throws(SendspinStoreError) {
        self.crypto = crypto
        guard let stateDirectory else {
            let key = SodiumCrypto().newKey()
            identity = NoiseKeyPair(secret: key.secret, publicKey: key.publicKey)
            path = nil
            state = Mutex(SendspinTrust())
            return
        }
        let keyPath = stateDirectory + "/sendspin-server.key"
        do {
            let key = try KeyFile.loadOrCreate(keyPath)
            identity = NoiseKeyPair(secret: key.secret, publicKey: key.publicKey)
        } catch { throw .key(error.description) }
        let file = stateDirectory + "/sendspin-trust.json"
        path = file
        var trust = SendspinTrust()
        do {
            let bytes = try readWholeFile(file, limit: Self.maxFileBytes)
            do { trust = try SendspinTrust(parsing: bytes) } catch { throw SendspinStoreError.malformed(file, error.description) }
        } catch let e as SendspinStoreError {
            throw e
        } catch {
            // No file yet is the normal first start; anything else is worth saying.
            if case .unreadable(_, let reason) = error as? FileReadError, reason != String(cString: strerror(ENOENT)) { throw .unreadable(file, reason) }
            if case .tooLarge = error as? FileReadError { throw .unreadable(file, "\(error)") }
        }
        state = Mutex(trust)
    }

    /// The server's id as Sendspin clients know it.
    public var serverID: String { Base64URL.encode(identity.publicKey) }

    /// Calls `handler` after each change (new request, answer, pairing, forget).
    public func onChange(_ handler: @escaping @Sendable () -> Void) { changed.withLock { $0 = handler } }

    /// A snapshot, to read.
    public var trust: SendspinTrust { state.withLock { $0 } }

    /// The lookup a `SendspinServerChannel` takes.
    public func credentials(for clientID: String) -> SendspinCredentials {
        state.withLock { $0.credentials(for: clientID, crypto: crypto) }
    }

    /// A channel for one new connection.
    public func serverChannel(configuration: SendspinServerChannel.Configuration = .init()) -> SendspinServerChannel {
        var configuration = configuration
        if !crypto.canAESGCM { configuration.ciphers.removeAll { $0 == .aesGCM } }
        return SendspinServerChannel(identity: identity, crypto: crypto, configuration: configuration) { [self] in credentials(for: $0) }
    }

    public func mayPlay(_ peer: SendspinPeer) -> Bool { state.withLock { $0.mayPlay(peer) } }

    /// Changes the trust and writes it (when `persist`) before returning.
    @discardableResult
    private func change<T>(persist: Bool, _ body: (inout SendspinTrust) throws(SendspinTrust.Refusal) -> T) throws(SendspinStoreError) -> T {
        let outcome: Result<T, SendspinStoreError> = state.withLock { trust in
            var copy = trust
            let r: T
            do throws(SendspinTrust.Refusal) { r = try body(&copy) } catch { return .failure(.refused(error)) }
            if persist, copy != trust, let path = self.path {
                do throws(SendspinStoreError) { try Self.write(path, Array(copy.rendered().utf8)) } catch { return .failure(error) }
            }
            trust = copy
            return .success(r)
        }
        let result = try outcome.get()
        if let handler = changed.withLock({ $0 }) { handler() }
        return result
    }

    /// A client connected unpaired and wants to play; true when it is new.
    @discardableResult
    public func noteJoinRequest(clientID: String, name: String, address: String, now: Int64,
                                method: SendspinTrust.PairMethod? = nil) throws(SendspinStoreError) -> Bool {
        try change(persist: false) { (t: inout SendspinTrust) throws(SendspinTrust.Refusal) in
            try t.noteJoinRequest(clientID: clientID, name: name, address: address, now: now, method: method)
        }
    }

    // MARK: Pairing codes

    /// The connection that noted `clientID`'s code request at `since` ended without pairing.
    public func withdrawCodeRequest(clientID: String, since: Int64) {
        let changed = state.withLock { t -> Bool in
            let before = t.requests.count
            t.withdrawCodeRequest(clientID: clientID, since: since)
            return t.requests.count != before
        }
        if changed { self.changed.withLock { $0 }?() }
    }

    /// Whether a pairing-code attempt or round may run for this client and address (wrong codes are budgeted).
    public func mayTryCode(clientID: String, address: String, now: Int64) -> Bool {
        state.withLock { $0.mayTryCode(clientID: clientID, address: address, now: now) }
    }

    /// A round ended with a wrong code; false once the client or its address has had its share.
    public func noteWrongCode(clientID: String, address: String, now: Int64) -> Bool {
        state.withLock { $0.noteWrongCode(clientID: clientID, address: address, now: now) }
    }

    /// A code a person typed for `clientID`'s waiting connection (which takes it on the server's notifier thread).
    public func offerCode(clientID: String, code: String) -> UInt64 { codes.withLock { $0.offer(clientID: clientID, code: code) } }
    public func takeCode(clientID: String) -> (id: UInt64, code: String)? { codes.withLock { $0.take(clientID: clientID) } }
    public func reportCode(_ id: UInt64, _ outcome: SendspinCodeOffers.Outcome) { codes.withLock { $0.report(id, outcome) } }
    public func codeOutcome(_ id: UInt64) -> SendspinCodeOffers.Outcome? { codes.withLock { $0.outcome(id) } }

    /// A person's answer by client id; false when no request waits.
    @discardableResult
    public func decide(clientID: String, _ decision: SendspinTrust.Decision) throws(SendspinStoreError) -> Bool {
        try change(persist: true) { $0.decide(clientID: clientID, decision, unixSeconds: Self.unixNow()) }
    }

    /// A person's answer by the name shown; how many requests it answered.
    @discardableResult
    public func decide(name: String, _ decision: SendspinTrust.Decision) throws(SendspinStoreError) -> Int {
        try change(persist: true) { $0.decide(name: name, decision, unixSeconds: Self.unixNow()) }
    }

    @discardableResult
    public func forget(clientID: String) throws(SendspinStoreError) -> Bool {
        try change(persist: true) { $0.forget(clientID: clientID) }
    }

    public func stage(clientID: String, psk: [UInt8]) throws(SendspinStoreError) {
        try change(persist: true) { (t: inout SendspinTrust) throws(SendspinTrust.Refusal) in try t.stage(clientID: clientID, psk: psk, unixSeconds: Self.unixNow()) }
    }

    /// Stores a finished pairing's long-term PSK (on disk before it returns: only then send `server/pair-finalize`).
    @discardableResult
    public func finalizePairing(clientID: String, psk: [UInt8], method: SendspinTrust.PairMethod, name: String) throws(SendspinStoreError) -> SendspinTrust.Record {
        try change(persist: true) { (t: inout SendspinTrust) throws(SendspinTrust.Refusal) in
            try t.finalizePairing(clientID: clientID, psk: psk, method: method, name: name, unixSeconds: Self.unixNow(), crypto: crypto)
        }
    }

    private static func unixNow() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec)
    }

    /// Writes through a temporary file and a rename, mode 0600, synced.
    private static func write(_ path: String, _ bytes: [UInt8]) throws(SendspinStoreError) {
        let temporary = path + ".new"
        unlink(temporary)
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .unwritable(path, String(cString: strerror(errno))) }
        var at = 0
        while at < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + at, $0.count - at) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            at += n
        }
        let synced = fsync(fd) == 0
        Glibc.close(fd)
        guard at == bytes.count, synced, rename(temporary, path) == 0 else {
            let e = String(cString: strerror(errno))
            unlink(temporary)
            throw .unwritable(path, e)
        }
    }
}

public enum SendspinStoreError: Error, CustomStringConvertible, Equatable {
    case key(String)
    case unreadable(String, String)
    case malformed(String, String)
    case unwritable(String, String)
    case refused(SendspinTrust.Refusal)

    public var description: String {
        switch self {
        case .key(let why): "Sendspin server key: \(why)"
        case .unreadable(let p, let why): "cannot read the Sendspin trust file \(p): \(why)"
        case .malformed(let p, let why): "the Sendspin trust file \(p) is damaged (\(why)); move it away to start with no paired Sendspin players"
        case .unwritable(let p, let why): "cannot write the Sendspin trust file \(p): \(why)"
        case .refused(let r): r.description
        }
    }
}
