/// Two rooms' speakers that play as one room: one the left channel, the
/// other the right (docs/sound.md, "Stereo pairs").
public struct StereoPair: Equatable, Sendable {
    /// The name people see: the pair is one room to them.
    public var name: String
    /// The speaker (a room, as it joined) that plays the left channel.
    public var left: String
    /// The one that plays the right.
    public var right: String

    public init(name: String, left: String, right: String) { self.name = name; self.left = left; self.right = right }

    /// Left, then right.
    public var speakers: [String] { [left, right] }

    /// The channel `speaker` plays in this pair (nil: not one of its speakers).
    public func side(of speaker: String) -> ChannelMap? {
        speaker == left ? .left : speaker == right ? .right : nil
    }

    /// The other speaker of the pair.
    public func partner(of speaker: String) -> String? {
        speaker == left ? right : speaker == right ? left : nil
    }
}

/// The leader's stereo pairs: the rules, with no I/O. A speaker is in at
/// most one pair; a pair's name is not any room's name, so every name a
/// person uses means one thing. Names resolve both ways: a pair's name (or
/// either of its speakers' names) to its two speakers (`speakers(of:)`,
/// for settings that the pair shares), and a list of speakers to the
/// rooms people see, each pair once (`collapse`).
public struct StereoPairs: Equatable, Sendable {
    public static let maxNameBytes = 64
    /// By name, sorted.
    public private(set) var pairs: [StereoPair]

    public init(_ pairs: [StereoPair] = []) {
        // A saved list read leniently: a speaker in two pairs keeps its first.
        var kept: [StereoPair] = []
        for p in pairs where p.left != p.right && !p.name.isEmpty {
            if kept.contains(where: { $0.name == p.name || !Set($0.speakers).isDisjoint(with: p.speakers) }) { continue }
            kept.append(p)
        }
        self.pairs = kept.sorted { $0.name < $1.name }
    }

    public var isEmpty: Bool { pairs.isEmpty }

    /// The pair named `name` (case-insensitively), or holding speaker `name`.
    public func pair(_ name: String) -> StereoPair? {
        pairs.first { $0.name == name } ?? pairs.first { $0.name.lowercased() == name.lowercased() }
            ?? pairs.first { $0.left == name || $0.right == name }
    }

    /// The pair a speaker plays in (by the speaker's name only).
    public func pair(containing speaker: String) -> StereoPair? {
        pairs.first { $0.left == speaker || $0.right == speaker }
    }

    /// The pair whose name is `name` (not a speaker's).
    public func pair(named name: String) -> StereoPair? {
        pairs.first { $0.name == name } ?? pairs.first { $0.name.lowercased() == name.lowercased() }
    }

    /// The speakers a setting made on `room` reaches: a pair's two (by its
    /// name or either speaker's), else the room itself.
    public func speakers(of room: String) -> [String] {
        if let p = pair(named: room) ?? pair(containing: room) { return p.speakers }
        return [room]
    }

    /// Each name as people see it (a pair's speakers as the pair, once), in order of first appearance.
    public func collapse(_ rooms: [String]) -> [String] {
        var out: [String] = []
        var seen = Set<String>()
        for room in rooms {
            let name = pair(containing: room)?.name ?? room
            if seen.insert(name).inserted { out.append(name) }
        }
        return out
    }

    /// The channel a pair gives `speaker` (nil: it is in no pair).
    public func channelMap(of speaker: String) -> ChannelMap? { pair(containing: speaker)?.side(of: speaker) }

    /// Pairs `left` and `right` as one room named `name` (default "LEFT + RIGHT").
    /// Both must be rooms of `known` (speakers, by the names they joined
    /// with). The same two speakers paired again (either way round) change
    /// sides and name; a speaker in another pair leaves it (that pair ends).
    /// Returns the new pair and the pairs it ended.
    @discardableResult
    public mutating func pair(left: String, right: String, name: String? = nil,
                              known: [String]) throws(ChannelMapError) -> (pair: StereoPair, ended: [StereoPair]) {
        guard left != right else { throw .sameRoom(left) }
        let rooms = collapse(known)
        for speaker in [left, right] where !known.contains(speaker) {
            // A pair's name is not a speaker: pairing pairs is not a thing.
            throw .unknownRoom(speaker, known: rooms)
        }
        let same = pairs.first { Set($0.speakers) == Set([left, right]) }
        let chosen = (name ?? same?.name ?? "\(left) + \(right)").trimmingSpaces
        let speakerNames = Set(known)
        guard !chosen.isEmpty, chosen.utf8.count <= Self.maxNameBytes, !chosen.unicodeScalars.contains(where: { $0.value < 0x20 }),
              !speakerNames.contains(where: { $0.lowercased() == chosen.lowercased() }),
              !pairs.contains(where: { $0.name.lowercased() == chosen.lowercased() && Set($0.speakers) != Set([left, right]) }) else {
            throw .badPairName(chosen)
        }
        let ended = pairs.filter { Set($0.speakers) != Set([left, right]) && !Set($0.speakers).isDisjoint(with: [left, right]) }
        pairs.removeAll { !Set($0.speakers).isDisjoint(with: [left, right]) }
        let new = StereoPair(name: chosen, left: left, right: right)
        pairs.append(new)
        pairs.sort { $0.name < $1.name }
        return (new, ended)
    }

    /// Ends the pair named `name` (or holding speaker `name`); its speakers are rooms of their own again.
    @discardableResult
    public mutating func unpair(_ name: String) throws(ChannelMapError) -> StereoPair {
        guard let p = pair(name) else { throw .unknownPair(name, known: pairs.map(\.name)) }
        pairs.removeAll { $0 == p }
        return p
    }

    /// Swaps the sides of the pair named `name` (or holding speaker `name`).
    @discardableResult
    public mutating func swap(_ name: String) throws(ChannelMapError) -> StereoPair {
        guard let p = pair(name), let i = pairs.firstIndex(of: p) else { throw .unknownPair(name, known: pairs.map(\.name)) }
        pairs[i] = StereoPair(name: p.name, left: p.right, right: p.left)
        return pairs[i]
    }
}
