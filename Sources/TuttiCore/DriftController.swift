/// Steers playback so each frame leaves the DAC at its presentation time.
///
/// Input: the output error (positive = frames leave later than their PTS).
/// Output: the rate at which input frames are consumed per output frame
/// (1 = pass-through). A PI loop with a 2–3 s time constant tracks the DAC
/// crystal's drift (±500 ppm); errors too large to steer inaudibly are
/// reported so the caller can hard-resync instead.
///
/// Until the first error beyond `engageThreshold` it stays at exactly 1, so a
/// DAC that needs no steering plays the stream bit for bit.
public struct DriftController: Sendable {
    public struct Configuration: Sendable {
        /// Proportional gain (per second): ratio offset per second of error.
        public var proportionalGain = 0.7
        /// Integral gain (per second squared).
        public var integralGain = 0.15
        /// Error smoothing time constant, nanoseconds.
        public var smoothing: Int64 = 100_000_000
        /// Steering starts once the smoothed error passes this.
        public var engageThreshold: Int64 = 30_000
        /// Beyond this the error is corrected by a hard resync.
        public var resyncThreshold: Int64 = 5_000_000
        /// Largest steering, as a ratio offset (±1000 ppm).
        public var maximumCorrection = 1_000e-6
        public init() {}
    }

    public enum Decision: Equatable, Sendable {
        case steer(ratio: Double)
        /// Skip (positive) or insert (negative) this many frames now.
        case resync(frames: Int)
    }

    public let configuration: Configuration
    public private(set) var smoothedError: Double = 0
    public private(set) var integral: Double = 0
    public private(set) var engaged = false
    public private(set) var ratio: Double = 1
    private var lastUpdate: Int64?

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    /// Forget the error history (after a start, flush or resync); the learnt
    /// drift (integral) is kept, because the crystal did not change.
    public mutating func restart() {
        smoothedError = 0
        lastUpdate = nil
    }

    /// Feeds one error measurement taken at `now` (any monotonic clock).
    public mutating func update(error: Int64, now: Int64) -> Decision {
        if abs(error) > configuration.resyncThreshold {
            restart()
            return .resync(frames: Int(StreamFormat.frames(nanoseconds: error).rounded()))
        }
        guard let last = lastUpdate else {
            lastUpdate = now
            smoothedError = Double(error)
            return .steer(ratio: ratio)
        }
        let dt = Double(max(0, now - last)) / 1e9
        lastUpdate = now
        guard dt > 0 else { return .steer(ratio: ratio) }
        let alpha = min(1, dt / (Double(configuration.smoothing) / 1e9))
        smoothedError += alpha * (Double(error) - smoothedError)
        if !engaged {
            guard abs(smoothedError) > Double(configuration.engageThreshold) else { return .steer(ratio: 1) }
            engaged = true
        }
        let e = smoothedError / 1e9 // seconds
        let limit = configuration.maximumCorrection
        integral += configuration.integralGain * e * dt
        integral = min(max(integral, -limit), limit)
        let correction = configuration.proportionalGain * e + integral
        ratio = 1 + min(max(correction, -limit), limit)
        return .steer(ratio: ratio)
    }
}
