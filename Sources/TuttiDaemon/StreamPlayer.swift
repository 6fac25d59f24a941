import Dispatch
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTimeStretch
import TuttiStreams

/// Transport and queue commands, from any control surface.
public enum PlayerCommand: Sendable, Equatable {
    case play, pause, toggle, stop, next, previous
    /// Absolute position in the current track, seconds.
    case seek(seconds: Double)
    /// Relative to the position now heard, seconds.
    case seekBy(seconds: Double)
    /// Play queue entry `index` (user order) from its start.
    case playIndex(Int)
    /// Appends (or, with `next`, inserts after the current entry).
    case add(uris: [String], next: Bool)
    case remove(index: Int)
    case move(from: Int, to: Int)
    case clear
    case shuffle(Bool)
    case repeatMode(RepeatMode)
    /// Stop after the current entry (once, or every time).
    case single(SingleMode)
    /// Entries leave the queue once played.
    case consume(Bool)
    /// Removes the entry with this id (ids survive edits; indexes do not).
    case removeEntry(id: UInt32)
    /// Playback speed, 0.5–2.0×, pitch kept (the group's, at the leader).
    case speed(Double)
    /// Pitch in semitones, ±12, speed kept.
    case pitch(semitones: Double)
}

/// What now-playing shows. The transport is one of playing, paused and
/// stopped; `loading` and `buffering` are "playing, but waiting for a network
/// source" (opening it, or starved mid-play: silence is heard), and `error`
/// is "stopped because the last track failed" (`NowPlaying.error` says why).
public enum PlayerState: String, Sendable {
    case playing, paused, stopped, loading, buffering, error

    /// The transport is playing (perhaps waiting for the network).
    public var isActive: Bool { self == .playing || self == .loading || self == .buffering }
}

/// What a command did and when every room hears it.
public struct CommandOutcome: Sendable, Equatable {
    /// Leader monotonic ns when the source took the command.
    public var acceptedAt: Int64
    /// Leader monotonic ns (a PTS) at which the change is heard everywhere.
    public var effectiveAt: Int64
    public var state: PlayerState
    public var track: Int
    /// Entry ids added by `.add`.
    public var added: [UInt32] = []
}

public struct NowPlaying: Sendable, Equatable {
    public var state: PlayerState
    /// Index in the queue (user order) of what is heard; -1 when none.
    public var track: Int
    public var entryID: UInt32?
    public var path: String
    public var positionSeconds: Double
    public var durationSeconds: Double?
    public var trackCount: Int
    public var shuffle: Bool
    public var repeatMode: RepeatMode
    public var single: SingleMode = .off
    public var consume = false
    /// The group's speed (track seconds per second heard) and pitch shift; positions stay in track time.
    public var speed = 1.0
    public var pitchSemitones = 0.0
    /// Why the last track failed (it names the URL or file); cleared by the next play command.
    public var error: String? = nil
    /// Network source: seconds of audio downloaded ahead of what is heard.
    public var bufferedSeconds: Double? = nil
    /// Finite network file: the share of it downloaded, 0…1.
    public var bufferedFraction: Double? = nil

    /// Nothing queued: nothing can play, whatever the transport last said
    /// (JSON-RPC shows `idle`, MPD `stop`).
    public var isIdle: Bool { trackCount == 0 }
}

public enum PlayerError: Error, CustomStringConvertible, Equatable {
    case invalid(String)
    case busy
    public var description: String {
        switch self {
        case .invalid(let what): what
        case .busy: "the player did not answer in time"
        }
    }
}

/// Decodes the play list and turns it into stamped, encoded chunks on one
/// 48 kHz grid, reacting to transport commands.
///
/// Runs on its own thread (`run`). New audio is scheduled `startLatency`
/// ahead and chunks are sent `buffer` ahead of their PTS, so after any
/// start the leader bursts until followers hold the full buffer. Commands
/// that cut the audio (pause, skip, seek) pick one flush point a start
/// latency ahead, tell every follower to drop what they hold from there,
/// and carry on from that point on the same grid.
extension PlayerState {
    init(_ phase: PlayerPhase) { self = phase == .loading ? .loading : .buffering }
}

// Sendable because the decoding state (the `var`s) is used only by the source thread; commands arrive through the `mailbox` Mutex, results leave through `published`, and `onHeardChangeMoved` is set before the thread starts.
final class StreamPlayer: @unchecked Sendable {
    typealias Broadcast = @Sendable (Message, LeaderTime) -> Void
    typealias Purge = @Sendable (LeaderTime) -> Void

    private let configuration: LeaderConfiguration
    private let streamID: UInt32
    private let log: Logger
    private let broadcast: Broadcast
    private let purge: Purge

    // Mailbox.
    private struct Request { var command: PlayerCommand; var reply: Reply }
    // Sendable because `result` is written by the source thread before `done.signal()` and read by the caller only after `done.wait()`.
    private final class Reply: @unchecked Sendable {
        let done = DispatchSemaphore(value: 0)
        var result: Result<CommandOutcome, PlayerError> = .failure(.busy)
    }
    private let mailbox = Mutex<[Request]>([])
    private let wake = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(true)
    private let endedAtomic = Atomic<Bool>(false)

    // Published for status (read by any thread).
    private struct Published {
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
    private let published = Mutex(Published())

    typealias Segment = StreamSegment
    struct TrackPosition: Equatable { var track: UInt32; var frame: Int }

