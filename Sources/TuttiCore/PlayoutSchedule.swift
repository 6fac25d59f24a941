/// What the playout thread does each period, decided on the timeline's
/// frame indexes and where the leader's clock says the DAC is (pure:
/// `PlayoutEngine` performs each step, and tests drive it on made-up
/// timelines and clocks).
///
/// Without a clock model it writes nothing to a DAC that is not running
/// (the DAC stays stopped, never started and starved). Not playing, it
/// waits for the first frame: silence up to it exactly, or
/// starts at once when that moment has come (late: from where the clock
/// is, never out of step). Playing, it steers through `DriftController`: a
/// ratio, or a hard resync that skips frames or holds with silence. A new
/// stream or a new output device starts over, and so does an underrun when
/// steering. (A DAC that ran dry restarts wherever the writer is, some ms
/// late; steering that back at 1,000 ppm took seconds, with the room out of
/// step all along. Lined up on the clock again, it is in step from the next
/// period. Without steering nothing moves the position.) Allocates nothing.
///
/// A sink may take several periods per wake-up (the virtual DAC does, so
/// its thread wakes 20 times a second, not 100). Only audio that is there
/// is written ahead like that. Silence, and a period whose frames are not
/// all in the timeline yet, wait (`wait`) until the sink is down to
/// `Moment.writeDue`, where a one-period sink would have had to write them:
/// audio that is late but still coming (a new track's first chunk, the end
/// of a stall) is never written off earlier than it was.
public struct PlayoutSchedule: Sendable {
    public enum Step: Equatable, Sendable {
        /// Write this much silence, then decide again.
        case silence(frames: Int)
        /// Everything the timeline holds is already in the past: release it
        /// up to `upTo`, write `silence` frames (none: write nothing), decide again.
        case discard(upTo: Int, silence: Int)
        /// Produce a period from `position`, advancing by `ratio` a frame.
        case play
        /// The next period's audio is still coming and the sink holds this
        /// many frames more than it must: sleep that long, then decide again.
        case wait(frames: Int)
    }

    /// What the schedule sees at the start of a period.
    public struct Moment: Sendable {
        /// The timeline's stream generation (0: no stream yet).
        public var streamGeneration: Int
        /// The output device's generation (a new device: start over).
        public var sinkGeneration: Int
        /// Underruns of the sink so far (one more: start over).
        public var sinkUnderruns: Int
        public var validStart: Int
        public var writeEnd: Int
        /// The first frame the consumer may still read.
        public var readStart: Int
        /// The fractional frame index the next frame written should be:
        /// where the leader's clock is when it leaves the DAC (nil: no clock model).
        public var target: Double?
        /// When the next frame written leaves the sink (monotonic ns): the
        /// drift controller's time base. (The time of the decision is no
        /// good when a sink takes several periods per wake-up: they are
        /// decided together but leave 10 ms apart, and steering is per frame.)
        public var now: Int64
        /// Frames worth keeping while there is no clock model (`AudioTimeline.framesKeptWaiting`).
        public var keptWaiting: Int
        /// Frames queued in the sink, and how few it may hold before the
        /// next write is due (`AudioSink.writeDueFrames`; 0: never wait).
        public var queued: Int
        public var writeDue: Int
        /// Frames the sink holds beyond what it must: how long a write can wait.
        var spare: Int { queued - writeDue }

        public init(streamGeneration: Int, sinkGeneration: Int, sinkUnderruns: Int = 0, validStart: Int, writeEnd: Int, readStart: Int,
                    target: Double?, now: Int64, keptWaiting: Int = .max, queued: Int = 0, writeDue: Int = 0) {
            self.streamGeneration = streamGeneration; self.sinkGeneration = sinkGeneration; self.sinkUnderruns = sinkUnderruns
            self.validStart = validStart; self.writeEnd = writeEnd; self.readStart = readStart
            self.target = target; self.now = now; self.keptWaiting = keptWaiting
            self.queued = queued; self.writeDue = writeDue
        }
    }

