import TuttiAudio
import TuttiAuth
import TuttiControlKit
import TuttiCore

/// `speakers.sendspinCode {code, name?}`: the pairing code of a Sendspin
/// player waiting for one (docs/sendspin.md): six digits it shows (the
/// dynamic method) or eight printed on it (the static method). The code goes
/// to that player's connection, which runs the exchange; the call waits up to
/// 5 s for how it went.
extension ControlServer {
    func sendspinCode(_ params: [String: JSONValue]) throws -> JSONValue {
        guard let trust = leader.sendspinTrust else { throw RPCError(code: -32000, UserMessage(.pairingNoSendspinServer)) }
        guard let raw = params["code"]?.string else { throw RPCError(code: -32602, UserMessage(.pairingSendspinNeedsCode)) }
        let method: SendspinTrust.PairMethod
        let code: [UInt8]
        if let six = SendspinCodePairing.normalized(raw, digits: 6) {
            (method, code) = (.dynamicPairingCode, six)
        } else if let eight = SendspinCodePairing.normalized(raw, digits: 8) {
            (method, code) = (.staticPairingCode, eight)
        } else {
            throw RPCError(code: -32602, UserMessage(.pairingSendspinNeedsCode))
        }
        let name = params["name"]?.string.flatMap { $0.isEmpty || $0.utf8.count > WireProtocol.maxNameBytes ? nil : $0 }
        var known = trust.trust
        known.expire(now: Monotonic.now())
        let waiting = known.requests.filter { $0.decision == nil && $0.method == method && (name == nil || $0.name == name) }
        guard let request = waiting.first else {
            if let name { throw RPCError(code: -32602, UserMessage(.pairingNoRequest, ["name": name])) }
            throw RPCError(code: -32000, UserMessage(.pairingSendspinNobodyWaiting, ["digits": "\(code.count)"]))
        }
        guard waiting.count == 1 else {
            throw RPCError(code: -32602, UserMessage(.pairingSendspinWhich, ["names": waiting.map(\.name).joined(separator: ", ")]))
        }
        let id = trust.offerCode(clientID: request.clientID, code: String(decoding: code, as: UTF8.self))
        leader.events.emit(.speakers) // the Sendspin server's notifier hands it to the connection
        let deadline = Monotonic.now() + 5 * 1_000_000_000
        while Monotonic.now() < deadline {
            switch trust.codeOutcome(id) {
            case .paired(let n)?:
                return ["paired": .string(n)]
            case .wrongCode(let left)?:
                throw RPCError(code: -32000, UserMessage(.pairingSendspinWrongCode, ["name": request.name, "left": "\(left)"]))
            case .failed(let reason)?:
                throw RPCError(code: -32000, UserMessage(.pairingSendspinCodeFailed, ["name": request.name, "reason": reason]))
            case nil:
                Monotonic.sleep(nanoseconds: 20_000_000)
            }
        }
        // A static code kept until the player's owner makes the pairing gesture on it.
        return ["offered": .string(request.name), "waiting": true]
    }
}