    // Source-thread state.
    private let framesPerChunk: Int
    private let startLatency: Int64
    private let buffer: Int64
    private var epoch = LeaderTime(nanoseconds: 0)
    private var streamFrame = 0            // grid index of the next frame to send
    private var state = PlayerState.playing
    private var encoder: (any ChunkEncoder)?
    private var codecDelay: Int64 = 0
    private var sequence: UInt64 = 0
    private var decoder: (any AudioDecoder)?
    private var resampler: SoxrResampler?
    private var queue: PlayQueue
    private var track: UInt32 = 0          // entry id being decoded
    private var trackFrame = 0             // 48 kHz frames of it already in `pending`
    /// The run of audio being decoded: from track frame `runOrigin`, `runFrames` stream frames so far (at `tempo.speed`).
    private var runOrigin = 0, runFrames = 0
    private var tempo = PlaybackTempo.normal
    private var stretcher: TimeStretcher?
    private var pending: [Float] = []
    private var pendingSegments: [Segment] = []   // stream positions assigned when emitted
    private var history: [Segment] = []
    private var fadeIn = 0                 // frames of fade-in still to apply
    private var endOfList = false
    private var decoded: [Float] = []
    /// A network source opening or decoding on its own thread; closed when replaced.
    private var background: BackgroundSource? {
        didSet { if let old = oldValue, old !== background { old.close() } }
    }
    /// The background source has delivered audio (before that it is loading).
    private var backgroundStarted = false
    /// Set by `fillPending` when a network source had no audio for it.
    private var starvedPhase: PlayerPhase?
    /// Failures in a row, to stop trying when every entry fails.
    private var consecutiveFailures = 0

    private let restored: PlayerSnapshot?
    /// Opens a queue entry: a local file or a network stream.
    /// `(uri, startFrame at 48 kHz)`: a ready decoder (the player seeks it)
    /// or a background source already starting there.
    typealias Opener = @Sendable (String, Int) throws -> SourceOpener.Opened
    private let opener: Opener
    /// The media folder a local path lies in, when that folder is gone or
    /// empty (a USB disk unplugged); nil when the file's absence is its own.
    typealias FolderCheck = @Sendable (String) -> String?
    private let unavailableFolder: FolderCheck
    /// Playback stopped because `folder` went away: where to go on from, and
    /// when it was last looked for. A user's command clears it.
    private var awaitingFolder: (folder: String, position: TrackPosition, checkedAt: Int64)?

    /// The leader's 48 kHz grid: the epoch is a whole number of frames from it.
    private let gridOrigin: LeaderTime

    init(configuration: LeaderConfiguration, streamID: UInt32, gridOrigin: LeaderTime, log: Logger, restoring snapshot: PlayerSnapshot? = nil,
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
        startLatency = Int64(min(configuration.startLatencyMilliseconds, configuration.bufferMilliseconds)) * nanosecondsPerMillisecond
        buffer = Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond
        restored = snapshot
        if let snapshot {
            queue = snapshot.queue
            tempo = snapshot.tempo
        } else {
            queue = PlayQueue(seed: UInt64(streamID))
            queue.add(configuration.files)
            if configuration.loop { queue.repeatMode = .all }
        }
        // What status shows before the source thread runs: the queue, and stopped
        // (nothing to play) or paused where the saved state left off.
        let initial = queue
        let initialTempo = tempo
        published.withLock { p in
            p.queue = initial
            p.tempo = initialTempo
            if initial.isEmpty { p.state = .stopped }
            if let snapshot, !initial.isEmpty {
                p.state = .paused
                let id = snapshot.entryID ?? initial.entries[initial.order.first ?? 0].id
                p.pausedAt = TrackPosition(track: id, frame: max(0, Int(snapshot.positionMilliseconds) * StreamFormat.sampleRate / 1000))
            }
        }
    }

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

    /// Hands a command to the source thread and waits for its outcome.
    func submit(_ command: PlayerCommand) throws(PlayerError) -> CommandOutcome {
        if case .seek(let s) = command, !(s.isFinite && s >= 0) { throw .invalid("seek position must be a number of seconds ≥ 0") }
        if case .seekBy(let s) = command, !s.isFinite { throw .invalid("seek offset must be a finite number of seconds") }
        let reply = Reply()
        mailbox.withLock { $0.append(Request(command: command, reply: reply)) }
        wake.signal()
        guard reply.done.wait(timeout: .now() + .seconds(3)) == .success else { throw .busy }
        return try reply.result.get()
    }

