import Synchronization
import TuttiCore

/// Saves and loads the player's state in its own SQLite file beside the
/// library (`state.db`), so it never contends with a library scan.
/// Each save is one transaction committed (WAL, synchronous=FULL through
/// `Database`) before it returns. Its tables are `StateSchema`'s
/// migrations. Records that are one value each (a room's sound, a group's
/// player, the groups) are JSON text (`JSONValue`), read leniently: an
/// unreadable record is as if it were not there.
///
/// Thread contract: `Sendable`; any thread, calls are serialised. Methods
/// block on SQLite and throw `LibraryError`.
public final class PlayerStateStore: Sendable {
    private let database: Mutex<Database>

    public init(path: String) throws(LibraryError) {
        let db = try Database(path: path)
        try StateSchema.migrate(db)
        database = Mutex(db)
    }

    private func locked<T: Sendable>(_ body: (Database) throws(LibraryError) -> T) throws(LibraryError) -> T {
        try database.withLock { (db: inout Database) throws(LibraryError) -> T in try body(db) }
    }

    /// A room's volume, mute, latency trim, equaliser, channel map and reverb, as saved.
    public struct RoomSound: Equatable, Sendable {
        public var settings: RoomSettings
        public var equalizer: EqualizerSettings
        public var preset: String?
        public var channels: ChannelMap
        public var reverb: ReverbSettings
        public init(settings: RoomSettings, equalizer: EqualizerSettings, preset: String?, channels: ChannelMap = .stereo, reverb: ReverbSettings = .off) {
            self.settings = settings; self.equalizer = equalizer; self.preset = preset; self.channels = channels; self.reverb = reverb
        }
    }

