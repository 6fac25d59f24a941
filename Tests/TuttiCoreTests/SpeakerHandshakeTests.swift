import Synchronization
import Testing
@testable import TuttiCore

/// A deterministic stand-in for libsodium: the same algebra (DH commutes,
/// the PAKE's multiplication commutes, AEAD fails on any change), none of
/// the security. The state machines cannot tell.
final class FakeCrypto: HandshakeCrypto, Sendable {
    private let counter = Mutex<UInt64>(0)
    private static let mask: [UInt8] = (0..<32).map { UInt8(($0 * 37 + 11) % 256) }
    private static let p: UInt64 = (1 << 61) - 1

    func random(_ count: Int) -> [UInt8] {
        let n = counter.withLock { c -> UInt64 in c += 1; return c }
        return Array(hash([Array("random".utf8), withUnsafeBytes(of: n) { Array($0) }], key: []).prefix(count)) +
            [UInt8](repeating: 7, count: max(0, count - 32))
    }
    func publicKey(secret: [UInt8]) -> [UInt8] { zip(secret, Self.mask).map { $0 ^ $1 } }
    func dh(secret: [UInt8], public key: [UInt8]) -> [UInt8]? {
        guard key.count == 32 else { return nil }
        let other = zip(key, Self.mask).map { $0 ^ $1 }
        let (a, b) = secret.lexicographicallyPrecedes(other) ? (secret, other) : (other, secret)
        return hash([Array("dh".utf8), a, b], key: [])
    }
    func hash(_ parts: [[UInt8]], key: [UInt8]) -> [UInt8] {
        var lanes: [UInt64] = [0xcbf29ce484222325, 0x84222325cbf29ce4, 0x9ce484222325cbf2, 0x2325cbf29ce48422]
        func eat(_ b: UInt8) { for i in 0..<4 { lanes[i] = (lanes[i] ^ UInt64(b) ^ UInt64(i)) &* 0x100000001b3 } }
        for b in key { eat(b) }
        eat(0xff)
        for part in parts {
            let n = withUnsafeBytes(of: UInt32(part.count)) { Array($0) }
            for b in n { eat(b) }
            for b in part { eat(b) }
        }
        for _ in 0..<8 { eat(0) }
        return lanes.flatMap { v in (0..<8).map { UInt8(v >> (8 * $0) & 0xff) } }
    }
    func seal(key: [UInt8], nonce: UInt64, _ plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        let ct = xor(plaintext, key: key, nonce: nonce)
        return ct + tag(key: key, nonce: nonce, ct, ad)
    }
    func open(key: [UInt8], nonce: UInt64, _ sealed: [UInt8], ad: [UInt8]) -> [UInt8]? {
        guard sealed.count >= 16 else { return nil }
        let ct = Array(sealed.dropLast(16))
        guard tag(key: key, nonce: nonce, ct, ad) == Array(sealed.suffix(16)) else { return nil }
        return xor(ct, key: key, nonce: nonce)
    }
    func xor(_ data: [UInt8], key: [UInt8], nonce: UInt64) -> [UInt8] {
        var stream: [UInt8] = []
        var block: UInt64 = 0
        while stream.count < data.count {
            stream += hash([Array("stream".utf8), withUnsafeBytes(of: nonce) { Array($0) }, withUnsafeBytes(of: block) { Array($0) }], key: key)
            block += 1
        }
        return zip(data, stream).map { $0 ^ $1 }
    }
    func tag(key: [UInt8], nonce: UInt64, _ ct: [UInt8], _ ad: [UInt8]) -> [UInt8] {
        Array(hash([Array("tag".utf8), withUnsafeBytes(of: nonce) { Array($0) }, ad, ct], key: key).prefix(16))
    }
    func same(_ a: [UInt8], _ b: [UInt8]) -> Bool { a == b && !a.isEmpty }
    private func number(_ b: [UInt8]) -> UInt64 { b.prefix(8).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) } % Self.p }
    private func point(_ n: UInt64) -> [UInt8] { (0..<8).map { UInt8(n >> (8 * $0) & 0xff) } + [UInt8](repeating: 0, count: 24) }
    func pakeGenerator(code: String, sessionID: [UInt8]) -> [UInt8] { point(max(2, number(hash([Array(code.utf8), sessionID], key: [])))) }
    func pakeScalar() -> [UInt8] { point(max(2, number(random(32)))) }
    func pakeMultiply(_ scalar: [UInt8], _ p: [UInt8]) -> [UInt8]? {
        let a = number(scalar), b = number(p)
        guard b > 1 else { return nil }
        return point(UInt64((UInt128(a) * UInt128(b)) % UInt128(Self.p)))
    }
}