    func nowPlaying() -> NowPlaying {
        let now = Monotonic.now()
        return published.withLock { p in
            var position = p.pausedAt
            var state = p.state
            var heardFrame: Int? = nil
            let heardNow = Int(StreamFormat.frames(nanoseconds: now - p.epoch.nanoseconds).rounded(.down))
            // The list ended when its last chunk was sent; the rooms still play its last second.
            let tail = p.state == .stopped && heardNow < (p.tailUntil ?? .min)
            if tail { state = .playing }
            if p.state == .playing || tail {
                let heard = heardNow
                heardFrame = heard
                if let s = p.segments.last(where: { $0.start <= heard }) {
                    position = TrackPosition(track: s.track, frame: s.trackFrame(at: heard))
                    // Silence sent while waiting for the network, or nothing sent yet to cover now.
                    if let phase = s.phase { state = PlayerState(phase) } else if heard >= s.start + s.count, let starved = p.starved { state = starved }
                } else if let first = p.segments.first {
                    position = TrackPosition(track: first.track, frame: first.firstTrackFrame)
                } else if let entry = p.queue.currentEntry {
                    position = TrackPosition(track: entry.id, frame: 0) // nothing sent yet
                    if let starved = p.starved { state = starved }
                }
            }
            if p.state == .stopped && p.error != nil && !tail { state = .error }
            let index = p.queue.index(ofID: position.track)
            var result = NowPlaying(state: state, track: index ?? -1, entryID: index == nil ? nil : position.track,
                                    path: index.map { p.queue.entries[$0].uri } ?? "",
                                    positionSeconds: Double(position.frame) / Double(StreamFormat.sampleRate),
                                    durationSeconds: p.durations[position.track], trackCount: p.queue.count,
                                    shuffle: p.queue.shuffle, repeatMode: p.queue.repeatMode, error: p.error)
            result.single = p.queue.single
            result.speed = p.tempo.speed
            result.pitchSemitones = p.tempo.pitchSemitones
            result.consume = p.queue.consume
            if let network = p.network, network.track == position.track {
                // Ahead of the ear: audio sent to the rooms, decoded here, and still compressed in the buffers.
                var sent = 0
                if let heard = heardFrame {
                    for s in p.segments where s.phase == nil && s.track == network.track && s.start + s.count > heard {
                        sent += s.start + s.count - max(s.start, heard)
                    }
                }
                let seconds = Double(sent) / Double(StreamFormat.sampleRate) + network.pendingSeconds + network.progress.bufferedSeconds
                result.bufferedSeconds = (seconds * 1000).rounded() / 1000
                result.bufferedFraction = network.progress.downloadedFraction
            }
            return result
        }
    }

    // MARK: Source thread

    func run() {
        do {
            encoder = try makeEncoder(configuration.codec, bitrateKbps: configuration.bitrateKbps, frameSize: framesPerChunk)
        } catch {
            log.error("\(error)"); return
        }
        codecDelay = StreamFormat.nanoseconds(frames: encoder!.delayFrames)
        // On the leader's grid, so rooms moving between groups' streams stay sample-aligned.
        let wanted = StreamFormat.frames(nanoseconds: Monotonic.now() + startLatency - gridOrigin.nanoseconds).rounded(.up)
        epoch = gridOrigin + StreamFormat.nanoseconds(frames: Int(wanted))
        if let restored {
            // After a restart or power cut: the saved queue and position, paused
            // (a speaker should not start playing by itself at 3 am).
            let id = restored.entryID ?? queue.order.first.map { queue.entries[$0].id } ?? 0
            if let i = queue.index(ofID: id) { queue.select(i) }
            state = queue.isEmpty ? .stopped : .paused
            endOfList = true
            let frame = Int(restored.positionMilliseconds) * StreamFormat.sampleRate / 1000
            published.withLock { $0.pausedAt = TrackPosition(track: id, frame: max(0, frame)) }
            publish()
            log.info("restored a queue of \(queue.count) with entry \(id) at \(restored.positionMilliseconds) ms, paused")
        } else {
            if !queue.isEmpty { queue.select(queue.order[0]) }
            if let first = queue.currentEntry { published.withLock { $0.pausedAt = TrackPosition(track: first.id, frame: 0) } }
            if queue.currentEntry == nil { state = .stopped; endOfList = true } // an empty queue is stopped, and says so
            publish()
            if let first = queue.currentEntry { open(entry: first.id, at: 0) }
        }

        while running.load(ordering: .relaxed) {
            handleCommands()
            guard state == .playing else {
                if resumeIfFolderIsBack() { continue } // audio is due a start latency from now: no waiting
                _ = wake.wait(timeout: .now() + .milliseconds(200))
                continue
            }
            fillPending()
            if pending.isEmpty && endOfList {
                finishList()
                continue
            }
            if let phase = starvedPhase, pending.count < framesPerChunk * 2 {
                // The network is late. Followers play from their buffer until this
                // chunk is due; then silence goes out so they keep time, marked so
                // that now playing reads loading/buffering, and the position stands still.
                let due = ptsOf(frame: streamFrame).nanoseconds - startLatency
                let wait = due - Monotonic.now()
                if wait > 0 {
                    _ = wake.wait(timeout: .now() + .nanoseconds(Int(min(wait, 20 * nanosecondsPerMillisecond))))
                    continue
                }
                let frames = framesPerChunk - pending.count / 2
                pending += [Float](repeating: 0, count: frames * 2)
                pendingSegments.append(Segment(start: 0, count: frames, track: track, trackFrame: runOrigin, phase: phase, speed: tempo.speed, runOffset: runFrames))
            }
            // Pace: send each chunk `buffer` ahead of its PTS; commands interrupt the wait.
            let sendAt = ptsOf(frame: streamFrame).nanoseconds - buffer
            let wait = sendAt - Monotonic.now()
            if wait > 0 {
                _ = wake.wait(timeout: .now() + .nanoseconds(Int(min(wait, 100 * nanosecondsPerMillisecond))))
                continue // re-check commands and the clock
            }
            emitChunk()
        }
    }

    private func ptsOf(frame: Int) -> LeaderTime {
        epoch + StreamFormat.nanoseconds(frames: frame) - codecDelay
    }

