/// Which room plays which group's stream: the grouping rules, with no I/O.
///
/// Every room is in exactly one group; a room the table has never seen is
/// in the main group, which always exists and cannot be deleted. Each group
/// has its own stream (queue and player) in the leader. Party mode moves
/// every room into one group and remembers where each was, so turning it
/// off puts every room back.
public struct RoomGroups: Sendable, Equatable {
    public struct Group: Sendable, Equatable {
        public let id: String
        public var name: String
        public init(id: String, name: String) { self.id = id; self.name = name }
    }

    public static let mainID = "main"
    public static let maxNameBytes = 64
    public static let maxGroups = 32

    /// The main group first, then the others in order of creation.
    public private(set) var groups: [Group]
    /// Rooms placed explicitly (a room not listed is in the main group).
    public private(set) var assignment: [String: String] = [:]
    /// Where every room was before party mode; nil when party mode is off.
    public private(set) var beforeParty: [String: String]?
    /// The group everyone plays in party mode.
    public private(set) var partyGroup: String?
    private var nextNumber = 2

    public init(mainName: String = "Home") {
        groups = [Group(id: Self.mainID, name: mainName)]
    }

    /// Restores a saved table; assignments to groups that do not exist go to the main group.
    public init(groups saved: [Group], assignment: [String: String], beforeParty: [String: String]?, partyGroup: String? = nil) {
        var table = RoomGroups(mainName: saved.first { $0.id == Self.mainID }?.name ?? "Home")
        for g in saved where g.id != Self.mainID && table.groups.count < Self.maxGroups && table.group(g.id) == nil {
            table.groups.append(g)
            if g.id.hasPrefix("g"), let n = Int(g.id.dropFirst()) { table.nextNumber = max(table.nextNumber, n + 1) }
        }
        table.assignment = assignment.filter { table.groupExists($0.value) && $0.value != Self.mainID }
        table.beforeParty = beforeParty
        table.partyGroup = beforeParty == nil ? nil : partyGroup.flatMap { table.groupExists($0) ? $0 : nil } ?? Self.mainID
        self = table
    }

    public var partyActive: Bool { beforeParty != nil }

    /// A group by id, or by name (case-insensitive).
    public func group(_ idOrName: String) -> Group? {
        groups.first { $0.id == idOrName } ?? groups.first { $0.name.lowercased() == idOrName.lowercased() }
    }

    private func groupExists(_ id: String) -> Bool { groups.contains { $0.id == id } }

    public func groupID(ofRoom room: String) -> String { assignment[room] ?? Self.mainID }

    /// The rooms of `known` that are in group `id`, sorted.
    public func rooms(in id: String, of known: some Sequence<String>) -> [String] {
        known.filter { groupID(ofRoom: $0) == id }.sorted()
    }

