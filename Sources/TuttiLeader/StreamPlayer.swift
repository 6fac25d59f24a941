import Dispatch
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTimeStretch
import TuttiStreams
import TuttiControlKit

/// Decodes the play list and turns it into stamped, encoded chunks on one
/// 48 kHz grid, reacting to transport commands.
///
/// Runs on its own thread (`run`). New audio is scheduled `startLatency`
/// ahead and chunks are sent `buffer` ahead of their PTS, so after any
/// start the leader bursts until followers hold the full buffer. Commands
/// that cut the audio (pause, skip, seek) pick one flush point a start
/// latency ahead, tell every follower to drop what they hold from there,
/// and carry on from that point on the same grid.
///
/// This file holds its state and the mailbox; the work is in extensions by
/// what it does: `StreamPlayer+Pacing` (the source thread's loop and
/// chunks), `+Decoding` (entries to 48 kHz audio), `+Transport` (what a
/// command does, and when) and `+Status` (what rooms hear, for any thread).
/// The source-thread state is internal only so those files can reach it:
/// nothing outside them touches it.
// Sendable because the decoding state (the `var`s) is used only by the source thread; commands arrive through the `mailbox` Mutex, results leave through `published`, and `onHeardChangeMoved` is set before the thread starts.
final class StreamPlayer: @unchecked Sendable {
    /// Sends messages (each with the PTS from which it matters) to every
    /// room of the stream, together: one write per room.
    typealias Broadcast = @Sendable ([(Message, LeaderTime)]) -> Void
    typealias Purge = @Sendable (LeaderTime) -> Void

    let configuration: LeaderConfiguration
    let streamID: UInt32
    let log: Logger
    let broadcast: Broadcast
    let purge: Purge

