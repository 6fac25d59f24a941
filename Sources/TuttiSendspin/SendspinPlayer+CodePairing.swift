import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiSystem

/// The pairing-code methods on a connection (TuttiCore's `SendspinCodePairing`
/// runs the exchange): an unpaired player that offers the static or dynamic
/// code is activated for pairing at once and shows as "wants to join" with
/// its method; the code a person types (`speakers.sendspinCode`, the web
/// app's card) reaches it through the trust store's offers, taken on the
/// server's notifier thread. On success the long-term PSK is stored as the
/// Pairing PSK method stores it, and the connection closes two seconds later
/// so the player comes back under it. One attempt at a time: a dynamic one
/// ends the connection when it fails; a static code typed wrong may be tried
/// again on the same connection, up to 5 attempts. Wrong codes are budgeted
/// per client and per address (`SendspinTrust.noteWrongCode`).
extension SendspinPlayer {
    /// Starts the attempt; false when this client or address has had its share of wrong codes (then it is treated as before).
    func startCodePairing(_ hello: SendspinHello, _ peer: SendspinPeer, _ method: SendspinTrust.PairMethod) -> Bool {
        let address = Sendspin.host(ofPeer: socket.peer)
        guard trust.mayTryCode(clientID: peer.id, address: address, now: Monotonic.now()) else {
            log.info("Sendspin \(hello.name) from \(socket.peer): too many wrong pairing codes lately; not pairing by code now")
            return false
        }
        let since = Monotonic.now()
        do {
            try trust.noteJoinRequest(clientID: peer.id, name: hello.name, address: address, now: since, method: method)
        } catch {
            log.info("Sendspin \(hello.name) from \(socket.peer) may not pair: \(error); closing")
            socket.terminate()
            return true
        }
        let attempt = SendspinCodePairing(method: method, peer: peer, now: Condition.now(), crypto: trust.crypto, sha512: NoisePrimitives.sha512)
        state.withLock { $0.code = attempt; $0.codeSince = since }
        queue(text: attempt.activateText)
        log.info("Sendspin \(hello.name) from \(socket.peer) pairs by \(method == .dynamicPairingCode ? "the six digits it shows" : "the code printed on it"): " +
                 "type it in the web app, or `tutti speakers code \(hello.name) CODE`")
        leader.events.emit(.speakers)
        poke() // the notifier keeps the attempt's deadline
        return true
    }

    /// A pairing message while the code attempt runs.
    func codeMessage(_ message: SendspinClientMessage) {
        let actions = state.withLock { s -> [SendspinCodePairing.Action] in s.code?.receive(message, now: Condition.now()) ?? [] }
        perform(actions)
    }

    /// Takes the code a person typed for this client, if the attempt can use it now (the notifier thread).
    func takeOfferedCode() {
        // Not while an attempt that has ended is being replaced (a wrong static code): the next one takes it.
        guard let clientID = state.withLock({ s in s.code.map { !$0.isOver } == true && !s.admitted && s.codeOffer == nil ? s.peer?.id : nil }) else { return }
        guard let (id, code) = trust.takeCode(clientID: clientID) else { return }
        let result = state.withLock { s -> Result<[SendspinCodePairing.Action], SendspinCodePairing.CodeRefusal> in
            s.codeOffer = id
            guard var attempt = s.code else { return .success([]) }
            defer { s.code = attempt }
            do throws(SendspinCodePairing.CodeRefusal) { return .success(try attempt.enter(code: code, now: Condition.now())) } catch { return .failure(error) }
        }
        switch result {
        case .success(let actions): perform(actions)
        case .failure(let refusal):
            endCodeOffer(.failed(refusal == .notYet ? "the player is not showing its code yet" : "the player is busy with another code"))
        }
    }

