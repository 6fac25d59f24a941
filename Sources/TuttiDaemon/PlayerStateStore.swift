import Foundation
import TuttiCore
import TuttiLibrary

/// What a stream's player must find again after a restart or power cut.
public struct PlayerSnapshot: Equatable, Sendable {
    public var queue: PlayQueue
    /// The entry heard (id) and the position in it, milliseconds.
    public var entryID: UInt32?
    public var positionMilliseconds: Int64
    public var wasPlaying: Bool
    /// The group's speed and pitch (an audiobook keeps its 1.25× over a restart).
    public var tempo: PlaybackTempo

    public init(queue: PlayQueue, entryID: UInt32?, positionMilliseconds: Int64, wasPlaying: Bool, tempo: PlaybackTempo = .normal) {
        self.queue = queue; self.entryID = entryID; self.positionMilliseconds = positionMilliseconds; self.wasPlaying = wasPlaying
        self.tempo = tempo
    }
}

/// Saves and loads the player's state in its own SQLite file beside the
/// library (`state.db`), so it never contends with a library scan.
/// Each save is one transaction committed (WAL, synchronous=FULL through
/// `Database`) before it returns. Thread-safe: calls are serialised.
// Sendable because every use of `database` after init is under `lock`.
public final class PlayerStateStore: @unchecked Sendable {
    private let database: Database
    private let lock = NSLock()

    public init(path: String) throws(LibraryError) {
        database = try Database(path: path)
        try database.execute("""
            CREATE TABLE IF NOT EXISTS player (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS queue (position INTEGER PRIMARY KEY, id INTEGER NOT NULL, uri TEXT NOT NULL, play_rank INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS group_player (group_id TEXT PRIMARY KEY, snapshot TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS room_sound (room TEXT PRIMARY KEY, sound TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS eq_preset (name TEXT PRIMARY KEY, gains TEXT NOT NULL);
            """)
    }

    /// A room's volume, mute, latency trim and equaliser, as saved.
    public struct RoomSound: Equatable, Sendable {
        public var settings: RoomSettings
        public var equalizer: EqualizerSettings
        public var preset: String?
        public init(settings: RoomSettings, equalizer: EqualizerSettings, preset: String?) {
            self.settings = settings; self.equalizer = equalizer; self.preset = preset
        }
    }

    /// Replaces every room's saved sound (one JSON record per room).
    public func saveRooms(_ rooms: [String: RoomSound]) throws(LibraryError) {
        lock.lock(); defer { lock.unlock() }
        _ = try database.transaction { () throws(LibraryError) in
            _ = try database.run("DELETE FROM room_sound")
            let put = try database.cached("INSERT INTO room_sound (room, sound) VALUES (?, ?)")
            for (room, r) in rooms {
                var object: [String: Any] = [
                    "volume": Int(r.settings.volume), "muted": r.settings.muted, "latencyNs": r.settings.latencyTrimNanoseconds,
                    "gains": r.equalizer.gains, "bass": r.equalizer.bass, "treble": r.equalizer.treble,
                ]
                if case .manual(let db) = r.equalizer.preamp { object["preamp"] = db }
                if let p = r.preset { object["preset"] = p }
                guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { continue }
                try put.run([.text(room), .text(String(decoding: data, as: UTF8.self))])
            }
        }
    }

    /// Every room's saved sound; an unreadable record is skipped (that room starts at the defaults).
    public func loadRooms() throws(LibraryError) -> [String: RoomSound] {
        lock.lock(); defer { lock.unlock() }
        let rows = try database.query("SELECT room, sound FROM room_sound") { (s) throws(LibraryError) in (s.text(0), s.text(1)) }
        var rooms: [String: RoomSound] = [:]
        for (room, text) in rows {
            guard let o = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { continue }
            let settings = RoomSettings(volume: UInt8(clamping: o["volume"] as? Int ?? 100), muted: o["muted"] as? Bool ?? false,
                                        latencyTrimNanoseconds: (o["latencyNs"] as? NSNumber)?.int64Value ?? 0)
            let eq = (try? EqualizerSettings(gains: o["gains"] as? [Double] ?? [], bass: o["bass"] as? Double ?? 0, treble: o["treble"] as? Double ?? 0,
                                             preamp: (o["preamp"] as? Double).map { .manual(decibels: $0) } ?? .auto)) ?? .flat
            rooms[room] = RoomSound(settings: settings, equalizer: eq, preset: o["preset"] as? String)
        }
        return rooms
    }