/// A FrameCipher over the fake AEAD, in place.
struct FakeFrameCipher: FrameCipher {
    let key: [UInt8]
    let crypto = FakeCrypto()
    func seal(_ text: UnsafeMutableRawPointer, count: Int, tag: UnsafeMutableRawPointer, nonce: UInt64, ad: UnsafeRawBufferPointer) {
        let plain = Array(UnsafeRawBufferPointer(start: text, count: count))
        let sealed = crypto.seal(key: key, nonce: nonce, plain, ad: Array(ad))
        sealed.withUnsafeBytes { s in
            text.copyMemory(from: s.baseAddress!, byteCount: count)
            tag.copyMemory(from: s.baseAddress! + count, byteCount: 16)
        }
    }
    func open(_ text: UnsafeMutableRawPointer, count: Int, tag: UnsafeRawPointer, nonce: UInt64, ad: UnsafeRawBufferPointer) -> Bool {
        let sealed = Array(UnsafeRawBufferPointer(start: text, count: count)) + Array(UnsafeRawBufferPointer(start: tag, count: 16))
        guard let plain = crypto.open(key: key, nonce: nonce, sealed, ad: Array(ad)) else { return false }
        plain.withUnsafeBytes { if count > 0 { text.copyMemory(from: $0.baseAddress!, byteCount: count) } }
        return true
    }
}

@Suite struct SpeakerHandshakeTests {
    let crypto = FakeCrypto()
    var leaderKey: StaticKey { StaticKey(secret: Array(repeating: 1, count: 32), crypto: crypto) }
    var speakerKey: StaticKey { StaticKey(secret: Array(repeating: 2, count: 32), crypto: crypto) }

    /// Runs offer → reply → proof; the speaker's step and the leader's keys (nil: refused).
    func run(pinned: [UInt8]?, speakerPSK: [UInt8]? = nil, leaderPSK: [UInt8]? = nil, intent: PairIntent = .join, code: String? = nil,
             leader: StaticKey? = nil) throws -> (SpeakerHandshake<FakeCrypto>, LeaderHandshake<FakeCrypto>, SessionKeys, SessionKeys) {
        var s = SpeakerHandshake(crypto: crypto, identity: speakerKey, pinned: pinned, psk: speakerPSK, name: "kitchen", intent: intent, code: code)
        var l = LeaderHandshake(crypto: crypto, identity: leader ?? leaderKey, psk: leaderPSK, open: false)
        let reply = try l.reply(to: s.offer(), name: "kitchen")
        guard case .proveAndSeal(let proof, let sKeys, let lKey, _) = try s.receive(reply) else { throw HandshakeFailure.unexpected("no proof") }
        #expect(lKey == (leader ?? leaderKey).publicKey)
        let lKeys = try l.receive(proof: proof)
        return (s, l, sKeys, lKeys)
    }

    @Test func bothSidesDeriveTheSameKeysPerDirectionAndTheLeaderLearnsTheSpeakersKey() throws {
        let (_, l, s, k) = try run(pinned: leaderKey.publicKey)
        #expect(s == k)
        #expect(s.toSpeaker != s.toLeader && s.toSpeaker.count == 32 && s.clock.count == 32)
        #expect(l.speakerKey == speakerKey.publicKey)
        // A second run (fresh ephemerals and nonces) gives other keys.
        let (_, _, s2, _) = try run(pinned: leaderKey.publicKey)
        #expect(s2.toSpeaker != s.toSpeaker && s2.clockTag != s.clockTag)
    }

