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

/// One group's stream: its player, and its chunks still ahead for rooms that join.
// Sendable because `player` is set once before the stream is shared, `lastHeard` and `heard` belong to the heard-watcher thread, and the backlog is under a Mutex.
final class LeaderStream: @unchecked Sendable {
    let id: UInt32
    /// The group it belongs to.
    let group: String
    var player: StreamPlayer!
    /// Chunks whose PTS is still ahead, for followers that join mid-stream.
    let backlog = Mutex<[(pts: LeaderTime, message: Message, bytes: [UInt8])]>([])
    // Used by the leader's heard-watcher thread only.
    var lastHeard: (PlayerState, UInt32?)?
    var heard = PlayHistoryTracker()
    private let started = Atomic<Bool>(false)

    init(id: UInt32, group: String) { self.id = id; self.group = group }

    /// Starts the source thread (once).
    func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // The decoders, the resampler, the time stretcher and the encoder run on it: a roomy stack.
        startThread(name: "tutti-source", stackSize: 2 << 20) { [player] in player!.run() }
    }
}

/// The latest ICY metadata of each stream URL (bounded: streams come and go).
final class StreamMetadataBoard: Sendable {
    private let values = Mutex<[String: StreamMetadata]>([:])
    func set(_ metadata: StreamMetadata, for uri: String) {
        values.withLock { v in
            if v.count > 256 { v.removeAll() }
            v[uri] = metadata
        }
    }
    func get(_ uri: String) -> StreamMetadata? { values.withLock { $0[uri] } }
}