    private func perform(_ actions: [SendspinCodePairing.Action]) {
        let name = hello?.name ?? socket.peer
        for action in actions {
            switch action {
            case .send(let text):
                queue(text: text)
            case .awaitCode:
                leader.events.emit(.speakers)
            case .wrongCode(var roundsLeft):
                guard let (peer, attempt) = state.withLock({ s in s.peer.flatMap { p in s.code.map { (p, $0) } } }) else { continue }
                let more = trust.noteWrongCode(clientID: peer.id, address: Sendspin.host(ofPeer: socket.peer), now: Monotonic.now())
                // A wrong static code ends its attempt; the connection may run another (`nextStaticAttempt`).
                if attempt.method == .staticPairingCode { roundsLeft = Self.staticAttemptsPerConnection - attempt.pairingIndex }
                log.info("Sendspin \(name): the pairing code typed is wrong" + (roundsLeft > 0 && more ? " (\(roundsLeft) more tries)" : ""))
                endCodeOffer(.wrongCode(roundsLeft: more ? roundsLeft : 0))
                if !more {
                    log.info("Sendspin \(name) from \(socket.peer): too many wrong pairing codes; closing")
                    queue(text: Sendspin.pairAbort(reason: "pairing_code_mismatch"))
                    socket.terminate()
                    return
                }
            case .store(let psk):
                guard let peer = state.withLock({ $0.peer }), let method = state.withLock({ $0.code?.method }) else { continue }
                do {
                    try trust.finalizePairing(clientID: peer.id, psk: psk, method: method, name: hello?.name ?? "")
                } catch {
                    log.warning("Sendspin \(name) from \(socket.peer): pairing not stored: \(error); closing")
                    endCodeOffer(.failed("\(error)"))
                    socket.terminate()
                    return
                }
                let more = state.withLock { s -> [SendspinCodePairing.Action] in
                    s.codeFinishedAt = Condition.now()
                    return s.code?.stored() ?? []
                }
                perform(more)
                log.info("Sendspin \(name) (\(peer.id.prefix(16))) is paired (\(method.rawValue)); it plays once it reconnects under its long-term PSK")
                endCodeOffer(.paired(name: name))
                leader.events.emit(.speakers)
                poke()
            case .fail(let failure):
                if failure == .aborted("pairing_code_mismatch"), let activate = nextStaticAttempt() {
                    log.info("Sendspin \(name) from \(socket.peer): the code printed on it was typed wrong; another attempt on this connection")
                    queue(text: activate)
                    leader.events.emit(.speakers)
                    poke() // the notifier keeps the new attempt's deadline
                    return
                }
                log.info("Sendspin \(name) from \(socket.peer): pairing by code ended: \(failure); closing")
                endCodeOffer(.failed(failure.description))
                socket.terminate()
                return
            }
        }
    }

    /// Static-code attempts one connection may run: as many as the spec's pairing window on the
    /// player admits (5 failed attempts close it), each after a wrong code, so a typo does not cost
    /// the owner another gesture. The wrong-code budgets still apply (the caller checked them).
    static let staticAttemptsPerConnection = 5

    /// After a wrong static code: the next attempt on this connection (the `server/activate` that
    /// starts it, with the next pairing index), or nil when this connection has had its share.
    private func nextStaticAttempt() -> String? {
        state.withLock { s -> String? in
            guard !s.closed, let old = s.code, old.method == .staticPairingCode, old.pairingIndex < Self.staticAttemptsPerConnection,
                  let peer = s.peer else { return nil }
            let next = SendspinCodePairing(method: .staticPairingCode, peer: peer, pairingIndex: old.pairingIndex + 1, now: Condition.now(),
                                           crypto: trust.crypto, sha512: NoisePrimitives.sha512)
            s.code = next
            return next.activateText
        }
    }

    /// The connection ends: a code attempt that did not pair no longer waits for a person's code.
    func endCodeAttempt(reason: String) {
        endCodeOffer(.failed("the connection closed (\(reason))"))
        guard let (id, since) = state.withLock({ s in s.codeFinishedAt == nil ? s.peer.flatMap { p in s.codeSince.map { (p.id, $0) } } : nil }) else { return }
        trust.withdrawCodeRequest(clientID: id, since: since)
    }

    /// Reports how the person's code went (once), for the API call that waits on it.
    func endCodeOffer(_ outcome: SendspinCodeOffers.Outcome) {
        guard let id = state.withLock({ s -> UInt64? in defer { s.codeOffer = nil }; return s.codeOffer }) else { return }
        trust.reportCode(id, outcome)
    }

    /// Why the code attempt's deadline closes the connection (nil: no code attempt).
    var codeDeadlineReason: String? {
        state.withLock { s in
            guard s.code != nil else { return nil }
            if s.codeFinishedAt != nil { return "paired by code: it reconnects under its long-term PSK" }
            var attempt = s.code
            let failure = attempt?.tick(now: Int64.max).compactMap { if case .fail(let f) = $0 { f } else { nil } }.first
            return failure.map { "pairing by code: \($0)" } ?? "pairing by code ran out of time"
        }
    }
}
