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

/// One group's stream: its player, and its chunks still ahead for rooms that join.
// Sendable because `player` is set once before the stream is shared, `lastHeard` and `heard` belong to the heard-watcher thread, and the backlog is under a Mutex.
final class LeaderStream: @unchecked Sendable {
    let id: UInt32
    /// The group it belongs to.
    let group: String
    /// How far ahead its commands take effect: grows while one of its rooms' streams delivers late (v6 reports).
    let commandLead: LiveCommandLead
    var player: StreamPlayer!
    /// Chunks whose PTS is still ahead, for followers that join mid-stream.
    let backlog = Mutex<[(pts: LeaderTime, message: Message, bytes: [UInt8])]>([])
    // Used by the leader's heard-watcher thread only.
    var lastHeard: (PlayerState, UInt32?)?
    var heard = PlayHistoryTracker()
    private let started = Atomic<Bool>(false)

    init(id: UInt32, group: String, commandLead: LiveCommandLead) { self.id = id; self.group = group; self.commandLead = commandLead }

    /// Starts the source thread (once). Throws when the system refuses it
    /// (a group made by a request fails, it never ends the leader).
    func start(in threads: ThreadGroup) throws(ThreadError) {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // The decoders, the resampler, the time stretcher and the encoder run on it: a roomy stack.
        do { try threads.start(name: "tutti-source", stackSize: 2 << 20) { [player] in player!.run() } } catch {
            started.store(false, ordering: .releasing)
            throw error
        }
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

/// A group's command lead in force, read by its player and by room moves
/// into it; written when its rooms report their stream delay (`CommandLead`).
/// Per group: a room on a poor link slows only its own group's commands.
public final class LiveCommandLead: Sendable {
    let policy: CommandLead
    private let current: Atomic<Int64>
    /// The lead last written to the log, and when (rate-limit the line).
    let lastLogged: Atomic<Int64>
    let lastLoggedAt = Atomic<Int64>(.min / 2)

    /// The configured start latency (at most the buffer), up to half the buffer (at most 500 ms) while a stream delivers late.
    init(_ configuration: LeaderConfiguration) {
        let base = Int64(min(configuration.startLatencyMilliseconds, configuration.bufferMilliseconds)) * nanosecondsPerMillisecond
        let buffer = Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond
        policy = CommandLead(base: base, ceiling: min(buffer / 2, 500 * nanosecondsPerMillisecond))
        current = Atomic(base)
        lastLogged = Atomic(base)
    }

    public var nanoseconds: Int64 { current.load(ordering: .relaxed) }
    func set(_ lead: Int64) { current.store(lead, ordering: .relaxed) }
}
