import Dispatch
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTimeStretch
import TuttiStreams
import TuttiControlKit

/// The source thread's loop: decode, wait until a chunk is due (`buffer`
/// ahead of its PTS), encode it once and hand it to every room; silence
/// while a network source starves; the end of the list.
extension StreamPlayer {
    func run() {
        defer { failWaitingCommands() }
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
            transport.pausedAt = TrackPosition(track: id, frame: max(0, frame))
            publish()
            log.info("restored a queue of \(queue.count) with entry \(id) at \(restored.positionMilliseconds) ms, paused")
        } else {
            if !queue.isEmpty { queue.select(queue.order[0]) }
            if let first = queue.currentEntry { transport.pausedAt = TrackPosition(track: first.id, frame: 0) }
            if queue.currentEntry == nil { state = .stopped; endOfList = true } // an empty queue is stopped, and says so
            publish()
            if let first = queue.currentEntry { open(entry: first.id, at: 0) }
        }

        while running.load(ordering: .relaxed) {
            handleCommands()
            guard state == .playing else {
                if resumeIfFolderIsBack() { continue } // audio is due a start latency from now: no waiting
                // Paused or stopped: asleep until a command comes. Only while
                // a music folder is missing (a disk unplugged) it looks again
                // each second, to play on when it is back.
                if awaitingFolder != nil { _ = wake.wait(timeout: .now() + .seconds(1)) } else { wake.wait() }
                continue
            }
            fillPending()
            // When to send what: `SourcePacing` (TuttiCore) decides; commands interrupt its waits.
            let pacing = SourcePacing(buffer: buffer, startLatency: startLatency, framesPerChunk: framesPerChunk)
            let actions = pacing.next(now: Monotonic.now(), nextPTS: ptsOf(frame: streamFrame).nanoseconds, pendingFrames: pending.count / 2,
                                      starved: starvedPhase != nil, endOfList: endOfList)
            for action in actions {
                switch action {
                case .finish:
                    finishList()
                case .appendSilence(let frames):
                    // The network is late: silence goes out so rooms keep time, marked so
                    // that now playing reads loading/buffering, and the position stands still.
                    guard let phase = starvedPhase else { break } // asked for only while starved
                    pending += [Float](repeating: 0, count: frames * 2)
                    pendingSegments.append(Segment(start: 0, count: frames, track: track, trackFrame: runOrigin, phase: phase,
                                                   speed: tempo.speed, runOffset: runFrames))
                    if background?.isRealTime == true { realTimeLeadDue = true } // it comes back a buffer ahead
                case .wait(let nanoseconds):
                    _ = wake.wait(timeout: .now() + .nanoseconds(Int(nanoseconds)))
                case .send(let chunks):
                    // Two chunks a wake-up go in one write per room.
                    var outgoing: [(Message, LeaderTime)] = []
                    outgoing.reserveCapacity(chunks)
                    for _ in 0..<chunks { if let chunk = makeChunk() { outgoing.append(chunk) } }
                    if !outgoing.isEmpty { broadcast(outgoing) }
                }
            }
        }
    }

    func ptsOf(frame: Int) -> LeaderTime {
        epoch + StreamFormat.nanoseconds(frames: frame) - codecDelay
    }

    /// Encodes the next chunk and moves the stream on by it; nil when there is nothing to send.
    func makeChunk() -> (Message, LeaderTime)? {
        guard let encoder else { return nil }
        var count = min(framesPerChunk, pending.count / 2)
        if count < framesPerChunk && configuration.codec == .opus {
            pending += [Float](repeating: 0, count: (framesPerChunk - count) * 2) // Opus needs whole frames
            count = framesPerChunk
        }
        guard count > 0 else { return nil }
        if fadeIn > 0 {
            let ramp = 120
            for i in 0..<min(fadeIn, count) {
                let g = Float(ramp - fadeIn + i + 1) / Float(ramp)
                pending[2 * i] *= g; pending[2 * i + 1] *= g
            }
            fadeIn = max(0, fadeIn - count)
        }
        let pts = ptsOf(frame: streamFrame)
        var message: Message?
        do {
            let payload = try pending.withUnsafeBufferPointer { (p) throws(AudioError) in try encoder.encode(p.baseAddress!, count: count) }
            message = .chunk(Chunk(streamID: streamID, sequence: sequence, pts: pts, frames: UInt32(count), payload: payload))
        } catch {
            log.error("\(error)")
        }
        sequence &+= 1
        // The consumed frames' provenance moves into what was sent, on the grid.
        transport.timeline.send(count)
        pending.removeFirst(min(pending.count, count * 2))
        // What rooms still hear lies at most a buffer behind what is sent: keep
        // that and 2 s more. (publish() shares the array, so each chunk copies what is kept.)
        transport.timeline.forget(before: streamFrame - Int(StreamFormat.frames(nanoseconds: buffer)) - 2 * StreamFormat.sampleRate)
        publish()
        return message.map { ($0, pts) }
    }

    func finishList() {
        let end = ptsOf(frame: streamFrame)
        broadcast([(.streamEnd(streamID: streamID, at: end), end)])
        log.info("end of play list")
        state = .stopped
        // Stopped by "single": a later play goes on with the next entry, not from the top.
        var resume = queue.order.first
        if queue.single != .off, case .play(let i) = queue.stepForward(manual: true) { resume = i }
        if queue.single == .oneshot { queue.single = .off }
        let first = resume.map { queue.entries[$0].id } ?? 0
        // Stopped by a missing music folder: play goes on where it stopped.
        let stoppedAt = awaitingFolder?.position ?? TrackPosition(track: first, frame: 0)
        transport.pausedAt = stoppedAt
        if let i = queue.index(ofID: stoppedAt.track) ?? resume { queue.select(i) }
        transport.tailUntil = streamFrame
        endedAtomic.store(true, ordering: .releasing) // before the status that announces it: whoever it wakes sees the end
        publish()
    }
}
