/// The login tokens a leader has handed out and not revoked, as digests
/// (never the tokens themselves): what `auth.login` adds, `auth.logout`
/// removes one of, and `auth.revokeAll` empties. At most `capacity` are
/// live; a new one past that drops the oldest (that phone logs in again).
///
/// Pure: the digest and the constant-time comparison are the caller's
/// (TuttiAuth). Not thread-safe; the owner keeps it under a lock.
public struct ControlTokens: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var digest: [UInt8]
        /// Wall-clock milliseconds it was issued at (shown to nobody; orders the table).
        public var issuedAt: Int64
        public init(digest: [UInt8], issuedAt: Int64) { self.digest = digest; self.issuedAt = issuedAt }
    }

    public let capacity: Int
    /// Oldest first.
    public private(set) var entries: [Entry]

    public init(capacity: Int = 256, entries: [Entry] = []) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.entries = Array(entries.sorted { $0.issuedAt < $1.issuedAt }.suffix(capacity))
    }

    /// Adds a digest; returns the ones dropped to make room (oldest first).
    @discardableResult
    public mutating func add(_ entry: Entry) -> [Entry] {
        entries.append(entry)
        let over = entries.count - capacity
        guard over > 0 else { return [] }
        let dropped = Array(entries.prefix(over))
        entries.removeFirst(over)
        return dropped
    }

    /// Whether `digest` is live. Every entry is compared with `same` (which
    /// must take constant time), whatever matched, so the time taken says
    /// nothing about which or how much matched.
    public func contains(_ digest: [UInt8], same: ([UInt8], [UInt8]) -> Bool) -> Bool {
        var found = false
        for e in entries where same(e.digest, digest) { found = true }
        return found
    }

    /// Removes `digest`; whether it was live.
    @discardableResult
    public mutating func remove(_ digest: [UInt8], same: ([UInt8], [UInt8]) -> Bool) -> Bool {
        let before = entries.count
        entries.removeAll { same($0.digest, digest) }
        return entries.count != before
    }

    public mutating func removeAll() { entries.removeAll() }
}
