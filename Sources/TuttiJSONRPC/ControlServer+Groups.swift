import TuttiCore
import TuttiControlKit

/// JSON-RPC methods for groups of rooms and party mode.
extension ControlServer {
    func dispatchGroups(_ method: String, _ params: [String: JSONValue]) throws -> JSONValue? {
        guard method.hasPrefix("groups.") || method.hasPrefix("party.") else { return nil }
        func text(_ key: String) throws -> String {
            guard let v = params[key]?.string, !v.isEmpty, v.utf8.count <= 256 else {
                throw RPCError(code: -32602, UserMessage(.requestNeedsText, ["method": method, "key": key]))
            }
            return v
        }
        /// Rooms the leader has seen: a typo must not create a phantom room.
        func rooms(required: Bool) throws -> [String] {
            guard let raw = params["rooms"] else {
                if required { throw RPCError(code: -32602, message: "\(method) needs \"rooms\": an array of room names") }
                return []
            }
            guard let names = raw.strings, names.count <= 256, names.allSatisfy({ !$0.isEmpty }) else {
                throw RPCError(code: -32602, message: "rooms must be an array of room names")
            }
            let known = Set(leader.knownRooms)
            if let unknown = names.first(where: { !known.contains($0) }) {
                throw RPCError(code: -32602, UserMessage(.roomUnknownOfKnown, ["room": unknown, "known": known.sorted().joined(separator: ", ")]))
            }
            return names
        }
        do {
            switch method {
            case "groups.list":
                return groupsObject()
            case "groups.create":
                return groupObject(try leader.createGroup(name: try text("name"), rooms: try rooms(required: false)))
            case "groups.rename":
                return groupObject(try leader.renameGroup(try text("group"), to: try text("name")))
            case "groups.delete":
                return ["movedToMain": .strings(try leader.deleteGroup(try text("group")))]
            case "groups.add":
                return groupObject(try leader.moveRooms(try rooms(required: true), to: try text("group")))
            case "groups.separate":
                let room = try text("room")
                guard leader.knownRooms.contains(room) else { throw RPCError(code: -32602, UserMessage(.roomUnknown, ["room": room])) }
                return groupObject(try leader.separate(room: room))
            case "party.on":
                let target = params["group"] == nil ? nil : try text("group")
                return groupObject(try leader.partyOn(group: target))
            case "party.off":
                return ["moved": .strings(leader.partyOff())]
            case "party.status":
                return ["party": .bool(leader.partyActive)]
            default:
                throw RPCError(code: -32601, UserMessage(.requestUnknownMethod, ["method": method]))
            }
        } catch let e as GroupError {
            throw RPCError(code: -32000, e.message)
        }
    }

    func groupsObject() -> JSONValue {
        ["groups": .array(leader.groups.map(groupObject)), "party": .bool(leader.partyActive)]
    }

    private func groupObject(_ g: GroupStatus) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(g.id), "name": .string(g.name), "rooms": .strings(g.rooms), "state": .string(Self.stateName(g.nowPlaying)),
            "trackCount": .int(g.nowPlaying.trackCount), "position": .number((g.nowPlaying.positionSeconds * 1000).rounded() / 1000),
            "volume": .int(leader.volume(ofGroup: g.id) ?? 0), "muted": .bool(leader.muted(group: g.id)),
        ]
        let status = statusObject(group: g.id)
        for key in ["title", "artist", "album", "station", "file", "duration"] { if let v = status[key] { object[key] = v } }
        return .object(object)
    }
}
