/// The transport rules of a stream, pure: what a command does to the
/// queue, the state and the stream's timeline at the change point (the grid
/// frame a start latency ahead, where every room hears it), returned as
/// actions for the leader's source thread to carry out. Runs on the frames
/// it is given, so its tests are exact.
///
/// Steps start from what is heard at the change point, not from the
/// decoder, which may already be a track ahead. Pause, skip and seek cut
/// what was sent after the change point; queue edits re-check what is
/// already on its way (`revalidateUpcoming`).
public struct Transport: Sendable {
    /// Playing, paused or stopped (the network phases and `error` are
    /// what now playing adds).
    public var state: PlayerState
    public var queue: PlayQueue
    public var timeline = StreamTimeline()
    public var tempo = PlaybackTempo.normal
    /// Where play goes on from while paused or stopped.
    public var pausedAt = TrackPosition(track: 0, frame: 0)
    /// After the list ended: the grid frame up to which its tail is still heard.
    public var tailUntil: Int?
    /// An outside source that took over (`PlayerCommand.cue`): its entry, and what was heard before it.
    public struct Cue: Equatable, Sendable {
        public var entry: UInt32
        public var previous: TrackPosition?
    }
    public var cued: Cue?

    public init(queue: PlayQueue, state: PlayerState = .playing) {
        self.queue = queue
        self.state = state
    }

    /// What the source thread does, in order.
    public enum Action: Equatable, Sendable {
        /// Every room drops what it holds from grid frame `from` (fading into
        /// the cut, unless it falls on a track boundary).
        case flush(from: Int, fade: Bool)
        /// Decoded audio not sent yet is dropped (its segments already are),
        /// and with `resettingEncoder` the encoder starts afresh at the cut.
        case dropDecoded(resettingEncoder: Bool)
        /// Decoding starts at `position` (an entry that fails moves on through the queue).
        case open(TrackPosition)
        /// Decoding ends: the list has played out once what is pending is sent.
        case endDecoding
        /// The network source is let go: resuming reopens it at the paused position.
        case releaseSource
        /// Play starts afresh: the last error cleared, `fadeIn` frames of fade-in.
        case start(fadeIn: Int)
    }

    /// The fade-in of a start mid-track (resume, seek); a track's own start is left bit-exact.
    public static let resumeFadeFrames = 120

    public struct Applied: Equatable, Sendable {
        public var actions: [Action] = []
        /// Entry ids that `.add` added.
        public var added: [UInt32] = []
    }

