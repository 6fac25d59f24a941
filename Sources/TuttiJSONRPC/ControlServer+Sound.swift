import TuttiCore
import TuttiControlKit

/// JSON-RPC methods for each room's sound: the equaliser and its presets,
/// group volume and mute (see docs/sound.md).
extension ControlServer {
    func dispatchSound(_ method: String, _ params: [String: JSONValue]) throws -> JSONValue? {
        func invalid(_ message: String) -> RPCError { RPCError(code: -32602, message: message) }
        func decibels(_ key: String) throws -> Double? {
            guard let raw = params[key] else { return nil }
            guard let n = raw.number, n.isFinite else { throw invalid("\(key) must be a number of dB (−12…+12)") }
            return n
        }
        func group() throws -> GroupStatus {
            let key = params["group"]?.string
            guard let g = leader.groups.first(where: { $0.id == key || $0.name == key }) else {
                throw invalid("\(method) needs \"group\" (an id or name: \(leader.groups.map(\.name).joined(separator: ", ")))")
            }
            return g
        }
        do {
            switch method {
            case "rooms.setEq":
                guard let room = params["room"]?.string, !room.isEmpty else { throw invalid("rooms.setEq needs \"room\" (a room name)") }
                guard leader.knownRooms.contains(room) else {
                    throw invalid("no room '\(room)' (rooms: \(leader.knownRooms.joined(separator: ", ")))")
                }
                var eq = leader.equalizer(of: room)
                if let name = params["preset"] {
                    guard let name = name.string, !name.isEmpty else { throw invalid("preset must be a preset name (see eq.presets)") }
                    eq = try leader.setPreset(room: room, name)
                }
                var gains = eq.settings.gains, bass = eq.settings.bass, treble = eq.settings.treble, preamp = eq.settings.preamp
                var custom = false
                if let raw = params["gains"] {
                    guard params["preset"] == nil else { throw invalid("give \"preset\" or \"gains\", not both") }
                    guard let list = raw.numbers, list.count == EqualizerSettings.bandCount else {
                        throw invalid("gains must be 10 numbers of dB (32 Hz … 16 kHz), each −12…+12")
                    }
                    gains = list
                    custom = true
                }
                if let b = try decibels("bass") { bass = b }
                if let t = try decibels("treble") { treble = t }
                switch params["preamp"] {
                case nil: break
                case .string("auto")?: preamp = .auto
                case .number(let n)?: preamp = .manual(decibels: n)
                default: throw invalid("preamp must be \"auto\" or a number of dB (−12…+12)")
                }
                let settings = try EqualizerSettings(gains: gains, bass: bass, treble: treble, preamp: preamp)
                // Gains that match a preset keep its name; others are custom.
                let preset = custom ? leader.presets.first { $0.gains == settings.gains }?.name : eq.preset
                let result = RoomEqualizer(settings: settings, preset: preset)
                if result != leader.equalizer(of: room) { leader.setEqualizer(room: room, result) }
                return ["room": .string(room), "eq": Self.eqObject(result)]
            case "rooms.setReverb":
                return try setReverb(params)
            case "rooms.setChannels":
                guard let room = params["room"]?.string, !room.isEmpty else { throw invalid("rooms.setChannels needs \"room\" (a room name)") }
                guard let raw = params["channels"]?.string else {
                    throw invalid("rooms.setChannels needs \"channels\": one of \(ChannelMap.names.joined(separator: ", "))")
                }
                guard let map = ChannelMap(name: raw) else { throw Self.rpcError(ChannelMapError.unknownMap(raw)) }
                do { try leader.setChannels(room: room, map) } catch { throw Self.rpcError(error) }
                return ["room": .string(room), "channels": .string(map.name)]
            case "rooms.pair":
                guard let left = params["left"]?.string, !left.isEmpty, let right = params["right"]?.string, !right.isEmpty else {
                    throw invalid("rooms.pair needs \"left\" and \"right\" (two room names) and may have \"name\"")
                }
                if let n = params["name"], n.string == nil, n != .null { throw invalid("name must be a string (the pair's room name)") }
                do {
                    let pair = try leader.pair(left: left, right: right, name: params["name"]?.string)
                    return pairObject(pair, health: leader.health)
                } catch { throw Self.rpcError(error) }
            case "rooms.unpair":
                guard let name = params["room"]?.string ?? params["name"]?.string, !name.isEmpty else {
                    throw invalid("rooms.unpair needs \"room\" (the pair's name, or either speaker's)")
                }
                do {
                    let pair = try leader.unpair(name)
                    return ["unpaired": .string(pair.name), "rooms": .array(pair.speakers.map(JSONValue.string))]
                } catch { throw Self.rpcError(error) }
            case "rooms.swapPair":
                guard let name = params["room"]?.string ?? params["name"]?.string, !name.isEmpty else {
                    throw invalid("rooms.swapPair needs \"room\" (the pair's name, or either speaker's)")
                }
                do { return pairObject(try leader.swapPair(name), health: leader.health) } catch { throw Self.rpcError(error) }
            case "announce":
                return try announce(params)
            case "eq.presets":
                return ["presets": .array(leader.presets.map { ["name": .string($0.name), "gains": .numbers($0.gains), "builtIn": .bool($0.builtIn)] }),
                        "bands": .numbers(EqualizerSettings.bandFrequencies)]
            case "eq.save":
                guard let name = params["name"]?.string else { throw invalid("eq.save needs \"name\"") }
                let gains: [Double]
                if let list = params["gains"]?.numbers {
                    gains = list
                } else if let room = params["room"]?.string {
                    gains = leader.equalizer(of: room).settings.gains
                } else {
                    throw invalid("eq.save needs \"gains\" (10 numbers of dB) or \"room\" (save that room's gains)")
                }
                let preset = try leader.savePreset(name, gains: gains)
                // The room it was taken from now uses it by name.
                if let room = params["room"]?.string, params["gains"] == nil {
                    var eq = leader.equalizer(of: room); eq.preset = preset.name
                    leader.setEqualizer(room: room, eq)
                }
                return ["name": .string(preset.name), "gains": .numbers(preset.gains), "builtIn": false]
            case "eq.delete":
                guard let name = params["name"]?.string else { throw invalid("eq.delete needs \"name\"") }
                try leader.deletePreset(name)
                return ["deleted": .string(name)]
            case "groups.setVolume", "groups.volume":
                let g = try group()
                guard let volume = params["volume"]?.number, volume.isFinite, (0...100).contains(volume) else {
                    throw invalid("volume must be a number 0…100")
                }
                let rooms = leader.setVolume(group: g.id, UInt8(volume.rounded()))
                return ["group": .string(g.id), "volume": .int(leader.volume(ofGroup: g.id) ?? 0), "kept": .bool(rooms.isEmpty),
                        "rooms": .array(roomsObject().filter { rooms.contains($0["name"]?.string ?? "") })]
            case "groups.setMute":
                let g = try group()
                guard let muted = params["muted"]?.bool else { throw invalid("groups.setMute needs \"muted\": true or false") }
                let rooms = leader.setMuted(group: g.id, muted)
                return ["group": .string(g.id), "muted": .bool(leader.muted(group: g.id)), "kept": .bool(rooms.isEmpty),
                        "rooms": .array(roomsObject().filter { rooms.contains($0["name"]?.string ?? "") })]
            default:
                return nil
            }
        } catch let e as EqualizerError {
            throw RPCError(code: -32602, e.message)
        }
    }

