import Testing
@testable import TuttiCore
import TuttiAuth

/// The server's side of Sendspin's pairing-code methods (`SendspinCodePairing`),
/// against a client built here from the same parts aiosendspin's client uses
/// (CPace responder, the wrap keys, the commitment), with real crypto
/// (libsodium). The real client is in TuttiDaemonTests' `SendspinCodePairingTests`.
@Suite struct SendspinCodePairingTests {
    static let crypto = NoisePrimitives()
    static let second: Int64 = 1_000_000_000

    /// A player's side of one attempt.
    struct Player {
        let peer: SendspinPeer
        let nonceB: [UInt8]
        var nonceA: [UInt8] = []
        var cpace: CPace?
        var sid: [UInt8] = []
        let psk: [UInt8]

        init(cipher: NoiseCipher = .chaChaPoly) {
            peer = SendspinPeer(id: "player", cipher: cipher, category: .sentinel, handshakeHash: crypto.random(32), credentialMismatch: false)
            nonceB = crypto.random(32)
            psk = crypto.random(32)
        }

        var commitB: [UInt8] { crypto.sha256([SendspinCodePairing.commitLabel, nonceB]) }
        var shownCode: String {
            SendspinCodePairing.dynamicCode(handshakeHash: peer.handshakeHash, nonceA: nonceA, nonceB: nonceB, sha256: crypto.sha256)
        }

        /// Answers `server/pair-auth` under `code` in `round`: its share (`client/pair-auth`).
        mutating func auth(_ serverText: String, code: String, round: Int, index: Int = 1) throws -> SendspinClientMessage {
            let share = try Self.field(serverText, "server/pair-auth", "pake_msg_1")
            sid = SendspinCodePairing.sidLabel + peer.handshakeHash + SendspinCodePairing.bigEndian32(index) + SendspinCodePairing.bigEndian32(round)
            var c = try CPace(role: .responder, prs: Array(code.utf8), sid: sid, ad: SendspinCodePairing.adClient, crypto: crypto, sha512: NoisePrimitives.sha512)
            try c.derive(peerShare: share, peerAD: SendspinCodePairing.adServer)
            cpace = c
            return .pairAuth(share: c.publicShare)
        }

        /// Whether `server/pair-confirm`'s tag verifies (the code was the same).
        func serverTagVerifies(_ serverText: String) throws -> Bool {
            let kc = try Self.field(serverText, "server/pair-confirm", "server_kc")
            return try #require(cpace).verify(kc)
        }

