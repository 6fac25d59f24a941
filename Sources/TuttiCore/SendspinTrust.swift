/// Which Sendspin clients a Tutti leader trusts, and how (aiosendspin's
/// `ServerPairingStore`, plus the requests a person has yet to answer):
///
/// - **paired**: a long-term PSK from a finished pairing (category `lt`):
///   full trust, every role;
/// - **staged**: a pairing PSK handed to one client out of band, which admits
///   it (category `pr`) to pair;
/// - **approved**: a person allowed this client's unpaired access (it
///   connects under the Sentinel PSK, authenticated by its static key only);
/// - **requests**: clients that connected unpaired and asked to play, shown as
///   "wants to join" until a person allows or denies them (or five minutes pass).
///
/// Pure: times come in (`unixSeconds` for what is kept, monotonic `now` for
/// requests), the daemon reads and writes the file (`rendered()`, `init(parsing:)`).
/// Bounded everywhere a client can add.
public struct SendspinTrust: Sendable, Equatable {
    public enum PairMethod: String, Sendable, CaseIterable {
        case pairingPSK = "pairing_psk"
        case staticPairingCode = "static_pairing_code"
        case dynamicPairingCode = "dynamic_pairing_code"
    }

    public struct Record: Sendable, Equatable {
        public var clientID: String
        public var psk: [UInt8]
        public var methods: [PairMethod]
        public var name: String
        public var pairedAt: Int64
    }

    public struct Approval: Sendable, Equatable {
        public var clientID: String
        public var name: String
        public var approvedAt: Int64
    }

    public struct Staged: Sendable, Equatable {
        public var clientID: String
        public var psk: [UInt8]
        public var stagedAt: Int64
    }

    public enum Decision: String, Sendable, Equatable { case allow, deny }