    /// Replaces every room's saved sound (one JSON record per room).
    public func saveRooms(_ rooms: [String: RoomSound]) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            _ = try db.transaction { () throws(LibraryError) in
                _ = try db.run("DELETE FROM room_sound")
                let put = try db.cached("INSERT INTO room_sound (room, sound) VALUES (?, ?)")
                for (room, r) in rooms {
                    var object: [String: JSONValue] = [
                        "volume": .number(Double(r.settings.volume)), "muted": .bool(r.settings.muted),
                        "latencyNs": .number(Double(r.settings.latencyTrimNanoseconds)),
                        "gains": .array(r.equalizer.gains.map { .number($0) }),
                        "bass": .number(r.equalizer.bass), "treble": .number(r.equalizer.treble),
                    ]
                    if case .manual(let db) = r.equalizer.preamp { object["preamp"] = .number(db) }
                    if let p = r.preset { object["preset"] = .string(p) }
                    if r.channels != .stereo { object["channels"] = .string(r.channels.name) }
                    if r.reverb != .off {
                        // A key of the room's record (a JSON text): no migration, older leaders ignore it.
                        var reverb: [String: JSONValue] = ["mix": .number(r.reverb.mix), "size": .number(r.reverb.size), "damping": .number(r.reverb.damping)]
                        if let p = r.reverb.preset { reverb["preset"] = .string(p.rawValue) }
                        object["reverb"] = .object(reverb)
                    }
                    try put.run([.text(room), .text(JSONValue.object(object).serialized)])
                }
            }
        }
    }

    /// Every room's saved sound; an unreadable record is skipped (that room starts at the defaults).
    public func loadRooms() throws(LibraryError) -> [String: RoomSound] {
        let rows = try locked { db throws(LibraryError) in
            try db.query("SELECT room, sound FROM room_sound") { (s) throws(LibraryError) in (s.text(0), s.text(1)) }
        }
        var rooms: [String: RoomSound] = [:]
        for (room, text) in rows {
            guard let o = Self.object(text) else { continue }
            let settings = RoomSettings(volume: UInt8(clamping: o["volume"]?.integer ?? 100), muted: o["muted"]?.bool ?? false,
                                        latencyTrimNanoseconds: Int64(o["latencyNs"]?.integer ?? 0))
            let eq = (try? EqualizerSettings(gains: o["gains"]?.numbers ?? [], bass: o["bass"]?.number ?? 0, treble: o["treble"]?.number ?? 0,
                                             preamp: o["preamp"]?.number.map { .manual(decibels: $0) } ?? .auto)) ?? .flat
            rooms[room] = RoomSound(settings: settings, equalizer: eq, preset: o["preset"]?.string,
                                    channels: o["channels"]?.string.flatMap { ChannelMap(name: $0) } ?? .stereo,
                                    reverb: o["reverb"].flatMap(Self.reverb) ?? .off)
        }
        return rooms
    }

    /// A saved reverb: a preset's own size and damping, else the values saved (nil: unreadable).
    static func reverb(_ value: JSONValue) -> ReverbSettings? {
        guard let mix = value["mix"]?.number else { return nil }
        if let name = value["preset"]?.string, let preset = ReverbPreset(rawValue: name) { return try? ReverbSettings(preset: preset, mix: mix) }
        guard let size = value["size"]?.number, let damping = value["damping"]?.number else { return nil }
        return try? ReverbSettings(mix: mix, size: size, damping: damping)
    }

    /// Replaces the saved stereo pairs (one record in `player`, key `pairs`).
    public func savePairs(_ pairs: StereoPairs) throws(LibraryError) {
        let list: JSONValue = .array(pairs.pairs.map { ["name": .string($0.name), "left": .string($0.left), "right": .string($0.right)] })
        try locked { db throws(LibraryError) in
            try db.cached("INSERT INTO player (key, value) VALUES ('pairs', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
                .run([.text(list.serialized)])
        }
    }

    /// The saved stereo pairs (none if none were saved, or the record is unreadable).
    public func loadPairs() throws(LibraryError) -> StereoPairs {
        let rows = try locked { db throws(LibraryError) in
            try db.query("SELECT value FROM player WHERE key = 'pairs'") { (s) throws(LibraryError) in s.text(0) }
        }
        guard let text = rows.first, let value = try? JSONValue.parse(Array(text.utf8)), let list = value.array else { return StereoPairs() }
        return StereoPairs(list.compactMap { item in
            guard let f = item.strings, let name = f["name"], let left = f["left"], let right = f["right"] else { return nil }
            return StereoPair(name: name, left: left, right: right)
        })
    }

    /// The live control tokens' digests (`ControlTokens`), oldest first.
    public func loadTokens() throws(LibraryError) -> [ControlTokens.Entry] {
        try locked { db throws(LibraryError) in
            try db.query("SELECT digest, issued_at FROM control_token ORDER BY issued_at") { (s) throws(LibraryError) in
                ControlTokens.Entry(digest: s.blob(0), issuedAt: s.int(1))
            }
        }
    }

    /// Saves a token's digest and forgets the ones it displaced, in one transaction.
    public func addToken(_ entry: ControlTokens.Entry, dropping dropped: [ControlTokens.Entry] = []) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            _ = try db.transaction { () throws(LibraryError) in
                let remove = try db.cached("DELETE FROM control_token WHERE digest = ?")
                for d in dropped { try remove.run([.blob(d.digest)]) }
                try db.cached("INSERT OR REPLACE INTO control_token (digest, issued_at) VALUES (?, ?)").run([.blob(entry.digest), .int(entry.issuedAt)])
            }
        }
    }

    /// Forgets one token (`auth.logout`), or every one (`digest` nil: `auth.revokeAll`).
    public func removeTokens(_ digest: [UInt8]?) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            if let digest { _ = try db.run("DELETE FROM control_token WHERE digest = ?", [.blob(digest)]) } else {
                _ = try db.run("DELETE FROM control_token")
            }
        }
    }

    /// Replaces the saved custom presets.
    public func savePresets(_ presets: [EqualizerPreset]) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            _ = try db.transaction { () throws(LibraryError) in
                _ = try db.run("DELETE FROM eq_preset")
                let put = try db.cached("INSERT INTO eq_preset (name, gains) VALUES (?, ?)")
                for p in presets { try put.run([.text(p.name), .text(p.gains.map { String($0) }.joined(separator: ","))]) }
            }
        }
    }

    public func loadPresets() throws(LibraryError) -> [EqualizerPreset] {
        let rows = try locked { db throws(LibraryError) in
            try db.query("SELECT name, gains FROM eq_preset ORDER BY name") { (s) throws(LibraryError) in (s.text(0), s.text(1)) }
        }
        return rows.compactMap { name, text in
            let gains = text.split(separator: ",").compactMap { Double($0) }
            return gains.count == EqualizerSettings.bandCount ? EqualizerPreset(name: name, gains: gains) : nil
        }
    }

    public func save(_ snapshot: PlayerSnapshot) throws(LibraryError) {
        let q = snapshot.queue
        var rank = [Int](repeating: 0, count: q.count)
        for (r, index) in q.order.enumerated() where index < rank.count { rank[index] = r }
        try locked { db throws(LibraryError) in
            _ = try db.transaction { () throws(LibraryError) in
                _ = try db.run("DELETE FROM queue")
                let insert = try db.cached("INSERT INTO queue (position, id, uri, play_rank) VALUES (?, ?, ?, ?)")
                for (i, e) in q.entries.enumerated() {
                    try insert.run([.int(Int64(i)), .int(Int64(e.id)), .text(e.uri), .int(Int64(rank[i]))])
                }
                let values: [(String, String)] = [
                    ("current", snapshot.entryID.map { String($0) } ?? ""),
                    ("position_ms", String(snapshot.positionMilliseconds)),
                    ("playing", snapshot.wasPlaying ? "1" : "0"),
                    ("shuffle", q.shuffle ? "1" : "0"),
                    ("repeat", q.repeatMode.rawValue),
                    ("single", q.single.rawValue),
                    ("consume", q.consume ? "1" : "0"),
                    ("speed", String(snapshot.tempo.speed)),
                    ("pitch", String(snapshot.tempo.pitchSemitones)),
                ]
                let put = try db.cached(Self.putPlayerValue)
                for (k, v) in values { try put.run([.text(k), .text(v)]) }
            }
        }
    }

    private static let putPlayerValue = "INSERT INTO player (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"

    /// Only where the main group is heard, for the checkpoint once a second
    /// while playing: two rows, not the whole queue.
    public func savePosition(entryID: UInt32?, positionMilliseconds: Int64) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            _ = try db.transaction { () throws(LibraryError) in
                let put = try db.cached(Self.putPlayerValue)
                try put.run([.text("current"), .text(entryID.map { String($0) } ?? "")])
                try put.run([.text("position_ms"), .text(String(positionMilliseconds))])
            }
        }
    }

    /// Saves the player state of a group other than the main one (the main
    /// group's is `save`): one JSON record per group, replaced in one statement.
    public func save(_ snapshot: PlayerSnapshot, group: String) throws(LibraryError) {
        let q = snapshot.queue
        let object: JSONValue = .object([
            "entries": .array(q.entries.map { .object(["id": .number(Double($0.id)), "uri": .string($0.uri)]) }),
            "order": .array(q.order.map { .number(Double($0)) }),
            "current": snapshot.entryID.map { .number(Double($0)) } ?? .null,
            "positionMs": .number(Double(snapshot.positionMilliseconds)), "playing": .bool(snapshot.wasPlaying),
            "shuffle": .bool(q.shuffle), "repeat": .string(q.repeatMode.rawValue), "single": .string(q.single.rawValue),
            "consume": .bool(q.consume), "speed": .number(snapshot.tempo.speed), "pitch": .number(snapshot.tempo.pitchSemitones),
        ])
        try locked { db throws(LibraryError) in
            let put = try db.cached("INSERT INTO group_player (group_id, snapshot) VALUES (?, ?) ON CONFLICT(group_id) DO UPDATE SET snapshot = excluded.snapshot")
            try put.run([.text(group), .text(object.serialized)])
        }
    }

    /// A group's saved player state, nil if none (or unreadable: the group then starts empty).
    public func load(group: String, seed: UInt64) throws(LibraryError) -> PlayerSnapshot? {
        let rows = try locked { db throws(LibraryError) in
            try db.query("SELECT snapshot FROM group_player WHERE group_id = ?", [.text(group)]) { (s) throws(LibraryError) in s.text(0) }
        }
        guard let text = rows.first, let o = Self.object(text), let list = o["entries"]?.array else { return nil }
        let entries = list.compactMap { e -> QueueEntry? in
            guard let id = e["id"]?.integer, let uri = e["uri"]?.string, id > 0, id <= Int(UInt32.max) else { return nil }
            return QueueEntry(id: UInt32(id), uri: uri)
        }
        let currentID = o["current"]?.integer.flatMap { UInt32(exactly: $0) }
        let current = currentID.flatMap { id in entries.firstIndex { $0.id == id } }
        let queue = PlayQueue(entries: entries, order: o["order"]?.integers ?? [], current: current, shuffle: o["shuffle"]?.bool ?? false,
                              repeatMode: RepeatMode(rawValue: o["repeat"]?.string ?? "off") ?? .off,
                              single: SingleMode(rawValue: o["single"]?.string ?? "off") ?? .off,
                              consume: o["consume"]?.bool ?? false, seed: seed)
        return PlayerSnapshot(queue: queue, entryID: current == nil ? nil : currentID,
                              positionMilliseconds: Int64(o["positionMs"]?.integer ?? 0), wasPlaying: o["playing"]?.bool ?? false,
                              tempo: Self.tempo(speed: o["speed"]?.number, pitch: o["pitch"]?.number))
    }

    public func forget(group: String) throws(LibraryError) {
        try locked { db throws(LibraryError) in _ = try db.run("DELETE FROM group_player WHERE group_id = ?", [.text(group)]) }
    }

    /// Saves the groups and which room is in which (each group's player state is saved on its own).
    public func saveGroups(_ table: RoomGroups) throws(LibraryError) {
        func map(_ m: [String: String]) -> JSONValue { .object(m.mapValues { .string($0) }) }
        let object: JSONValue = .object([
            "groups": .array(table.groups.map { .object(["id": .string($0.id), "name": .string($0.name)]) }),
            "assignment": map(table.assignment),
            "beforeParty": table.beforeParty.map(map) ?? .null,
            "partyGroup": table.partyGroup.map { .string($0) } ?? .null,
        ])
        try locked { db throws(LibraryError) in
            try db.cached("INSERT INTO player (key, value) VALUES ('groups', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
                .run([.text(object.serialized)])
        }
    }

    /// The saved groups, or nil if none were saved (or the record is unreadable).
    public func loadGroups() throws(LibraryError) -> RoomGroups? {
        let rows = try locked { db throws(LibraryError) in
            try db.query("SELECT value FROM player WHERE key = 'groups'") { (s) throws(LibraryError) in s.text(0) }
        }
        guard let text = rows.first, let object = Self.object(text), let list = object["groups"]?.array else { return nil }
        var groups: [RoomGroups.Group] = []
        for g in list {
            guard let fields = g.strings else { return nil }
            if let id = fields["id"], let name = fields["name"] { groups.append(RoomGroups.Group(id: id, name: name)) }
        }
        return RoomGroups(groups: groups, assignment: object["assignment"]?.strings ?? [:],
                          beforeParty: object["beforeParty"]?.strings, partyGroup: object["partyGroup"]?.string)
    }

    /// The saved state, or nil if nothing was saved yet.
    public func load(seed: UInt64) throws(LibraryError) -> PlayerSnapshot? {
        let (rows, pairs) = try locked { db throws(LibraryError) in
            let rows = try db.query("SELECT position, id, uri, play_rank FROM queue ORDER BY position") { (s) throws(LibraryError) in
                (Int(s.int(0)), UInt32(clamping: s.int(1)), s.text(2), Int(s.int(3)))
            }
            let pairs = try db.query("SELECT key, value FROM player WHERE key NOT IN ('groups', 'pairs')") { (s) throws(LibraryError) in (s.text(0), s.text(1)) }
            return (rows, pairs)
        }
        var values: [String: String] = [:]
        for (k, v) in pairs { values[k] = v }
        guard !values.isEmpty else { return nil }
        let entries = rows.map { QueueEntry(id: $0.1, uri: $0.2) }
        var order = [Int](repeating: -1, count: entries.count)
        for (i, row) in rows.enumerated() where row.3 >= 0 && row.3 < order.count { order[row.3] = i }
        let currentID = values["current"].flatMap { UInt32($0) }
        let current = currentID.flatMap { id in entries.firstIndex { $0.id == id } }
        let queue = PlayQueue(entries: entries, order: order, current: current, shuffle: values["shuffle"] == "1",
                              repeatMode: RepeatMode(rawValue: values["repeat"] ?? "off") ?? .off,
                              single: SingleMode(rawValue: values["single"] ?? "off") ?? .off, consume: values["consume"] == "1", seed: seed)
        return PlayerSnapshot(queue: queue, entryID: current == nil ? nil : currentID,
                              positionMilliseconds: Int64(values["position_ms"] ?? "0") ?? 0, wasPlaying: values["playing"] == "1",
                              tempo: Self.tempo(speed: values["speed"].flatMap(Double.init), pitch: values["pitch"].flatMap(Double.init)))
    }

    /// A saved speed and pitch, each back to normal if missing or out of range.
    private static func tempo(speed: Double?, pitch: Double?) -> PlaybackTempo {
        PlaybackTempo(speed: speed.flatMap(PlaybackTempo.validSpeed) ?? 1, pitchSemitones: pitch.flatMap(PlaybackTempo.validPitch) ?? 0)
    }

    /// A record's JSON object, nil when it is not one.
    private static func object(_ text: String) -> JSONValue? {
        guard let value = try? JSONValue.parse(Array(text.utf8)), case .object = value else { return nil }
        return value
    }
}

private extension JSONValue {
    /// An array of numbers only, nil otherwise.
    var numbers: [Double]? {
        guard let items = array else { return nil }
        var out: [Double] = []
        for item in items { guard let n = item.number else { return nil }; out.append(n) }
        return out
    }
    /// An array of whole numbers only, nil otherwise.
    var integers: [Int]? {
        guard let items = array else { return nil }
        var out: [Int] = []
        for item in items { guard let n = item.integer else { return nil }; out.append(n) }
        return out
    }
    /// An object of strings only, nil otherwise.
    var strings: [String: String]? {
        guard case .object(let fields) = self else { return nil }
        var out: [String: String] = [:]
        for (k, v) in fields { guard let s = v.string else { return nil }; out[k] = s }
        return out
    }
}