    /// Decodes until at least one chunk is pending or the list ends.
    private func fillPending() {
        starvedPhase = nil
        while pending.count < framesPerChunk * 2 && !endOfList && running.load(ordering: .relaxed) {
            if let source = background {
                decoded.removeAll(keepingCapacity: true)
                switch source.poll(into: &decoded, maxFrames: 4_096) {
                case .waiting:
                    starvedPhase = backgroundStarted ? .buffering : .loading
                    return
                case .failed(let reason):
                    log.error("\(reason); going on with the next track")
                    recordFailure(reason)
                    if consecutiveFailures > queue.count {
                        // Every entry failed in a row: stop rather than retry forever.
                        background = nil
                        endOfList = true
                    } else {
                        advanceTrack()
                    }
                case .end:
                    finishTrackAudio()
                    advanceTrack()
                case .frames(let n):
                    if !backgroundStarted {
                        // The first audio: now the rate and length are known.
                        backgroundStarted = true
                        let progress = source.progress
                        let rate = progress.sampleRate ?? StreamFormat.sampleRate
                        do { resampler = rate == StreamFormat.sampleRate ? nil : try SoxrResampler(inputRate: rate) } catch {
                            log.error("\(source.uri): \(error)")
                            recordFailure("\(source.uri): \(error)")
                            advanceTrack()
                            continue
                        }
                        consecutiveFailures = 0
                        published.withLock { $0.durations[track] = progress.frameCount.map { Double($0) / Double(rate) } }
                        log.info("playing \(source.uri) (\(rate) Hz)")
                    }
                    consumeDecoded(n)
                }
                continue
            }
            guard let decoder else {
                advanceTrack()
                continue
            }
            decoded.removeAll(keepingCapacity: true)
            let n: Int
            do { n = try decoder.read(into: &decoded, maxFrames: 4_096) } catch {
                if let folder = unavailableFolder(decoder.path) {
                    awaitFolder(folder, at: TrackPosition(track: track, frame: trackFrame))
                    continue
                }
                log.error("\(decoder.path): \(error); going on with the next track")
                advanceTrack()
                continue
            }
            if n == 0 {
                finishTrackAudio()
                advanceTrack()
                continue
            }
            consumeDecoded(n)
        }
    }

    /// `decoded` holds `n` frames at the source's rate: resample and queue them.
    private func consumeDecoded(_ n: Int) {
        if let resampler {
            let input = decoded
            appendResampled { (out) throws(AudioError) in
                try input.withUnsafeBufferPointer { (p) throws(AudioError) in try resampler.process(p.baseAddress!, frames: n, into: &out) }
            }
        } else {
            appendTrackAudio(decoded)
        }
    }

    /// A track failed: now playing shows why (state `error` once the list stops).
    private func recordFailure(_ reason: String) {
        consecutiveFailures += 1
        published.withLock { $0.error = reason }
    }

    private func appendResampled(_ body: (inout [Float]) throws(AudioError) -> Void) {
        var out: [Float] = []
        do { try body(&out) } catch { log.error("resampling \(decoder?.path ?? ""): \(error)") }
        appendTrackAudio(out)
    }

    /// 48 kHz audio of the track, in track time: stretched when the speed or pitch asks.
    private func appendTrackAudio(_ samples: [Float]) {
        guard let stretcher else { return appendPending(samples) }
        var out: [Float] = []
        samples.withUnsafeBufferPointer { stretcher.process($0, into: &out) }
        appendPending(out)
    }

    /// The track's audio has all been read: flush the resampler and the stretcher.
    private func finishTrackAudio() {
        if let resampler { appendResampled { (out) throws(AudioError) in try resampler.finish(into: &out) } }
        if let stretcher {
            var out: [Float] = []
            stretcher.finish(into: &out)
            appendPending(out)
        }
    }

    /// Audio ready to send (stream time): the run of the current track grows by it.
    private func appendPending(_ samples: [Float]) {
        let frames = samples.count / 2
        guard frames > 0 else { return }
        if let last = pendingSegments.last, last.phase == nil, last.track == track, last.trackFrame == runOrigin,
           last.speed == tempo.speed, last.runOffset + last.count == runFrames {
            pendingSegments[pendingSegments.count - 1].count += frames
        } else {
            pendingSegments.append(Segment(start: 0, count: frames, track: track, trackFrame: runOrigin, speed: tempo.speed, runOffset: runFrames))
        }
        pending.append(contentsOf: samples)
        runFrames += frames
        trackFrame = Segment.trackFrame(origin: runOrigin, runFrames: runFrames, speed: tempo.speed)
    }

    /// Decoding of entry `id` starts (again) at track frame `frame`: a new run, with a fresh stretcher.
    private func beginRun(track id: UInt32, at frame: Int) {
        track = id
        trackFrame = frame
        runOrigin = frame
        runFrames = 0
        stretcher = nil
        guard !tempo.isNormal else { return }
        do { stretcher = try TimeStretcher(speed: tempo.speed, pitchSemitones: tempo.pitchSemitones, engine: configuration.timeStretchEngine) } catch {
            log.error("\(error); playing at normal speed and pitch")
        }
    }

