/// Where the audio of a stream comes from: stream frames [start,
/// start + count) carry queue entry `track` (an entry id), played at
/// `speed` track frames per stream frame, from a run of stretched audio
/// that began at track frame `trackFrame` and of which this segment starts
/// `runOffset` stream frames in. Keeping the run's origin (not each
/// segment's own track frame) means splitting a segment at chunk
/// boundaries never rounds: positions map back to track time exactly.
/// `phase` (loading/buffering) marks silence sent while a network source
/// had nothing: the position stands still at the run's current point.
public struct StreamSegment: Sendable, Equatable {
    public var start: Int
    public var count: Int
    public var track: UInt32
    public var trackFrame: Int
    public var phase: PlayerPhase? = nil
    public var speed: Double = 1
    public var runOffset: Int = 0

    public init(start: Int, count: Int, track: UInt32, trackFrame: Int, phase: PlayerPhase? = nil, speed: Double = 1, runOffset: Int = 0) {
        self.start = start; self.count = count; self.track = track; self.trackFrame = trackFrame
        self.phase = phase; self.speed = speed; self.runOffset = runOffset
    }

    /// The track frame heard at stream frame `frame` (clamped to the segment's end).
    public func trackFrame(at frame: Int) -> Int {
        let k = phase == nil ? min(frame - start, count) : 0
        return Self.trackFrame(origin: trackFrame, runFrames: runOffset + k, speed: speed)
    }

    /// The track frame where the segment begins.
    public var firstTrackFrame: Int { trackFrame(at: start) }

    /// `runFrames` stream frames into a run from track frame `origin` at `speed`.
    public static func trackFrame(origin: Int, runFrames: Int, speed: Double) -> Int {
        speed == 1 ? origin + runFrames : origin + Int((Double(runFrames) * speed).rounded(.down))
    }

    /// The first `frames` of this segment are sent from stream frame `at`:
    /// returns them, on the grid, and keeps the rest.
    public mutating func take(_ frames: Int, at: Int) -> StreamSegment {
        var taken = self
        taken.start = at
        taken.count = frames
        count -= frames
        if phase == nil { runOffset += frames }
        return taken
    }
}

/// Silence sent while a network source is late: what now playing says.
public enum PlayerPhase: String, Sendable, Equatable { case loading, buffering }
