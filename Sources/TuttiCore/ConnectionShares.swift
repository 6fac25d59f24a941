/// Where a connection comes from, for counting connections per host: an
/// IPv4 address, or an IPv6 address's /64 prefix (one host on a LAN is
/// handed a whole /64 and may take any address in it, so counting single
/// IPv6 addresses would give it billions of shares). IPv4-mapped IPv6
/// addresses count as the IPv4 address they carry.
public struct SourceAddress: Sendable, Hashable, CustomStringConvertible {
    /// IPv4: the address in the low 32 bits, `high` 0 and `v6` false.
    /// IPv6: the first 64 bits.
    public let high: UInt64
    public let low: UInt64
    public let v6: Bool

    public init(ipv4: UInt32) { high = 0; low = UInt64(ipv4); v6 = false }
    public init(ipv6Prefix: UInt64) { high = ipv6Prefix; low = 0; v6 = true; loopback6 = false }
    private init(loopback6: Bool) { high = 0; low = 1; v6 = true; self.loopback6 = loopback6 }
    private var loopback6 = false // ::1 (its /64 prefix is all zeros)

    /// `host` as an accepted connection names it: `1.2.3.4`, `::1`,
    /// `fe80::1%eth0`, `[2001:db8::1]`, with or without `:PORT` after it
    /// (IPv6 with a port only in brackets). nil: not an address (then the
    /// caller counts it under one shared key; see `unknown`).
    public static func parse(_ text: String) -> SourceAddress? {
        var host = Substring(text)
        if host.hasPrefix("[") {
            guard let end = host.firstIndex(of: "]") else { return nil }
            host = host[host.index(after: host.startIndex)..<end]
        } else if host.filter({ $0 == ":" }).count == 1 {
            host = host[..<host.firstIndex(of: ":")!] // IPv4:PORT
        }
        if let percent = host.firstIndex(of: "%") { host = host[..<percent] }
        if let v4 = parseIPv4(host) { return SourceAddress(ipv4: v4) }
        guard let groups = parseIPv6(host) else { return nil }
        // ::ffff:a.b.c.d is an IPv4 peer on a dual-stack socket.
        if groups[0..<5].allSatisfy({ $0 == 0 }) && groups[5] == 0xffff {
            return SourceAddress(ipv4: UInt32(groups[6]) << 16 | UInt32(groups[7]))
        }
        if groups[0..<7].allSatisfy({ $0 == 0 }) && groups[7] == 1 { return SourceAddress(loopback6: true) }
        let prefix = groups[0..<4].reduce(UInt64(0)) { $0 << 16 | UInt64($1) }
        return SourceAddress(ipv6Prefix: prefix)
    }

    /// The key for peers whose address could not be read: they share one share.
    public static let unknown = SourceAddress(ipv6Prefix: 0)

    /// 127.0.0.0/8 or ::1: this machine.
    public var isLoopback: Bool { v6 ? loopback6 : (low >> 24) == 127 }

    /// 127.0.0.1 or ::1: where a reverse proxy or an SSH tunnel on this
    /// machine connects from, for every phone it forwards.
    public var isLocalhost: Bool { v6 ? loopback6 : low == 0x7f00_0001 }

    public var description: String {
        if !v6 { return "\(low >> 24).\(low >> 16 & 255).\(low >> 8 & 255).\(low & 255)" }
        if loopback6 { return "::1" }
        let g = (0..<4).map { String(high >> (48 - 16 * UInt64($0)) & 0xffff, radix: 16) }
        return g.joined(separator: ":") + "::/64"
    }

    static func parseIPv4<S: StringProtocol>(_ text: S) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var value: UInt32 = 0
        for p in parts {
            guard (1...3).contains(p.count), p.allSatisfy({ $0.isASCII && $0.isNumber }), let n = UInt32(p), n <= 255 else { return nil }
            value = value << 8 | n
        }
        return value
    }

    /// The eight 16-bit groups of an IPv6 address (`::` and a trailing dotted IPv4 allowed).
    static func parseIPv6<S: StringProtocol>(_ text: S) -> [UInt16]? {
        guard text.utf8.count <= 45, text.contains(":") else { return nil }
        func groups(_ part: Substring) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out: [UInt16] = []
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            for (i, piece) in pieces.enumerated() {
                if i == pieces.count - 1, piece.contains("."), let v4 = parseIPv4(piece) {
                    out += [UInt16(v4 >> 16), UInt16(v4 & 0xffff)]
                } else {
                    guard (1...4).contains(piece.count), let g = UInt16(piece, radix: 16) else { return nil }
                    out.append(g)
                }
            }
            return out
        }
        let s = Substring(text)
        if let gap = s.firstRange(of: "::") {
            let before = s[..<gap.lowerBound], after = s[gap.upperBound...]
            guard !after.contains("::"), let a = groups(before), let b = groups(after), a.count + b.count <= 7 else { return nil }
            return a + [UInt16](repeating: 0, count: 8 - a.count - b.count) + b
        }
        guard let all = groups(s), all.count == 8 else { return nil }
        return all
    }
}