    /// Opens queue entry `id` at 48 kHz frame `frame`; a file that fails
    /// is reported and playback moves on through the queue.
    private func open(entry id: UInt32, at frame: Int) {
        var candidate: UInt32? = id
        var frame = frame
        var attempts = 0
        while let entryID = candidate, let index = queue.index(ofID: entryID), attempts <= queue.count {
            attempts += 1
            queue.select(index)
            let path = queue.entries[index].uri
            do {
                let d: any AudioDecoder
                switch try opener(path, frame) {
                case .background(let source):
                    // A network source: it connects and decodes on its own thread; `fillPending` polls it.
                    decoder = nil
                    resampler = nil
                    background = source
                    backgroundStarted = false
                    beginRun(track: entryID, at: frame)
                    endOfList = false
                    log.info("opening \(path)\(frame > 0 ? " from \(fixedPoint(Double(frame) / 48_000, decimals: 3)) s" : "")")
                    return
                case .ready(let ready):
                    d = ready
                    background = nil
                }
                let rate = d.sampleRate
                if frame > 0 { try d.seek(toFrame: Int((Double(frame) * Double(rate) / Double(StreamFormat.sampleRate)).rounded())) }
                resampler = rate == StreamFormat.sampleRate ? nil : try SoxrResampler(inputRate: rate)
                decoder = d
                beginRun(track: entryID, at: frame)
                let duration = d.frameCount.map { Double($0) / Double(rate) }
                published.withLock { $0.durations[entryID] = duration }
                log.info("playing \(path) (\(rate) Hz\(frame > 0 ? ", from \(fixedPoint(Double(frame) / 48_000, decimals: 3)) s" : ""))")
                endOfList = false
                consecutiveFailures = 0
                return
            } catch {
                if let folder = unavailableFolder(path) {
                    // Not this file's fault: skipping would run through the whole queue.
                    awaitFolder(folder, at: TrackPosition(track: entryID, frame: frame))
                    return
                }
                log.error("skipping \(path): \(error)")
                recordFailure("\(error)")
                frame = 0
                switch queue.stepForward(manual: true) {
                case .play(let i) where queue.repeatMode != .off || i != queue.order.first: candidate = queue.entries[i].id
                case .play(let i) where attempts == 0: candidate = queue.entries[i].id
                default: candidate = nil
                }
            }
        }
        closeSource()
        endOfList = true
    }

    /// Nothing is decoded any more (until the next `open`).
    private func closeSource() {
        decoder = nil; background = nil
        resampler = nil; stretcher = nil
    }

    /// The music folder holding the next audio is gone: stop once what was
    /// sent has played, keep the queue and the place, and go on by itself
    /// when the folder is back (`resumeIfFolderIsBack`).
    private func awaitFolder(_ folder: String, at position: TrackPosition) {
        if awaitingFolder == nil {
            log.error("the music folder \(folder) is unavailable (a disk unplugged?): playback stops and goes on when it is back")
        }
        awaitingFolder = (folder, position, Monotonic.now())
        recordFailure("the music folder \(folder) is unavailable; playback goes on when it is back")
        closeSource()
        endOfList = true
    }

    /// Once a second while stopped by a missing folder: is it back? (true: playing again)
    private func resumeIfFolderIsBack() -> Bool {
        guard let waiting = awaitingFolder, state == .stopped else { return false }
        let now = Monotonic.now()
        guard now - waiting.checkedAt >= 1_000 * nanosecondsPerMillisecond else { return false }
        awaitingFolder?.checkedAt = now
        guard let i = queue.index(ofID: waiting.position.track), unavailableFolder(queue.entries[i].uri) == nil else { return false }
        log.info("the music folder \(waiting.folder) is back: playing on")
        awaitingFolder = nil
        restart(at: max(changePoint(now: now), 0), position: waiting.position)
        publish()
        return true
    }

    /// The current entry ended: gapless on to what the queue says is next.
    private func advanceTrack() {
        closeSource()
        let step = queue.stepForward(manual: false)
        switch step {
        case .play(let i), .restart(let i):
            open(entry: queue.entries[i].id, at: 0)
        case .stop:
            endOfList = true
        }
    }

    private func emitChunk() {
        guard let encoder else { return }
        var count = min(framesPerChunk, pending.count / 2)
        if count < framesPerChunk && configuration.codec == .opus {
            pending += [Float](repeating: 0, count: (framesPerChunk - count) * 2) // Opus needs whole frames
            count = framesPerChunk
        }
        guard count > 0 else { return }
        if fadeIn > 0 {
            let ramp = 120
            for i in 0..<min(fadeIn, count) {
                let g = Float(ramp - fadeIn + i + 1) / Float(ramp)
                pending[2 * i] *= g; pending[2 * i + 1] *= g
            }
            fadeIn = max(0, fadeIn - count)
        }
        let pts = ptsOf(frame: streamFrame)
        do {
            let payload = try pending.withUnsafeBufferPointer { (p) throws(AudioError) in try encoder.encode(p.baseAddress!, count: count) }
            broadcast(.chunk(Chunk(streamID: streamID, sequence: sequence, pts: pts, frames: UInt32(count), payload: payload)), pts)
        } catch {
            log.error("\(error)")
        }
        sequence &+= 1
        // Move the consumed frames' provenance into the history, on the grid.
        var remaining = count
        var at = streamFrame
        while remaining > 0, !pendingSegments.isEmpty {
            var s = pendingSegments[0]
            let take = min(remaining, s.count)
            history.append(s.take(take, at: at))
            if s.count == 0 { pendingSegments.removeFirst() } else { pendingSegments[0] = s }
            remaining -= take; at += take
        }
        pending.removeFirst(min(pending.count, count * 2))
        streamFrame += count
        // What rooms still hear lies at most a buffer behind what is sent: keep
        // that and 2 s more. (publish() shares the array, so each chunk copies what is kept.)
        let keepFrom = streamFrame - Int(StreamFormat.frames(nanoseconds: buffer)) - 2 * StreamFormat.sampleRate
        if let firstKept = history.firstIndex(where: { $0.start + $0.count > keepFrom }), firstKept > 64 {
            history.removeFirst(firstKept)
        }
        publish()
    }