    public struct JoinRequest: Sendable, Equatable {
        public var clientID: String
        /// The name the player gave in `client/hello` (unauthenticated: show as text).
        public var name: String
        public var address: String
        /// Monotonic nanoseconds.
        public var created: Int64
        /// A denied request stays until it expires, so a player that reconnects in a loop does not ask again at once.
        public var decision: Decision?
        /// The pairing-code method its connection waits with for a person's code (nil: it asks for unpaired access only).
        public var method: PairMethod?
        /// When that connection noted it (monotonic ns): its end withdraws the request, and only its own.
        public var methodSince: Int64?
    }

    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        case tooManyFromAddress(String)
        case tooMany
        case denied
        case sentinelOrPairingPSK
        case malformedPSK
        public var description: String {
            switch self {
            case .tooManyFromAddress(let a): "\(SendspinTrust.requestsPerAddress) Sendspin join requests from \(a) are already waiting"
            case .tooMany: "\(SendspinTrust.requestsTotal) Sendspin join requests are already waiting"
            case .denied: "this Sendspin player was denied a moment ago"
            case .sentinelOrPairingPSK: "a pairing must deliver a new PSK, not the Sentinel or the pairing PSK"
            case .malformedPSK: "a Sendspin PSK is 32 bytes"
            }
        }
    }

    public static let recordLimit = 256
    public static let approvalLimit = 256
    public static let stagedLimit = 16
    public static let requestsPerAddress = 3
    public static let requestsTotal = 16
    public static let requestLifetimeNanoseconds: Int64 = 300 * 1_000_000_000
    /// The longest name kept (bytes).
    public static let maxNameBytes = 64

    public private(set) var records: [Record] = []
    public private(set) var approvals: [Approval] = []
    public private(set) var staged: [Staged] = []
    /// Not kept on disk: a person answers while the player waits.
    public private(set) var requests: [JoinRequest] = []

    public init() {}

    // MARK: Handshake

    /// What the handshake references for `clientID`: its long-term record, else its staged pairing PSK, else the Sentinel.
    public func credentials(for clientID: String, crypto: any NoiseCrypto) -> SendspinCredentials {
        if let r = records.first(where: { $0.clientID == clientID }) {
            return SendspinCredentials(psk: SendspinPSK(key: r.psk, category: .longTerm, crypto: crypto), known: true)
        }
        if let s = staged.first(where: { $0.clientID == clientID }) {
            return SendspinCredentials(psk: SendspinPSK(key: s.psk, category: .pairing, crypto: crypto), known: true)
        }
        return SendspinCredentials(psk: nil, known: isApproved(clientID))
    }

    /// Whether a person allowed this client's unpaired access.
    public func isApproved(_ clientID: String) -> Bool { approvals.contains { $0.clientID == clientID } }
    public func record(_ clientID: String) -> Record? { records.first { $0.clientID == clientID } }

    /// May a connection admitted as `peer` play? Paired, or unpaired and approved by a person.
    public func mayPlay(_ peer: SendspinPeer) -> Bool {
        if peer.credentialMismatch { return false }
        return peer.category == .longTerm || isApproved(peer.id)
    }

    // MARK: Requests and a person's answer

    /// A client connected unpaired and asked to play; true if it is new (tell the web app).
    /// One already waiting is refreshed, not added again.
    @discardableResult
    public mutating func noteJoinRequest(clientID: String, name: String, address: String, now: Int64, method: PairMethod? = nil) throws(Refusal) -> Bool {
        expire(now: now)
        if isApproved(clientID) || record(clientID) != nil { return false }
        if let i = requests.firstIndex(where: { $0.clientID == clientID }) {
            if requests[i].decision == .deny { throw .denied }
            requests[i].name = Self.cleanName(name)
            requests[i].address = address
            requests[i].method = method
            requests[i].methodSince = method == nil ? nil : now
            return false
        }
        guard requests.filter({ $0.address == address }).count < Self.requestsPerAddress else { throw .tooManyFromAddress(address) }
        guard requests.count < Self.requestsTotal else { throw .tooMany }
        requests.append(JoinRequest(clientID: clientID, name: Self.cleanName(name), address: address, created: now, method: method,
                                    methodSince: method == nil ? nil : now))
        return true
    }

    /// The connection that noted `clientID`'s code request at `since` ended without pairing:
    /// nobody waits for a code there any more (a code is typed for a connection, not a player).
    /// A request a later connection refreshed stays.
    public mutating func withdrawCodeRequest(clientID: String, since: Int64) {
        requests.removeAll { $0.clientID == clientID && $0.decision == nil && $0.method != nil && $0.methodSince == since }
    }

    public mutating func expire(now: Int64) {
        requests.removeAll { now - $0.created >= Self.requestLifetimeNanoseconds }
        wrongCodes.removeAll { now - $0.at >= Self.wrongCodeWindowNanoseconds }
    }

    // MARK: Wrong pairing codes

    /// Wrong codes (rounds) a client may cost in `wrongCodeWindowNanoseconds`, and an address
    /// for all its clients: each round is one guess at the code, so they are few.
    public static let wrongCodesPerClient = 10
    public static let wrongCodesPerAddress = 20
    public static let wrongCodeWindowNanoseconds: Int64 = 600 * 1_000_000_000
    /// Not kept on disk: monotonic times.
    public private(set) var wrongCodes: [WrongCode] = []
    public struct WrongCode: Sendable, Equatable { public var clientID: String; public var address: String; public var at: Int64 }

    /// Whether a pairing-code attempt (or another round) may run for `clientID` from `address` now.
    public mutating func mayTryCode(clientID: String, address: String, now: Int64) -> Bool {
        expire(now: now)
        return wrongCodes.filter { $0.clientID == clientID }.count < Self.wrongCodesPerClient
            && wrongCodes.filter { $0.address == address }.count < Self.wrongCodesPerAddress
    }

    /// A round ended with a wrong code; false once the client or its address has had its share.
    public mutating func noteWrongCode(clientID: String, address: String, now: Int64) -> Bool {
        expire(now: now)
        wrongCodes.append(WrongCode(clientID: clientID, address: address, at: now))
        if wrongCodes.count > 4 * Self.wrongCodesPerAddress { wrongCodes.removeFirst(wrongCodes.count - 4 * Self.wrongCodesPerAddress) }
        return mayTryCode(clientID: clientID, address: address, now: now)
    }

    /// A person's answer to the waiting request of `clientID`; false when none waits.
    /// Allowing approves its unpaired access (kept on disk).
    @discardableResult
    public mutating func decide(clientID: String, _ decision: Decision, unixSeconds: Int64) -> Bool {
        guard let i = requests.firstIndex(where: { $0.clientID == clientID && $0.decision == nil }) else { return false }
        switch decision {
        case .allow:
            approve(clientID: clientID, name: requests[i].name, unixSeconds: unixSeconds)
            requests.remove(at: i)
        case .deny:
            requests[i].decision = .deny
        }
        return true
    }

    /// The same by the name a person sees (every waiting request of that name); how many.
    @discardableResult
    public mutating func decide(name: String, _ decision: Decision, unixSeconds: Int64) -> Int {
        let ids = requests.filter { $0.name == name && $0.decision == nil }.map(\.clientID)
        for id in ids { decide(clientID: id, decision, unixSeconds: unixSeconds) }
        return ids.count
    }

    /// Approves unpaired access directly (a person who knows the id).
    public mutating func approve(clientID: String, name: String, unixSeconds: Int64) {
        approvals.removeAll { $0.clientID == clientID }
        approvals.append(Approval(clientID: clientID, name: Self.cleanName(name), approvedAt: unixSeconds))
        if approvals.count > Self.approvalLimit { approvals.removeFirst(approvals.count - Self.approvalLimit) }
    }

    /// Removes everything about a client (its record, approval, staged PSK, request); whether there was any.
    @discardableResult
    public mutating func forget(clientID: String) -> Bool {
        let before = records.count + approvals.count + staged.count + requests.count
        records.removeAll { $0.clientID == clientID }
        approvals.removeAll { $0.clientID == clientID }
        staged.removeAll { $0.clientID == clientID }
        requests.removeAll { $0.clientID == clientID }
        return records.count + approvals.count + staged.count + requests.count != before
    }

    // MARK: Pairing

    /// Stages a pairing PSK (from a pairing token a person pasted) for one client.
    public mutating func stage(clientID: String, psk: [UInt8], unixSeconds: Int64) throws(Refusal) {
        guard psk.count == 32 else { throw .malformedPSK }
        staged.removeAll { $0.clientID == clientID }
        staged.append(Staged(clientID: clientID, psk: psk, stagedAt: unixSeconds))
        if staged.count > Self.stagedLimit { staged.removeFirst(staged.count - Self.stagedLimit) }
    }

    /// A pairing finished: `client/pair-finalize` delivered `psk`, which becomes the
    /// client's long-term PSK. Store it (on disk) *before* acknowledging with
    /// `server/pair-finalize`. Its staged PSK and approval end: the record supersedes them.
    @discardableResult
    public mutating func finalizePairing(clientID: String, psk: [UInt8], method: PairMethod, name: String, unixSeconds: Int64,
                                         crypto: any NoiseCrypto) throws(Refusal) -> Record {
        guard psk.count == 32 else { throw .malformedPSK }
        let stagedPSK = staged.first { $0.clientID == clientID }?.psk
        guard psk != SendspinPSK.sentinel(crypto: crypto).key, psk != stagedPSK else { throw .sentinelOrPairingPSK }
        var record = Record(clientID: clientID, psk: psk, methods: [method], name: Self.cleanName(name), pairedAt: unixSeconds)
        if let old = records.first(where: { $0.clientID == clientID }) {
            record.methods = old.methods.contains(method) ? old.methods : old.methods + [method]
            if record.name.isEmpty { record.name = old.name }
        }
        records.removeAll { $0.clientID == clientID }
        records.append(record)
        if records.count > Self.recordLimit { records.removeFirst(records.count - Self.recordLimit) }
        staged.removeAll { $0.clientID == clientID }
        approvals.removeAll { $0.clientID == clientID }
        requests.removeAll { $0.clientID == clientID }
        return record
    }

    /// Printable text, one line, at most `maxNameBytes`.
    static func cleanName(_ name: String) -> String {
        var out = ""
        for c in name.unicodeScalars where c.value >= 0x20 && c.value != 0x7f {
            guard out.utf8.count + String(c).utf8.count <= maxNameBytes else { break }
            out.unicodeScalars.append(c)
        }
        return out
    }

    // MARK: File form

    /// The file: JSON (records, approvals, staged PSKs), PSKs in base64url. Secret: mode 0600.
    public func rendered() -> String {
        let value: JSONValue = [
            "version": 1,
            "paired": .array(records.map {
                ["client_id": .string($0.clientID), "psk": .string(Base64URL.encode($0.psk)), "pair_methods": .array($0.methods.map { .string($0.rawValue) }),
                 "name": .string($0.name), "paired_at": .int($0.pairedAt)]
            }),
            "approved": .array(approvals.map { ["client_id": .string($0.clientID), "name": .string($0.name), "approved_at": .int($0.approvedAt)] }),
            "staged": .array(staged.map { ["client_id": .string($0.clientID), "psk": .string(Base64URL.encode($0.psk)), "staged_at": .int($0.stagedAt)] }),
        ]
        return value.serialized + "\n"
    }

    /// Reads the file; entries it cannot read are skipped (the count in `skipped`).
    public init(parsing bytes: [UInt8]) throws(JSONValue.Malformed) {
        let json = try JSONValue.parse(bytes)
        func id(_ v: JSONValue) -> String? { v["client_id"]?.string.flatMap { SendspinHandshakeText.key($0) != nil ? $0 : nil } }
        func psk(_ v: JSONValue) -> [UInt8]? { v["psk"]?.string.flatMap(Base64URL.decode).flatMap { $0.count == 32 ? $0 : nil } }
        for v in (json["paired"]?.array ?? []).suffix(Self.recordLimit) {
            guard let c = id(v), let k = psk(v) else { skipped += 1; continue }
            let methods = (v["pair_methods"]?.strings ?? []).compactMap(PairMethod.init(rawValue:))
            records.removeAll { $0.clientID == c }
            records.append(Record(clientID: c, psk: k, methods: methods, name: Self.cleanName(v["name"]?.string ?? ""), pairedAt: Int64(v["paired_at"]?.integer ?? 0)))
        }
        for v in (json["approved"]?.array ?? []).suffix(Self.approvalLimit) {
            guard let c = id(v) else { skipped += 1; continue }
            approvals.removeAll { $0.clientID == c }
            approvals.append(Approval(clientID: c, name: Self.cleanName(v["name"]?.string ?? ""), approvedAt: Int64(v["approved_at"]?.integer ?? 0)))
        }
        for v in (json["staged"]?.array ?? []).suffix(Self.stagedLimit) {
            guard let c = id(v), let k = psk(v) else { skipped += 1; continue }
            staged.removeAll { $0.clientID == c }
            staged.append(Staged(clientID: c, psk: k, stagedAt: Int64(v["staged_at"]?.integer ?? 0)))
        }
    }

    /// Entries the file held that could not be read.
    public private(set) var skipped = 0

    /// What a person sees: paired, approved and waiting clients (for `speakers.list`
    /// or the web app).
    public func summary() -> JSONValue {
        [
            "paired": .array(records.map { ["id": .string($0.clientID), "name": .string($0.name), "pairedAt": .int($0.pairedAt)] }),
            "approved": .array(approvals.map { ["id": .string($0.clientID), "name": .string($0.name), "approvedAt": .int($0.approvedAt)] }),
            "pending": .array(requests.filter { $0.decision == nil }.map {
                var r: [String: JSONValue] = ["id": .string($0.clientID), "name": .string($0.name), "address": .string($0.address), "by": "sendspin"]
                if let m = $0.method { r["method"] = .string(m.rawValue) }
                return .object(r)
            }),
        ]
    }
}