    /// Applies `command` at grid frame `at` (the change point). `durations`:
    /// the seconds of the entries known so far (a seek past the end moves on).
    /// The command's numbers are checked first (`PlayerCommand.checked`):
    /// a bad one is an error, never a trap.
    public mutating func apply(_ given: PlayerCommand, at: Int, durations: [UInt32: Double] = [:]) -> Result<Applied, PlayerError> {
        var command: PlayerCommand
        switch given.checked() {
        case .success(let c): command = c
        case .failure(let error): return .failure(error)
        }
        if command == .toggle { command = state == .playing ? .pause : .play }
        let heard = state == .playing ? timeline.position(atFrame: at) : pausedAt
        if let i = queue.index(ofID: heard.track) { queue.select(i) }
        let heardIndex = queue.index(ofID: heard.track)
        // The list has ended but its last second is still being heard: stop and pause cut it.
        let tailAudible = state == .stopped && (tailUntil ?? .min) > at
        var out = Applied()

        switch command {
        case .pause:
            if tailAudible { out.actions = cut(at: at); tailUntil = nil; break }
            guard state == .playing else { break }
            out.actions = cut(at: at) + [.releaseSource]
            state = .paused
            pausedAt = heard
        case .stop:
            if tailAudible { out.actions = cut(at: at) }
            tailUntil = nil
            out.actions += stop(at: at)
            pausedAt = TrackPosition(track: heard.track, frame: 0)
        case .play:
            guard state != .playing else { break }
            guard !queue.isEmpty else { return .failure(.invalid(UserMessage(.playerQueueEmpty))) }
            let target = heardIndex != nil ? heard : TrackPosition(track: queue.entries[queue.order[0]].id, frame: 0)
            out.actions = restart(at: at, from: target, durations: durations)
        case .next:
            guard let id = entryID(queue.stepForward(manual: true)) else {
                return .failure(.invalid(UserMessage(queue.isEmpty ? .playerQueueEmpty : .playerAtLastTrack)))
            }
            out.actions = restart(at: at, from: TrackPosition(track: id, frame: 0), durations: durations)
        case .previous:
            guard let id = entryID(queue.stepBack(elapsedSeconds: Double(heard.frame) / Double(StreamFormat.sampleRate))) else {
                return .failure(.invalid(UserMessage(.playerQueueEmpty)))
            }
            out.actions = restart(at: at, from: TrackPosition(track: id, frame: 0), durations: durations)
        case .seek(let seconds), .seekBy(let seconds):
            guard heardIndex != nil else { return .failure(.invalid(UserMessage(.playerNothingToSeek))) }
            // Checked: |seconds| ≤ maximumSeconds, so the frames fit; their sum saturates all the same.
            var frame = StreamFormat.frames(seconds: seconds)
            if case .seekBy = command {
                let (sum, overflow) = heard.frame.addingReportingOverflow(frame)
                frame = overflow ? (frame < 0 ? 0 : .max) : max(0, sum)
            }
            // Clamped to the track: its end, which moves on to the next entry (as MPD does).
            if let duration = durations[heard.track], duration.isFinite, duration >= 0 {
                frame = min(frame, StreamFormat.frames(seconds: duration))
            }
            let target = TrackPosition(track: heard.track, frame: frame)
            if state == .playing { out.actions = restart(at: at, from: target, durations: durations) } else { pausedAt = target }
        case .playIndex(let index):
            guard queue.entries.indices.contains(index) else {
                return .failure(.invalid(UserMessage(.playerNoEntry, ["index": "\(index)", "count": "\(queue.count)"])))
            }
            out.actions = restart(at: at, from: TrackPosition(track: queue.entries[index].id, frame: 0), durations: durations)
        case .add(let uris, let next):
            guard !uris.isEmpty else { return .failure(.invalid(UserMessage(.playerNothingToAdd))) }
            guard uris.count <= PlayerCommand.maximumQueueEntries - queue.count else {
                return .failure(.invalid(UserMessage(.playerQueueFull, ["max": "\(PlayerCommand.maximumQueueEntries)", "count": "\(queue.count)"])))
            }
            let wasEmpty = queue.isEmpty
            out.added = next ? queue.insertNext(uris) : queue.add(uris)
            if wasEmpty, let first = out.added.first { pausedAt = TrackPosition(track: first, frame: 0) }
            out.actions = revalidateUpcoming(from: at)
        case .remove(let index):
            guard queue.entries.indices.contains(index) else {
                return .failure(.invalid(UserMessage(.playerNoEntry, ["index": "\(index)", "count": "\(queue.count)"])))
            }
            let removingHeard = queue.entries[index].id == heard.track
            let successor = removingHeard ? entryID(queue.stepForward(manual: true)) : nil
            queue.remove(at: index)
            if removingHeard {
                if state == .playing, let successor {
                    out.actions = restart(at: at, from: TrackPosition(track: successor, frame: 0), durations: durations)
                } else {
                    if state == .playing { out.actions = stop(at: at) }
                    let fallback = successor ?? queue.order.first.map { queue.entries[$0].id } ?? 0
                    pausedAt = TrackPosition(track: fallback, frame: 0)
                }
            } else {
                out.actions = revalidateUpcoming(from: at)
            }
        case .move(let from, let to):
            guard queue.entries.indices.contains(from), queue.entries.indices.contains(to) else {
                return .failure(.invalid(UserMessage(.playerPositionsWithin, ["last": "\(queue.count - 1)"])))
            }
            queue.move(from: from, to: to)
            out.actions = revalidateUpcoming(from: at)
        case .clear:
            queue.clear()
            out.actions = stop(at: at)
            pausedAt = TrackPosition(track: 0, frame: 0)
        case .shuffle(let on):
            queue.setShuffle(on)
            out.actions = revalidateUpcoming(from: at)
        case .repeatMode(let mode):
            queue.repeatMode = mode
            out.actions = revalidateUpcoming(from: at)
        case .single(let mode):
            queue.single = mode
            out.actions = revalidateUpcoming(from: at) // the next track may already be on its way
        case .consume(let on):
            queue.consume = on
        case .removeEntry(let id):
            guard let index = queue.index(ofID: id) else { return .failure(.invalid(UserMessage(.playerNoEntryID, ["id": "\(id)"]))) }
            return apply(.remove(index: index), at: at, durations: durations)
        case .speed(let value):
            guard let speed = PlaybackTempo.validSpeed(value) else {
                return .failure(.invalid(PlayerError.speedRange(value)))
            }
            out.actions = retune(PlaybackTempo(speed: speed, pitchSemitones: tempo.pitchSemitones), at: at,
                                 heard: heardIndex == nil ? nil : heard, durations: durations)
        case .pitch(let value):
            guard let pitch = PlaybackTempo.validPitch(value) else {
                return .failure(.invalid(PlayerError.pitchRange(value)))
            }
            out.actions = retune(PlaybackTempo(speed: tempo.speed, pitchSemitones: pitch), at: at,
                                 heard: heardIndex == nil ? nil : heard, durations: durations)
        case .cue(let uri):
            if let c = cued, let i = queue.index(ofID: c.entry), queue.entries[i].uri == uri {
                // Already in: a new session on the same source plays it if it is not heard.
                if state != .playing || heard.track != c.entry {
                    out.actions = restart(at: at, from: TrackPosition(track: c.entry, frame: 0), durations: durations)
                }
                break
            }
            // A cue whose entry is gone (cleared, removed by hand) is no cue: what plays now is what to go back to.
            let live = cued.flatMap { c in queue.index(ofID: c.entry).map { (c, $0) } }
            let previous = live.map { $0.0.previous } ?? (heardIndex != nil ? heard : nil)
            if let (_, i) = live { queue.remove(at: i) }
            guard queue.count < PlayerCommand.maximumQueueEntries else {
                return .failure(.invalid(UserMessage(.playerQueueFull, ["max": "\(PlayerCommand.maximumQueueEntries)", "count": "\(queue.count)"])))
            }
            if let p = previous, let i = queue.index(ofID: p.track) { queue.select(i) }
            out.added = queue.insertNext([uri])
            cued = Cue(entry: out.added[0], previous: previous)
            out.actions = restart(at: at, from: TrackPosition(track: out.added[0], frame: 0), durations: durations)
        case .uncue(let uri):
            guard let c = cued, let i = queue.index(ofID: c.entry), queue.entries[i].uri == uri else { break }
            // Heard, or about to be (sent a moment ago, nothing of it played yet).
            let wasHeard = heard.track == c.entry || (state == .playing && timeline.decoding.track == c.entry)
            queue.remove(at: i)
            cued = nil
            guard wasHeard else { out.actions = revalidateUpcoming(from: at); break }
            if let p = c.previous, let j = queue.index(ofID: p.track) {
                if state == .playing { out.actions = cut(at: at) + [.releaseSource] }
                state = .paused
                pausedAt = p
                queue.select(j)
            } else {
                out.actions = stop(at: at)
                pausedAt = TrackPosition(track: queue.order.first.map { queue.entries[$0].id } ?? 0, frame: 0)
            }
        case .toggle:
            break
        }
        if state != .stopped { tailUntil = nil }
        return .success(out)
    }

