import Dispatch
import Foundation
import Synchronization
import TuttiAudio
import TuttiCore

/// Transport commands, from any control surface.
public enum PlayerCommand: Sendable, Equatable {
    case play, pause, toggle, next, previous
    /// Absolute position in the current track, seconds.
    case seek(seconds: Double)
    /// Relative to the position now heard, seconds.
    case seekBy(seconds: Double)
}

public enum PlayerState: String, Sendable {
    case playing, paused, stopped
}

/// What a command did and when every room hears it.
public struct CommandOutcome: Sendable, Equatable {
    /// Leader monotonic ns when the source took the command.
    public var acceptedAt: Int64
    /// Leader monotonic ns (a PTS) at which the change is heard everywhere.
    public var effectiveAt: Int64
    public var state: PlayerState
    public var track: Int
}

public struct NowPlaying: Sendable, Equatable {
    public var state: PlayerState
    public var track: Int
    public var path: String
    public var positionSeconds: Double
    public var durationSeconds: Double?
    public var trackCount: Int
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
        var durations: [Int: Double] = [:]
        var epoch = LeaderTime(nanoseconds: 0)
    }
    private let published = Mutex(Published())

    /// Stream frames [start, start+count) come from `track` frames [trackFrame, …) (48 kHz).
    struct Segment { var start: Int; var count: Int; var track: Int; var trackFrame: Int }
    struct TrackPosition: Equatable { var track: Int; var frame: Int }

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
    private var track = 0                  // track being decoded
    private var trackFrame = 0             // 48 kHz frames of it already in `pending`
    private var pending: [Float] = []
    private var pendingSegments: [Segment] = []   // stream positions assigned when emitted
    private var history: [Segment] = []
    private var fadeIn = 0                 // frames of fade-in still to apply
    private var endOfList = false
    private var decoded: [Float] = []

    init(configuration: LeaderConfiguration, streamID: UInt32, log: Logger, broadcast: @escaping Broadcast, purge: @escaping Purge) {
        self.configuration = configuration
        self.streamID = streamID
        self.log = log
        self.broadcast = broadcast
        self.purge = purge
        framesPerChunk = configuration.framesPerChunk
        startLatency = Int64(min(configuration.startLatencyMilliseconds, configuration.bufferMilliseconds)) * nanosecondsPerMillisecond
        buffer = Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond
    }

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
            if p.state == .playing {
                let heard = Int(StreamFormat.frames(nanoseconds: now - p.epoch.nanoseconds).rounded(.down))
                if let s = p.segments.last(where: { $0.start <= heard }) {
                    position = TrackPosition(track: s.track, frame: s.trackFrame + min(heard - s.start, s.count))
                } else if let first = p.segments.first {
                    position = TrackPosition(track: first.track, frame: first.trackFrame)
                }
            }
            let files = configuration.files
            let index = min(max(0, position.track), files.count - 1)
            return NowPlaying(state: p.state, track: index, path: files[index],
                              positionSeconds: Double(position.frame) / Double(StreamFormat.sampleRate),
                              durationSeconds: p.durations[index], trackCount: files.count)
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
        epoch = LeaderTime(nanoseconds: Monotonic.now() + startLatency)
        publish()
        open(track: 0, at: 0)

        while running.load(ordering: .relaxed) {
            handleCommands()
            guard state == .playing else {
                _ = wake.wait(timeout: .now() + .milliseconds(200))
                continue
            }
            fillPending()
            if pending.isEmpty && endOfList {
                finishList()
                continue
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
        while pending.count < framesPerChunk * 2 && !endOfList && running.load(ordering: .relaxed) {
            guard let decoder else {
                advanceTrack()
                continue
            }
            decoded.removeAll(keepingCapacity: true)
            let n: Int
            do { n = try decoder.read(into: &decoded, maxFrames: 4_096) } catch {
                log.error("\(decoder.path): \(error); going on with the next track")
                advanceTrack()
                continue
            }
            if n == 0 {
                if let resampler { appendResampled { (out) throws(AudioError) in try resampler.finish(into: &out) } }
                advanceTrack()
                continue
            }
            if let resampler {
                let input = decoded
                appendResampled { (out) throws(AudioError) in
                    try input.withUnsafeBufferPointer { (p) throws(AudioError) in try resampler.process(p.baseAddress!, frames: n, into: &out) }
                }
            } else {
                appendPending(decoded)
            }
        }
    }

    private func appendResampled(_ body: (inout [Float]) throws(AudioError) -> Void) {
        var out: [Float] = []
        do { try body(&out) } catch { log.error("resampling \(decoder?.path ?? ""): \(error)") }
        appendPending(out)
    }

    private func appendPending(_ samples: [Float]) {
        let frames = samples.count / 2
        guard frames > 0 else { return }
        if let last = pendingSegments.last, last.track == track, last.trackFrame + last.count == trackFrame {
            pendingSegments[pendingSegments.count - 1].count += frames
        } else {
            pendingSegments.append(Segment(start: 0, count: frames, track: track, trackFrame: trackFrame))
        }
        pending.append(contentsOf: samples)
        trackFrame += frames
    }

    /// Opens `track` at 48 kHz frame `frame`; on failure moves on to the next.
    private func open(track index: Int, at frame: Int) {
        var index = index
        var attempts = 0
        while attempts < configuration.files.count {
            attempts += 1
            if index >= configuration.files.count {
                guard configuration.loop else { break }
                index = 0
            }
            let path = configuration.files[index]
            do {
                let d = try AudioFile.open(path)
                let rate = d.sampleRate
                if frame > 0 { try d.seek(toFrame: Int((Double(frame) * Double(rate) / Double(StreamFormat.sampleRate)).rounded())) }
                resampler = rate == StreamFormat.sampleRate ? nil : try SoxrResampler(inputRate: rate)
                decoder = d
                track = index
                trackFrame = frame
                let duration = d.frameCount.map { Double($0) / Double(rate) }
                published.withLock { $0.durations[index] = duration }
                log.info("playing \(path) (\(rate) Hz\(frame > 0 ? String(format: ", from %.3f s", Double(frame) / 48_000) : ""))")
                endOfList = false
                return
            } catch {
                log.error("skipping \(path): \(error)")
                index += 1
            }
        }
        decoder = nil
        resampler = nil
        endOfList = true
    }

    private func advanceTrack() {
        decoder = nil
        resampler = nil
        let next = track + 1
        if next >= configuration.files.count && !configuration.loop {
            endOfList = true
            return
        }
        open(track: next % max(1, configuration.files.count), at: 0)
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
            history.append(Segment(start: at, count: take, track: s.track, trackFrame: s.trackFrame))
            s.count -= take; s.trackFrame += take
            if s.count == 0 { pendingSegments.removeFirst() } else { pendingSegments[0] = s }
            remaining -= take; at += take
        }
        pending.removeFirst(min(pending.count, count * 2))
        streamFrame += count
        let keepFrom = streamFrame - 20 * StreamFormat.sampleRate
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
        published.withLock { $0.pausedAt = TrackPosition(track: 0, frame: 0) }
        publish()
        endedAtomic.store(true, ordering: .releasing)
    }

    private func publish() {
        let (state, segments, epoch) = (self.state, history, self.epoch)
        published.withLock { p in
            p.state = state
            p.segments = segments
            p.epoch = epoch
        }
    }

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
            return TrackPosition(track: s.track, frame: s.trackFrame + (frame - s.start))
        }
        if frame >= streamFrame, let p = pendingSegments.first {
            return TrackPosition(track: p.track, frame: p.trackFrame + min(p.count, frame - streamFrame))
        }
        if let s = history.last { return TrackPosition(track: s.track, frame: s.trackFrame + s.count) }
        return TrackPosition(track: track, frame: trackFrame)
    }

    /// Cuts the stream at `frame`: followers drop everything from there.
    private func cut(at frame: Int) {
        if frame < streamFrame {
            let pts = ptsOf(frame: frame)
            purge(pts)
            broadcast(.flush(streamID: streamID, from: pts), pts)
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
        let at = max(changePoint(now: now), 0)
        var command = command
        if command == .toggle { command = state == .playing ? .pause : .play }
        let current = state == .playing ? position(atFrame: at) : published.withLock { $0.pausedAt }

        switch command {
        case .pause:
            guard state == .playing else { break }
            cut(at: at)
            state = .paused
            published.withLock { $0.pausedAt = current }
            log.info("paused at track \(current.track) \(String(format: "%.3f", Double(current.frame) / 48_000)) s")
        case .play:
            guard state != .playing else { break }
            restart(at: at, position: state == .stopped ? TrackPosition(track: 0, frame: 0) : current)
        case .next:
            let nextTrack = current.track + 1
            if nextTrack >= configuration.files.count && !configuration.loop {
                return .failure(.invalid("already at the last track"))
            }
            restart(at: at, position: TrackPosition(track: nextTrack % configuration.files.count, frame: 0))
        case .previous:
            // Past 3 s, "previous" restarts the track; otherwise it goes back one.
            let target = current.frame > 3 * StreamFormat.sampleRate || current.track == 0
                ? TrackPosition(track: current.track, frame: 0)
                : TrackPosition(track: current.track - 1, frame: 0)
            restart(at: at, position: target)
        case .seek(let seconds):
            restart(at: at, position: TrackPosition(track: current.track, frame: Int(seconds * Double(StreamFormat.sampleRate))))
        case .seekBy(let seconds):
            let frame = max(0, current.frame + Int(seconds * Double(StreamFormat.sampleRate)))
            restart(at: at, position: TrackPosition(track: current.track, frame: frame))
        case .toggle:
            break
        }
        publish()
        let effective = ptsOf(frame: at).nanoseconds + codecDelay
        return .success(CommandOutcome(acceptedAt: now, effectiveAt: effective, state: state, track: state == .playing ? track : current.track))
    }

    /// Starts audio from `position` at grid frame `frame` (cutting what was sent after it).
    private func restart(at frame: Int, position: TrackPosition) {
        cut(at: frame)
        streamFrame = frame
        if let duration = published.withLock({ $0.durations[position.track] }), Double(position.frame) / 48_000 >= duration {
            // Seeking past the end of a track: go to the next one.
            open(track: position.track + 1, at: 0)
        } else {
            open(track: position.track, at: position.frame)
        }
        endedAtomic.store(false, ordering: .releasing)
        fadeIn = 120
        state = .playing
    }
}
