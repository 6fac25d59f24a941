/// A speaker the leader has paired (docs/security.md "Speakers").
public struct PairedSpeaker: Equatable, Sendable {
    public var name: String
    public var publicKey: [UInt8]
    /// Unix time, seconds.
    public var pairedAt: Int64
    public init(name: String, publicKey: [UInt8], pairedAt: Int64) { self.name = name; self.publicKey = publicKey; self.pairedAt = pairedAt }
}

/// The leader's list of paired speakers, and its file form: one line each,
/// `NAME<TAB>KEY (hex)<TAB>PAIRED-AT (Unix seconds)`. A file, not the state
/// database: it must exist for a leader without a library too, it is
/// written a few times in a speaker's life, and a person can read it and
/// delete a line. Pure: the daemon reads and writes the bytes.
public struct PairedSpeakerList: Equatable, Sendable {
    public private(set) var speakers: [PairedSpeaker] = []
    public static let limit = 256

    public init(_ speakers: [PairedSpeaker] = []) { self.speakers = speakers }

    /// Parses a file; lines it cannot read are skipped and reported (line numbers).
    public init(parsing text: String) {
        var list: [PairedSpeaker] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 3, !fields[0].isEmpty, fields[0].utf8.count <= WireProtocol.maxNameBytes,
                  let key = bytes(fromHex: fields[1]), key.count == 32, let at = Int64(fields[2]) else { continue }
            list.append(PairedSpeaker(name: String(fields[0]), publicKey: key, pairedAt: at))
        }
        speakers = Array(list.suffix(Self.limit))
    }

    public func rendered() -> String {
        "# Speakers paired with this leader: name, public key, when (Unix time). `tutti speakers forget NAME` removes one.\n" +
            speakers.map { "\($0.name)\t\(hexString($0.publicKey))\t\($0.pairedAt)\n" }.joined()
    }

    public func speaker(withKey key: [UInt8]) -> PairedSpeaker? { speakers.first { $0.publicKey == key } }

    /// Adds (or replaces: a speaker of the same name or key is paired again).
    public mutating func add(_ s: PairedSpeaker) {
        speakers.removeAll { $0.name == s.name || $0.publicKey == s.publicKey }
        speakers.append(s)
        if speakers.count > Self.limit { speakers.removeFirst(speakers.count - Self.limit) }
    }

    /// Removes by name; the removed ones.
    public mutating func forget(name: String) -> [PairedSpeaker] {
        let gone = speakers.filter { $0.name == name }
        speakers.removeAll { $0.name == name }
        return gone
    }

    /// A name that can go in the file (no tab or newline).
    public static func valid(name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= WireProtocol.maxNameBytes && !name.contains("\t") && !name.contains("\n") && !name.contains("\r")
    }
}

/// Pairing requests waiting on the leader: bounded per address and in all,
/// each expiring after five minutes. Pure: time comes in, decisions come out.
public struct PairingRequests: Sendable {
    public static let perAddress = 3
    public static let total = 16
    public static let lifetimeNanoseconds: Int64 = 300 * 1_000_000_000

    public enum Decision: Equatable, Sendable { case allow, deny }

    public struct Request: Equatable, Sendable {
        public var id: UInt64
        public var name: String
        /// The host it connected from.
        public var address: String
        public var fingerprint: String
        public var intent: PairIntent
        public var created: Int64
        public var decision: Decision?
        /// A code typed for it, not yet tried.
        public var code: String?
        /// The last code tried: true paired, false wrong.
        public var lastAttempt: Bool?
        public var wrongCodes = 0
    }

    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case tooManyFromAddress(String)
        case tooMany
        public var description: String {
            switch self {
            case .tooManyFromAddress(let a): "\(perAddress) pairing requests from \(a) are already waiting"
            case .tooMany: "\(total) pairing requests are already waiting"
            }
        }
    }

    public private(set) var requests: [Request] = []
    private var nextID: UInt64 = 1
    /// The last code tries (request id, room, paired), kept after their requests end: the person who typed waits for them.
    private var results: [(id: UInt64, name: String, paired: Bool)] = []

    public init() {}

    /// A new request; one of the same name, address and kind replaces the old (a speaker that reconnected).
    public mutating func add(name: String, address: String, fingerprint: String, intent: PairIntent, now: Int64) throws(Refusal) -> UInt64 {
        expire(now: now)
        requests.removeAll { $0.name == name && $0.address == address && $0.intent == intent }
        guard requests.filter({ $0.address == address }).count < Self.perAddress else { throw .tooManyFromAddress(address) }
        guard requests.count < Self.total else { throw .tooMany }
        let id = nextID
        nextID += 1
        requests.append(Request(id: id, name: name, address: address, fingerprint: fingerprint, intent: intent, created: now))
        return id
    }

    public mutating func expire(now: Int64) {
        requests.removeAll { now - $0.created >= Self.lifetimeNanoseconds }
    }

    public func request(_ id: UInt64) -> Request? { requests.first { $0.id == id } }

    public mutating func remove(_ id: UInt64) { requests.removeAll { $0.id == id } }

    /// Ends every request of a key (it just got paired another way); how many.
    @discardableResult
    public mutating func remove(fingerprint: String) -> Int {
        let before = requests.count
        requests.removeAll { $0.fingerprint == fingerprint }
        return before - requests.count
    }

    /// Allows or denies every waiting request for approval named `name`; how many.
    public mutating func decide(name: String, _ decision: Decision) -> Int {
        var n = 0
        for i in requests.indices where requests[i].name == name && requests[i].intent == .approval && requests[i].decision == nil {
            requests[i].decision = decision
            n += 1
        }
        return n
    }

    /// A typed code, offered to every request waiting for one; their ids. A
    /// request whose wrong codes are used up is over, though its session has
    /// not yet gone: it takes no more.
    public mutating func offer(code: String) -> [UInt64] {
        var ids: [UInt64] = []
        for i in requests.indices where requests[i].intent == .code && requests[i].code == nil
            && requests[i].wrongCodes < HandshakeLimits.maxWrongCodes {
            requests[i].code = code
            requests[i].lastAttempt = nil
            results.removeAll { $0.id == requests[i].id }
            ids.append(requests[i].id)
        }
        return ids
    }

    /// The session took its code to try.
    public mutating func takeCode(_ id: UInt64) -> String? {
        guard let i = requests.firstIndex(where: { $0.id == id }), let code = requests[i].code else { return nil }
        requests[i].code = nil
        return code
    }

    /// How the last code tried for request `id` ended (room, paired); nil: not tried yet.
    public func result(_ id: UInt64) -> (name: String, paired: Bool)? {
        results.last { $0.id == id && requests.first { $0.id == id }?.code == nil }.map { ($0.name, $0.paired) }
    }

    /// How a code attempt ended; the wrong codes so far.
    @discardableResult
    public mutating func attempted(_ id: UInt64, paired: Bool) -> Int {
        guard let i = requests.firstIndex(where: { $0.id == id }) else { return 0 }
        results.removeAll { $0.id == id }
        results.append((id, requests[i].name, paired))
        if results.count > 32 { results.removeFirst() }
        requests[i].lastAttempt = paired
        if !paired { requests[i].wrongCodes += 1 }
        return requests[i].wrongCodes
    }
}

/// A six-digit pairing code as a person may type it ("123 456", "123-456").
public func normalizedPairingCode(_ text: String) -> String? {
    let digits = text.filter { $0 != " " && $0 != "-" }
    guard digits.count == 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
    return digits
}
