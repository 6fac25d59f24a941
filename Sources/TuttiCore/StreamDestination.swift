/// An IP address the leader is about to connect to when it fetches a URL
/// (a stream, a file for the cache), by the bytes of the socket address:
/// 4 bytes (IPv4) or 16 (IPv6).
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// nil unless `bytes` has 4 or 16 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Dotted IPv4 (`192.168.1.2`, four decimal parts) or IPv6 text
    /// (`fe80::1`, `::ffff:127.0.0.1`), optionally in brackets; a zone
    /// (`%eth0`) is ignored. nil for anything else (host names included).
    public init?(parsing text: String) {
        var s = Substring(text)
        if s.hasPrefix("[") && s.hasSuffix("]") { s = s.dropFirst().dropLast() }
        if let percent = s.firstIndex(of: "%") { s = s[..<percent] }
        if let v4 = Self.parseIPv4(s) { bytes = v4; return }
        guard let v6 = Self.parseIPv6(s) else { return nil }
        bytes = v6
    }

    public var isIPv4: Bool { bytes.count == 4 }

    /// The IPv4 address an IPv6 address stands for: IPv4-mapped
    /// (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
    /// (`64:ff9b::a.b.c.d`) and 6to4 (`2002:AABB:CCDD::`). Each of them can
    /// reach the IPv4 address it carries, so each is judged as that address.
    public var embeddedIPv4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        let b = bytes
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff { return IPAddress(bytes: Array(b[12..<16])) }
        if b[0..<12].allSatisfy({ $0 == 0 }) && !(b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] <= 1) {
            return IPAddress(bytes: Array(b[12..<16])) // not :: nor ::1
        }
        if b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4..<12].allSatisfy({ $0 == 0 }) {
            return IPAddress(bytes: Array(b[12..<16]))
        }
        if b[0] == 0x20 && b[1] == 0x02 { return IPAddress(bytes: Array(b[2..<6])) }
        return nil
    }

    /// Dotted IPv4; IPv6 with its longest run of zero groups as `::` (RFC 5952), IPv4-mapped as `::ffff:a.b.c.d`.
    public var description: String {
        if isIPv4 { return bytes.map(String.init).joined(separator: ".") }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return "::ffff:" + bytes[12...].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
        var best = (start: 0, count: 0), run = (start: 0, count: 0)
        for (i, g) in groups.enumerated() {
            if g == 0 { run = run.count == 0 ? (i, 1) : (run.start, run.count + 1) } else { run = (0, 0) }
            if run.count > best.count { best = run }
        }
        let text = groups.map { String($0, radix: 16) }
        guard best.count >= 2 else { return text.joined(separator: ":") }
        return text[..<best.start].joined(separator: ":") + "::" + text[(best.start + best.count)...].joined(separator: ":")
    }

    private static func parseIPv4(_ s: Substring) -> [UInt8]? {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard (1...3).contains(p.count), p.allSatisfy({ $0.isASCII && $0.isNumber }), let v = UInt8(p) else { return nil }
            out.append(v)
        }
        return out
    }

    private static func parseIPv6(_ s: Substring) -> [UInt8]? {
        guard s.contains(":"), s.count <= 45 else { return nil }
        let halves = s.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ text: Substring, allowIPv4Tail: Bool) -> [UInt8]? {
            if text.isEmpty { return [] }
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            var out: [UInt8] = []
            for (i, p) in parts.enumerated() {
                if i == parts.count - 1, allowIPv4Tail, p.contains(".") {
                    guard let v4 = parseIPv4(p) else { return nil }
                    out += v4
                    continue
                }
                guard (1...4).contains(p.count), let v = UInt16(p, radix: 16) else { return nil }
                out += [UInt8(v >> 8), UInt8(v & 0xff)]
            }
            return out
        }
        if halves.count == 1 {
            guard let all = groups(s, allowIPv4Tail: true), all.count == 16 else { return nil }
            return all
        }
        guard let head = groups(Substring(halves[0]), allowIPv4Tail: false),
              let tail = groups(Substring(halves[1]), allowIPv4Tail: true), head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

extension Substring {
    /// `self` cut at each occurrence of `separator` (a string of two or more characters).
    fileprivate func components(separatedBy separator: String) -> [Substring] {
        var out: [Substring] = []
        var rest = self[...]
        while let range = rest.firstRange(of: separator) {
            out.append(rest[..<range.lowerBound])
            rest = rest[range.upperBound...]
        }
        out.append(rest)
        return out
    }
}

/// What kind of place an address is, for deciding whether the leader may
/// fetch from it. Pure: the caller gives the bytes of the address it is
/// about to connect to.
public enum AddressScope: String, Sendable, Equatable, CaseIterable {
    /// 127.0.0.0/8, ::1: this machine.
    case loopback
    /// 169.254.0.0/16, fe80::/10: the link; cloud metadata services (169.254.169.254) live here.
    case linkLocal = "link-local"
    /// 0.0.0.0/8, ::: "this host"; Linux connects 0.0.0.0 to this machine.
    case unspecified
    /// 224.0.0.0/4, ff00::/8.
    case multicast
    /// 240.0.0.0/4 (255.255.255.255 included): reserved, never a server.
    case reserved
    /// 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade NAT, also VPNs), fc00::/7, fec0::/10:
    /// a home's or an office's own network, where its NAS or Icecast radio lives.
    case privateNetwork = "private network"
    /// Everything else: the internet.
    case publicInternet = "public"

