import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiLibrary
import TuttiSystem
import TuttiControlKit

/// The leader's side of speaker security: its static key, the paired
/// speakers, the pairing requests waiting, and each joined session's clock
/// key (for the UDP clock server). Thread contract: every method may be
/// called from any thread; state is behind Mutexes.
final class SpeakerSecurity: Sendable {
    let crypto = SodiumCrypto()
    let identity: StaticKey
    /// The legacy room key, stretched (nil: none).
    let psk: [UInt8]?
    /// Only paired speakers (or ones proving the room key) join.
    let pairedOnly: Bool
    /// Where the paired list lives (nil: in memory).
    let listPath: String?
    private let paired: Mutex<PairedSpeakerList>
    private let pending = Mutex(PairingRequests())
    /// Clock tag → clock key, for every joined v7 session.
    private let clockKeys = Mutex<[UInt64: [UInt8]]>([:])
    let log: Logger

    init(configuration c: LeaderConfiguration, folder: String?, log: Logger) throws {
        self.log = log
        pairedOnly = c.pairedSpeakersOnly
        psk = c.roomKey.map { $0.stretched() }
        if let folder {
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            identity = try KeyFile.loadOrCreate(folder + "/leader.key", crypto: crypto)
            listPath = folder + "/speakers"
            let text = (try? readWholeFile(folder + "/speakers", limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
            paired = Mutex(PairedSpeakerList(parsing: text))
        } else {
            identity = crypto.newKey()
            listPath = nil
            paired = Mutex(PairedSpeakerList())
            if c.pairedSpeakersOnly {
                log.warning("speakers = paired without a state folder (--state DIR or a library): pairings last until the leader stops")
            }
        }
    }

    /// This leader's key fingerprint (announced in mDNS, shown in the app).
    var fingerprint: String { keyFingerprint(identity.publicKey, crypto: crypto) }

    /// Whether an unpaired speaker may join: open systems only.
    var open: Bool { !pairedOnly && psk == nil }

    func handshake() -> LeaderHandshake<SodiumCrypto> {
        LeaderHandshake(crypto: crypto, identity: identity, psk: psk, open: open)
    }

    // MARK: Paired speakers

    var pairedSpeakers: [PairedSpeaker] { paired.withLock { $0.speakers } }

    func pairedSpeaker(key: [UInt8]) -> PairedSpeaker? { paired.withLock { $0.speaker(withKey: key) } }

    func pair(name: String, key: [UInt8]) {
        // Saved under the lock: two pairings at once must not write the file in the other order.
        paired.withLock { l in
            l.add(PairedSpeaker(name: name, publicKey: key, pairedAt: Int64(time(nil))))
            save(l)
        }
        // Its other requests (the service asking for approval while `pair` ran) end: their sessions close.
        pending.withLock { _ = $0.remove(fingerprint: keyFingerprint(key, crypto: crypto)) }
        log.info("speaker \(name) paired (key \(keyFingerprint(key, crypto: crypto)))")
    }

    /// Removes a paired speaker; its keys (to close its sessions).
    func forget(name: String) -> [[UInt8]] {
        let gone = paired.withLock { l in
            let gone = l.forget(name: name)
            if !gone.isEmpty { save(l) }
            return gone
        }
        if !gone.isEmpty { log.info("speaker \(name) forgotten: it can no longer join") }
        return gone.map(\.publicKey)
    }

    private func save(_ list: PairedSpeakerList) {
        guard let listPath else { return }
        do { try Library.writeFileAtomically(listPath, Array(list.rendered().utf8), mode: 0o600) } catch {
            log.error("cannot save the paired speakers to \(listPath): \(error)")
        }
    }

    // MARK: Pairing requests

    func addRequest(name: String, address: String, key: [UInt8], intent: PairIntent) throws(PairingRequests.Refusal) -> UInt64 {
        let fp = keyFingerprint(key, crypto: crypto)
        return try pending.withLock { (p) throws(PairingRequests.Refusal) in
            try p.add(name: name, address: address, fingerprint: fp, intent: intent, now: Monotonic.now())
        }
    }

    func request(_ id: UInt64) -> PairingRequests.Request? {
        pending.withLock { p in p.expire(now: Monotonic.now()); return p.request(id) }
    }

    func removeRequest(_ id: UInt64) { pending.withLock { $0.remove(id) } }

    var pendingRequests: [PairingRequests.Request] { pending.withLock { p in p.expire(now: Monotonic.now()); return p.requests } }

    func decide(name: String, _ decision: PairingRequests.Decision) -> Int { pending.withLock { $0.decide(name: name, decision) } }

    func offer(code: String) -> [UInt64] { pending.withLock { $0.offer(code: code) } }

    func takeCode(_ id: UInt64) -> String? { pending.withLock { $0.takeCode(id) } }

    @discardableResult
    func attempted(_ id: UInt64, paired: Bool) -> Int { pending.withLock { $0.attempted(id, paired: paired) } }

    func result(_ id: UInt64) -> (name: String, paired: Bool)? { pending.withLock { $0.result(id) } }

    // MARK: Clock

    func registerClock(_ keys: SessionKeys) { clockKeys.withLock { $0[keys.clockTag] = keys.clock } }
    func unregisterClock(tag: UInt64) { clockKeys.withLock { _ = $0.removeValue(forKey: tag) } }
    func clockKey(tag: UInt64) -> [UInt8]? { clockKeys.withLock { $0[tag] } }
}

extension Leader {
    public var speakersMode: SpeakerAdmission { speakerSecurity.open ? .open : configuration.pairedSpeakersOnly ? .paired : .roomKey }
    public var speakerKeyFingerprint: String { speakerSecurity.fingerprint }

    public var pairedSpeakers: [PairedSpeakerInfo] {
        let live = Set(sessions.withLock { Array($0.values) }.compactMap { $0.speakerKey.map(hexString) })
        return speakerSecurity.pairedSpeakers.map {
            PairedSpeakerInfo(name: $0.name, fingerprint: keyFingerprint($0.publicKey, crypto: speakerSecurity.crypto),
                              pairedAt: $0.pairedAt, connected: live.contains(hexString($0.publicKey)))
        }
    }

    public var pairingRequests: [PairingRequestInfo] {
        let speakers = speakerSecurity.pendingRequests.map { PairingRequestInfo(name: $0.name, address: $0.address, fingerprint: $0.fingerprint, byCode: $0.intent == .code) }
        var trust = sendspinTrust?.trust ?? SendspinTrust()
        trust.expire(now: Monotonic.now())
        let players = trust.requests.filter { $0.decision == nil }.map {
            PairingRequestInfo(name: $0.name, address: $0.address, fingerprint: String($0.clientID.prefix(16)), byCode: $0.method != nil, via: "sendspin",
                               method: $0.method?.rawValue)
        }
        return speakers + players
    }

    /// Allows or denies a speaker (or a Sendspin player) waiting for approval; false if none waits under that name.
    public func decidePairing(name: String, allow: Bool) -> Bool {
        var n = speakerSecurity.decide(name: name, allow ? .allow : .deny)
        if let sendspinTrust {
            do { n += try sendspinTrust.decide(name: name, allow ? .allow : .deny) } catch {
                log.error("Sendspin player \(name): the answer was not kept: \(error)")
            }
        }
        if n > 0 {
            log.info("pairing of \(name) \(allow ? "allowed" : "denied")")
            events.emit(.speakers)
        }
        return n > 0
    }

    /// Offers a typed code to the speakers waiting for one and waits (up to
    /// 5 s) for their sessions to try it.
    public func pairByCode(_ code: String) -> PairByCodeOutcome {
        let ids = speakerSecurity.offer(code: code)
        guard !ids.isEmpty else { return .nobodyWaiting }
        let deadline = Monotonic.now() + 5 * nanosecondsPerSecond
        while Monotonic.now() < deadline {
            let results = ids.map { speakerSecurity.result($0) }
            if let done = results.first(where: { $0?.paired == true }) { return .paired(done!.name) }
            if results.allSatisfy({ $0 != nil }) { return .wrongCode }
            // A request that ended without trying (its speaker left) counts as tried.
            if ids.allSatisfy({ speakerSecurity.result($0) != nil || speakerSecurity.request($0) == nil }) { return .wrongCode }
            Monotonic.sleep(nanoseconds: 20 * nanosecondsPerMillisecond)
        }
        return .wrongCode
    }

    /// Forgets a paired speaker (public, for tests and the CLI's surface).
    public func forget(speaker name: String) -> Bool { forgetSpeaker(name) }
}