    private func finishList() {
        let end = ptsOf(frame: streamFrame)
        broadcast(.streamEnd(streamID: streamID, at: end), end)
        log.info("end of play list")
        state = .stopped
        // Stopped by "single": a later play goes on with the next entry, not from the top.
        var resume = queue.order.first
        if queue.single != .off, case .play(let i) = queue.stepForward(manual: true) { resume = i }
        if queue.single == .oneshot { queue.single = .off }
        let first = resume.map { queue.entries[$0].id } ?? 0
        // Stopped by a missing music folder: play goes on where it stopped.
        let stoppedAt = awaitingFolder?.position ?? TrackPosition(track: first, frame: 0)
        published.withLock { $0.pausedAt = stoppedAt }
        if let i = queue.index(ofID: stoppedAt.track) ?? resume { queue.select(i) }
        published.withLock { $0.tailUntil = streamFrame }
        publish()
        endedAtomic.store(true, ordering: .releasing)
    }

    private func publish() {
        let (state, segments, epoch, queue) = (self.state, history, self.epoch, self.queue)
        let network = background.map { (track: track, pendingSeconds: Double(pending.count / 2) / Double(StreamFormat.sampleRate), progress: $0.progress) }
        let starved = state == .playing ? starvedPhase.map(PlayerState.init) : nil
        let tempo = self.tempo
        published.withLock { p in
            p.tempo = tempo
            p.state = state
            if state != .stopped { p.tailUntil = nil }
            p.segments = segments
            p.epoch = epoch
            p.queue = queue
            p.network = network
            p.starved = starved
        }
        // Wake the heard-watcher only when a change now comes before the moment it waits for.
        if let next = nextHeardChange(after: Monotonic.now()), next < heardWatchDeadline.load(ordering: .acquiring) {
            onHeardChangeMoved?()
        }
    }

    /// Leader ns (a PTS) of the first moment after `t` at which what is
    /// heard changes by itself, with nothing else happening: a segment of
    /// another track or phase starts, what was sent runs out while the
    /// network starves, or the list's tail ends. nil: none ahead.
    func nextHeardChange(after t: Int64) -> Int64? {
        published.withLock { p in
            let heard = Int(StreamFormat.frames(nanoseconds: t - p.epoch.nanoseconds).rounded(.down))
            var next = Int.max
            // Only the part still ahead of the ear can hold a change: walk back from the newest segment.
            // (Also once the list is sent: its tail still plays through track boundaries.)
            var i = p.segments.count - 1
            while i >= 0, p.segments[i].start + p.segments[i].count > heard {
                let s = p.segments[i]
                if s.start > heard, i == 0 || p.segments[i - 1].track != s.track || p.segments[i - 1].phase != s.phase {
                    next = min(next, s.start)
                }
                if i == p.segments.count - 1 && p.starved != nil { next = min(next, s.start + s.count) }
                i -= 1
            }
            if let tail = p.tailUntil, tail > heard { next = min(next, tail) }
            return next == .max ? nil : p.epoch.nanoseconds + StreamFormat.nanoseconds(frames: next)
        }
    }

    /// When the heard-watcher next wakes by itself (Int64.max: not before a signal); it sets this.
    let heardWatchDeadline = Atomic<Int64>(0)
    /// Called when a heard change comes sooner than `heardWatchDeadline` (on the source thread: must not block).
    var onHeardChangeMoved: (@Sendable () -> Void)?

    // MARK: Commands

    private func handleCommands() {
        let requests = mailbox.withLock { box -> [Request] in defer { box.removeAll() }; return box }
        for request in requests {
            request.reply.result = apply(request.command)
            request.reply.done.signal()
        }
    }

    /// The grid frame a start latency from now: where changes take effect.
    private func changePoint(now: Int64) -> Int {
        Int(StreamFormat.frames(nanoseconds: now + startLatency - epoch.nanoseconds).rounded(.up))
    }

    /// Where in which track the stream is at grid frame `frame`.
    private func position(atFrame frame: Int) -> TrackPosition {
        if let s = history.last(where: { $0.start <= frame }), frame < s.start + s.count {
            return TrackPosition(track: s.track, frame: s.trackFrame(at: frame))
        }
        if frame >= streamFrame {
            if var p = pendingSegments.first {
                p.start = streamFrame
                return TrackPosition(track: p.track, frame: p.trackFrame(at: frame))
            }
            return TrackPosition(track: track, frame: trackFrame)
        }
        if let s = history.last { return TrackPosition(track: s.track, frame: s.trackFrame(at: s.start + s.count)) }
        return TrackPosition(track: track, frame: trackFrame)
    }