/// How many connections a port serves, counted per source address first:
/// one host gets at most `perAddress` of them, however many it opens, so
/// it cannot take the places of the others; the port as a whole serves at
/// most `port`; and a few places beyond that stay for this machine
/// (`loopbackReserve`) and for speakers that prove the room key
/// (`provisionalReserve`: taken before the proof, given back if it does
/// not come). Pure accounting: the caller decides what a place is for and
/// gives it back with `release`.
///
/// The table holds one entry per address with a connection open, so it is
/// never larger than the number of places (`port` plus the reserves).
public struct ConnectionShares: Sendable, Equatable {
    public struct Limits: Sendable, Equatable {
        public var port: Int
        public var perAddress: Int
        public var loopbackReserve: Int
        public var provisionalReserve: Int
        /// The share of 127.0.0.1 and ::1 where it is not a host's (nil: it is).
        /// The web ports give them the whole port: this machine is trusted
        /// (docs/security.md), and behind a reverse proxy or a tunnel on it
        /// every phone arrives from there; per-phone limits are then the
        /// proxy's (bench/web: ten pages through one address, 26 refusals
        /// and one page never loaded with a host's 12).
        public var localhostShare: Int?
        public static let mostPerAddress = 16

        /// A host's share: a quarter of the port, and at most 16. A household's
        /// busiest host (a phone with an MPD app and the web app, Home
        /// Assistant, a machine running a few snapclients) uses a handful;
        /// and each connection on the speaker, JSON-RPC, MPD and Snapcast
        /// ports is a thread, so 16 on each of the four is 64 threads for a
        /// host that fills them all, under the ~90 an idle leader runs
        /// (bench/hostile: threads stay within 2× idle; 32 made it 2.4×).
        /// Eight places each beyond the port for loopback and keyed speakers.
        public init(port: Int, perAddress: Int? = nil, loopbackReserve: Int = 8, provisionalReserve: Int = 0, localhostShare: Int? = nil) {
            precondition(port >= 1)
            self.port = port
            self.perAddress = perAddress ?? max(1, min(Self.mostPerAddress, port / 4))
            self.loopbackReserve = loopbackReserve
            self.provisionalReserve = provisionalReserve
            self.localhostShare = localhostShare
        }

        /// What `address` may hold.
        public func share(of address: SourceAddress) -> Int {
            if address.isLocalhost, let localhostShare { return localhostShare }
            return perAddress
        }
    }

    /// Which places a connection holds (give it back to `release`).
    public enum Place: Sendable, Equatable {
        case general
        /// Beyond the port's limit, for a client on this machine.
        case loopback
        /// Beyond the port's limit, for a would-be speaker until it proves the room key.
        case provisional
    }

    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case addressFull(SourceAddress, Int)
        case portFull(Int)
        public var description: String {
            switch self {
            case .addressFull(let a, let n): "\(a) holds its share of \(n) connections already"
            case .portFull(let n): "\(n) connections already"
            }
        }
    }

    public let limits: Limits
    private var perAddress: [SourceAddress: Int] = [:]
    public private(set) var general = 0
    public private(set) var loopback = 0
    public private(set) var provisional = 0

    public init(limits: Limits) { self.limits = limits }

    /// Takes a place for a connection from `address`. `mayProvision`: the
    /// port is a speaker port with a room key, so a connection beyond the
    /// limit may be let in for as long as it takes to prove the key.
    public mutating func admit(_ address: SourceAddress, mayProvision: Bool = false) -> Result<Place, Refusal> {
        let held = perAddress[address] ?? 0
        let share = limits.share(of: address)
        guard held < share else { return .failure(.addressFull(address, share)) }
        let place: Place
        if general < limits.port {
            place = .general
            general += 1
        } else if address.isLoopback && loopback < limits.loopbackReserve {
            place = .loopback
            loopback += 1
        } else if mayProvision && provisional < limits.provisionalReserve {
            place = .provisional
            provisional += 1
        } else {
            return .failure(.portFull(limits.port))
        }
        perAddress[address] = held + 1
        return .success(place)
    }

    public mutating func release(_ address: SourceAddress, place: Place) {
        switch place {
        case .general: general = max(0, general - 1)
        case .loopback: loopback = max(0, loopback - 1)
        case .provisional: provisional = max(0, provisional - 1)
        }
        guard let held = perAddress[address] else { return }
        if held <= 1 { perAddress.removeValue(forKey: address) } else { perAddress[address] = held - 1 }
    }

    /// Connections open from `address`.
    public func held(by address: SourceAddress) -> Int { perAddress[address] ?? 0 }
    /// Addresses with a connection open (the table's size).
    public var addresses: Int { perAddress.count }
    public var total: Int { general + loopback + provisional }
}