    // Mailbox.
    struct Request { var command: PlayerCommand; var reply: Reply }
    // Sendable because `result` is written by the source thread before `done.signal()` and read by the caller only after `done.wait()`.
    final class Reply: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var result: Result<CommandOutcome, PlayerError> = .failure(.busy)
    }
    let mailbox = Mutex<[Request]>([])
    let wake = DispatchSemaphore(value: 0)
    let running = Atomic<Bool>(true)
    let endedAtomic = Atomic<Bool>(false)

    // Published for status (read by any thread).
    struct Published {
        var state = PlayerState.playing
        var segments: [Segment] = []
        var pausedAt = TrackPosition(track: 0, frame: 0)
        var durations: [UInt32: Double] = [:]
        var epoch = LeaderTime(nanoseconds: 0)
        var queue = PlayQueue()
        var error: String?
        /// Waiting for a network source with nothing sent to cover it yet.
        var starved: PlayerState?
        /// The network source being decoded: its entry, seconds decoded but not yet sent, its progress.
        var network: (track: UInt32, pendingSeconds: Double, progress: BackgroundSource.Progress)?
        /// After the list ended: the grid frame up to which its tail is still being heard.
        var tailUntil: Int?
        var tempo = PlaybackTempo.normal
    }
    let published = Mutex(Published())

    typealias Segment = StreamSegment

    // Source-thread state.
    let framesPerChunk: Int
    /// How far ahead new audio and commands are scheduled: the leader's command lead (it grows while a room's stream delivers late).
    var startLatency: Int64 { commandLead.nanoseconds }
    let commandLead: LiveCommandLead
    let buffer: Int64
    var epoch = LeaderTime(nanoseconds: 0)
    /// The queue, the state and which stream frames are which entry's: the
    /// transport rules (TuttiCore) own them; the names below reach into it.
    var transport: Transport
    var streamFrame: Int { get { transport.timeline.streamFrame } set { transport.timeline.streamFrame = newValue } } // grid index of the next frame to send
    var state: PlayerState { get { transport.state } set { transport.state = newValue } }
    var queue: PlayQueue { get { transport.queue } _modify { yield &transport.queue } }
    var tempo: PlaybackTempo { transport.tempo }
    var track: UInt32 { get { transport.timeline.decoding.track } set { transport.timeline.decoding.track = newValue } } // entry id being decoded
    var trackFrame: Int { get { transport.timeline.decoding.frame } set { transport.timeline.decoding.frame = newValue } } // 48 kHz frames of it already in `pending`
    var pendingSegments: [Segment] { get { transport.timeline.pending } _modify { yield &transport.timeline.pending } } // stream positions assigned when sent
    var encoder: (any ChunkEncoder)?
    var codecDelay: Int64 = 0
    var sequence: UInt64 = 0
    var decoder: (any AudioDecoder)?
    var resampler: SoxrResampler?
    /// The run of audio being decoded: from track frame `runOrigin`, `runFrames` stream frames so far (at `tempo.speed`).
    var runOrigin = 0, runFrames = 0
    var stretcher: TimeStretcher?
    var pending: [Float] = []
    var fadeIn = 0                 // frames of fade-in still to apply
    var endOfList = false
    var decoded: [Float] = []
    /// A network source opening or decoding on its own thread; closed when replaced.
    var background: BackgroundSource? {
        didSet { if let old = oldValue, old !== background { old.close() } }
    }
    /// The background source has delivered audio (before that it is loading).
    var backgroundStarted = false
    /// The next frames of a real-time source go a buffer ahead (`leadRealTimeSource`):
    /// at its start, and after it starved.
    var realTimeLeadDue = false
    /// Set by `fillPending` when a network source had no audio for it.
    var starvedPhase: PlayerPhase?
    /// Failures in a row, to stop trying when every entry fails.
    var consecutiveFailures = 0

    let restored: PlayerSnapshot?
    /// Opens a queue entry: a local file or a network stream.
    /// `(uri, startFrame at 48 kHz)`: a ready decoder (the player seeks it)
    /// or a background source already starting there.
    typealias Opener = @Sendable (String, Int) throws -> SourceOpener.Opened
    let opener: Opener
    /// The media folder a local path lies in, when that folder is gone or
    /// empty (a USB disk unplugged); nil when the file's absence is its own.
    typealias FolderCheck = @Sendable (String) -> String?
    let unavailableFolder: FolderCheck
    /// Playback stopped because `folder` went away: where to go on from, and
    /// when it was last looked for. A user's command clears it.
    var awaitingFolder: (folder: String, position: TrackPosition, checkedAt: Int64)?

    /// The leader's 48 kHz grid: the epoch is a whole number of frames from it.
    let gridOrigin: LeaderTime

    init(configuration: LeaderConfiguration, streamID: UInt32, gridOrigin: LeaderTime, log: Logger, restoring snapshot: PlayerSnapshot? = nil,
         commandLead: LiveCommandLead? = nil,
         opener: @escaping Opener = { path, _ in .ready(try AudioFile.open(path)) },
         unavailableFolder: @escaping FolderCheck = { _ in nil },
         broadcast: @escaping Broadcast, purge: @escaping Purge) {
        self.opener = opener
        self.unavailableFolder = unavailableFolder
        self.configuration = configuration
        self.streamID = streamID
        self.gridOrigin = gridOrigin
        self.log = log
        self.broadcast = broadcast
        self.purge = purge
        framesPerChunk = configuration.framesPerChunk
        self.commandLead = commandLead ?? LiveCommandLead(configuration)
        buffer = Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond
        restored = snapshot
        if let snapshot {
            transport = Transport(queue: snapshot.queue)
            transport.tempo = snapshot.tempo
        } else {
            var queue = PlayQueue(seed: UInt64(streamID))
            _ = queue.add(configuration.files)
            if configuration.loop { queue.repeatMode = .all }
            transport = Transport(queue: queue)
        }
        // What status shows before the source thread runs: the queue, and stopped
        // (nothing to play) or paused where the saved state left off.
        let initial = transport.queue
        let initialTempo = transport.tempo
        published.withLock { p in
            p.queue = initial
            p.tempo = initialTempo
            if initial.isEmpty { p.state = .stopped }
            if let snapshot, !initial.isEmpty {
                p.state = .paused
                let id = snapshot.entryID ?? initial.entries[initial.order.first ?? 0].id
                // Saturating: a damaged save's number must not trap (a seek's is clamped the same way).
                let seconds = min(Double(snapshot.positionMilliseconds) / 1000, PlayerCommand.maximumSeconds)
                p.pausedAt = TrackPosition(track: id, frame: max(0, StreamFormat.frames(seconds: seconds)))
            }
        }
        transport.pausedAt = published.withLock { $0.pausedAt }
    }

    /// When the heard-watcher next wakes by itself (Int64.max: not before a signal); it sets this.
    let heardWatchDeadline = Atomic<Int64>(0)
    /// Called when a heard change comes sooner than `heardWatchDeadline` (on the source thread: must not block).
    var onHeardChangeMoved: (@Sendable () -> Void)?

    // MARK: Mailbox (any thread → the source thread)

    /// The state to save: the queue, what is heard and where.
    func snapshot() -> PlayerSnapshot {
        let now = nowPlaying()
        let queue = queueSnapshot
        return PlayerSnapshot(queue: queue, entryID: now.entryID, positionMilliseconds: Int64(now.positionSeconds * 1000),
                              wasPlaying: now.state.isActive, tempo: PlaybackTempo(speed: now.speed, pitchSemitones: now.pitchSemitones))
    }

    /// The queue as the source thread last published it.
    var queueSnapshot: PlayQueue { published.withLock { $0.queue } }

    /// True once the play list has played out (never with `loop`).
    var ended: Bool { endedAtomic.load(ordering: .acquiring) }

    func stop() {
        running.store(false, ordering: .releasing)
        wake.signal()
    }

    /// Hands a command to the source thread and waits for its outcome. Its
    /// numbers are checked here, before anything is queued
    /// (`PlayerCommand.checked`; `Transport` checks them again).
    func submit(_ command: PlayerCommand) throws(PlayerError) -> CommandOutcome {
        let command = try command.checked().get()
        let reply = Reply()
        mailbox.withLock { $0.append(Request(command: command, reply: reply)) }
        // A player that is stopping takes no more commands: a command queued
        // as its thread ends is taken back here, or failed by that thread
        // (`failWaitingCommands`), never left to time out.
        if !running.load(ordering: .acquiring) {
            let takenBack = mailbox.withLock { box in
                guard let i = box.firstIndex(where: { $0.reply === reply }) else { return false }
                box.remove(at: i)
                return true
            }
            if takenBack { throw .busy }
        }
        wake.signal()
        guard reply.done.wait(timeout: .now() + .seconds(3)) == .success else { throw .busy }
        return try reply.result.get()
    }

    /// The source thread is ending: commands still waiting are refused at once.
    func failWaitingCommands() {
        for request in mailbox.withLock({ box in defer { box.removeAll() }; return box }) {
            request.reply.result = .failure(.busy)
            request.reply.done.signal()
        }
    }

    func handleCommands() {
        let requests = mailbox.withLock { box -> [Request] in defer { box.removeAll() }; return box }
        for request in requests {
            request.reply.result = apply(request.command)
            request.reply.done.signal()
        }
    }
}