    /// Replaces the saved custom presets.
    public func savePresets(_ presets: [EqualizerPreset]) throws(LibraryError) {
        lock.lock(); defer { lock.unlock() }
        _ = try database.transaction { () throws(LibraryError) in
            _ = try database.run("DELETE FROM eq_preset")
            let put = try database.cached("INSERT INTO eq_preset (name, gains) VALUES (?, ?)")
            for p in presets { try put.run([.text(p.name), .text(p.gains.map { String($0) }.joined(separator: ","))]) }
        }
    }

    public func loadPresets() throws(LibraryError) -> [EqualizerPreset] {
        lock.lock(); defer { lock.unlock() }
        let rows = try database.query("SELECT name, gains FROM eq_preset ORDER BY name") { (s) throws(LibraryError) in (s.text(0), s.text(1)) }
        return rows.compactMap { name, text in
            let gains = text.split(separator: ",").compactMap { Double($0) }
            return gains.count == EqualizerSettings.bandCount ? EqualizerPreset(name: name, gains: gains) : nil
        }
    }

    public func save(_ snapshot: PlayerSnapshot) throws(LibraryError) {
        lock.lock(); defer { lock.unlock() }
        let q = snapshot.queue
        var rank = [Int](repeating: 0, count: q.count)
        for (r, index) in q.order.enumerated() where index < rank.count { rank[index] = r }
        _ = try database.transaction { () throws(LibraryError) in
            _ = try database.run("DELETE FROM queue")
            let insert = try database.cached("INSERT INTO queue (position, id, uri, play_rank) VALUES (?, ?, ?, ?)")
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
            let put = try database.cached("INSERT INTO player (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            for (k, v) in values { try put.run([.text(k), .text(v)]) }
        }
    }

    /// Only where the main group is heard, for the checkpoint once a second
    /// while playing: two rows, not the whole queue.
    public func savePosition(entryID: UInt32?, positionMilliseconds: Int64) throws(LibraryError) {
        lock.lock(); defer { lock.unlock() }
        _ = try database.transaction { () throws(LibraryError) in
            let put = try database.cached("INSERT INTO player (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            try put.run([.text("current"), .text(entryID.map { String($0) } ?? "")])
            try put.run([.text("position_ms"), .text(String(positionMilliseconds))])
        }
    }

    /// Saves the player state of a group other than the main one (the main
    /// group's is `save`): one JSON record per group, replaced in one statement.
    public func save(_ snapshot: PlayerSnapshot, group: String) throws(LibraryError) {
        lock.lock(); defer { lock.unlock() }
        let q = snapshot.queue
        let object: [String: Any] = [
            "entries": q.entries.map { ["id": Int($0.id), "uri": $0.uri] as [String: Any] },
            "order": q.order, "current": snapshot.entryID.map { Int($0) } ?? NSNull(),
            "positionMs": Int(snapshot.positionMilliseconds), "playing": snapshot.wasPlaying,
            "shuffle": q.shuffle, "repeat": q.repeatMode.rawValue, "single": q.single.rawValue, "consume": q.consume,
            "speed": snapshot.tempo.speed, "pitch": snapshot.tempo.pitchSemitones,
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        let put = try database.cached("INSERT INTO group_player (group_id, snapshot) VALUES (?, ?) ON CONFLICT(group_id) DO UPDATE SET snapshot = excluded.snapshot")
        try put.run([.text(group), .text(String(decoding: data, as: UTF8.self))])
    }

    /// A group's saved player state, nil if none (or unreadable: the group then starts empty).
    public func load(group: String, seed: UInt64) throws(LibraryError) -> PlayerSnapshot? {
        lock.lock(); defer { lock.unlock() }
        let rows = try database.query("SELECT snapshot FROM group_player WHERE group_id = ?", [.text(group)]) { (s) throws(LibraryError) in s.text(0) }
        guard let text = rows.first, let o = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let list = o["entries"] as? [[String: Any]] else { return nil }
        let entries = list.compactMap { e -> QueueEntry? in
            guard let id = e["id"] as? Int, let uri = e["uri"] as? String, id > 0, id <= Int(UInt32.max) else { return nil }
            return QueueEntry(id: UInt32(id), uri: uri)
        }
        let currentID = (o["current"] as? Int).flatMap { UInt32(exactly: $0) }
        let current = currentID.flatMap { id in entries.firstIndex { $0.id == id } }
        let queue = PlayQueue(entries: entries, order: o["order"] as? [Int] ?? [], current: current, shuffle: o["shuffle"] as? Bool ?? false,
                              repeatMode: RepeatMode(rawValue: o["repeat"] as? String ?? "off") ?? .off,
                              single: SingleMode(rawValue: o["single"] as? String ?? "off") ?? .off,
                              consume: o["consume"] as? Bool ?? false, seed: seed)
        return PlayerSnapshot(queue: queue, entryID: current == nil ? nil : currentID,
                              positionMilliseconds: Int64(o["positionMs"] as? Int ?? 0), wasPlaying: o["playing"] as? Bool ?? false,
                              tempo: Self.tempo(speed: o["speed"] as? Double, pitch: o["pitch"] as? Double))
    }

    public func forget(group: String) throws(LibraryError) {
        lock.lock(); defer { lock.unlock() }
        _ = try database.run("DELETE FROM group_player WHERE group_id = ?", [.text(group)])
    }

    /// Saves the groups and which room is in which (each group's player state is saved on its own).
    public func saveGroups(_ table: RoomGroups) throws(LibraryError) {
        lock.lock(); defer { lock.unlock() }
        let object: [String: Any] = [
            "groups": table.groups.map { ["id": $0.id, "name": $0.name] },
            "assignment": table.assignment,
            "beforeParty": table.beforeParty ?? NSNull(),
            "partyGroup": table.partyGroup ?? NSNull(),
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
              let text = String(data: data, encoding: .utf8) else { return }
        let put = try database.cached("INSERT INTO player (key, value) VALUES ('groups', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
        try put.run([.text(text)])
    }

    /// The saved groups, or nil if none were saved (or the record is unreadable).
    public func loadGroups() throws(LibraryError) -> RoomGroups? {
        lock.lock(); defer { lock.unlock() }
        let rows = try database.query("SELECT value FROM player WHERE key = 'groups'") { (s) throws(LibraryError) in s.text(0) }
        guard let text = rows.first, let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let list = object["groups"] as? [[String: String]] else { return nil }
        let groups = list.compactMap { g in g["id"].flatMap { id in g["name"].map { RoomGroups.Group(id: id, name: $0) } } }
        return RoomGroups(groups: groups, assignment: object["assignment"] as? [String: String] ?? [:],
                          beforeParty: object["beforeParty"] as? [String: String], partyGroup: object["partyGroup"] as? String)
    }

    /// The saved state, or nil if nothing was saved yet.
    public func load(seed: UInt64) throws(LibraryError) -> PlayerSnapshot? {
        lock.lock(); defer { lock.unlock() }
        let rows = try database.query("SELECT position, id, uri, play_rank FROM queue ORDER BY position") { (s) throws(LibraryError) in
            (Int(s.int(0)), UInt32(clamping: s.int(1)), s.text(2), Int(s.int(3)))
        }
        var values: [String: String] = [:]
        for (k, v) in try database.query("SELECT key, value FROM player WHERE key != 'groups'", row: { (s) throws(LibraryError) in (s.text(0), s.text(1)) }) { values[k] = v }
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
}