    private func validated(_ name: String, except id: String? = nil) throws(GroupError) -> String {
        let trimmed = name.trimmingSpaces
        guard !trimmed.isEmpty, trimmed.utf8.count <= Self.maxNameBytes, !trimmed.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw .invalidName(name)
        }
        if let other = group(trimmed), other.id != id, other.name.lowercased() == trimmed.lowercased() || other.id == trimmed {
            throw .nameTaken(trimmed)
        }
        return trimmed
    }

    private func existing(_ idOrName: String) throws(GroupError) -> Group {
        guard let g = group(idOrName) else { throw .unknownGroup(idOrName, known: groups.map(\.name)) }
        return g
    }

    /// A new, empty group.
    public mutating func create(name: String) throws(GroupError) -> Group {
        let name = try validated(name)
        guard groups.count < Self.maxGroups else { throw .tooMany(Self.maxGroups) }
        var id = "g\(nextNumber)"
        while groupExists(id) { nextNumber += 1; id = "g\(nextNumber)" }
        nextNumber += 1
        let g = Group(id: id, name: name)
        groups.append(g)
        return g
    }

    public mutating func rename(_ idOrName: String, to name: String) throws(GroupError) -> Group {
        let g = try existing(idOrName)
        let name = try validated(name, except: g.id)
        let i = groups.firstIndex { $0.id == g.id }!
        groups[i].name = name
        return groups[i]
    }

    /// Deletes a group; its rooms go to the main group. Returns those rooms.
    public mutating func delete(_ idOrName: String) throws(GroupError) -> (group: Group, rooms: [String]) {
        let g = try existing(idOrName)
        guard g.id != Self.mainID else { throw .mainGroupIsPermanent }
        groups.removeAll { $0.id == g.id }
        let moved = assignment.filter { $0.value == g.id }.map(\.key).sorted()
        for room in moved { assignment[room] = nil }
        if var saved = beforeParty {
            for (room, id) in saved where id == g.id { saved[room] = Self.mainID }
            beforeParty = saved
            if partyGroup == g.id { partyGroup = Self.mainID }
        }
        return (g, moved)
    }

    /// Puts `room` in group `idOrName`. Returns the group it was in.
    @discardableResult
    public mutating func move(room: String, to idOrName: String) throws(GroupError) -> String {
        let g = try existing(idOrName)
        let was = groupID(ofRoom: room)
        assignment[room] = g.id == Self.mainID ? nil : g.id
        return was
    }

    /// Every room in `known` moves into one group; where each was is kept
    /// (from the first party call, so a second one does not lose it).
    public mutating func partyOn(rooms known: some Sequence<String>, into idOrName: String) throws(GroupError) -> Group {
        let g = try existing(idOrName)
        if beforeParty == nil {
            var saved: [String: String] = [:]
            for room in known { saved[room] = groupID(ofRoom: room) }
            beforeParty = saved
        }
        for room in known { assignment[room] = g.id == Self.mainID ? nil : g.id }
        partyGroup = g.id
        return g
    }

    /// A room seen for the first time during party mode joins the party
    /// (and goes back to its own group when the party ends). Returns whether it moved.
    public mutating func admit(room: String) -> Bool {
        guard var saved = beforeParty, saved[room] == nil, let party = partyGroup else { return false }
        saved[room] = groupID(ofRoom: room)
        beforeParty = saved
        guard groupID(ofRoom: room) != party else { return false }
        assignment[room] = party == Self.mainID ? nil : party
        return true
    }

    /// Puts every room back where it was before party mode (rooms that
    /// joined during the party stay where they are). Returns the rooms moved.
    @discardableResult
    public mutating func partyOff() -> [String] {
        guard let saved = beforeParty else { return [] }
        beforeParty = nil
        partyGroup = nil
        var moved: [String] = []
        for (room, id) in saved.sorted(by: { $0.key < $1.key }) {
            let target = groupExists(id) ? id : Self.mainID
            if groupID(ofRoom: room) != target { moved.append(room) }
            assignment[room] = target == Self.mainID ? nil : target
        }
        return moved
    }
}

/// A grouping request that cannot be done, with what to do instead.
public enum GroupError: Error, Equatable, CustomStringConvertible {
    case unknownGroup(String, known: [String])
    case invalidName(String)
    case nameTaken(String)
    case mainGroupIsPermanent
    case tooMany(Int)
    /// The system refused the group's player its thread (`reason`): nothing was created.
    case cannotStart(reason: String)

    /// What the person is told, from the message catalogue.
    public var message: UserMessage {
        switch self {
        case .unknownGroup(let g, let known): UserMessage(.groupUnknown, ["group": g, "known": known.joined(separator: ", ")])
        case .invalidName(let n): UserMessage(.groupInvalidName, ["name": n, "limit": String(RoomGroups.maxNameBytes)])
        case .nameTaken(let n): UserMessage(.groupNameTaken, ["name": n])
        case .mainGroupIsPermanent: UserMessage(.groupMainIsPermanent)
        case .tooMany(let n): UserMessage(.groupTooMany, ["count": String(n)])
        case .cannotStart(let reason): UserMessage(.groupCannotStart, ["reason": reason])
        }
    }

    public var description: String { message.description }
}

extension String {
    /// Without white space (and line breaks) at either end.
    public var trimmingSpaces: String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return String(s)
    }
}
