import FoundationEssentials
import Synchronization
import TuttiCore
import TuttiControlKit

/// A group as the control surfaces show it.
/// Grouping rooms: each group has its own stream (queue and player), every
/// room plays its group's stream, and a room moved to another group switches
/// to it a start latency ahead, on the same grid as the rooms already there.
extension Leader {
    /// Rooms the leader knows (connected, placed in a group, or configured),
    /// as people see them: a stereo pair once, by its name.
    public var knownRooms: [String] {
        let speakers = knownSpeakers
        return stereoPairs.withLock { $0.collapse(speakers) }.sorted()
    }

    /// Every speaker the leader knows, by the name it joined with (a stereo pair's two apart), sorted.
    var knownSpeakers: [String] {
        var all = Set(connectedSpeakers).union(seenRooms.withLock { $0.names })
        grouping.withLock { t in
            all.formUnion(t.assignment.keys)
            all.formUnion(t.beforeParty?.keys.map { $0 } ?? [])
        }
        return all.sorted()
    }

    /// Each group's rooms as people see them (a stereo pair once; its speakers are always in one group).
    public var groups: [GroupStatus] {
        let (table, known, pairs) = (grouping.withLock { $0 }, knownSpeakers, stereoPairs.withLock { $0 })
        let byGroup = streams.withLock { $0 }
        return table.groups.compactMap { g in
            guard let stream = byGroup[g.id] else { return nil }
            return GroupStatus(id: g.id, name: g.name, rooms: pairs.collapse(table.rooms(in: g.id, of: known)).sorted(), streamID: stream.id,
                               nowPlaying: stream.player.nowPlaying())
        }
    }

    /// Rooms as people name them, as speakers: a stereo pair's name (or either speaker's) is both its speakers.
    func expandedSpeakers(_ rooms: [String]) -> [String] {
        let pairs = stereoPairs.withLock { $0 }
        var out: [String] = []
        for room in rooms { for s in pairs.speakers(of: room) where !out.contains(s) { out.append(s) } }
        return out
    }

    public var partyActive: Bool { grouping.withLock { $0.partyActive } }

    /// The group a room is in (the main group if it was never placed).
    public func group(ofRoom room: String) -> RoomGroups.Group {
        let speaker = speakers(of: room)[0]
        return grouping.withLock { t in t.group(t.groupID(ofRoom: speaker))! }
    }

    /// A new group with its own (empty, stopped) stream, holding `rooms`.
    public func createGroup(name: String, rooms named: [String]) throws(GroupError) -> GroupStatus {
        let rooms = expandedSpeakers(named)
        let group: RoomGroups.Group = try changeGroups { (t) throws(GroupError) in
            let g = try t.create(name: name)
            for room in rooms { try t.move(room: room, to: g.id) }
            return g
        } prepare: { (g) throws(GroupError) in
            // A deleted group's id can come back after a restart: never with its old saved queue.
            if let stateStore { try? stateStore.forget(group: g.id) }
            let stream = makeStream(group: g.id, restoring: nil, files: [], loop: false)
            do { try stream.start(in: sourceThreads) } catch { throw .cannotStart(reason: "\(error)") }
            streams.withLock { $0[g.id] = stream }
        }
        log.info("group \(group.name) created with \(rooms.isEmpty ? "no rooms" : rooms.joined(separator: ", "))")
        return status(of: group.id)!
    }

    public func renameGroup(_ idOrName: String, to name: String) throws(GroupError) -> GroupStatus {
        let group = try changeGroups { (t) throws(GroupError) in try t.rename(idOrName, to: name) }
        return status(of: group.id)!
    }

    /// Deletes a group and stops its stream; its rooms go to the main group.
    public func deleteGroup(_ idOrName: String) throws(GroupError) -> [String] {
        let (group, rooms) = try changeGroups { (t) throws(GroupError) in try t.delete(idOrName) }
        if let stream = streams.withLock({ $0.removeValue(forKey: group.id) }) { stream.player.stop() }
        if let stateStore { try? stateStore.forget(group: group.id) }
        log.info("group \(group.name) deleted\(rooms.isEmpty ? "" : "; \(rooms.joined(separator: ", ")) back in the main group")")
        return rooms
    }

