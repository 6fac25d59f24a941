import Dispatch
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDecode
import TuttiTimeStretch
import TuttiStreams
import TuttiControlKit

/// Decoding on the source thread: opening queue entries (files, network
/// sources on their own thread), resampling to 48 kHz, stretching for speed
/// and pitch, and what each decoded frame is (`pendingSegments`), until
/// `makeChunk` gives it a place on the grid. Failures move on through the
/// queue; a missing music folder stops and waits for it.
extension StreamPlayer {
    /// Decodes until at least one chunk is pending or the list ends.
    func fillPending() {
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
                        endDecoding()
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
                        realTimeLeadDue = source.isRealTime
                    }
                    if realTimeLeadDue {
                        realTimeLeadDue = false
                        // What a pre-rolling source already holds ahead counts towards the lead.
                        let rate = Double(source.progress.sampleRate ?? StreamFormat.sampleRate)
                        leadRealTimeSource(ahead: source.settleSeconds > 0 ? source.progress.bufferedSeconds + Double(n) / rate : 0)
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

    /// A source that delivers in real time (a pipe, a line input) never gets
    /// ahead by itself: its first frame would be sent only a start latency
    /// before it plays, and every room would play from a 100 ms buffer. So
    /// silence goes first, up to a buffer's lead, and from then on its audio
    /// is sent as it arrives, a buffer before the rooms play it: the delay
    /// from its input to the rooms is the buffer.
    ///
    /// A source that runs `ahead` seconds ahead of real time already (a
    /// pipe whose writer pre-rolled) is led only by the rest: shairport-sync
    /// writes a second of silence before an AirPlay session's audio, and a
    /// buffer of lead on top of it put the phone's audio 1.83 s after it
    /// reached the pipe (1.04–1.06 s led by the rest; AirPlayTests).
    func leadRealTimeSource(ahead: Double = 0) {
        let firstFrame = streamFrame + pending.count / 2
        let lead = ptsOf(frame: firstFrame).nanoseconds - Monotonic.now()
        let frames = Int(StreamFormat.frames(nanoseconds: buffer - lead - Int64(max(0, ahead) * 1e9)))
        guard frames > 0 else { return }
        pending += [Float](repeating: 0, count: 2 * frames)
        pendingSegments.append(Segment(start: 0, count: frames, track: track, trackFrame: runOrigin, phase: .loading, speed: tempo.speed, runOffset: runFrames))
    }

    /// `decoded` holds `n` frames at the source's rate: resample and queue them.
    func consumeDecoded(_ n: Int) {
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
    func recordFailure(_ reason: String) {
        consecutiveFailures += 1
        published.withLock { $0.error = reason }
    }

    func appendResampled(_ body: (inout [Float]) throws(AudioError) -> Void) {
        var out: [Float] = []
        do { try body(&out) } catch { log.error("resampling \(decoder?.path ?? ""): \(error)") }
        appendTrackAudio(out)
    }

    /// 48 kHz audio of the track, in track time: stretched when the speed or pitch asks.
    func appendTrackAudio(_ samples: [Float]) {
        guard let stretcher else { return appendPending(samples) }
        var out: [Float] = []
        samples.withUnsafeBufferPointer { stretcher.process($0, into: &out) }
        appendPending(out)
    }

    /// The track's audio has all been read: flush the resampler and the stretcher.
    func finishTrackAudio() {
        if let resampler { appendResampled { (out) throws(AudioError) in try resampler.finish(into: &out) } }
        if let stretcher {
            var out: [Float] = []
            stretcher.finish(into: &out)
            appendPending(out)
        }
    }

    /// Audio ready to send (stream time): the run of the current track grows by it.
    func appendPending(_ samples: [Float]) {
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
    func beginRun(track id: UInt32, at frame: Int) {
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
    func open(entry id: UInt32, at frame: Int) {
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
        endDecoding()
    }

    /// Nothing is decoded any more (until the next `open`).
    func closeSource() {
        decoder = nil; background = nil
        resampler = nil; stretcher = nil
    }

    /// Decoding ends: nothing open, and the list has played out once what
    /// is pending is sent (until the next `open`).
    func endDecoding() {
        closeSource()
        endOfList = true
    }

    /// Decoding goes on with entry `id` from its start, or ends when there is none.
    func decodeNext(_ id: UInt32?) {
        if let id { open(entry: id, at: 0) } else { endDecoding() }
    }

    /// The entry a step through the queue lands on; nil when it stops.
    func entryID(_ step: PlayQueue.Step) -> UInt32? { transport.entryID(step) }

    /// The music folder holding the next audio is gone: stop once what was
    /// sent has played, keep the queue and the place, and go on by itself
    /// when the folder is back (`resumeIfFolderIsBack`).
    func awaitFolder(_ folder: String, at position: TrackPosition) {
        if awaitingFolder == nil {
            log.error("the music folder \(folder) is unavailable (a disk unplugged?): playback stops and goes on when it is back")
        }
        awaitingFolder = (folder, position, Monotonic.now())
        recordFailure("the music folder \(folder) is unavailable; playback goes on when it is back")
        endDecoding()
    }

    /// Once a second while stopped by a missing folder: is it back? (true: playing again)
    func resumeIfFolderIsBack() -> Bool {
        guard let waiting = awaitingFolder, state == .stopped else { return false }
        let now = Monotonic.now()
        guard now - waiting.checkedAt >= 1_000 * nanosecondsPerMillisecond else { return false }
        awaitingFolder?.checkedAt = now
        guard let i = queue.index(ofID: waiting.position.track), unavailableFolder(queue.entries[i].uri) == nil else { return false }
        log.info("the music folder \(waiting.folder) is back: playing on")
        awaitingFolder = nil
        perform(transport.restart(at: max(changePoint(now: now), 0), from: waiting.position, durations: published.withLock { $0.durations }))
        publish()
        return true
    }

    /// The current entry ended: gapless on to what the queue says is next.
    func advanceTrack() {
        closeSource()
        decodeNext(entryID(queue.stepForward(manual: false)))
    }
}
