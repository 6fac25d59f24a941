/// Steers playback so each frame leaves the DAC at its presentation time.
///
/// Input: the output error (positive = frames leave later than their PTS).
/// Output: the rate at which input frames are consumed per output frame
/// (1 = pass-through).
///
/// The DAC crystal's drift is estimated directly: the controller adds back
/// its own corrections to get the error it would have seen without
/// steering, and fits that error's slope (exponentially weighted least
/// squares, a few seconds' memory). The ratio is that drift plus a
/// proportional term that pulls the remaining phase error to zero with a
/// time constant of `phaseTimeConstant`. Errors too large to steer
/// inaudibly are reported so the caller can hard-resync instead.
///
/// Until the first error beyond `engageThreshold` it stays at exactly 1, so a
/// DAC that needs no steering plays the stream bit for bit.
public struct DriftController: Sendable {
    public struct Configuration: Sendable {
        /// Time constant of the phase correction, nanoseconds.
        public var phaseTimeConstant: Int64 = 700_000_000
        /// Memory of the drift fit, nanoseconds.
        public var driftWindow: Int64 = 4_000_000_000
        /// The drift fit is trusted once it has seen this much time.
        public var driftWarmUp: Int64 = 400_000_000
        /// Error smoothing for the proportional term, nanoseconds.
        public var smoothing: Int64 = 50_000_000
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
    public private(set) var engaged = false
    public private(set) var ratio: Double = 1
    /// The DAC's estimated rate error relative to the leader clock (1e-6 = 1 ppm).
    public private(set) var drift: Double = 0

    private var lastUpdate: Int64?
    private var correction: Double = 0     // ns of error removed by steering so far
    private var origin: Int64 = 0          // regression time origin
    private var fitted: Int64 = 0          // ns of data in the fit
    private var s0 = 0.0, st = 0.0, se = 0.0, stt = 0.0, ste = 0.0

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    /// Forget the error history (after a start, flush or resync); the drift
    /// estimate is kept, because the crystal did not change.
    public mutating func restart() {
        lastUpdate = nil
        smoothedError = 0
        correction = 0
        fitted = 0
        s0 = 0; st = 0; se = 0; stt = 0; ste = 0
    }

    /// Feeds one error measurement taken at `now` (any monotonic clock, ns).
    public mutating func update(error: Int64, now: Int64) -> Decision {
        if abs(error) > configuration.resyncThreshold {
            restart()
            return .resync(frames: Int(StreamFormat.frames(nanoseconds: error).rounded()))
        }
        guard let last = lastUpdate else {
            lastUpdate = now
            origin = now
            smoothedError = Double(error)
            addToFit(at: now, raw: Double(error), elapsed: 0)
            return .steer(ratio: ratio)
        }
        let dt = now - last
        guard dt > 0 else { return .steer(ratio: ratio) }
        lastUpdate = now
        // What steering removed since the last update.
        correction += (ratio - 1) * Double(dt)
        addToFit(at: now, raw: Double(error) + correction, elapsed: dt)
        fitted += dt

        let alpha = min(1, Double(dt) / Double(configuration.smoothing))
        smoothedError += alpha * (Double(error) - smoothedError)
        if !engaged {
            guard abs(smoothedError) > Double(configuration.engageThreshold) else { return .steer(ratio: 1) }
            engaged = true
        }
        if fitted >= configuration.driftWarmUp, let slope = fitSlope() {
            drift = slope
        }
        let limit = configuration.maximumCorrection
        let phase = smoothedError / Double(configuration.phaseTimeConstant)
        ratio = 1 + min(max(drift + phase, -limit), limit)
        return .steer(ratio: ratio)
    }

    private mutating func addToFit(at now: Int64, raw: Double, elapsed: Int64) {
        if now - origin > 4 * configuration.driftWindow {
            // Re-centre the time origin to keep the sums well conditioned.
            let shift = Double(now - origin) / 1e9
            ste -= shift * se
            stt += -2 * shift * st + shift * shift * s0
            st -= shift * s0
            origin = now
        }
        let t = Double(now - origin) / 1e9
        // Exponential forgetting, per update, scaled by elapsed time.
        let decay = fitted == 0 && s0 == 0 ? 1.0 : max(0, 1 - Double(elapsed) / Double(configuration.driftWindow))
        s0 = s0 * decay + 1
        st = st * decay + t
        se = se * decay + raw
        stt = stt * decay + t * t
        ste = ste * decay + t * raw
    }

    /// Slope of the uncorrected error, as a rate (ns per ns).
    private func fitSlope() -> Double? {
        let denominator = s0 * stt - st * st
        guard denominator > 1e-12 else { return nil }
        let slope = (s0 * ste - st * se) / denominator // ns per second
        return slope / 1e9
    }
}
