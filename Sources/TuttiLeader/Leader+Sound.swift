import FoundationEssentials
import Synchronization
import TuttiCore
import TuttiLibrary
import TuttiControlKit

/// A group volume or mute asked for while the group had no room: kept, and
/// given to each room that joins it.
struct KeptGroupSound: Sendable {
    var volume: UInt8?
    var muted: Bool?
}

/// Each room's sound, set at the leader and applied on its speaker: the
/// equaliser (presets, custom gains), group volume and mute.
extension Leader {
    // MARK: Equaliser

    /// A room's equaliser (a stereo pair's: its left speaker's, which its right one shares).
    public func equalizer(of room: String) -> RoomEqualizer {
        let speaker = speakers(of: room)[0]
        return roomEqualizers.withLock { $0[speaker] } ?? RoomEqualizer()
    }

    /// Sets a room's equaliser; sent at once to its speaker (protocol v3),
    /// saved, and sent again whenever it reconnects. A stereo pair's (by
    /// its name or either speaker's) goes to both its speakers.
    public func setEqualizer(room: String, _ eq: RoomEqualizer) {
        for speaker in speakers(of: room) { setSpeakerEqualizer(speaker, eq) }
        events.emit(.mixer)
    }

    /// One speaker's equaliser, kept and sent.
    func setSpeakerEqualizer(_ room: String, _ eq: RoomEqualizer) {
        roomEqualizers.withLock { $0[room] = eq }
        markSoundDirty()
        remember(room: room)
        let message = Message.equalizer(eq.settings)
        let bytes = message.encoded()
        for session in sessions(ofRoom: room) {
            if session.dialect == .snapcast {
                log.warning("room \(room) is a snapclient: it has no EQ; its EQ is kept for a Tutti speaker")
            } else if session.dialect == .surface {
                if session.surfaceRoom?.playsRoomSound == true {
                    session.send(message, encoded: bytes)
                } else {
                    log.warning("room \(room) is a Sendspin player: it has no EQ; its EQ is kept for a Tutti speaker")
                }
            } else if session.version >= WireProtocol.equalizerVersion {
                session.send(message, encoded: bytes)
            } else {
                log.warning("room \(room) speaks protocol v\(session.version): its EQ is kept but not heard until its tutti is updated")
            }
        }
    }

    /// A preset's settings, keeping the room's shelves and preamp choice.
    public func setPreset(room: String, _ name: String) throws(EqualizerError) -> RoomEqualizer {
        guard let preset = EqualizerPreset.find(name, custom: presets.filter { !$0.builtIn }) else {
            throw .unknownPreset(name, known: presets.map(\.name))
        }
        let old = equalizer(of: room).settings
        let settings = try EqualizerSettings(gains: preset.gains, bass: old.bass, treble: old.treble, preamp: old.preamp)
        let eq = RoomEqualizer(settings: settings, preset: preset.name)
        setEqualizer(room: room, eq)
        return eq
    }

    /// Built-in presets, then the saved ones.
    public var presets: [EqualizerPreset] { EqualizerPreset.builtIn + customPresets.withLock { $0 } }

    /// Saves (or replaces) a custom preset; built-in names are taken.
    public func savePreset(_ name: String, gains: [Double]) throws(EqualizerError) -> EqualizerPreset {
        let name = name.trimmingSpaces
        guard !name.isEmpty, name.utf8.count <= 64 else { throw .badPresetName(name) }
        guard !EqualizerPreset.builtIn.contains(where: { $0.name.lowercased() == name.lowercased() }) else { throw .builtInPreset(name) }
        let preset = EqualizerPreset(name: name, gains: try EqualizerSettings(gains: gains).gains)
        customPresets.withLock { list in
            list.removeAll { $0.name.lowercased() == name.lowercased() }
            list.append(preset)
            list.sort { $0.name.lowercased() < $1.name.lowercased() }
        }
        markSoundDirty()
        events.emit(.mixer)
        return preset
    }

