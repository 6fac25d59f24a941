/// The gain a speaker applies, moved to each new target in a straight line
/// over a given number of frames: a volume change ramps over a few
/// milliseconds (no zipper noise) and a mute fades out instead of cutting.
/// At its target the gain is exactly the target, so unity gain is bit-exact.
public struct GainRamp: Sendable, Equatable {
    public private(set) var gain: Float
    public private(set) var target: Float
    private var step: Float = 0

    public init(gain: Float = 1) { self.gain = gain; target = gain }

    /// Starts moving to `target`, arriving after `frames` frames (0: at once).
    public mutating func move(to target: Float, frames: Int) {
        self.target = target
        step = frames > 0 ? (target - gain) / Float(frames) : 0
        if frames <= 0 { gain = target }
    }

    /// The gain for the next frame.
    @inline(__always)
    public mutating func next() -> Float {
        guard gain != target else { return gain }
        let moved = gain + step
        // Never overshoot: the last step lands exactly on the target.
        gain = (step > 0 && moved >= target) || (step < 0 && moved <= target) || step == 0 ? target : moved
        return gain
    }

    /// Frames per ramp: a volume change and a mute (at 48 kHz).
    public static let volumeFrames = 240      // 5 ms
    public static let muteFrames = 1_440      // 30 ms
}
