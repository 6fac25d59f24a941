import Dispatch
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTimeStretch
import TuttiStreams

/// The transport rules, on the source thread: a command takes effect at the
/// change point (a start latency ahead); pause, skip and seek cut what was
/// sent after it; queue edits re-check what is already on its way.
extension StreamPlayer {
    /// The grid frame a start latency from now: where changes take effect.
    func changePoint(now: Int64) -> Int {
        Int(StreamFormat.frames(nanoseconds: now + startLatency - epoch.nanoseconds).rounded(.up))
    }

    /// Where in which track the stream is at grid frame `frame`.
    func position(atFrame frame: Int) -> TrackPosition {
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
    func cut(at frame: Int, fade: Bool = true) {
        if frame < streamFrame {
            let pts = ptsOf(frame: frame)
            purge(pts)
            // Followers cut their decoded audio, which Opus delays by its
            // look-ahead: the cut is where input frame `frame` is heard.
            let heardAt = pts + codecDelay
            broadcast([(.flush(streamID: streamID, from: heardAt, fade: fade), heardAt)])
            history.removeAll { $0.start >= frame }
            if let i = history.indices.last, history[i].start + history[i].count > frame {
                history[i].count = frame - history[i].start
            }
        }
        dropPending()
        encoder?.reset()
    }

    /// Forgets what is decoded but not sent yet.
    func dropPending() {
        pending.removeAll(keepingCapacity: true)
        pendingSegments.removeAll()
    }

    /// The transport stops at grid frame `frame`: what was sent after it
    /// is cut (while playing), and decoding ends.
    func stopTransport(at frame: Int) {
        if state == .playing { cut(at: frame) }
        endDecoding()
        state = .stopped
    }

    func apply(_ command: PlayerCommand) -> Result<CommandOutcome, PlayerError> {
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
            if tailAudible { cut(at: at) } // a list's tail still heard: cut it too
            published.withLock { $0.tailUntil = nil }
            stopTransport(at: at)
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
                    if state == .playing { stopTransport(at: at) }
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
            queue.clear()
            stopTransport(at: at)
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
    func revalidateUpcoming(from at: Int) {
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
            return entryID(q.stepForward(manual: false)) // the same entries as `queue`
        }
        guard var previous = upcoming.first?.track else { return }
        for segment in upcoming.dropFirst() where segment.track != previous || segment.firstTrackFrame == 0 {
            let expected = successor(of: previous)
            if expected != segment.track {
                let frame = max(at, segment.start)
                cut(at: frame, fade: frame != segment.start)
                streamFrame = frame
                decodeNext(expected)
                return
            }
            previous = segment.track
        }
        // Nothing of the next entry sent yet: make sure the decoder will move on to the right one.
        if track != previous, successor(of: previous) != track {
            let expected = successor(of: previous)
            dropPending()
            decodeNext(expected)
        }
        if let i = queue.index(ofID: track) { queue.select(i) }
    }

    /// A new speed or pitch: what is sent from the change point on is
    /// stretched again from the position heard there, so every room hears
    /// the change at once, within the start latency.
    func retune(_ new: PlaybackTempo, at frame: Int, heard: TrackPosition?) {
        guard new != tempo else { return }
        tempo = new
        log.info("speed \(fixedPoint(new.speed, decimals: 2))×, pitch \(fixedPoint(new.pitchSemitones, decimals: 1, plus: true)) semitones")
        if state == .playing, let heard { restart(at: frame, position: heard) }
    }

    /// Starts audio from `position` at grid frame `frame` (cutting what was sent after it).
    func restart(at frame: Int, position: TrackPosition) {
        cut(at: frame)
        published.withLock { $0.error = nil }
        consecutiveFailures = 0
        streamFrame = frame
        if let duration = published.withLock({ $0.durations[position.track] }), Double(position.frame) / 48_000 >= duration,
           let i = queue.index(ofID: position.track) {
            // Seeking past the end of a track: go on to the next one.
            queue.select(i)
            decodeNext(entryID(queue.stepForward(manual: true)))
        } else {
            open(entry: position.track, at: position.frame)
        }
        endedAtomic.store(false, ordering: .releasing)
        // Starting mid-track (resume, seek) fades in; a track's own start is left bit-exact.
        fadeIn = position.frame > 0 ? 120 : 0
        state = .playing
    }
}