    public let steering: Bool
    /// Half the timeline's guard: what stays readable behind the play position.
    public let releaseMargin: Int
    /// Frames past a period's end its resampling reads (half the kernel, and one for the ratio).
    public let reach: Int
    public private(set) var playing = false
    /// Fractional index of the next frame to produce; the engine moves it as it produces.
    public var position = 0.0
    public private(set) var ratio = 1.0
    public private(set) var resyncs = 0
    /// The last output error the controller saw (ns; positive: late).
    public private(set) var lastError: Int64 = 0
    /// The output error that made the last hard resync (ns; 0: none).
    public private(set) var lastResyncError: Int64 = 0
    private var streamGeneration = -1
    private var sinkGeneration: Int?
    private var sinkUnderruns: Int?
    private var controller: DriftController

    public init(steering: Bool, releaseMargin: Int, reach: Int = 0, controller: DriftController.Configuration = .init()) {
        self.steering = steering
        self.releaseMargin = releaseMargin
        self.reach = reach
        self.controller = DriftController(configuration: controller)
    }

    /// Silence is never written ahead of when it is due (see the type's comment).
    private func silenceWhenDue(_ m: Moment, _ frames: Int) -> Step {
        m.spare > 0 ? .wait(frames: m.spare) : .silence(frames: frames)
    }

    public mutating func decide(_ m: Moment, period: Int) -> Step {
        if m.streamGeneration != streamGeneration || (sinkGeneration.map { $0 != m.sinkGeneration } ?? false)
            || (steering && (sinkUnderruns.map { $0 != m.sinkUnderruns } ?? false)) {
            // A new stream, a new device (plugged back in), or (steering) a
            // restart after running dry: line up on the leader's clock again.
            streamGeneration = m.streamGeneration
            playing = false
            controller.restart()
        }
        sinkGeneration = m.sinkGeneration
        sinkUnderruns = m.sinkUnderruns
        guard m.streamGeneration > 0 else { return silenceWhenDue(m, period) }
        guard let target = m.target else {
            // No clock yet: keep the newest frames, so the writer has room and drops none of them.
            let held = m.writeEnd - max(m.validStart, m.readStart)
            // A DAC that holds nothing stays stopped until the clock is good:
            // silence written on a timer here started it and let it run dry
            // again and again (on a queued Wi-Fi link, 734 underruns before
            // the first sound). One that is running is fed silence as before.
            let stopped = m.queued == 0
            if held > m.keptWaiting { return .discard(upTo: m.writeEnd - m.keptWaiting, silence: stopped ? 0 : period) }
            return stopped ? .wait(frames: period) : silenceWhenDue(m, period)
        }

        if !playing {
            let first = Double(max(m.validStart, m.readStart))
            if m.writeEnd <= m.validStart { return silenceWhenDue(m, period) }
            if target < first - 0.5 {
                // The first frame is still in the future: exactly the silence before it.
                return .silence(frames: min(Int((first - target).rounded()), period))
            }
            if target >= Double(m.writeEnd) {
                // Stale; what follows may still be coming.
                if m.spare > 0 { return .wait(frames: m.spare) }
                return .discard(upTo: m.writeEnd - releaseMargin, silence: period)
            }
            // Within a couple of frames of the first frame counts as on time:
            // never drop the start of a stream for one frame of measurement jitter.
            position = target < first + 2 ? first : target.rounded()
            playing = true
            ratio = 1
            controller.restart()
            return .play
        }
        // The next period is not all there: while the sink has audio to
        // spare, wait for the rest (before steering, so the controller sees each period once).
        let needed = Int(position) + period + reach
        if m.writeEnd < needed && m.spare > 0 { return .wait(frames: m.spare) }
        guard steering else { return .play }
        let errorFrames = target - position
        let error = Int64((errorFrames * 62_500 / 3).rounded()) // frames → ns at 48 kHz
        lastError = error
        switch controller.update(error: error, now: m.now) {
        case .steer(let r):
            ratio = r
        case .resync(let frames):
            resyncs += 1
            lastResyncError = error
            if frames > 0 {
                position += Double(frames)
            } else {
                // Hold position: the silence takes the place of the frames.
                return .silence(frames: min(-frames, period))
            }
        }
        return .play
    }
}
