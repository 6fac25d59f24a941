import Dispatch
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTimeStretch
import TuttiStreams
import TuttiControlKit

/// What rooms hear, for status on any thread: the source thread publishes
/// its segments (which stream frames are which track's), and readers work
/// out the position heard now, and when it next changes by itself.
extension StreamPlayer {
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

    func publish() {
        if state != .stopped { transport.tailUntil = nil } // a list's tail is heard only while stopped
        let (state, segments, epoch, queue) = (self.state, transport.timeline.sent, self.epoch, self.queue)
        let (pausedAt, tailUntil) = (transport.pausedAt, transport.tailUntil)
        let network = background.map { (track: track, pendingSeconds: Double(pending.count / 2) / Double(StreamFormat.sampleRate), progress: $0.progress) }
        let starved = state == .playing ? starvedPhase.map(PlayerState.init) : nil
        let tempo = self.tempo
        published.withLock { p in
            p.tempo = tempo
            p.state = state
            p.pausedAt = pausedAt
            p.tailUntil = tailUntil
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
}