    /// Deletes a custom preset; rooms using it keep its gains (shown as custom).
    public func deletePreset(_ name: String) throws(EqualizerError) {
        let key = name.lowercased()
        if EqualizerPreset.builtIn.contains(where: { $0.name.lowercased() == key }) { throw .builtInPreset(name) }
        let removed = customPresets.withLock { list -> Bool in
            let before = list.count
            list.removeAll { $0.name.lowercased() == key }
            return list.count != before
        }
        guard removed else { throw .unknownPreset(name, known: presets.map(\.name)) }
        roomEqualizers.withLock { all in
            for (room, eq) in all where eq.preset?.lowercased() == key { all[room]?.preset = nil }
        }
        markSoundDirty()
        events.emit(.mixer)
    }

    func saveSound(to store: PlayerStateStore) {
        let settings = allRoomSettings
        let eqs = roomEqualizers.withLock { $0 }
        let channels = roomChannels.withLock { $0 }
        let reverbs = roomReverbs.withLock { $0 }
        var rooms: [String: PlayerStateStore.RoomSound] = [:]
        for room in Set(settings.keys).union(eqs.keys).union(channels.keys).union(reverbs.keys) {
            let eq = eqs[room] ?? RoomEqualizer()
            rooms[room] = .init(settings: settings[room] ?? RoomSettings(), equalizer: eq.settings, preset: eq.preset,
                                channels: channels[room] ?? .stereo, reverb: reverbs[room] ?? .off)
        }
        do {
            try store.saveRooms(rooms)
            try store.savePairs(stereoPairs.withLock { $0 })
            try store.savePresets(customPresets.withLock { $0 })
            recordSave(nil)
        } catch {
            soundDirty.store(true, ordering: .releasing) // tried again a second later (`checkpointLoop`)
            recordSave(error)
        }
    }

    // MARK: Group volume and mute

    /// The group's volume: its loudest room's, or the one kept for it while it has no rooms.
    public func volume(ofGroup id: String) -> UInt8? {
        let rooms = groups.first { $0.id == id }?.rooms ?? []
        if rooms.isEmpty { return keptGroupSound.withLock { $0[id]?.volume } }
        return GroupVolume.of(rooms.map { settings(of: $0).volume })
    }

    /// Muted when every room is (or as kept while it has none).
    public func muted(group id: String) -> Bool {
        let rooms = groups.first { $0.id == id }?.rooms ?? []
        if rooms.isEmpty { return keptGroupSound.withLock { $0[id]?.muted } ?? false }
        return rooms.allSatisfy { settings(of: $0).muted }
    }

    /// Sets a group's volume keeping its rooms' balance (see `GroupVolume`);
    /// with no rooms yet, the volume is kept and given to rooms as they join.
    /// Returns the rooms changed.
    @discardableResult
    public func setVolume(group id: String, _ volume: UInt8) -> [String] {
        let rooms = groups.first { $0.id == id }?.rooms ?? []
        guard !rooms.isEmpty else {
            keptGroupSound.withLock { $0[id, default: KeptGroupSound()].volume = min(volume, 100) }
            events.emit(.mixer)
            return []
        }
        keptGroupSound.withLock { _ = $0.removeValue(forKey: id) }
        let volumes = GroupVolume.scaled(balance: balance(ofGroup: id, rooms: rooms), to: volume)
        for (room, v) in zip(rooms, volumes) {
            var s = settings(of: room)
            s.volume = v
            configure(room: room, s)
        }
        return rooms
    }

    /// Mutes or unmutes every room of a group (each fades on its speaker); kept likewise without rooms.
    @discardableResult
    public func setMuted(group id: String, _ muted: Bool) -> [String] {
        let rooms = groups.first { $0.id == id }?.rooms ?? []
        guard !rooms.isEmpty else {
            keptGroupSound.withLock { $0[id, default: KeptGroupSound()].muted = muted }
            events.emit(.mixer)
            return []
        }
        for room in rooms {
            var s = settings(of: room)
            s.muted = muted
            configure(room: room, s)
        }
        return rooms
    }

    /// A room joining: a volume or mute kept for its group while it had no
    /// rooms is applied to it (before its settings are sent).
    func applyKeptGroupSound(toJoining room: String) {
        let id = group(ofRoom: room).id
        guard let kept = keptGroupSound.withLock({ $0[id] }) else { return }
        var s = settings(ofSpeaker: room)
        if let v = kept.volume { s.volume = v }
        if let m = kept.muted { s.muted = m }
        storeSettings(s, room: room)
    }
}
