import Glibc
import Synchronization
import TuttiCore
import TuttiSystem

/// The follower's audio thread: reads frames from the timeline at the
/// instants the leader's clock says, steers for the DAC's drift, applies
/// the channel map, EQ, reverb and volume, mixes an announcement over it (ducking
/// the music), and feeds the sink.
///
/// Real-time discipline: every buffer is allocated in `init`; the loop talks
/// to the rest of the process only through atomics and seqlocks; its only
/// I/O is the sink.
// Sendable because the buffers belong to the playout thread, `thread` to the thread that calls start()/stop(), and everything shared is an atomic or a seqlock.
public final class PlayoutEngine: @unchecked Sendable {
    public struct Statistics: Sendable, Equatable {
        public var underruns = 0
        public var hardResyncs = 0
        public var starvedFrames = 0
        /// Smoothed output error (positive: frames leave after their PTS).
        public var outputErrorNanoseconds: Int64 = 0
        public var ratioPPB: Int64 = 0
        /// Audio held ahead of the play position.
        public var bufferedNanoseconds: Int64 = 0
        /// The output error that made the last hard resync (0: none yet).
        public var lastResyncErrorNanoseconds: Int64 = 0
        public var playing = false
    }

    public let sink: any AudioSink
    public let timeline: AudioTimeline
    public let clock: PublishedClockModel
    public let localClock: SimulatedClock
    private let resampler = FractionalResampler()
    private let controllerConfiguration: DriftController.Configuration
    private let steering: Bool
    private let log: Logger

    private let running = Atomic<Bool>(false)
    private let latencyTrim = Atomic<Int64>(0)
    /// Target gain (low 32 bits, a Float) and the frames to ramp to it (high 32).
    private let volumeTarget = Atomic<UInt64>(UInt64(Float(1).bitPattern))
    /// The room's channel map (`ChannelMap.rawValue`), read once a period.
    private let channelMapTarget = Atomic<UInt8>(ChannelMap.stereo.rawValue)
    /// Announcements (v9 `overlay`): frames on the leader's timeline, gain
    /// already applied, written by the connection thread, mixed here over
    /// what plays. 2^20 frames (21.8 s): the longest announcement a leader
    /// sends is 20 s; pages are resident only once an announcement is written.
    public let overlay = AudioTimeline(seconds: 20, guardFrames: 64)
    /// The music's gain while an announcement plays (a Float's bits).
    private let duckTarget = Atomic<UInt32>(Float(0.1).bitPattern)
    /// The room's equaliser, as last published (see `PublishedEqualizer`).
    public let equalizer: PublishedEqualizer
    private let equalizerKernel: EqualizerProcessor
    /// The room's reverb, as last published (see `PublishedReverb`); run after the EQ.
    public let reverb: PublishedReverb
    private let reverbKernel: ReverbProcessor
    /// How long a reverb's tail rings on in silence (frames: 1.5 × its RT60, −90 dB), after which the kernel rests.
    private let reverbTailFrames = Atomic<Int>(0)
    private let counters = SeqLockedValues()   // underruns, resyncs, starved, playing
    private let figures = SeqLockedValues()    // error, ratio ppb, buffered ns, 0
    private let lastBlock = SeqLockedValues()  // pts (leader ns), leave (monotonic ns), 0, 0
    private var thread: JoinableThread?

    private let period: Int
    private let output: UnsafeMutablePointer<Int16>
    /// One period of float frames, between the resampler and the EQ and volume.
    private let block: UnsafeMutablePointer<Float>

    public init(sink: any AudioSink, timeline: AudioTimeline, clock: PublishedClockModel,
                localClock: SimulatedClock = SimulatedClock(), steering: Bool = true,
                controller: DriftController.Configuration = .init(), log: Logger = .silent) {
        self.log = log
        self.sink = sink
        self.timeline = timeline
        self.clock = clock
        self.localClock = localClock
        self.steering = steering
        self.controllerConfiguration = controller
        period = sink.periodFrames
        output = .allocate(capacity: period * 2)
        output.initialize(repeating: 0, count: period * 2)
        block = .allocate(capacity: period * 2)
        block.initialize(repeating: 0, count: period * 2)
        let published = PublishedEqualizer()
        equalizer = published
        equalizerKernel = EqualizerProcessor(source: published, maxFrames: period)
        let room = PublishedReverb()
        reverb = room
        reverbKernel = ReverbProcessor(source: room)
    }

