/// Failed logins per source address, and how long an address must wait
/// before it may try again: every surface that takes a password or a token
/// (JSON-RPC over TCP, `/api` and the WebSocket, MPD `password`, `Bearer`)
/// asks it first and tells it how the attempt went. Over the limit the
/// answer is an immediate refusal that says when to come back; nobody
/// sleeps, so a guesser holds no thread and slows no one else.
///
/// The first `freeFailures` failures are answered at once (a typo, a stale
/// token); the last of them starts a wait of `firstDelay`, and each failure
/// after a wait doubles it, up to `maximumDelay`.
/// A success forgets the address. The table holds at most `capacity`
/// addresses: when full, one whose wait is over and that failed longest
/// ago is dropped first, else the one that failed longest ago.
///
/// Pure: time is passed in (monotonic nanoseconds). Not thread-safe; the
/// owner keeps it under a lock.
public struct LoginLimiter: Sendable {
    public struct Policy: Sendable, Equatable {
        public var freeFailures: Int
        public var firstDelayNanoseconds: Int64
        public var maximumDelayNanoseconds: Int64
        public var capacity: Int
        /// An address that has not failed for this long starts afresh.
        public var forgetAfterNanoseconds: Int64

        public init(freeFailures: Int = 5, firstDelayNanoseconds: Int64 = 1 * nanosecondsPerSecond,
                    maximumDelayNanoseconds: Int64 = 900 * nanosecondsPerSecond, capacity: Int = 4_096,
                    forgetAfterNanoseconds: Int64 = 3_600 * nanosecondsPerSecond) {
            precondition(freeFailures >= 0 && firstDelayNanoseconds > 0 && maximumDelayNanoseconds >= firstDelayNanoseconds && capacity > 0)
            self.freeFailures = freeFailures
            self.firstDelayNanoseconds = firstDelayNanoseconds
            self.maximumDelayNanoseconds = maximumDelayNanoseconds
            self.capacity = capacity
            self.forgetAfterNanoseconds = forgetAfterNanoseconds
        }
    }

    /// An attempt refused before it was checked.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public var address: String
        /// Whole seconds until the address may try again (at least 1).
        public var retryAfterSeconds: Int64
        public init(address: String, retryAfterSeconds: Int64) { self.address = address; self.retryAfterSeconds = retryAfterSeconds }
        public var message: UserMessage { UserMessage(.loginTooManyFailures, ["address": address, "seconds": String(retryAfterSeconds)]) }
        public var description: String { message.description }
    }

    struct Entry: Sendable {
        var failures: Int
        var lastFailure: Int64
        var blockedUntil: Int64
    }

    public let policy: Policy
    private(set) var entries: [String: Entry] = [:]

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Addresses remembered now.
    public var count: Int { entries.count }

    /// What failures are counted by, for a peer's host: an IPv4 address as
    /// it is; an IPv6 address by its /64 prefix, since one host on a LAN
    /// may use any address of its /64 (privacy addresses) and would
    /// otherwise get a fresh allowance with each. IPv4-mapped IPv6 is IPv4.
    public static func key(host: String) -> String {
        var h = Substring(host)
        if h.hasPrefix("["), h.hasSuffix("]") { h = h.dropFirst().dropLast() }
        if let zone = h.firstIndex(of: "%") { h = h[..<zone] }
        guard h.contains(":") else { return String(h) }
        let text = h.lowercased()
        if text.hasPrefix("::ffff:"), text.dropFirst(7).contains(".") { return String(text.dropFirst(7)) }
        guard let groups = ipv6Groups(text) else { return text }
        return groups.prefix(4).map { String($0, radix: 16) }.joined(separator: ":") + "::/64"
    }

    private static func containsDoubleColon(_ s: Substring) -> Bool {
        var previous: Character?
        for c in s { if c == ":" && previous == ":" { return true }; previous = c }
        return false
    }

    /// The eight 16-bit groups of an IPv6 address in text ("::" expanded); nil if it is not one.
    static func ipv6Groups(_ text: String) -> [UInt16]? {
        func parse(_ part: Substring) -> [UInt16]? {
            if part.isEmpty { return [] }
            var out: [UInt16] = []
            for g in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard (1...4).contains(g.count), let v = UInt16(g, radix: 16) else { return nil }
                out.append(v)
            }
            return out
        }
        let chars = Array(text)
        if let at = chars.indices.dropLast().first(where: { chars[$0] == ":" && chars[$0 + 1] == ":" }) {
            let before = Substring(String(chars[..<at])), rest = Substring(String(chars[(at + 2)...]))
            guard !containsDoubleColon(rest),
                  let head = parse(before), let tail = parse(rest), head.count + tail.count <= 7 else { return nil }
            return head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        }
        guard let all = parse(Substring(text)), all.count == 8 else { return nil }
        return all
    }

    /// nil: `address` may try now; else when it may.
    public func check(address: String, now: Int64) -> Refusal? {
        guard let e = entries[address], e.blockedUntil > now else { return nil }
        let wait = e.blockedUntil - now
        return Refusal(address: address, retryAfterSeconds: max(1, (wait + nanosecondsPerSecond - 1) / nanosecondsPerSecond))
    }

    /// A wrong password or token from `address`; the wait it now has, if any.
    @discardableResult
    public mutating func recordFailure(address: String, now: Int64) -> Refusal? {
        var e = entries[address] ?? Entry(failures: 0, lastFailure: now, blockedUntil: now)
        if now - e.lastFailure > policy.forgetAfterNanoseconds { e.failures = 0 }
        e.failures += 1
        e.lastFailure = now
        // The failure that uses up the free ones starts the first wait.
        let over = e.failures - policy.freeFailures + 1
        if over > 0 {
            // Doubling without overflow: at most maximumDelay, reached well before 2^62.
            var delay = policy.firstDelayNanoseconds
            for _ in 1..<min(over, 40) where delay < policy.maximumDelayNanoseconds { delay *= 2 }
            e.blockedUntil = now + min(delay, policy.maximumDelayNanoseconds)
        }
        if entries[address] == nil, entries.count >= policy.capacity { evictOne(now: now) }
        entries[address] = e
        return check(address: address, now: now)
    }

    /// Failures recorded for `address` (0: none, or forgotten).
    public func failures(address: String) -> Int { entries[address]?.failures ?? 0 }

    /// A login that worked: the address starts afresh.
    public mutating func recordSuccess(address: String) {
        entries.removeValue(forKey: address)
    }

    private mutating func evictOne(now: Int64) {
        var victim: (key: String, free: Bool, last: Int64)?
        for (key, e) in entries {
            let free = e.blockedUntil <= now
            if let v = victim, (v.free && !free) || (v.free == free && v.last <= e.lastFailure) { continue }
            victim = (key, free, e.lastFailure)
        }
        if let victim { entries.removeValue(forKey: victim.key) }
    }
}
