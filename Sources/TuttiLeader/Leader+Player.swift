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

/// Transport and queue commands, routed to a group's stream; now playing.
extension Leader {
    // MARK: Player

    /// Transport commands (pause, skip, seek …) on a group's stream (nil:
    /// the main group); see `StreamPlayer`.
    public func perform(_ command: PlayerCommand, group: String? = nil) throws(PlayerError) -> CommandOutcome {
        let stream = try self.stream(forGroup: group)
        // A phone holds the group: pause, play, skip go back to it (DACP).
        if let airplay, case let now = stream.player.nowPlaying(), airplay.forward(command, group: stream.group, playing: now.path) {
            let at = Monotonic.now()
            return CommandOutcome(acceptedAt: at, effectiveAt: at, state: now.state, track: now.track)
        }
        let outcome = try stream.player.submit(command)
        guard stream.group == RoomGroups.mainID else { events.emit(.groups); return outcome }
        switch command {
        case .add, .remove, .move, .clear, .cue, .uncue: events.emit(.queue); events.emit(.player)
        case .shuffle: events.emit(.options); events.emit(.queue)
        case .repeatMode, .single, .consume: events.emit(.options)
        case .removeEntry: events.emit(.queue); events.emit(.player)
        default: events.emit(.player)
        }
        return outcome
    }

    /// A group's stream, by group id or name (nil: the main group).
    func stream(forGroup group: String?) throws(PlayerError) -> LeaderStream {
        guard let group else { return mainStream }
        let found = grouping.withLock { $0.group(group) }.flatMap { g in streams.withLock { $0[g.id] } }
        guard let found else {
            throw .invalid(GroupError.unknownGroup(group, known: grouping.withLock { $0.groups.map(\.name) }).message)
        }
        return found
    }

    public var nowPlaying: NowPlaying { mainStream.player.nowPlaying() }

    public func nowPlaying(group: String?) throws(PlayerError) -> NowPlaying { try stream(forGroup: group).player.nowPlaying() }

    public func queue(group: String?) throws(PlayerError) -> PlayQueue { try stream(forGroup: group).player.queueSnapshot }

    /// Station and now-playing title of a network stream (ICY), if it sent any.
    public func metadata(ofStream uri: String) -> StreamMetadata? { streamMetadata.get(uri) }

    /// The stream's queue as of the last change.
    public var queue: PlayQueue { mainStream.player.queueSnapshot }

    /// After a scan: queue entries whose local file is gone leave the queue, with a log line.
    public func dropMissingFilesFromQueue() {
        let entries = queue.entries
        for (index, entry) in entries.enumerated().reversed() where entry.uri.hasPrefix("/") && !FileManager.default.fileExists(atPath: entry.uri)
            && Self.unavailableFolder(of: entry.uri, in: mediaFolders) == nil { // a folder that is gone for now keeps its entries
            log.info("\(entry.uri) no longer exists: removed from the queue")
            _ = try? perform(.remove(index: index))
        }
    }
}