        func wrapKey(_ label: [UInt8]) throws -> [UInt8] { crypto.sha256([label, sid, try #require(cpace?.isk)]) }

        func confirm(dynamic: Bool) throws -> SendspinClientMessage {
            let wrapped = dynamic ? crypto.seal(peer.cipher, key: try wrapKey(SendspinCodePairing.nonceWrapLabel), nonce: [UInt8](repeating: 0, count: 12), nonceB, ad: []) : nil
            return .pairConfirm(clientKC: try #require(cpace).tag(), wrappedNonceB: wrapped)
        }

        func finalize() throws -> SendspinClientMessage {
            .pairFinalizeWrapped(wrappedPSK: crypto.seal(peer.cipher, key: try wrapKey(SendspinCodePairing.pskWrapLabel), nonce: [UInt8](repeating: 0, count: 12), psk, ad: []))
        }

        static func field(_ text: String, _ type: String, _ key: String) throws -> [UInt8] {
            let value = try payload(text, type)[key]?.string.flatMap(Base64URL.decode)
            return try #require(value, "\(key) in \(text)")
        }

        static func payload(_ text: String, _ type: String) throws -> [String: JSONValue] {
            let json = try #require(JSONValue.parsing(text))
            #expect(json["type"]?.string == type, "\(text)")
            return json["payload"]?.object ?? [:]
        }
    }

    static func sent(_ actions: [SendspinCodePairing.Action]) -> [String] { actions.compactMap { if case .send(let t) = $0 { t } else { nil } } }
    static func failure(_ actions: [SendspinCodePairing.Action]) -> SendspinCodePairing.Failure? {
        actions.compactMap { if case .fail(let f) = $0 { f } else { nil } }.first
    }

    static func server(_ player: Player, _ method: SendspinTrust.PairMethod, now: Int64 = 0) -> SendspinCodePairing {
        SendspinCodePairing(method: method, peer: player.peer, now: now, crypto: crypto, sha512: NoisePrimitives.sha512)
    }

    /// Runs the dynamic method up to the code shown: pair-init, then `server/pair-init {nonce_A}`.
    static func shown(_ player: inout Player, _ server: inout SendspinCodePairing) throws {
        let a = server.receive(.pairInit(pairingIndex: 1, commitment: player.commitB), now: 1)
        #expect(a.last == .awaitCode && sent(a).count == 1, "\(a)")
        let nonce = try #require(Player.payload(sent(a)[0], "server/pair-init")["nonce_A"]?.string)
        player.nonceA = try #require(Base64URL.decode(nonce))
        #expect(player.nonceA.count == 32)
    }

    @Test(arguments: [NoiseCipher.chaChaPoly, .aesGCM]) func theDynamicCodeThePlayerShowsPairsAndTheWrappedPSKArrives(cipher: NoiseCipher) throws {
        var player = Player(cipher: cipher)
        var server = Self.server(player, .dynamicPairingCode)
        #expect(JSONValue.parsing(server.activateText)?["payload"]?["pairing"] == ["method": "dynamic_pairing_code", "format": "digits"])
        try Self.shown(&player, &server)
        #expect(server.awaitsCode)
        let code = player.shownCode
        #expect(code.count == 6 && code.allSatisfy(\.isNumber))
        // As a person types it: grouped.
        let auth = try server.enter(code: String(code.prefix(3)) + "-" + String(code.suffix(3)), now: 2)
        let confirm = server.receive(try player.auth(Self.sent(auth)[0], code: code, round: 1), now: 3)
        #expect(try player.serverTagVerifies(Self.sent(confirm)[0]))
        #expect(server.receive(try player.confirm(dynamic: true), now: 4) == [])
        let store = server.receive(try player.finalize(), now: 5)
        #expect(store == [.store(psk: player.psk)], "\(store)")
        #expect(Self.sent(server.stored()) == [Sendspin.serverPairFinalize()])
        #expect(server.isFinished && server.deadline == nil)
    }

    /// aiosendspin's `derive_digits` and `commit` for fixed inputs (computed with aiosendspin 10.2.1).
    @Test func theSixDigitsAndTheCommitmentAreAiosendspins() {
        #expect(SendspinCodePairing.dynamicCode(handshakeHash: Array(0..<32), nonceA: Array(32..<64), nonceB: Array(64..<96), sha256: Self.crypto.sha256) == "806729")
        #expect(SendspinCodePairing.dynamicCode(handshakeHash: [UInt8](repeating: 0, count: 32), nonceA: [UInt8](repeating: 0, count: 32),
                                                nonceB: [UInt8](repeating: 0, count: 32), sha256: Self.crypto.sha256) == "593986")
        #expect(Self.crypto.sha256([SendspinCodePairing.commitLabel, Array(0..<32)]) == hexBytes("ea08c0aee3c421ace702f31591b3d213e8c371a8a8e3b0be3fd405ed841755a3"))
    }

    /// A wrong code costs a round: the player's `client/pair-retry`, a new `server/pair-init` without `nonce_A`, and the round in the sid.
    @Test func aWrongDynamicCodeCostsARoundAndTheRightOneThenPairs() throws {
        var player = Player()
        var server = Self.server(player, .dynamicPairingCode)
        try Self.shown(&player, &server)
        let code = player.shownCode
        let wrong = code == "000000" ? "000001" : "000000"
        let confirm = server.receive(try player.auth(Self.sent(try server.enter(code: wrong, now: 2))[0], code: code, round: 1), now: 3)
        #expect(try !player.serverTagVerifies(Self.sent(confirm)[0]))
        let retry = server.receive(.pairRetry, now: 4)
        #expect(retry.first == .wrongCode(roundsLeft: 4) && retry.last == .awaitCode, "\(retry)")
        #expect(try Player.payload(Self.sent(retry)[0], "server/pair-init").isEmpty)
        #expect(server.round == 2)
        let confirm2 = server.receive(try player.auth(Self.sent(try server.enter(code: code, now: 5))[0], code: code, round: 2), now: 6)
        #expect(try player.serverTagVerifies(Self.sent(confirm2)[0]))
        #expect(server.receive(try player.confirm(dynamic: true), now: 7) == [])
        #expect(server.receive(try player.finalize(), now: 8) == [.store(psk: player.psk)])
    }

    @Test func fiveWrongCodesEndTheAttempt() throws {
        var player = Player()
        var server = Self.server(player, .dynamicPairingCode)
        try Self.shown(&player, &server)
        var last: [SendspinCodePairing.Action] = []
        for round in 1...5 {
            let wrong = String(format6: (Int(player.shownCode)! + round) % 1_000_000)
            _ = server.receive(try player.auth(Self.sent(try server.enter(code: wrong, now: Int64(round)))[0], code: player.shownCode, round: round), now: Int64(round))
            last = server.receive(.pairRetry, now: Int64(round))
        }
        #expect(last.first == .wrongCode(roundsLeft: 0), "\(last)")
        #expect(Self.failure(last) == .tooManyWrongCodes(5), "\(last)")
        #expect(Self.sent(last) == [Sendspin.pairAbort(reason: "pairing_code_mismatch")])
        #expect(server.isOver)
        #expect(server.receive(try player.finalize(), now: 9) == [], "nothing after the end")
    }

    @Test func theStaticCodePairsAndOneTypedEarlyWaitsForThePlayer() throws {
        var player = Player(cipher: .aesGCM)
        var server = Self.server(player, .staticPairingCode)
        #expect(JSONValue.parsing(server.activateText)?["payload"]?["pairing"] == ["method": "static_pairing_code"])
        // The player waits for its owner's gesture first; the person types the code meanwhile.
        #expect(server.receive(.pairPending(pairingIndex: 1), now: 1) == [])
        #expect(server.deadline == 1 + SendspinCodePairing.gestureSeconds * Self.second)
        #expect(try server.enter(code: "1234 5678", now: 2) == [])
        let auth = server.receive(.pairInit(pairingIndex: 1, commitment: nil), now: 3)
        let confirm = server.receive(try player.auth(Self.sent(auth)[0], code: "12345678", round: 1), now: 4)
        #expect(try player.serverTagVerifies(Self.sent(confirm)[0]))
        #expect(server.receive(try player.confirm(dynamic: false), now: 5) == [])
        #expect(server.receive(try player.finalize(), now: 6) == [.store(psk: player.psk)])
    }

    /// The static method's client aborts with `pairing_code_mismatch` when the server's tag fails: a wrong code, and the attempt ends.
    @Test func aWrongStaticCodeIsRefusedAndDoesNotPair() throws {
        var player = Player()
        var server = Self.server(player, .staticPairingCode)
        #expect(server.receive(.pairInit(pairingIndex: 1, commitment: nil), now: 1) == [.awaitCode])
        let confirm = server.receive(try player.auth(Self.sent(try server.enter(code: "87654321", now: 2))[0], code: "12345678", round: 1), now: 3)
        #expect(try !player.serverTagVerifies(Self.sent(confirm)[0]))
        let end = server.receive(.pairAbort(reason: "pairing_code_mismatch"), now: 4)
        #expect(end == [.wrongCode(roundsLeft: 0), .fail(.aborted("pairing_code_mismatch"))], "\(end)")
        // A player that sends its confirmation anyway (a bad client) proves nothing.
        var other = Self.server(player, .staticPairingCode)
        _ = other.receive(.pairInit(pairingIndex: 1, commitment: nil), now: 1)
        _ = other.receive(try player.auth(Self.sent(try other.enter(code: "87654321", now: 2))[0], code: "12345678", round: 1), now: 3)
        let forced = other.receive(try player.confirm(dynamic: false), now: 4)
        #expect(Self.failure(forced) == .malformed("client_kc does not verify"), "\(forced)")
    }

    /// A client that reflects the server's own share and tag proves nothing (CPace's reflection check).
    @Test func reflectedSharesAndTagsAreRefused() throws {
        let player = Player()
        var server = Self.server(player, .staticPairingCode)
        _ = server.receive(.pairInit(pairingIndex: 1, commitment: nil), now: 1)
        let msg1 = try Player.field(Self.sent(try server.enter(code: "12345678", now: 2))[0], "server/pair-auth", "pake_msg_1")
        let confirm = server.receive(.pairAuth(share: msg1), now: 3)
        let kc = try Player.field(Self.sent(confirm)[0], "server/pair-confirm", "server_kc")
        let end = server.receive(.pairConfirm(clientKC: kc, wrappedNonceB: nil), now: 4)
        #expect(Self.failure(end) == .malformed("client_kc does not verify"), "\(end)")
        #expect(Self.sent(end) == [Sendspin.pairAbort(reason: "pairing_code_mismatch")])
    }

    @Test func replayedAndMisplacedMessagesEndTheAttemptAndLeftoversAreIgnored() throws {
        var player = Player()
        var server = SendspinCodePairing(method: .dynamicPairingCode, peer: player.peer, pairingIndex: 2, now: 0, crypto: Self.crypto, sha512: NoisePrimitives.sha512)
        // Leftovers of an earlier activation: ignored.
        #expect(server.receive(.pairInit(pairingIndex: 1, commitment: player.commitB), now: 1) == [])
        #expect(server.receive(.pairPending(pairingIndex: 1), now: 1) == [])
        let a = server.receive(.pairInit(pairingIndex: 2, commitment: player.commitB), now: 1)
        player.nonceA = try Player.field(Self.sent(a)[0], "server/pair-init", "nonce_A")
        // The same pair-init again (replayed): out of place.
        var replayed = server
        #expect(Self.failure(replayed.receive(.pairInit(pairingIndex: 2, commitment: player.commitB), now: 2)) == .unexpected("client/pair-init"))
        // A pair-auth before the server's: out of place.
        var early = server
        #expect(Self.failure(early.receive(.pairAuth(share: player.nonceB), now: 2)) == .unexpected("client/pair-auth"))
        // A pair-auth replayed after the server's confirmation.
        let auth = try player.auth(Self.sent(try server.enter(code: player.shownCode, now: 2))[0], code: player.shownCode, round: 1, index: 2)
        _ = server.receive(auth, now: 3)
        var again = server
        #expect(Self.failure(again.receive(auth, now: 4)) == .unexpected("client/pair-auth"))
        // The PSK in the clear, where it must come wrapped.
        _ = server.receive(try player.confirm(dynamic: true), now: 5)
        var clear = server
        #expect(Self.failure(clear.receive(.pairFinalize(longTermPSK: player.psk), now: 6)) != nil)
        // A wrapped PSK sealed under another key does not open.
        var forged = server
        let bad = Self.crypto.seal(player.peer.cipher, key: Self.crypto.random(32), nonce: [UInt8](repeating: 0, count: 12), player.psk, ad: [])
        #expect(Self.failure(forged.receive(.pairFinalizeWrapped(wrappedPSK: bad), now: 6)) == .malformed("wrapped_psk does not open"))
        // A pair-init that names an activation ahead of the server's.
        var ahead = SendspinCodePairing(method: .staticPairingCode, peer: player.peer, now: 0, crypto: Self.crypto, sha512: NoisePrimitives.sha512)
        #expect(Self.failure(ahead.receive(.pairInit(pairingIndex: 2, commitment: nil), now: 1)) != nil)
        // Each method's own fields only.
        var staticWithCommit = Self.server(player, .staticPairingCode)
        #expect(Self.failure(staticWithCommit.receive(.pairInit(pairingIndex: 1, commitment: player.commitB), now: 1)) != nil)
        var dynamicWithout = Self.server(player, .dynamicPairingCode)
        #expect(Self.failure(dynamicWithout.receive(.pairInit(pairingIndex: 1, commitment: nil), now: 1)) == .malformed("client/pair-init without commit_B"))
    }

    /// The code must be bound to this connection: a revealed nonce_B must match its commitment, and the code typed must be
    /// the one the handshake hash and both nonces give (a player that used another code, as a relay would, is refused).
    @Test func aCodeNotBoundToThisConnectionIsRefused() throws {
        // The player commits to one nonce and reveals another.
        var player = Player()
        var server = Self.server(player, .dynamicPairingCode)
        try Self.shown(&player, &server)
        _ = server.receive(try player.auth(Self.sent(try server.enter(code: player.shownCode, now: 2))[0], code: player.shownCode, round: 1), now: 3)
        let liar = Player()
        let wrapped = Self.crypto.seal(player.peer.cipher, key: try player.wrapKey(SendspinCodePairing.nonceWrapLabel), nonce: [UInt8](repeating: 0, count: 12), liar.nonceB, ad: [])
        let end = server.receive(.pairConfirm(clientKC: try #require(player.cpace).tag(), wrappedNonceB: wrapped), now: 4)
        #expect(Self.failure(end) == .malformed("the revealed nonce_B does not match commit_B"), "\(end)")

        // The player runs CPace under a code of its choosing (not the derived one), and the person typed that.
        var relay = Player()
        var server2 = Self.server(relay, .dynamicPairingCode)
        try Self.shown(&relay, &server2)
        let chosen = relay.shownCode == "111111" ? "222222" : "111111"
        _ = server2.receive(try relay.auth(Self.sent(try server2.enter(code: chosen, now: 2))[0], code: chosen, round: 1), now: 3)
        let end2 = server2.receive(try relay.confirm(dynamic: true), now: 4)
        #expect(Self.failure(end2) == .malformed("the code typed is not this connection's"), "\(end2)")
    }

    @Test func eachWaitIsBounded() throws {
        var player = Player()
        var idle = Self.server(player, .dynamicPairingCode, now: 0)
        #expect(idle.tick(now: 59 * Self.second) == [])
        #expect(idle.tick(now: 60 * Self.second) == [.fail(.timedOut("client/pair-init"))])
        var gesture = Self.server(player, .staticPairingCode, now: 0)
        _ = gesture.receive(.pairPending(pairingIndex: 1), now: 10 * Self.second)
        #expect(gesture.tick(now: 369 * Self.second) == [])
        #expect(Self.failure(gesture.tick(now: 370 * Self.second)) == .timedOut("the player owner's gesture (client/pair-init)"))
        // After pair-init, the rest (the person's code included) within 180 s.
        var rest = Self.server(player, .dynamicPairingCode, now: 0)
        try Self.shown(&player, &rest)
        #expect(rest.deadline == 1 + 180 * Self.second)
        #expect(Self.failure(rest.tick(now: 1 + 180 * Self.second)) == .timedOut("the rest of the pairing"))
        #expect(rest.tick(now: 500 * Self.second) == [], "once")
    }

    @Test func codesAreCheckedAsTheyAreTyped() throws {
        func refusal(_ s: inout SendspinCodePairing, _ code: String) -> SendspinCodePairing.CodeRefusal? {
            do { _ = try s.enter(code: code, now: 1); return nil } catch { return error }
        }
        let player = Player()
        var dynamic = Self.server(player, .dynamicPairingCode)
        #expect(refusal(&dynamic, "123456") == .notYet, "the six digits are not shown before server/pair-init")
        for bad in ["12345", "12345a", "１２３４５６", String(repeating: "1", count: 10_000)] {
            #expect(refusal(&dynamic, bad) == .notDigits(digits: 6), "\(bad.prefix(20))")
        }
        var stat = Self.server(player, .staticPairingCode)
        _ = stat.receive(.pairInit(pairingIndex: 1, commitment: nil), now: 1)
        #expect(refusal(&stat, "123456") == .notDigits(digits: 8))
        #expect(refusal(&stat, "12-34-56-78") == nil)
        #expect(refusal(&stat, "12345678") == .busy)
    }

    @Test func wrongCodesAreBudgetedPerClientAndPerAddress() {
        var trust = SendspinTrust()
        let minute = 60 * Self.second
        func may(_ client: String, _ address: String, _ now: Int64) -> Bool { trust.mayTryCode(clientID: client, address: address, now: now) }
        for i in 0..<SendspinTrust.wrongCodesPerClient {
            #expect(may("a", "10.0.0.1", Int64(i)), "wrong code \(i + 1) of 10")
            let more = trust.noteWrongCode(clientID: "a", address: "10.0.0.1", now: Int64(i))
            #expect(more == (i < SendspinTrust.wrongCodesPerClient - 1), "after wrong code \(i + 1)")
        }
        #expect(!may("a", "10.0.0.1", minute), "10 wrong codes for one client in 10 minutes")
        #expect(!may("a", "10.0.0.9", minute), "the client is counted wherever it comes from")
        #expect(may("b", "10.0.0.1", minute))
        for i in 0..<10 { _ = trust.noteWrongCode(clientID: "c\(i)", address: "10.0.0.1", now: minute) }
        #expect(!may("d", "10.0.0.1", minute), "20 from one address")
        #expect(may("d", "10.0.0.2", minute))
        // The client's ten were noted at 0–9 ns: the first expires at exactly 10 minutes, not a nanosecond before.
        #expect(!may("a", "10.0.0.1", 10 * minute - 1), "still 10 within the window")
        #expect(may("a", "10.0.0.1", 10 * minute), "the first has expired: 9 left")
        #expect(may("d", "10.0.0.1", 11 * minute), "and the address's")
    }

    /// A code is typed for a connection: when the one that waits ends unpaired, its request goes (a later connection's stays).
    @Test func aCodeRequestIsWithdrawnByTheConnectionThatNotedItOnly() throws {
        var trust = SendspinTrust()
        try trust.noteJoinRequest(clientID: "a", name: "Study", address: "10.0.0.1", now: 1, method: .dynamicPairingCode)
        try trust.noteJoinRequest(clientID: "a", name: "Study", address: "10.0.0.1", now: 2, method: .dynamicPairingCode)
        trust.withdrawCodeRequest(clientID: "a", since: 1)
        #expect(trust.requests.map(\.clientID) == ["a"], "the second connection's")
        #expect(trust.summary()["pending"]?.array?.first?["method"]?.string == "dynamic_pairing_code")
        trust.withdrawCodeRequest(clientID: "a", since: 2)
        #expect(trust.requests.isEmpty)
        // A request for unpaired access (no code) is a person's to answer: it stays.
        try trust.noteJoinRequest(clientID: "b", name: "Den", address: "10.0.0.1", now: 3)
        trust.withdrawCodeRequest(clientID: "b", since: 3)
        #expect(trust.requests.map(\.clientID) == ["b"])
    }

    @Test func aTypedCodeIsTakenOnceAndItsOutcomeKept() {
        var offers = SendspinCodeOffers()
        let first = offers.offer(clientID: "a", code: "123456")
        let second = offers.offer(clientID: "a", code: "654321") // replaces the one not taken
        #expect(offers.take(clientID: "a")! == (second, "654321"))
        #expect(offers.take(clientID: "a") == nil)
        #expect(offers.outcome(first) == nil)
        offers.report(second, .wrongCode(roundsLeft: 3))
        #expect(offers.outcome(second) == .wrongCode(roundsLeft: 3))
        for i in 0..<40 { _ = offers.offer(clientID: "c\(i)", code: "1") }
        #expect(offers.outcome(second) == nil, "at most \(SendspinCodeOffers.limit) kept")
    }
}

private extension String {
    init(format6 n: Int) { let s = String(n); self = String(repeating: "0", count: 6 - s.count) + s }
}

private func hexBytes(_ s: String) -> [UInt8] {
    var out: [UInt8] = []
    var i = s.startIndex
    while i < s.endIndex {
        let j = s.index(i, offsetBy: 2)
        out.append(UInt8(s[i..<j], radix: 16)!)
        i = j
    }
    return out
}