    @Test func aPinnedSpeakerRefusesAnotherLeaderBeforeProvingAnything() throws {
        let rogue = StaticKey(secret: Array(repeating: 9, count: 32), crypto: crypto)
        var s = SpeakerHandshake(crypto: crypto, identity: speakerKey, pinned: leaderKey.publicKey, psk: nil, name: "kitchen", intent: .join)
        var l = LeaderHandshake(crypto: crypto, identity: rogue, psk: nil, open: true)
        let reply = try l.reply(to: s.offer(), name: "kitchen")
        #expect(throws: HandshakeFailure.self) { _ = try s.receive(reply) }
        do { _ = try s.receive(reply); Issue.record("accepted") } catch { guard case .notOurLeader = error else { Issue.record("\(error)"); return } }
    }

    @Test func aRogueLeaderThatClaimsThePinnedKeyButCannotProveItGetsNoProof() throws {
        // It announces the real leader's public key with its own ephemeral, and must confirm with DH(l, e_S) it cannot compute.
        let rogue = StaticKey(secret: Array(repeating: 9, count: 32), crypto: crypto)
        var s = SpeakerHandshake(crypto: crypto, identity: speakerKey, pinned: leaderKey.publicKey, psk: nil, name: "kitchen", intent: .join)
        var l = LeaderHandshake(crypto: crypto, identity: rogue, psk: nil, open: true)
        guard case .keyReply(let flags, _, let e, let n, let confirm) = try l.reply(to: s.offer(), name: "kitchen") else { Issue.record("no reply"); return }
        let forged = Message.keyReply(flags: flags, leaderKey: leaderKey.publicKey, ephemeral: e, nonce: n, confirm: confirm)
        var steps = 0
        do { _ = try s.receive(forged); steps += 1 } catch { #expect(error == .badConfirmation("the leader")) }
        #expect(steps == 0, "the speaker produced a step (a proof) for a leader that did not prove its key")
        // Nor does the speaker answer anything else first: no welcome, PAKE share or status before the key reply.
        var fresh = SpeakerHandshake(crypto: crypto, identity: speakerKey, pinned: leaderKey.publicKey, psk: nil, name: "kitchen", intent: .code, code: "123456")
        _ = fresh.offer()
        for m: Message in [.pakeShare(point: Array(repeating: 3, count: 32)), .pairStatus(.waitingForCode, attemptsLeft: 3), .pakeConfirm(tag: Array(repeating: 0, count: 32))] {
            #expect(throws: HandshakeFailure.self) { _ = try fresh.receive(m) }
        }
    }

    @Test func theRoomKeyIsProvedByTheLeaderFirstAndAWrongOneFailsThere() throws {
        let psk = Array(repeating: UInt8(5), count: 32), other = Array(repeating: UInt8(6), count: 32)
        let (_, l, s, k) = try run(pinned: nil, speakerPSK: psk, leaderPSK: psk)
        #expect(s == k && l.flags.contains(.roomKey))
        var sp = SpeakerHandshake(crypto: crypto, identity: speakerKey, pinned: nil, psk: psk, name: "kitchen", intent: .join)
        var le = LeaderHandshake(crypto: crypto, identity: leaderKey, psk: other, open: false)
        let reply = try le.reply(to: sp.offer(), name: "kitchen")
        do { _ = try sp.receive(reply); Issue.record("a wrong room key was accepted") } catch {
            #expect(error.description.contains("wrong room key"))
        }
        // A keyed speaker refuses a leader that mixes in no key.
        var sp2 = SpeakerHandshake(crypto: crypto, identity: speakerKey, pinned: nil, psk: psk, name: "kitchen", intent: .join)
        var open = LeaderHandshake(crypto: crypto, identity: leaderKey, psk: nil, open: true)
        let reply2 = try open.reply(to: sp2.offer(), name: "kitchen")
        do { _ = try sp2.receive(reply2); Issue.record("played for a leader without the key") } catch {
            #expect(error.description.contains("asks no room key"))
        }
    }

    @Test func aTamperedOrReplayedProofIsRefusedByTheLeader() throws {
        var s = SpeakerHandshake(crypto: crypto, identity: speakerKey, pinned: nil, psk: nil, name: "kitchen", intent: .approval)
        var l = LeaderHandshake(crypto: crypto, identity: leaderKey, psk: nil, open: false)
        guard case .proveAndSeal(let proof, _, _, _) = try s.receive(try l.reply(to: s.offer(), name: "kitchen")),
              case .keyProof(let sealed, let confirm) = proof else { Issue.record("no proof"); return }
        var flipped = confirm
        flipped[0] ^= 1
        var l1 = l
        #expect(throws: HandshakeFailure.self) { _ = try l1.receive(proof: .keyProof(sealedKey: sealed, confirm: flipped)) }
        var sealedFlipped = sealed
        sealedFlipped[3] ^= 0x80
        var l2 = l
        #expect(throws: HandshakeFailure.self) { _ = try l2.receive(proof: .keyProof(sealedKey: sealedFlipped, confirm: confirm)) }
        // The same proof replayed into another leader session (other ephemeral and nonce) fails.
        var s2 = SpeakerHandshake(crypto: crypto, identity: speakerKey, pinned: nil, psk: nil, name: "kitchen", intent: .approval)
        var l3 = LeaderHandshake(crypto: crypto, identity: leaderKey, psk: nil, open: false)
        _ = try l3.reply(to: s2.offer(), name: "kitchen")
        #expect(throws: HandshakeFailure.self) { _ = try l3.receive(proof: proof) }
        // And the right one passes.
        #expect(try l.receive(proof: proof).toLeader.count == 32)
    }

    @Test func pairingByCodeSucceedsWithTheRightCodeAndEndsAfterThreeWrongOnes() throws {
        var (s, l, _, _) = try run(pinned: nil, intent: .code, code: "314159")
        #expect(try s.receive(.pairStatus(.waitingForCode, attemptsLeft: 3)) == .waiting(.waitingForCode, attemptsLeft: 3))
        // Right code: shares both ways, confirmations both ways.
        let started = l.startPake(code: "314159")
        let share = try #require(started)
        guard case .send(let out) = try s.receive(share), out.count == 2,
              case .pakeShare(let theirs) = out[0], case .pakeConfirm(let tag) = out[1] else { Issue.record("no answer"); return }
        let finished = l.finishPake(speakerShare: theirs, speakerTag: tag)
        let confirm = try #require(finished)
        #expect(try s.receive(confirm) == .paired(leaderKey: leaderKey.publicKey))

        // Wrong codes: the leader's check fails each time; the third ends the request on the speaker too.
        var (s2, l2, _, _) = try run(pinned: nil, intent: .code, code: "271828")
        for attempt in 1...3 {
            let started = l2.startPake(code: "000000")
            let share = try #require(started)
            guard case .send(let out) = try s2.receive(share), case .pakeShare(let theirs) = out[0], case .pakeConfirm(let tag) = out[1] else {
                Issue.record("no answer"); return
            }
            let finished = l2.finishPake(speakerShare: theirs, speakerTag: tag)
            #expect(finished == nil, "a wrong code paired")
            if attempt < 3 {
                #expect(try s2.receive(.pairStatus(.wrongCode, attemptsLeft: UInt8(3 - attempt))) == .waiting(.wrongCode, attemptsLeft: UInt8(3 - attempt)))
            } else {
                #expect(throws: HandshakeFailure.tooManyWrongCodes) { _ = try s2.receive(.pairStatus(.wrongCode, attemptsLeft: 0)) }
            }
        }
        #expect(s2.wrongCodes == 3)
    }

    @Test func aLeaderThatGuessedTheCodeWrongGetsNoSecondGuessFromTheSameTranscript() throws {
        // The speaker's confirmation is bound to the leader's share: the same tag checked against another code's share fails.
        var (s, l, _, _) = try run(pinned: nil, intent: .code, code: "111111")
        let started = l.startPake(code: "222222")
        let share = try #require(started)
        guard case .send(let out) = try s.receive(share), case .pakeShare(let theirs) = out[0], case .pakeConfirm(let tag) = out[1] else {
            Issue.record("no answer"); return
        }
        let finished = l.finishPake(speakerShare: theirs, speakerTag: tag)
        #expect(finished == nil)
        for guess in ["111110", "111111", "333333"] {
            var again = l
            _ = again.startPake(code: guess) // a new share: the old tag cannot match it
            let finished = again.finishPake(speakerShare: theirs, speakerTag: tag)
            #expect(finished == nil, "guess \(guess) checked offline")
        }
    }

    @Test func sealedRecordsOpenInOrderAndAnyChangeReplayReorderOrCutIsRefused() throws {
        let key = Array(repeating: UInt8(4), count: 32)
        var sealer = RecordSealer(cipher: FakeFrameCipher(key: key))
        var records: [[UInt8]] = []
        for text in ["one", "two", "three"] {
            sealer.seal(Array(text.utf8)) { (b: UnsafeRawBufferPointer) -> Void in records.append(Array(b)) }
        }
        #expect(records.allSatisfy { $0.count == 4 + 16 + ($0.count - 20) } && records[0].count == 4 + 3 + 16)
        func open(_ list: [[UInt8]]) -> (texts: [String], error: ProtocolError?) {
            var opener = RecordOpener(cipher: FakeFrameCipher(key: key))
            var texts: [String] = []
            for r in list { r.withUnsafeBytes { opener.append($0) } }
            do {
                while try opener.next({ texts.append(String(decoding: $0, as: UTF8.self)) }) {}
            } catch { return (texts, error) }
            return (texts, nil)
        }
        #expect(open(records).texts == ["one", "two", "three"] && open(records).error == nil)
        #expect(open([records[0], records[0]]).error != nil, "a replayed record was accepted")
        #expect(open([records[1], records[0]]).error != nil, "reordered records were accepted")
        #expect(open([records[0], records[2]]).texts == ["one"] && open([records[0], records[2]]).error != nil, "a dropped record went unnoticed")
        var flipped = records[1]
        flipped[6] ^= 1
        #expect(open([records[0], flipped]).error != nil, "a flipped bit was accepted")
        // Cut: a record's end never arrives; nothing of it is delivered.
        #expect(open([records[0], Array(records[1].dropLast(1))]).texts == ["one"])
        // A length field beyond the limit is refused at once.
        #expect(open([[0x7f, 0xff, 0xff, 0xff]]).error != nil)
        // Long writes are split into records.
        var big: [[UInt8]] = []
        sealer.seal([UInt8](repeating: 1, count: SealedRecord.maxPlaintext + 10)) { (b: UnsafeRawBufferPointer) -> Void in big.append(Array(b)) }
        #expect(big[0].count == SealedRecord.maxPlaintext + 10 + 2 * 20)
    }

    @Test func clockRepliesAreMatchedToARequestOnceAndAuthenticated() throws {
        var o = OutstandingClockRequests()
        o.sent(id: 7, t1: LocalTime(nanoseconds: 1_000))
        let otherT1 = o.match(id: 7, t1: LocalTime(nanoseconds: 999))
        let neverSent = o.match(id: 8, t1: LocalTime(nanoseconds: 1_000))
        let right = o.match(id: 7, t1: LocalTime(nanoseconds: 1_000))
        let replayed = o.match(id: 7, t1: LocalTime(nanoseconds: 1_000))
        #expect(!otherT1, "a reply with another t1 matched")
        #expect(!neverSent, "a reply to a request never sent matched")
        #expect(right)
        #expect(!replayed, "a replayed reply matched twice")
        // A reply that comes back 300 requests later (a queued link: 1 ms
        // apart, 300 ms round trip) still counts; one older than the last 512 does not.
        for id in 100..<700 as Range<UInt32> { o.sent(id: id, t1: LocalTime(nanoseconds: Int64(id))) }
        let late = o.match(id: 400, t1: LocalTime(nanoseconds: 400))
        let forgotten = o.match(id: 150, t1: LocalTime(nanoseconds: 150))
        #expect(late)
        #expect(!forgotten)

        let key = Array(repeating: UInt8(8), count: 32)
        let zero = [UInt8](repeating: 0, count: ClockAuth.macBytes)
        let request = ClockAuth.sealed(.clockRequest(tag: 42, id: 1, t1: LocalTime(nanoseconds: 5), mac: zero), key: key, crypto: crypto)
        #expect(request.count == WireProtocol.sealedClockDatagramBytes)
        let reply = ClockAuth.sealed(.clockResponse(id: 1, t1: LocalTime(nanoseconds: 5), t2: LeaderTime(nanoseconds: 6), t3: LeaderTime(nanoseconds: 7), mac: zero),
                                     key: key, crypto: crypto)
        #expect(reply.count == WireProtocol.sealedClockDatagramBytes, "a reply is no larger than its request")
        for datagram in [request, reply] {
            #expect(datagram.withUnsafeBytes { ClockAuth.verify($0, key: key, crypto: crypto) })
            #expect(!datagram.withUnsafeBytes { ClockAuth.verify($0, key: Array(repeating: 9, count: 32), crypto: crypto) })
            var tampered = datagram
            tampered[12] ^= 1
            #expect(!tampered.withUnsafeBytes { ClockAuth.verify($0, key: key, crypto: crypto) })
        }
        guard case .clockRequest(42, 1, _, _)? = request.withUnsafeBytes({ ClockDatagram.decode($0) }) else { Issue.record("undecodable"); return }
        // A request shorter than a reply is bait for an amplifier: ignored.
        #expect(Array(request.prefix(41)).withUnsafeBytes { ClockDatagram.decode($0) } == nil)
    }

    @Test func pairingRequestsAreBoundedPerAddressAndInAllAndExpire() throws {
        var r = PairingRequests()
        for i in 0..<3 { _ = try r.add(name: "room\(i)", address: "10.0.0.9", fingerprint: "f", intent: .approval, now: 0) }
        #expect(throws: PairingRequests.Refusal.tooManyFromAddress("10.0.0.9")) {
            _ = try r.add(name: "room3", address: "10.0.0.9", fingerprint: "f", intent: .approval, now: 0)
        }
        // The same room from the same address replaces its request (a reconnect).
        _ = try r.add(name: "room0", address: "10.0.0.9", fingerprint: "f", intent: .approval, now: 1)
        #expect(r.requests.count == 3)
        for i in 0..<13 { _ = try r.add(name: "x\(i)", address: "10.0.1.\(i)", fingerprint: "f", intent: .approval, now: 2) }
        #expect(throws: PairingRequests.Refusal.tooMany) { _ = try r.add(name: "y", address: "10.0.2.1", fingerprint: "f", intent: .approval, now: 2) }
        let allowed = r.decide(name: "room1", .allow), nobody = r.decide(name: "nobody", .deny)
        #expect(allowed == 1 && nobody == 0)
        r.expire(now: PairingRequests.lifetimeNanoseconds + 2)
        #expect(r.requests.isEmpty, "\(r.requests.count) requests outlived five minutes")
        // Codes go to code requests only, and each try is counted.
        let id = try r.add(name: "den", address: "10.0.0.5", fingerprint: "f", intent: .code, now: 0)
        _ = try r.add(name: "hall", address: "10.0.0.6", fingerprint: "f", intent: .approval, now: 0)
        let offered = r.offer(code: "123456")
        #expect(offered == [id])
        let taken = r.takeCode(id), takenAgain = r.takeCode(id)
        #expect(taken == "123456" && takenAgain == nil)
        let wrong = r.attempted(id, paired: false)
        #expect(wrong == 1)
        #expect(r.result(id)?.paired == false)
        // Its last wrong code ends the request at once, before its speaker has gone: the right code finds nobody.
        for _ in 1..<HandshakeLimits.maxWrongCodes {
            #expect(r.offer(code: "000000") == [id])
            _ = r.takeCode(id)
            r.attempted(id, paired: false)
        }
        #expect(r.offer(code: "123456").isEmpty, "a request with \(HandshakeLimits.maxWrongCodes) wrong codes took another")
        #expect(normalizedPairingCode("123 456") == "123456" && normalizedPairingCode("12345") == nil && normalizedPairingCode("12345x") == nil)
    }

    @Test func thePairedListSurvivesItsFileAndForgets() {
        var list = PairedSpeakerList()
        list.add(PairedSpeaker(name: "kitchen", publicKey: Array(repeating: 1, count: 32), pairedAt: 1_700_000_000))
        list.add(PairedSpeaker(name: "den", publicKey: Array(repeating: 2, count: 32), pairedAt: 1_700_000_001))
        let again = PairedSpeakerList(parsing: list.rendered() + "garbage line\nbad\tzz\t1\n")
        #expect(again == list)
        #expect(again.speaker(withKey: Array(repeating: 2, count: 32))?.name == "den")
        var l2 = again
        let gone = l2.forget(name: "den")
        #expect(gone.count == 1 && l2.speakers.map(\.name) == ["kitchen"])
        #expect(!PairedSpeakerList.valid(name: "a\tb") && PairedSpeakerList.valid(name: "kitchen"))
    }
}