/// A Sendspin pairing token, version 0 (`SP:0…`): what a client shows a person
/// for the Pairing PSK flow, to be pasted into the server. The text is RFC 4648
/// base32 without padding, with `9` written for `2` (as aiosendspin writes it),
/// of the client's static public key (its `client_id`) and the pairing PSK.
/// Read leniently (spaces around, any case, the `SP:` prefix optional).
public struct SendspinPairingToken: Equatable, Sendable {
    public var clientID: String
    public var psk: [UInt8]

    /// Longest token text read (a version-0 token is 106 characters).
    public static let maximumLength = 256

    public static func parse(_ text: String) -> SendspinPairingToken? {
        var t = String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed()).uppercased()
        guard t.utf8.count <= maximumLength, t.unicodeScalars.allSatisfy(\.isASCII) else { return nil }
        if t.hasPrefix("SP:") { t.removeFirst(3) }
        guard t.first == "0" else { return nil }
        var bits: UInt32 = 0, count = 0
        var out: [UInt8] = []
        for c in t.utf8.dropFirst() {
            let v: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "9"): v = 26 // the token writes 2 as 9
            case UInt8(ascii: "2")...UInt8(ascii: "7"): v = UInt32(c - UInt8(ascii: "2")) + 26
            case UInt8(ascii: "="): continue
            default: return nil
            }
            bits = bits << 5 | v
            count += 5
            if count >= 8 {
                count -= 8
                out.append(UInt8(truncatingIfNeeded: bits >> UInt32(count)))
                bits &= (1 << UInt32(count)) - 1
            }
        }
        guard out.count >= 64 else { return nil }
        return SendspinPairingToken(clientID: Base64URL.encode(Array(out[0..<32])), psk: Array(out[32..<64]))
    }
}
