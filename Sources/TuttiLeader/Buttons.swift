import FoundationEssentials
import TuttiCore
import TuttiGestures
import TuttiInput
import TuttiLibrary
import TuttiControlKit

extension Leader {
    /// What a button does, on the leader's own buttons (`room` nil: the main
    /// group and its rooms) or on a follower's (that room's group; volume
    /// and mute act on that room only).
    public func handle(_ command: ButtonCommand, room: String?) {
        let group = room.map { self.group(ofRoom: $0).id } ?? RoomGroups.mainID
        let rooms = room.map { [$0] } ?? knownRooms.filter { self.group(ofRoom: $0).id == RoomGroups.mainID }
        do {
            let now = try nowPlaying(group: group)
            switch command {
            case .play: _ = try perform(.play, group: group)
            case .pause: _ = try perform(.pause, group: group)
            case .toggle: _ = try perform(.toggle, group: group)
            case .stop: _ = try perform(.stop, group: group)
            case .next: _ = try perform(.next, group: group)
            case .prev: _ = try perform(.previous, group: group)
            case .shuffle: _ = try perform(.shuffle(!now.shuffle), group: group)
            case .repeat: _ = try perform(.repeatMode(now.repeatMode.next), group: group)
            case .volumeUp, .volumeDown:
                for name in rooms {
                    var s = settings(of: name)
                    let step = command == .volumeUp ? 5 : -5
                    s.volume = UInt8(max(0, min(100, Int(s.volume) + step)))
                    s.muted = false
                    configure(room: name, s)
                }
            case .mute:
                for name in rooms {
                    var s = settings(of: name)
                    s.muted.toggle()
                    configure(room: name, s)
                }
            case .eq:
                // Every room steps to the preset after the first room's, so they stay alike.
                guard let first = rooms.first else { return }
                let next = EqualizerPreset.next(after: equalizer(of: first).preset, custom: customPresets.withLock { $0 })
                for name in rooms { _ = try? setPreset(room: name, next.name) }
                log.info("EQ preset \(next.name) in \(rooms.joined(separator: ", "))")
            case .like:
                guard let library, let track = try library.track(atPath: now.path) else { return }
                try library.like(track.id)
            case .party:
                // One press: every room joins this room's group; again: back to where they were.
                if partyActive { partyOff() } else { _ = try partyOn(group: group) }
            }
        } catch {
            log.warning("button \(command)\(room.map { " in \($0)" } ?? ""): \(error)")
        }
    }
}

extension Leader {
    /// A speaker's room action from the desk (`RoomCommandDesk`), on its thread.
    func perform(_ action: RoomAction, room: String) {
        switch action {
        case .once(let command): handle(command, room: room)
        case .skip(let n):
            for _ in 0..<abs(n) { handle(n > 0 ? .next : .prev, room: room) }
        case .toggle(let command, let presses), .cycle(let command, let presses):
            for _ in 0..<presses { handle(command, room: room) }
        case .volume(let steps):
            // As `steps` presses of vol+/vol-, in one change.
            var s = settings(of: room)
            s.volume = UInt8(max(0, min(100, Int(s.volume) + 5 * steps)))
            s.muted = false
            configure(room: room, s)
        case .mixer(let volume, let muted):
            var s = settings(of: room)
            if let volume { s.volume = volume }
            if let muted { s.muted = muted }
            if s != settings(of: room) { configure(room: room, s) }
        }
    }
}