    /// A refused channel map or pair: −32602 for what was asked wrongly, −32000 for what the room cannot do.
    /// `announce {rooms | group | "all", url | text, volume?, duck_db?, lang?}` (docs/api.md).
    private func announce(_ params: [String: JSONValue]) throws -> JSONValue {
        func invalid(_ message: String) -> RPCError { RPCError(code: -32602, message: message) }
        let target: AnnouncementTarget
        switch (params["rooms"], params["group"]) {
        case (.string("all")?, nil), (nil, .string("all")?):
            target = .all
        case (.array(let list)?, nil):
            let names = list.compactMap(\.string)
            guard names.count == list.count, names.count <= 256 else { throw invalid("rooms must be a list of room names, or \"all\"") }
            target = .rooms(names)
        case (.string(let one)?, nil):
            target = .rooms([one])
        case (nil, .string(let group)?):
            target = .group(group)
        default:
            throw invalid("announce needs \"rooms\" (a list of room names, or \"all\") or \"group\" (an id or name), not both")
        }
        let source: AnnouncementSource
        switch (params["url"]?.string, params["text"]?.string) {
        case (let url?, nil): source = .url(url)
        case (nil, let text?):
            let lang = params["lang"].map { $0.string } ?? AnnouncementRequest.defaultLanguage
            guard let lang else { throw invalid("lang must be an espeak-ng voice name (en, ko, de, …)") }
            source = .text(text, language: lang)
        default: throw invalid("announce needs \"url\" (a file or http(s) URL) or \"text\" (spoken by espeak-ng), not both")
        }
        func number(_ key: String, _ fallback: Double) throws -> Double {
            guard let raw = params[key], raw != .null else { return fallback }
            guard let n = raw.number else { throw invalid("\(key) must be a number") }
            return n
        }
        do {
            let request = try AnnouncementRequest(target: target, source: source, volume: try number("volume", AnnouncementRequest.defaultVolume),
                                                  duckDecibels: try number("duck_db", AnnouncementRequest.defaultDuckDecibels))
            let r = try leader.announce(request)
            return ["id": .int(Int(r.id)), "speakers": .array(r.speakers.map(JSONValue.string)),
                    "notConnected": .array(r.notConnected.map(JSONValue.string)),
                    "cannotMix": .array(r.cannotMix.map(JSONValue.string)), "seconds": .number((r.seconds * 1000).rounded() / 1000),
                    "queuedSeconds": .number((r.queuedSeconds * 1000).rounded() / 1000)]
        } catch let e as AnnouncementError {
            throw Self.rpcError(e)
        }
    }

