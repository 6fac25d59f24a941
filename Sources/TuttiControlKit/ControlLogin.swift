import Glibc
import Synchronization
import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiLibrary

/// Logging in on every control surface (JSON-RPC over TCP, `/api` and the
/// web app's WebSocket, MPD `password`, `Authorization: Bearer`): the
/// password, the tokens a login hands out, and the failures per source
/// address (`LoginLimiter`), checked first on every surface. A refusal is
/// immediate: nothing here sleeps, so wrong guesses hold no shared thread.
///
/// Tokens are random (`ControlToken`), kept as keyed digests in the player
/// state database (`control_token`) so they outlive a restart, at most
/// `ControlTokens.capacity` of them; `auth.logout` revokes one,
/// `auth.revokeAll` every one, and a new password voids them all (the
/// digests are keyed by it).
///
/// Thread contract: any thread; state is under Mutexes.
public final class ControlLogin: Sendable {
    /// Why a login was refused, as the client is told.
    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// The address failed too often; it may try again later.
        case limited(LoginLimiter.Refusal)
        case wrongPassword
        case unknownToken
        /// What the person is told, from the message catalogue.
        public var message: UserMessage {
            switch self {
            case .limited(let r): r.message
            case .wrongPassword: UserMessage(.loginWrongPassword)
            case .unknownToken: UserMessage(.loginUnknownToken)
            }
        }
        public var description: String { message.description }
    }

    private let password: String?
    private let key: [UInt8]
    private let tokens: Mutex<ControlTokens>
    private let limiter: Mutex<LoginLimiter>
    private let store: PlayerStateStore?
    private let log: Logger
    private let clock: @Sendable () -> Int64

    public init(password: String?, store: PlayerStateStore?, log: Logger, policy: LoginLimiter.Policy = .init(),
         clock: @escaping @Sendable () -> Int64 = { Monotonic.now() }) {
        self.password = password
        self.store = store
        self.log = log
        self.clock = clock
        key = password.map { ControlToken.key(password: $0) } ?? []
        limiter = Mutex(LoginLimiter(policy: policy))
        var saved: [ControlTokens.Entry] = []
        if password != nil, let store {
            do { saved = try store.loadTokens() } catch { log.warning("login tokens could not be read (\(error)): every phone logs in again") }
        }
        tokens = Mutex(ControlTokens(entries: saved))
    }

    /// Live tokens (tests, status).
    public var tokenCount: Int { tokens.withLock { $0.entries.count } }

    /// The host part of "HOST:PORT".
    public static func host(of address: String) -> String {
        guard let colon = address.lastIndex(of: ":") else { return address }
        return String(address[..<colon])
    }

    /// What a peer's ("HOST:PORT") failures are counted by: its host (an IPv6 host by its /64).
    public static func address(of peer: String) -> String { LoginLimiter.key(host: host(of: peer)) }

    /// `auth.login {password}` (and MPD `password`, which also takes a
    /// token): a fresh token on success. No password set: nil token, full access.
    public func login(password secret: String, peer: String) -> Result<String?, Failure> {
        guard let password else { return .success(nil) }
        let address = Self.address(of: peer)
        if let refusal = limiter.withLock({ $0.check(address: address, now: clock()) }) { return .failure(.limited(refusal)) }
        guard RoomKey.same(secret, password) else { return .failure(failed(address, .wrongPassword)) }
        limiter.withLock { $0.recordSuccess(address: address) }
        return .success(issue())
    }

    /// `auth.login {token}`, `Authorization: Bearer`: only a token, never the password.
    public func login(token: String, peer: String) -> Result<Void, Failure> {
        guard password != nil else { return .success(()) }
        let address = Self.address(of: peer)
        if let refusal = limiter.withLock({ $0.check(address: address, now: clock()) }) { return .failure(.limited(refusal)) }
        guard isLive(token) else { return .failure(failed(address, .unknownToken)) }
        limiter.withLock { $0.recordSuccess(address: address) }
        return .success(())
    }

    /// MPD's `password`: the password or a token (both count failures alike).
    public func loginMPD(secret: String, peer: String) -> Result<Void, Failure> {
        guard password != nil else { return .success(()) }
        if ControlToken.wellFormed(secret), isLive(secret) { return login(token: secret, peer: peer) }
        switch login(password: secret, peer: peer) {
        case .success: return .success(()) // MPD has no use for the token it made; it stays valid until dropped
        case .failure(let f): return .failure(f)
        }
    }

    /// Revokes `token`; whether it was live. Only its holder knows it, so anyone may.
    @discardableResult
    public func logout(token: String) -> Bool {
        guard password != nil, ControlToken.wellFormed(token) else { return false }
        let digest = ControlToken.digest(token: token, key: key)
        let removed = tokens.withLock { $0.remove(digest, same: ControlToken.same) }
        if removed, let store {
            do { try store.removeTokens(digest) } catch { log.warning("a revoked login token could not be removed from the state database: \(error)") }
        }
        return removed
    }

    /// Revokes every token: each phone and script logs in again. How many there were.
    @discardableResult
    public func revokeAll() -> Int {
        let n = tokens.withLock { t -> Int in defer { t.removeAll() }; return t.entries.count }
        if let store {
            do { try store.removeTokens(nil) } catch { log.warning("revoked login tokens could not be removed from the state database: \(error)") }
        }
        log.info("revoked every login token (\(n))")
        return n
    }

    private func isLive(_ token: String) -> Bool {
        guard ControlToken.wellFormed(token) else { return false }
        let digest = ControlToken.digest(token: token, key: key)
        return tokens.withLock { $0.contains(digest, same: ControlToken.same) }
    }

    private func failed(_ address: String, _ failure: Failure) -> Failure {
        if let blocked = limiter.withLock({ $0.recordFailure(address: address, now: clock()) }) {
            log.warning("\(limiter.withLock { $0.failures(address: address) }) failed logins from \(address): refused for \(blocked.retryAfterSeconds) s")
        }
        return failure
    }

    private func issue() -> String {
        let token = ControlToken.fresh()
        var stamp = timespec()
        clock_gettime(CLOCK_REALTIME, &stamp)
        let wall = Int64(stamp.tv_sec) * 1_000 + Int64(stamp.tv_nsec) / 1_000_000
        let digest = ControlToken.digest(token: token, key: key)
        let (entry, dropped) = tokens.withLock { t in
            // Strictly increasing, so the oldest is always well defined.
            let e = ControlTokens.Entry(digest: digest, issuedAt: max(wall, (t.entries.last?.issuedAt ?? 0) + 1))
            return (e, t.add(e))
        }
        if let store {
            do { try store.addToken(entry, dropping: dropped) } catch {
                log.warning("a login token could not be saved (\(error)): it works until the leader restarts")
            }
        }
        return token
    }
}