    /// Cuts the stream at `frame`: followers drop everything from there
    /// (fading into the cut unless it falls on a track boundary).
    private func cut(at frame: Int, fade: Bool = true) {
        if frame < streamFrame {
            let pts = ptsOf(frame: frame)
            purge(pts)
            // Followers cut their decoded audio, which Opus delays by its
            // look-ahead: the cut is where input frame `frame` is heard.
            let heardAt = pts + codecDelay
            broadcast(.flush(streamID: streamID, from: heardAt, fade: fade), heardAt)
            history.removeAll { $0.start >= frame }
            if let i = history.indices.last, history[i].start + history[i].count > frame {
                history[i].count = frame - history[i].start
            }
        }
        pending.removeAll(keepingCapacity: true)
        pendingSegments.removeAll()
        encoder?.reset()
    }

    private func apply(_ command: PlayerCommand) -> Result<CommandOutcome, PlayerError> {
        let now = Monotonic.now()
        switch command {
        case .add, .move, .shuffle, .repeatMode, .single, .consume, .speed, .pitch:
            break // editing the queue or the sound while the disk is out changes nothing about resuming
        default:
            awaitingFolder = nil // the user has taken over: a folder coming back no longer restarts play by itself
        }
        let at = max(changePoint(now: now), 0)
        var command = command
        if command == .toggle { command = state == .playing ? .pause : .play }
        let heard = state == .playing ? position(atFrame: at) : published.withLock { $0.pausedAt }
        // Steps start from what is heard at the change point, not from the
        // decoder, which may already be a track ahead.
        if let i = queue.index(ofID: heard.track) { queue.select(i) }
        let heardIndex = queue.index(ofID: heard.track)
        // The list has ended but its last second is still being heard: stop and pause cut it.
        let tailAudible = state == .stopped && (published.withLock { $0.tailUntil } ?? .min) > at
        var added: [UInt32] = []
        func entryID(_ step: PlayQueue.Step) -> UInt32? {
            switch step {
            case .play(let i), .restart(let i): queue.entries[i].id
            case .stop: nil
            }
        }

        switch command {
        case .pause:
            if tailAudible { cut(at: at); published.withLock { $0.tailUntil = nil }; break }
            guard state == .playing else { break }
            cut(at: at)
            state = .paused
            background = nil // resuming reopens it at the paused position; the connection is not held meanwhile
            published.withLock { $0.pausedAt = heard }
            log.info("paused at \(fixedPoint(Double(heard.frame) / 48_000, decimals: 3)) s of entry \(heard.track)")
        case .stop:
            if state == .playing || tailAudible { cut(at: at) }
            published.withLock { $0.tailUntil = nil }
            closeSource()
            state = .stopped
            published.withLock { $0.pausedAt = TrackPosition(track: heard.track, frame: 0) }
        case .play:
            guard state != .playing else { break }
            guard !queue.isEmpty else { return .failure(.invalid("the queue is empty")) }
            let target = heardIndex != nil ? heard : TrackPosition(track: queue.entries[queue.order[0]].id, frame: 0)
            restart(at: at, position: target)
        case .next:
            guard let id = entryID(queue.stepForward(manual: true)) else {
                return .failure(.invalid(queue.isEmpty ? "the queue is empty" : "already at the last track"))
            }
            restart(at: at, position: TrackPosition(track: id, frame: 0))
        case .previous:
            guard let id = entryID(queue.stepBack(elapsedSeconds: Double(heard.frame) / Double(StreamFormat.sampleRate))) else {
                return .failure(.invalid("the queue is empty"))
            }
            restart(at: at, position: TrackPosition(track: id, frame: 0))
        case .seek(let seconds), .seekBy(let seconds):
            guard heardIndex != nil else { return .failure(.invalid("nothing to seek in")) }
            var frame = Int(seconds * Double(StreamFormat.sampleRate))
            if case .seekBy = command { frame = max(0, heard.frame + frame) }
            let target = TrackPosition(track: heard.track, frame: frame)
            if state == .playing { restart(at: at, position: target) } else { published.withLock { $0.pausedAt = target } }
        case .playIndex(let index):
            guard queue.entries.indices.contains(index) else {
                return .failure(.invalid("no queue entry \(index) (the queue has \(queue.count))"))
            }
            restart(at: at, position: TrackPosition(track: queue.entries[index].id, frame: 0))
        case .add(let uris, let next):
            guard !uris.isEmpty else { return .failure(.invalid("nothing to add")) }
            let wasEmpty = queue.isEmpty
            added = next ? queue.insertNext(uris) : queue.add(uris)
            if wasEmpty, let first = added.first { published.withLock { $0.pausedAt = TrackPosition(track: first, frame: 0) } }
            revalidateUpcoming(from: at)
        case .remove(let index):
            guard queue.entries.indices.contains(index) else {
                return .failure(.invalid("no queue entry \(index) (the queue has \(queue.count))"))
            }
            let removingHeard = queue.entries[index].id == heard.track
            let successor = removingHeard ? entryID(queue.stepForward(manual: true)) : nil
            queue.remove(at: index)
            if removingHeard {
                if state == .playing, let successor {
                    restart(at: at, position: TrackPosition(track: successor, frame: 0))
                } else {
                    if state == .playing { cut(at: at); closeSource(); state = .stopped }
                    let fallback = successor ?? queue.order.first.map { queue.entries[$0].id } ?? 0
                    published.withLock { $0.pausedAt = TrackPosition(track: fallback, frame: 0) }
                }
            } else {
                revalidateUpcoming(from: at)
            }
        case .move(let from, let to):
            guard queue.entries.indices.contains(from), queue.entries.indices.contains(to) else {
                return .failure(.invalid("positions must be within 0…\(queue.count - 1)"))
            }
            queue.move(from: from, to: to)
            revalidateUpcoming(from: at)
        case .clear:
            if state == .playing { cut(at: at) }
            queue.clear()
            closeSource()
            endOfList = true
            state = .stopped
            published.withLock { $0.pausedAt = TrackPosition(track: 0, frame: 0) }
        case .shuffle(let on):
            queue.setShuffle(on)
            revalidateUpcoming(from: at)
        case .repeatMode(let mode):
            queue.repeatMode = mode
            revalidateUpcoming(from: at)
        case .single(let mode):
            queue.single = mode
            revalidateUpcoming(from: at) // the next track may already be on its way
        case .consume(let on):
            queue.consume = on
        case .removeEntry(let id):
            guard let index = queue.index(ofID: id) else { return .failure(.invalid("no queue entry with id \(id)")) }
            return apply(.remove(index: index))
        case .speed(let value):
            guard let speed = PlaybackTempo.validSpeed(value) else {
                return .failure(.invalid("speed must be \(PlaybackTempo.speedRange.lowerBound)–\(PlaybackTempo.speedRange.upperBound)×"))
            }
            retune(PlaybackTempo(speed: speed, pitchSemitones: tempo.pitchSemitones), at: at, heard: heardIndex == nil ? nil : heard)
        case .pitch(let value):
            guard let pitch = PlaybackTempo.validPitch(value) else {
                return .failure(.invalid("pitch must be \(Int(PlaybackTempo.pitchRange.lowerBound)) to +\(Int(PlaybackTempo.pitchRange.upperBound)) semitones"))
            }
            retune(PlaybackTempo(speed: tempo.speed, pitchSemitones: pitch), at: at, heard: heardIndex == nil ? nil : heard)
        case .toggle:
            break
        }
        publish()
        let effective = ptsOf(frame: at).nanoseconds + codecDelay
        let index = queue.index(ofID: state == .playing ? position(atFrame: at).track : published.withLock { $0.pausedAt.track }) ?? -1
        return .success(CommandOutcome(acceptedAt: now, effectiveAt: effective, state: state, track: index, added: added))
    }