    /// Moves rooms into a group.
    public func moveRooms(_ named: [String], to idOrName: String) throws(GroupError) -> GroupStatus {
        let rooms = expandedSpeakers(named)
        let group = try changeGroups { (t) throws(GroupError) in
            guard let g = t.group(idOrName) else { throw .unknownGroup(idOrName, known: t.groups.map(\.name)) }
            for room in rooms { try t.move(room: room, to: g.id) }
            return g
        }
        return status(of: group.id)!
    }

    /// A room leaves its group for a group of its own (named after it,
    /// created when needed), stopped, like a speaker taken out of a group.
    public func separate(room: String) throws(GroupError) -> GroupStatus {
        let own = Set(speakers(of: room))
        let room = stereoPairs.withLock { $0.pair(containing: room)?.name } ?? room // a pair's group is named after the pair
        let others = knownSpeakers.filter { !own.contains($0) }
        // A group already named after the room, that no other room is in, is reused.
        let existing = grouping.withLock { t in
            t.groups.first { $0.name.lowercased() == room.lowercased() }.flatMap { g in t.rooms(in: g.id, of: others).isEmpty ? g : nil }
        }
        if let own = existing, own.id != RoomGroups.mainID { return try moveRooms([room], to: own.id) }
        var name = room
        var n = 2
        while grouping.withLock({ $0.group(name) }) != nil { name = "\(room) \(n)"; n += 1 }
        return try createGroup(name: name, rooms: [room])
    }

    /// Party mode: every room plays one group's stream (default: the main
    /// group). Where each room was is kept for `partyOff`.
    public func partyOn(group idOrName: String? = nil) throws(GroupError) -> GroupStatus {
        let rooms = knownSpeakers
        let group = try changeGroups { (t) throws(GroupError) in try t.partyOn(rooms: rooms, into: idOrName ?? RoomGroups.mainID) }
        log.info("party mode: every room (\(rooms.count)) plays \(group.name)")
        return status(of: group.id)!
    }

    /// Ends party mode: every room goes back to the group it was in.
    @discardableResult
    public func partyOff() -> [String] {
        let moved = (try? changeGroups { (t) throws(GroupError) in t.partyOff() }) ?? []
        log.info("party mode off\(moved.isEmpty ? "" : ": \(moved.joined(separator: ", ")) back in their groups")")
        return moved
    }

    /// A room that connects during party mode joins the party (before its welcome names its stream).
    func admitDuringParty(_ room: String) {
        guard partyActive else { return }
        let moved = (try? changeGroups { (t) throws(GroupError) in t.admit(room: room) }) ?? false
        if moved { log.info("room \(room) joined the party") }
    }

    func status(of groupID: String) -> GroupStatus? { groups.first { $0.id == groupID } }

    /// Changes the table, then moves every follower whose group changed,
    /// pauses the streams nobody hears any more, saves and announces.
    func changeGroups<T>(_ change: (inout RoomGroups) throws(GroupError) -> T,
                                 prepare: (T) throws(GroupError) -> Void = { _ in }) throws(GroupError) -> T {
        groupChanges.lock()
        defer { groupChanges.unlock() }
        let connected = connectedSpeakers
        let before = grouping.withLock { t in Set(connected.map { t.groupID(ofRoom: $0) }) }
        var table = grouping.withLock { $0 }
        let result = try change(&table)
        try prepare(result) // before the table changes: a failure leaves everything as it was
        grouping.withLock { $0 = table }
        applyGrouping()
        // A group whose last room just left stops playing to nobody (it keeps its queue and position).
        let after = Set(connected.map { table.groupID(ofRoom: $0) })
        for id in before.subtracting(after) {
            guard let stream = streams.withLock({ $0[id] }), stream.player.nowPlaying().state.isActive else { continue }
            _ = try? stream.player.submit(.pause)
            if id == RoomGroups.mainID { events.emit(.player) }
        }
        if let stateStore {
            do { try stateStore.saveGroups(table) } catch { log.error("saving the groups: \(error)") }
        }
        events.emit(.groups)
        events.emit(.rooms)
        return result
    }
}
