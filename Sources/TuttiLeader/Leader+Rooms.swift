import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiTimeStretch
import TuttiAuth
import TuttiDiscovery
import TuttiLibrary
import TuttiNet
import TuttiStreams
import TuttiSystem
import TuttiControlKit

/// Rooms: their settings, balance within a group, and sessions.
extension Leader {
    // MARK: Rooms

    /// Sets a room's volume, mute and latency trim; applied at once if it is connected.
    /// A stereo pair is one room: its volume and mute reach both speakers.
    /// Set by the pair's name, a latency trim moves both speakers' trims by
    /// the same amount (the pair's shows its left speaker's), so the
    /// difference between them stays; set by a speaker's name, the trim is
    /// that speaker's alone.
    public func configure(room: String, _ settings: RoomSettings) {
        guard let pair = stereoPairs.withLock({ $0.pair(named: room) ?? $0.pair(containing: room) }) else {
            return configureSpeaker(room, settings)
        }
        let shift = room == pair.left || room == pair.right ? 0 : settings.latencyTrimNanoseconds - self.settings(ofSpeaker: pair.left).latencyTrimNanoseconds
        for speaker in pair.speakers {
            var s = speaker == room ? settings : self.settings(ofSpeaker: speaker)
            s.volume = settings.volume
            s.muted = settings.muted
            s.latencyTrimNanoseconds = min(max(s.latencyTrimNanoseconds + shift, -nanosecondsPerSecond), 5 * nanosecondsPerSecond)
            configureSpeaker(speaker, s)
        }
    }

    /// One speaker's settings, kept and sent.
    func configureSpeaker(_ room: String, _ settings: RoomSettings) {
        roomSettings.withLock { $0[room] = settings }
        markSoundDirty()
        let targets = sessions.withLock { $0.values.filter { $0.name == room } }
        let message = Message.settings(settings)
        let bytes = message.encoded()
        for session in targets { session.send(message, encoded: bytes) }
        events.emit(.mixer)
    }

    /// The rooms' balance for a group volume change: the one kept since the
    /// group's volume was last moved, while its rooms are the same, else
    /// their volumes now.
    public func balance(ofGroup group: String, rooms: [String]) -> [Double] {
        groupBalance.withLock { kept in
            if let b = kept[group], b.rooms == rooms { return b.balance }
            let volumes = rooms.map { settings(of: $0).volume }
            let b = GroupVolume.balance(of: volumes) ?? volumes.map { _ in 1 }
            kept[group] = (rooms, b)
            return b
        }
    }

    /// A room's own volume changed: its group's balance is what the rooms are at now.
    public func forgetBalance(ofGroup group: String) { groupBalance.withLock { _ = $0.removeValue(forKey: group) } }

    /// A room joined or was given settings: listed from now on, offline
    /// when its speaker is off. Past `SeenRooms.limit` names the oldest that
    /// nothing keeps is forgotten (a peer that joins under a new name each time).
    func remember(room: String) {
        var kept = Set(connectedSpeakers)
        kept.formUnion(roomSettings.withLock { $0.keys })
        kept.formUnion(roomEqualizers.withLock { $0.keys })
        kept.formUnion(roomChannels.withLock { $0.keys })
        kept.formUnion(roomReverbs.withLock { $0.keys })
        stereoPairs.withLock { for p in $0.pairs { kept.formUnion(p.speakers) } }
        grouping.withLock { t in
            kept.formUnion(t.assignment.keys)
            kept.formUnion(t.beforeParty?.keys.map { $0 } ?? [])
        }
        let forgotten = seenRooms.withLock { $0.saw(room, keeping: kept) }
        if !forgotten.isEmpty {
            log.info("forgot \(forgotten.count) offline room(s) with no settings, oldest first \(forgotten[0]): more than \(SeenRooms.defaultLimit) names")
        }
    }

    /// Forgets a room that is gone (Snapcast's Server.DeleteClient): its settings, and its place in a group.
    /// A stereo pair's name forgets the pair and both its speakers; a pair
    /// speaker's name ends its pair and forgets that speaker alone.
    public func forget(room: String) {
        let ended = stereoPairs.withLock { t -> StereoPair? in try? t.unpair(room) }
        let speakers = ended.map { $0.side(of: room) == nil ? $0.speakers : [room] } ?? [room]
        if let ended {
            // The other speaker stays, a room of its own again.
            for s in ended.speakers where !speakers.contains(s) { sendChannels(toSpeaker: s) }
            markSoundDirty()
        }
        for speaker in speakers {
            roomSettings.withLock { _ = $0.removeValue(forKey: speaker) }
            roomChannels.withLock { _ = $0.removeValue(forKey: speaker) }
            roomReverbs.withLock { _ = $0.removeValue(forKey: speaker) }
            seenRooms.withLock { $0.forget(speaker) }
            groupChanges.withLock { grouping.withLock { _ = try? $0.move(room: speaker, to: RoomGroups.mainID) } }
        }
        events.emit(.rooms)
    }

    /// A room's settings (a stereo pair's, by its name: its left speaker's;
    /// volume and mute are the same on both, the latency trim is each speaker's).
    public func settings(of room: String) -> RoomSettings {
        settings(ofSpeaker: stereoPairs.withLock { $0.pair(named: room)?.left } ?? room)
    }

    /// One speaker's own settings.
    func settings(ofSpeaker speaker: String) -> RoomSettings {
        roomSettings.withLock { $0[speaker] } ?? RoomSettings()
    }

    /// The speakers a setting on `room` reaches: a stereo pair's two (by its name or either speaker's), else the room.
    func speakers(of room: String) -> [String] { stereoPairs.withLock { $0.speakers(of: room) } }

    /// Records a room's settings without sending them (a joining room gets them after its welcome).
    func storeSettings(_ settings: RoomSettings, room: String) {
        roomSettings.withLock { $0[room] = settings }
        markSoundDirty()
        events.emit(.mixer)
    }

    /// Whether a room has settings of its own yet (a room never seen has none).
    func hasSettings(_ room: String) -> Bool { roomSettings.withLock { $0[room] != nil } }

    /// Every room's settings, for saving.
    var allRoomSettings: [String: RoomSettings] { roomSettings.withLock { $0 } }

    /// The sessions of a room (usually one).
    func sessions(ofRoom room: String) -> [FollowerSession] { sessions.withLock { $0.values.filter { $0.name == room } } }
}