    /// After a queue edit: the audio already sent or decoded beyond the change
    /// point must follow the queue's new order. The first track boundary that
    /// no longer does is cut, and decoding restarts there with the right entry.
    private func revalidateUpcoming(from at: Int) {
        guard state == .playing else { return }
        let upcoming = (history.filter { $0.start + $0.count > at } + pendingSegments.enumerated().map { i, s in
            var s = s
            s.start = streamFrame + pendingSegments[..<i].reduce(0) { $0 + $1.count }
            return s
        }).filter { $0.phase == nil } // silence while waiting for the network is no track boundary
        func successor(of id: UInt32) -> UInt32? {
            var q = queue
            guard let i = q.index(ofID: id) else { return nil }
            q.select(i)
            switch q.stepForward(manual: false) {
            case .play(let j), .restart(let j): return q.entries[j].id
            case .stop: return nil
            }
        }
        guard var previous = upcoming.first?.track else { return }
        for segment in upcoming.dropFirst() where segment.track != previous || segment.firstTrackFrame == 0 {
            let expected = successor(of: previous)
            if expected != segment.track {
                let frame = max(at, segment.start)
                cut(at: frame, fade: frame != segment.start)
                streamFrame = frame
                if let expected { open(entry: expected, at: 0) } else { closeSource(); endOfList = true }
                return
            }
            previous = segment.track
        }
        // Nothing of the next entry sent yet: make sure the decoder will move on to the right one.
        if track != previous, successor(of: previous) != track {
            let expected = successor(of: previous)
            pending.removeAll(keepingCapacity: true)
            pendingSegments.removeAll()
            if let expected { open(entry: expected, at: 0) } else { closeSource(); endOfList = true }
        }
        if let i = queue.index(ofID: track) { queue.select(i) }
    }

    /// A new speed or pitch: what is sent from the change point on is
    /// stretched again from the position heard there, so every room hears
    /// the change at once, within the start latency.
    private func retune(_ new: PlaybackTempo, at frame: Int, heard: TrackPosition?) {
        guard new != tempo else { return }
        tempo = new
        log.info("speed \(fixedPoint(new.speed, decimals: 2))×, pitch \(fixedPoint(new.pitchSemitones, decimals: 1, plus: true)) semitones")
        if state == .playing, let heard { restart(at: frame, position: heard) }
    }

    /// Starts audio from `position` at grid frame `frame` (cutting what was sent after it).
    private func restart(at frame: Int, position: TrackPosition) {
        cut(at: frame)
        published.withLock { $0.error = nil }
        consecutiveFailures = 0
        streamFrame = frame
        if let duration = published.withLock({ $0.durations[position.track] }), Double(position.frame) / 48_000 >= duration,
           let i = queue.index(ofID: position.track) {
            // Seeking past the end of a track: go on to the next one.
            queue.select(i)
            switch queue.stepForward(manual: true) {
            case .play(let j), .restart(let j): open(entry: queue.entries[j].id, at: 0)
            case .stop: closeSource(); endOfList = true
            }
        } else {
            open(entry: position.track, at: position.frame)
        }
        endedAtomic.store(false, ordering: .releasing)
        // Starting mid-track (resume, seek) fades in; a track's own start is left bit-exact.
        fadeIn = position.frame > 0 ? 120 : 0
        state = .playing
    }
}