    public init(_ address: IPAddress) {
        if let v4 = address.embeddedIPv4 { self = AddressScope(ipv4: v4.bytes); return }
        if address.isIPv4 { self = AddressScope(ipv4: address.bytes); return }
        let b = address.bytes
        if b.allSatisfy({ $0 == 0 }) { self = .unspecified; return }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { self = .loopback; return }
        if b[0] == 0xff { self = .multicast; return }
        if b[0] == 0xfe && b[1] & 0xc0 == 0x80 { self = .linkLocal; return }
        if b[0] == 0xfe && b[1] & 0xc0 == 0xc0 { self = .privateNetwork; return } // site-local, deprecated
        if b[0] & 0xfe == 0xfc { self = .privateNetwork; return }
        self = .publicInternet
    }

    private init(ipv4 b: [UInt8]) {
        switch (b[0], b[1]) {
        case (0, _): self = .unspecified
        case (127, _): self = .loopback
        case (169, 254): self = .linkLocal
        case (224...239, _): self = .multicast
        case (240...255, _): self = .reserved
        case (10, _), (172, 16...31), (192, 168), (100, 64...127): self = .privateNetwork
        default: self = .publicInternet
        }
    }
}

/// Where the leader may fetch URLs from (radio, network files, the cache):
/// the check made on the address each connection actually goes to, after
/// DNS and after every redirect.
///
/// * Link-local (cloud metadata), unspecified, multicast and reserved
///   addresses: never.
/// * This machine (loopback and the leader's own addresses) and private
///   networks: only when the operator allowed local streams
///   (`local-streams = yes`); otherwise a client could read the web pages
///   of the leader's machine and of the home network through the leader.
/// * The internet: always.
public struct StreamDestinationPolicy: Sendable, Equatable {
    /// `local-streams = yes`: this machine and the private network are allowed too.
    public var allowsLocal: Bool

    public init(allowsLocal: Bool = false) { self.allowsLocal = allowsLocal }

    /// nil when `address` may be connected to; else why not. `own` are the
    /// leader's own interface addresses (a public address of the leader is
    /// this machine, not the internet).
    public func refusal(for address: IPAddress, own: [IPAddress] = []) -> StreamDestinationRefusal? {
        let scope = AddressScope(address)
        switch scope {
        case .linkLocal, .unspecified, .multicast, .reserved:
            return StreamDestinationRefusal(address: address, scope: scope, fixable: false)
        case .loopback, .privateNetwork:
            return allowsLocal ? nil : StreamDestinationRefusal(address: address, scope: scope, fixable: true)
        case .publicInternet:
            let mine = own.contains(address) || own.contains { $0.embeddedIPv4 == address || address.embeddedIPv4 == $0 }
            return mine && !allowsLocal ? StreamDestinationRefusal(address: address, scope: .loopback, fixable: true) : nil
        }
    }

    /// A first look at a URL's host as written, before any connection: an
    /// address literal is judged as above, `localhost` and `*.localhost`
    /// as loopback. nil for other names (judged when they are resolved).
    public func refusal(forHost host: String) -> StreamDestinationRefusal? {
        let lower = host.lowercased()
        if lower == "localhost" || lower.hasSuffix(".localhost") || lower == "localhost." {
            return allowsLocal ? nil : StreamDestinationRefusal(address: IPAddress(bytes: [127, 0, 0, 1])!, scope: .loopback, fixable: true, host: host)
        }
        guard let address = IPAddress(parsing: host) else { return nil }
        return refusal(for: address)
    }

    /// The host part of an http(s) URL (`http://user@[::1]:8000/x` → `[::1]`), nil if none.
    public static func host(ofURL url: String) -> String? {
        guard let scheme = url.firstRange(of: "://") else { return nil }
        var rest = url[scheme.upperBound...]
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") { return String(rest[...close]) }
        if let colon = rest.lastIndex(of: ":") { rest = rest[..<colon] }
        return rest.isEmpty ? nil : String(rest)
    }
}

/// Why the leader will not fetch from an address, in words a user can act on.
public struct StreamDestinationRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public let address: IPAddress
    public let scope: AddressScope
    /// Whether `local-streams = yes` would allow it.
    public let fixable: Bool
    /// The name as written, when the refusal came from the URL's text.
    public var host: String? = nil

    public init(address: IPAddress, scope: AddressScope, fixable: Bool, host: String? = nil) {
        self.address = address
        self.scope = scope
        self.fixable = fixable
        self.host = host
    }

    public var description: String { message.description }

    /// What the person is told (the catalogue's `stream.refused*`).
    public var message: UserMessage {
        UserMessage(fixable ? .streamRefused : .streamRefusedNever, ["host": host ?? address.description], messages: ["place": place])
    }

    /// The refusal of `url` (a URL or path the person gave): "{url}: refused to fetch from …".
    public func message(at url: String) -> UserMessage {
        UserMessage(fixable ? .streamRefusedAt : .streamRefusedNeverAt, ["url": url, "host": host ?? address.description], messages: ["place": place])
    }

    private var place: UserMessage {
        switch scope {
        case .loopback: UserMessage(.streamPlaceThisMachine)
        case .privateNetwork: UserMessage(.streamPlacePrivateNetwork)
        case .linkLocal: UserMessage(.streamPlaceLinkLocal)
        case .unspecified: UserMessage(.streamPlaceUnspecified)
        case .multicast: UserMessage(.streamPlaceMulticast)
        case .reserved: UserMessage(.streamPlaceReserved)
        case .publicInternet: UserMessage(.streamPlaceInternet)
        }
    }
}