    /// An unknown room or group in the catalogue's words (the asker's
    /// language), as every other request says it.
    static func unknownName(room: String?, group: String?, known: [String]) -> RPCError {
        if let room {
            return RPCError(code: -32602, known.isEmpty ? UserMessage(.roomUnknown, ["room": room])
                                                        : UserMessage(.roomUnknownOfKnown, ["room": room, "known": known.joined(separator: ", ")]))
        }
        return RPCError(code: -32602, UserMessage(.groupUnknown, ["group": group ?? "", "known": known.joined(separator: ", ")]))
    }

    static func rpcError(_ e: AnnouncementError) -> RPCError {
        switch e {
        case .unknownRoom(let room, let known): unknownName(room: room, group: nil, known: known)
        case .unknownGroup(let group, let known): unknownName(room: nil, group: group, known: known)
        case .nobodyListening, .speakersCannotAnnounce, .undecodable, .tooLong, .speech, .busy: RPCError(code: -32000, e.message)
        default: RPCError(code: -32602, e.message)
        }
    }

    /// `rooms.setReverb {room, preset | mix, size, damping}` (docs/api.md): the room's reverb changed as asked.
    private func setReverb(_ params: [String: JSONValue]) throws -> JSONValue {
        guard let room = params["room"]?.string, !room.isEmpty else {
            throw RPCError(code: -32602, UserMessage(.requestNeedsRoom, ["method": "rooms.setReverb"]))
        }
        func number(_ key: String) throws -> Double? {
            guard let raw = params[key], raw != .null else { return nil }
            guard let n = raw.number else { throw RPCError(code: -32602, UserMessage(.requestNotANumber, ["key": key])) }
            return n
        }
        let preset: String?
        switch params["preset"] {
        case nil, .null?: preset = nil
        case .string(let s)?: preset = s
        default: throw RPCError(code: -32602, ReverbRefusal.needsSettings.message)
        }
        do {
            let settings = try ReverbSettings.resolving(preset: preset, mix: try number("mix"), size: try number("size"), damping: try number("damping"),
                                                        from: leader.reverb(of: room))
            try leader.setReverb(room: room, settings)
            return ["room": .string(room), "reverb": Self.reverbObject(leader.reverb(of: room))]
        } catch let e as ReverbRefusal {
            throw Self.rpcError(e)
        }
    }

    /// A refused reverb: −32602 for what was asked wrongly, −32000 for what the room cannot do; in the asker's language.
    static func rpcError(_ e: ReverbRefusal) -> RPCError {
        RPCError(code: e.isAboutTheRoom ? -32000 : -32602, e.message)
    }

    /// A room's reverb as `rooms.list` shows it.
    static func reverbObject(_ r: ReverbSettings) -> JSONValue {
        ["preset": r.preset.map { JSONValue.string($0.rawValue) } ?? .null, "mix": .number(r.mix), "size": .number((r.size * 1000).rounded() / 1000),
         "damping": .number(r.damping), "decaySeconds": .number((r.decaySeconds * 100).rounded() / 100), "off": .bool(r.isOff)]
    }

    static func rpcError(_ e: ChannelMapError) -> RPCError {
        switch e {
        case .unknownRoom(let room, let known): unknownName(room: room, group: nil, known: known)
        case .speakerTooOld, .notATuttiSpeaker, .inPair: RPCError(code: -32000, e.message)
        default: RPCError(code: -32602, e.message)
        }
    }

    static func eqObject(_ eq: RoomEqualizer) -> JSONValue {
        let s = eq.settings
        let preamp: JSONValue = if case .manual(let db) = s.preamp { .number(db) } else { "auto" }
        return ["gains": .numbers(s.gains), "bass": .number(s.bass), "treble": .number(s.treble), "preampDb": .number(s.preampDecibels),
                "flat": .bool(s.isFlat), "preamp": preamp, "preset": eq.preset.map(JSONValue.string) ?? .null]
    }
}