    /// What is heard at grid frame `at`: while playing, from the timeline;
    /// otherwise where play would go on.
    public func heard(atFrame at: Int) -> TrackPosition {
        state == .playing ? timeline.position(atFrame: at) : pausedAt
    }

    /// Starts audio from `position` at grid frame `frame`, cutting what was sent after it.
    public mutating func restart(at frame: Int, from position: TrackPosition, durations: [UInt32: Double]) -> [Action] {
        var actions = cut(at: frame)
        timeline.streamFrame = frame
        actions.append(.start(fadeIn: position.frame > 0 ? Self.resumeFadeFrames : 0))
        if let duration = durations[position.track], Double(position.frame) / Double(StreamFormat.sampleRate) >= duration,
           let i = queue.index(ofID: position.track) {
            // Seeking past the end of a track: go on to the next one.
            queue.select(i)
            actions.append(decodeNext(entryID(queue.stepForward(manual: true))))
        } else {
            actions.append(.open(position))
        }
        state = .playing
        tailUntil = nil
        return actions
    }

    /// After a queue edit: the audio already sent or decoded beyond the change
    /// point must follow the queue's new order. The first track boundary that
    /// no longer does is cut, and decoding restarts there with the right entry.
    public mutating func revalidateUpcoming(from at: Int) -> [Action] {
        guard state == .playing else { return [] }
        // Silence while waiting for the network is no track boundary.
        let upcoming = timeline.upcoming(from: at).filter { $0.phase == nil }
        guard var previous = upcoming.first?.track else { return [] }
        for segment in upcoming.dropFirst() where segment.track != previous || segment.firstTrackFrame == 0 {
            let expected = successor(of: previous)
            if expected != segment.track {
                let frame = max(at, segment.start)
                var actions = cut(at: frame, fade: frame != segment.start)
                timeline.streamFrame = frame
                actions.append(decodeNext(expected))
                return actions
            }
            previous = segment.track
        }
        var actions: [Action] = []
        let decoding = timeline.decoding.track
        let expected = successor(of: previous)
        // Nothing of the next entry sent yet: make sure the decoder will move on to the right one.
        if decoding != previous, expected != decoding {
            timeline.pending.removeAll()
            actions = [.dropDecoded(resettingEncoder: false), decodeNext(expected)]
            if expected != nil { return actions } // opening it selects it
        }
        if let i = queue.index(ofID: decoding) { queue.select(i) }
        return actions
    }

