/// The rooms a leader has seen join since it started, so that a speaker
/// switched off still shows as a room (offline) with its place and settings.
///
/// Bounded: on an open leader one host can join under a new name on every
/// connection, and each name would otherwise stay listed for good. Past
/// `limit` names, the one seen longest ago that nothing keeps (no settings,
/// no pair, no group, not connected) is forgotten. Names that something
/// keeps are bounded where that something is made (an authenticated control
/// call, a connection within the port's budget), so they are never dropped.
public struct SeenRooms: Sendable, Equatable {
    /// Far above a home's few dozen rooms.
    public static let defaultLimit = 128

    public let limit: Int
    /// When each name was last seen, as a count of sightings (injected order, no clock).
    private var lastSeen: [String: UInt64] = [:]
    private var sightings: UInt64 = 0

    public init(limit: Int = SeenRooms.defaultLimit) {
        self.limit = max(1, limit)
    }

    public var names: Set<String> { Set(lastSeen.keys) }
    public var count: Int { lastSeen.count }
    public func contains(_ name: String) -> Bool { lastSeen[name] != nil }

    /// `name` joined or was given settings now. Returns the names forgotten
    /// to stay within `limit`, oldest first; `kept` are never forgotten
    /// (nor is `name` itself).
    @discardableResult
    public mutating func saw(_ name: String, keeping kept: Set<String> = []) -> [String] {
        sightings += 1
        lastSeen[name] = sightings
        var forgotten: [String] = []
        while lastSeen.count > limit {
            // A few hundred names at most: a scan per name over the limit.
            var oldest: (name: String, seen: UInt64)?
            for (candidate, seen) in lastSeen where candidate != name && !kept.contains(candidate) {
                if oldest == nil || seen < oldest!.seen { oldest = (candidate, seen) }
            }
            guard let oldest else { break } // everything left is kept
            lastSeen[oldest.name] = nil
            forgotten.append(oldest.name)
        }
        return forgotten
    }

    /// Every name of `names`, seen now in their order (the saved rooms at start).
    public mutating func saw<S: Sequence>(all names: S) where S.Element == String {
        for name in names { sightings += 1; lastSeen[name] = sightings }
    }

    public mutating func forget(_ name: String) { lastSeen[name] = nil }
}