    deinit { output.deallocate(); block.deallocate() }

    /// Extra delay of the speaker after the DAC (amplifier, DSP): frames are
    /// sent to the DAC this much earlier. Settable at any time.
    public var latencyTrimNanoseconds: Int64 {
        get { latencyTrim.load(ordering: .relaxed) }
        set { latencyTrim.store(newValue, ordering: .relaxed) }
    }

    /// Linear gain 0…1, reached with a 5 ms ramp (see `setVolume(_:rampFrames:)`).
    public var volume: Float {
        get { Float(bitPattern: UInt32(truncatingIfNeeded: volumeTarget.load(ordering: .relaxed))) }
        set { setVolume(newValue, rampFrames: GainRamp.volumeFrames) }
    }

    /// Moves the gain to `gain` (0…1) over `rampFrames` frames: a volume
    /// change over a few ms, a mute over 30 ms. Any thread.
    public func setVolume(_ gain: Float, rampFrames: Int) {
        let g = min(max(gain.isFinite ? gain : 0, 0), 1)
        volumeTarget.store(UInt64(UInt32(clamping: max(0, rampFrames))) << 32 | UInt64(g.bitPattern), ordering: .relaxed)
    }

    /// The room's equaliser: designed here (off the audio thread), handed
    /// over lock-free, crossfaded in over 10 ms. Flat is bypassed (bit-exact).
    /// One caller at a time (the follower's connection thread).
    public func setEqualizer(_ settings: EqualizerSettings) {
        equalizer.publish(EqualizerDesign(settings))
    }

    /// The room's reverb: handed over lock-free; the mix moves over 10 ms,
    /// a new size or damping fades the old room out and the new one in.
    /// 0 % is bypassed (bit-exact). One caller at a time (the follower's connection thread).
    public func setReverb(_ settings: ReverbSettings) {
        reverbTailFrames.store(Int(1.5 * settings.decaySeconds * Double(StreamFormat.sampleRate)), ordering: .relaxed)
        reverb.publish(settings)
    }