    /// The entry a step through the queue lands on; nil when it stops.
    public func entryID(_ step: PlayQueue.Step) -> UInt32? {
        switch step {
        case .play(let i), .restart(let i): queue.entries[i].id
        case .stop: nil
        }
    }

    // MARK: Steps of the rules

    /// Cuts the stream at grid frame `frame` (what was sent after it, and what is pending).
    mutating func cut(at frame: Int, fade: Bool = true) -> [Action] {
        let cutSent = timeline.cut(at: frame)
        return (cutSent ? [.flush(from: frame, fade: fade)] : []) + [.dropDecoded(resettingEncoder: true)]
    }

    /// The transport stops at grid frame `frame`: what was sent after it
    /// is cut (while playing), and decoding ends.
    mutating func stop(at frame: Int) -> [Action] {
        let actions = state == .playing ? cut(at: frame) : []
        state = .stopped
        return actions + [.endDecoding]
    }

    /// A new speed or pitch: what is sent from the change point on is
    /// stretched again from the position heard there, so every room hears
    /// the change at once, within the start latency.
    mutating func retune(_ new: PlaybackTempo, at frame: Int, heard: TrackPosition?, durations: [UInt32: Double]) -> [Action] {
        guard new != tempo else { return [] }
        tempo = new
        guard state == .playing, let heard else { return [] }
        return restart(at: frame, from: heard, durations: durations)
    }

    func decodeNext(_ id: UInt32?) -> Action {
        id.map { .open(TrackPosition(track: $0, frame: 0)) } ?? .endDecoding
    }

    /// The entry that follows `id` when it ends by itself.
    func successor(of id: UInt32) -> UInt32? {
        var q = queue
        guard let i = q.index(ofID: id) else { return nil }
        q.select(i)
        return entryID(q.stepForward(manual: false)) // the same entries as `queue`
    }
}
