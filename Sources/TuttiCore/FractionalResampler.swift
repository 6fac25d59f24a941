import Glibc

/// Interpolates stereo frames at a fractional position with a Kaiser-windowed
/// sinc kernel: the instrument for inaudible drift steering. Ratios stay
/// within a few hundred ppm of 1, so the cut-off sits just under Nyquist.
///
/// Built once (the table is allocated in `init`); `interpolate` does no
/// allocation and is safe on the audio thread.
// Sendable because its table is filled in init and only read afterwards.
public final class FractionalResampler: @unchecked Sendable {
    /// Taps on each side of the interpolation point.
    public let halfTaps: Int
    public let phases: Int
    /// (phases + 1) rows of 2·halfTaps coefficients.
    private let table: UnsafeMutablePointer<Float>

    public init(halfTaps: Int = 16, phases: Int = 512, cutoff: Double = 0.94, beta: Double = 9.0) {
        self.halfTaps = halfTaps
        self.phases = phases
        let taps = 2 * halfTaps
        table = .allocate(capacity: (phases + 1) * taps)
        func bessel0(_ x: Double) -> Double {
            var sum = 1.0, term = 1.0, k = 1.0
            while term > 1e-12 * sum { term *= (x / (2 * k)) * (x / (2 * k)); sum += term; k += 1 }
            return sum
        }
        let norm = bessel0(beta)
        for p in 0...phases {
            let frac = Double(p) / Double(phases)
            var row = [Double](repeating: 0, count: taps)
            for j in 0..<taps {
                // Tap j multiplies input frame (i − halfTaps + 1 + j); distance from the point i + frac:
                let t = Double(j - halfTaps + 1) - frac
                let sinc = t == 0 ? 1.0 : sin(Double.pi * cutoff * t) / (Double.pi * cutoff * t)
                let w = t / Double(halfTaps)
                let window = abs(w) >= 1 ? 0 : bessel0(beta * (1 - w * w).squareRoot()) / norm
                row[j] = cutoff * sinc * window
            }
            // Unity gain at DC for every phase.
            let sum = row.reduce(0, +)
            for j in 0..<taps { table[p * taps + j] = Float(row[j] / sum) }
        }
    }

    deinit { table.deallocate() }

    /// Stereo output at position `index + fraction` (0 ≤ fraction < 1) of the
    /// interleaved input `frames`, which must hold frames
    /// `index − halfTaps + 1 … index + halfTaps` (pointer at frame `index`).
    @inline(__always)
    public func interpolate(at frame: UnsafePointer<Float>, fraction: Double) -> (Float, Float) {
        let taps = 2 * halfTaps
        let scaled = fraction * Double(phases)
        let p = min(Int(scaled), phases - 1)
        let mix = Float(scaled - Double(p))
        let rowA = table + p * taps
        let rowB = rowA + taps
        var left: Float = 0, right: Float = 0
        let base = frame - 2 * (halfTaps - 1)
        for j in 0..<taps {
            let c = rowA[j] + (rowB[j] - rowA[j]) * mix
            left += c * base[2 * j]
            right += c * base[2 * j + 1]
        }
        return (left, right)
    }
}