    /// Which channels the speaker plays (a channel map, or its side of a
    /// stereo pair): applied before the EQ, crossfaded over 10 ms when it
    /// changes; `stereo` leaves the samples untouched. Any thread.
    public var channelMap: ChannelMap {
        get { ChannelMap(rawValue: channelMapTarget.load(ordering: .relaxed)) ?? .stereo }
        set { channelMapTarget.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// How far the music goes down while an announcement plays (a factor, 0…1). Any thread.
    public var duckGain: Float {
        get { Float(bitPattern: duckTarget.load(ordering: .relaxed)) }
        set { duckTarget.store(min(max(newValue.isFinite ? newValue : 0, 0), 1).bitPattern, ordering: .relaxed) }
    }

    /// The duck ramps over 50 ms (down before the announcement starts, up
    /// after it), and holds 150 ms after its end so words a pause apart do not pump.
    public static let duckRampFrames = 2_400
    public static let duckHoldFrames = 7_200

    public var statistics: Statistics {
        var s = Statistics()
        if let (u, r, st, p) = counters.load() {
            s.underruns = Int(u); s.hardResyncs = Int(r); s.starvedFrames = Int(st); s.playing = p != 0
        }
        if let (e, ratio, buffered, resyncError) = figures.load() {
            s.outputErrorNanoseconds = e; s.ratioPPB = ratio; s.bufferedNanoseconds = buffered
            s.lastResyncErrorNanoseconds = resyncError
        }
        return s
    }

    /// The PTS of the most recent block sent to the DAC and the monotonic
    /// time it leaves (as the sink reports it, else as estimated).
    public var lastBlockTiming: (pts: LeaderTime, leave: Int64)? {
        guard let (pts, leave, valid, _) = lastBlock.load(), valid == 1 else { return nil }
        return (LeaderTime(nanoseconds: pts), leave)
    }

    public func start(realtime: Bool = true) {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Tools (top, the rt bench) look for this name.
        do {
            thread = try JoinableThread(name: "tutti-playout", stackSize: 1 << 20) { [self] in
                if realtime { requestRealtime() }
                run(sink)
            }
        } catch {
            fatalError("\(error)") // a speaker without its audio thread cannot play
        }
    }

    /// Stops the thread and waits for it; the sink stays open.
    public func stop() {
        running.store(false, ordering: .releasing)
        thread?.join()
        thread = nil
    }

    private func requestRealtime() {
        var param = sched_param()
        param.sched_priority = 10
        let rc = pthread_setschedparam(pthread_self(), Int32(SCHED_FIFO), &param)
        if rc != 0 {
            log.warning("playout thread runs without real-time priority: \(String(cString: strerror(rc)))")
        }
    }

    // MARK: The audio thread

    /// The loop, for the sink's own type: the existential is opened once
    /// here, and the kinds of sink a speaker has are specialised, so each
    /// period's `delay` and `write` are direct calls.
    @_specialize(where Sink == VirtualDAC)
    @_specialize(where Sink == HotplugOutput<ALSASink>)
    private func run<Sink: AudioSink>(_ sink: Sink) {
        let halfTaps = resampler.halfTaps
        var schedule = PlayoutSchedule(steering: steering, releaseMargin: timeline.guardFrames / 2, reach: halfTaps + 1,
                                       controller: controllerConfiguration)
        let writeDue = sink.writeDueFrames
        var underruns = 0, starved = 0
        var position = 0.0
        // A local: a stored property would be checked for exclusive access on every frame.
        var ramp = GainRamp()
        var channels = ChannelMapper()
        // The music's duck factor now (1: not ducked), moved 1/2400 of the way per frame.
        var duck: Float = 1
        // Frames of silence the reverb's tail has rung on since the music stopped.
        var tail = 0

        while running.load(ordering: .relaxed) {
            let (queued, realNow) = sink.delay()
            let snap = timeline.snapshot()
            var target: Double?
            // The leader time the next frame written leaves the DAC (for an announcement over silence).
            var nextLeaveLeader: Int64?
            if let model = clock.current() {
                let trim = latencyTrim.load(ordering: .relaxed)
                let nowLeader = model.leaderTime(at: localClock.local(fromReal: realNow) + trim)
                nextLeaveLeader = nowLeader.nanoseconds + StreamFormat.nanoseconds(frames: queued)
                // What is queued drains at the DAC's own rate, which steering has
                // measured: `ratio` stream frames per frame played. (At 48 kHz
                // nominal, 60 ms queued in a DAC 150 ppm off was 9 µs of error.)
                target = Double(snap.validStart) + StreamFormat.frames(nanoseconds: nowLeader - snap.epoch) + Double(queued) * schedule.ratio
            }
            let moment = PlayoutSchedule.Moment(streamGeneration: snap.generation, sinkGeneration: sink.generation,
                                                sinkUnderruns: sink.underruns, validStart: snap.validStart, writeEnd: snap.writeEnd,
                                                readStart: timeline.readStart, target: target,
                                                now: realNow + StreamFormat.nanoseconds(frames: queued),
                                                keptWaiting: timeline.framesKeptWaiting, queued: queued, writeDue: writeDue)
            switch schedule.decide(moment, period: period) {
            case .silence(let frames):
                channels.settle(on: ChannelMap(rawValue: channelMapTarget.load(ordering: .relaxed)) ?? .stereo)
                // The reverb's tail rings out after the music (a pause, a skip's gap) as a room's would,
                // so it never resumes mid-tail under the next music.
                let ringing = !reverbKernel.isBypassed && tail < reverbTailFrames.load(ordering: .relaxed)
                // A room with nothing playing (or not yet) plays an announcement alone.
                let announcing = nextLeaveLeader.map { overlayPending(at: $0, frames: max(1, min(frames, period))) } ?? false
                if ringing || announcing {
                    let n = max(1, min(frames, period))
                    block.update(repeating: 0, count: 2 * n)
                    if ringing {
                        reverbKernel.process(block, frames: n)
                        tail += n
                        let volume = volumeTarget.load(ordering: .relaxed)
                        let targetGain = Float(bitPattern: UInt32(truncatingIfNeeded: volume))
                        if targetGain != ramp.target { ramp.move(to: targetGain, frames: Int(volume >> 32)) }
                        for k in 0..<n {
                            let g = ramp.next()
                            block[2 * k] *= g
                            block[2 * k + 1] *= g
                        }
                    }
                    if announcing, let start = nextLeaveLeader { mixOverlay(frames: n, startLeader: start, step: 1, duck: &duck) } else { duck = 1 }
                    for k in 0..<2 * n { output[k] = sampleToInt16(block[k]) }
                    if !sink.write(output, frames: n) { return }
                    continue
                }
                duck = 1
                if !writeSilence(frames, to: sink) { return }
                continue
            case .discard(let upTo, let frames):
                timeline.release(upTo: upTo)
                if frames > 0 && !writeSilence(frames, to: sink) { return }
                continue
            case .wait(let frames):
                channels.settle(on: ChannelMap(rawValue: channelMapTarget.load(ordering: .relaxed)) ?? .stereo)
                Monotonic.sleep(nanoseconds: StreamFormat.nanoseconds(frames: frames))
                continue
            case .play:
                position = schedule.position
                tail = 0
            }
            let ratio = schedule.ratio

            // Produce one period.
            let blockStart = position
            let writeEnd = snap.writeEnd
            let volume = volumeTarget.load(ordering: .relaxed)
            let targetGain = Float(bitPattern: UInt32(truncatingIfNeeded: volume))
            if targetGain != ramp.target { ramp.move(to: targetGain, frames: Int(volume >> 32)) }
            for k in 0..<period {
                // Rounded down without a call to floor for every frame.
                var i = Int(position)
                if Double(i) > position { i -= 1 }
                let fraction = position - Double(i)
                var left: Float = 0, right: Float = 0
                if fraction == 0 && ratio == 1 {
                    if i < writeEnd && i >= snap.validStart {
                        let f = timeline.frame(i)
                        left = f[0]; right = f[1]
                    } else { starved += 1 }
                } else if i + halfTaps < writeEnd && i - halfTaps >= snap.validStart {
                    (left, right) = resampler.interpolate(at: timeline.frame(i), fraction: fraction)
                } else {
                    starved += 1
                }
                block[2 * k] = left
                block[2 * k + 1] = right
                position += ratio
            }
            // The channel map first: the EQ then shapes what this speaker really plays.
            channels.process(block, frames: period, target: ChannelMap(rawValue: channelMapTarget.load(ordering: .relaxed)) ?? .stereo)
            equalizerKernel.process(block, frames: period)
            // The reverb after the EQ (it shapes the room the EQ'd music sounds in), before the volume.
            reverbKernel.process(block, frames: period)
            let ptsNs = snap.epoch.nanoseconds + Int64(((blockStart - Double(snap.validStart)) * 62_500 / 3).rounded())
            if duck != 1 || overlayPending(at: ptsNs, frames: period) {
                // An announcement: the music ducked, then volume, then the announcement at its own gain
                // (a muted or quiet room still hears the doorbell).
                for k in 0..<period {
                    let g = ramp.next()
                    block[2 * k] *= g
                    block[2 * k + 1] *= g
                }
                mixOverlay(frames: period, startLeader: ptsNs, step: ratio, duck: &duck)
                for k in 0..<2 * period { output[k] = sampleToInt16(block[k]) }
            } else if ramp.gain == ramp.target {
                // A steady gain (the usual case): one multiply and a conversion the compiler vectorises.
                let g = ramp.gain
                for k in 0..<2 * period { output[k] = sampleToInt16(block[k] * g) }
            } else {
                for k in 0..<period {
                    let g = ramp.next()
                    output[2 * k] = sampleToInt16(block[2 * k] * g)
                    output[2 * k + 1] = sampleToInt16(block[2 * k + 1] * g)
                }
            }
            schedule.position = position
            timeline.release(upTo: Int(position) - schedule.releaseMargin)

            if !sink.write(output, frames: period) { break }
            underruns = sink.underruns
            let leave = sink.lastWriteLeaveTime ?? (realNow + StreamFormat.nanoseconds(frames: queued))
            lastBlock.store(ptsNs, leave, 1, 0)
            counters.store(Int64(underruns), Int64(schedule.resyncs), Int64(starved), schedule.playing ? 1 : 0)
            let buffered = StreamFormat.nanoseconds(frames: max(0, writeEnd - Int(position)))
            figures.store(schedule.lastError, Int64(((ratio - 1) * 1e9).rounded()), buffered, schedule.lastResyncError)
        }
    }

    /// Whether an announcement's frames are within a ramp of the `frames`
    /// frames from `leaderNs`, or the hold after its end. The whole block
    /// counts: a ramp due in its middle starts there (`mixOverlay` ramps
    /// frame by frame), not a period late, so every room ducks at the same frame.
    @inline(__always)
    private func overlayPending(at leaderNs: Int64, frames: Int) -> Bool {
        let o = overlay.snapshot()
        guard o.generation > 0, o.writeEnd > o.validStart else { return false }
        let position = Double(o.validStart) + StreamFormat.frames(nanoseconds: leaderNs - o.epoch.nanoseconds)
        return position + Double(frames + Self.duckRampFrames) >= Double(o.validStart) && position < Double(o.writeEnd + Self.duckHoldFrames)
    }

    /// Ducks `block` (music, volume applied) and adds the announcement, for
    /// `frames` frames whose first leaves at `startLeader`, stepping `step`
    /// announcement frames per frame (the music's steering ratio). Reads
    /// the nearest frame: sub-frame timing (≤ 10 µs) is below what a voice
    /// or a chime needs. No allocation, no lock.
    @inline(__always)
    private func mixOverlay(frames: Int, startLeader: Int64, step: Double, duck: inout Float) {
        let o = overlay.snapshot()
        let rampStep = 1 / Float(Self.duckRampFrames)
        let low = Float(bitPattern: duckTarget.load(ordering: .relaxed))
        var position = Double(o.validStart) + StreamFormat.frames(nanoseconds: startLeader - o.epoch.nanoseconds)
        let valid = o.generation > 0
        let readStart = overlay.readStart
        for k in 0..<frames {
            let i = Int(position.rounded())
            let ducking = valid && i + Self.duckRampFrames >= o.validStart && i < o.writeEnd + Self.duckHoldFrames
            let want: Float = ducking ? low : 1
            if duck > want { duck = max(want, duck - rampStep) } else if duck < want { duck = min(want, duck + rampStep) }
            var left = block[2 * k] * duck, right = block[2 * k + 1] * duck
            if valid && i >= o.validStart && i < o.writeEnd && i >= readStart {
                let f = overlay.frame(i)
                left += f[0]; right += f[1]
            }
            block[2 * k] = left
            block[2 * k + 1] = right
            position += step
        }
        // Frames played are the writer's to reuse (the ring is the per-peer bound).
        let played = min(Int(position.rounded()), o.writeEnd) - overlay.guardFrames
        if valid && played > o.validStart { overlay.release(upTo: played) }
    }

    @inline(__always)
    private func writeSilence<Sink: AudioSink>(_ frames: Int, to sink: Sink) -> Bool {
        let n = max(1, min(frames, period))
        output.update(repeating: 0, count: n * 2)
        return sink.write(output, frames: n)
    }
}
