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
    public func configure(room: String, _ settings: RoomSettings) {
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

    /// Forgets a room that is gone (Snapcast's Server.DeleteClient): its settings, and its place in a group.
    public func forget(room: String) {
        roomSettings.withLock { _ = $0.removeValue(forKey: room) }
        seenRooms.withLock { _ = $0.remove(room) }
        groupChanges.withLock { grouping.withLock { _ = try? $0.move(room: room, to: RoomGroups.mainID) } }
        events.emit(.rooms)
    }

    public func settings(of room: String) -> RoomSettings {
        roomSettings.withLock { $0[room] } ?? RoomSettings()
    }

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
