import TuttiCore
import TuttiControlKit
import TuttiAuth

/// `speakers.*`: paired speakers and pairing requests (docs/api.md).
extension ControlServer {
    func speakersObject() -> JSONValue {
        let paired: [JSONValue] = leader.pairedSpeakers.map {
            ["name": .string($0.name), "key": .string($0.fingerprint), "pairedAt": .int($0.pairedAt), "connected": .bool($0.connected)]
        }
        let pending: [JSONValue] = leader.pairingRequests.map {
            var r: [String: JSONValue] = ["name": .string($0.name), "address": .string($0.address), "key": .string($0.fingerprint),
                                          "by": $0.byCode ? "code" : "approval", "via": .string($0.via)]
            if let m = $0.method { r["method"] = .string(m) }
            return .object(r)
        }
        return ["paired": .array(paired), "pending": .array(pending), "mode": .string(leader.speakersMode.rawValue),
                "leaderKey": .string(leader.speakerKeyFingerprint)]
    }

    func dispatchSpeakers(_ method: String, _ params: [String: JSONValue]) throws -> JSONValue? {
        func name() throws -> String {
            guard let n = params["name"]?.string, !n.isEmpty, n.utf8.count <= WireProtocol.maxNameBytes else {
                throw RPCError(code: -32602, message: "\(method) needs \"name\" (a speaker's room name, see speakers.pending)")
            }
            return n
        }
        switch method {
        case "speakers.list", "speakers.pending":
            return speakersObject()
        case "speakers.allow", "speakers.deny":
            let n = try name()
            guard leader.decidePairing(name: n, allow: method == "speakers.allow") else {
                throw RPCError(code: -32602, UserMessage(.pairingNoRequest, ["name": n]))
            }
            return speakersObject()
        case "speakers.pair":
            guard let raw = params["code"]?.string, let code = normalizedPairingCode(raw) else {
                throw RPCError(code: -32602, UserMessage(.pairingNeedsCode))
            }
            switch leader.pairByCode(code) {
            case .paired(let n): return ["paired": .string(n)]
            case .nobodyWaiting: throw RPCError(code: -32000, UserMessage(.pairingNobodyWaiting))
            case .wrongCode: throw RPCError(code: -32000, UserMessage(.pairingWrongCode))
            }
        case "speakers.sendspinToken":
            // The Pairing PSK method: a Sendspin player shows a token (`SP:0…`); staged here, it admits
            // that one player to pair, and the pairing gives it a long-term key.
            guard let trust = leader.sendspinTrust else {
                throw RPCError(code: -32000, UserMessage(.pairingNoSendspinServer))
            }
            guard let raw = params["token"]?.string, let token = SendspinPairingToken.parse(raw) else {
                throw RPCError(code: -32602, UserMessage(.pairingNeedsSendspinToken))
            }
            do { try trust.stage(clientID: token.clientID, psk: token.psk) } catch {
                throw RPCError(code: -32000, UserMessage(.pairingSendspinTokenNotKept, ["reason": "\(error)"]))
            }
            return ["staged": .string(token.clientID)]
        case "speakers.sendspinCode":
            return try sendspinCode(params)
        case "speakers.forget":
            let n = try name()
            guard leader.forgetSpeaker(n) else { throw RPCError(code: -32602, UserMessage(.pairingNotPaired, ["name": n])) }
            return speakersObject()
        default:
            return nil
        }
    }
}
