import Glibc

/// Interpolates stereo frames at a fractional position with a Kaiser-windowed
/// sinc kernel: the instrument for inaudible drift steering. Ratios stay
/// within a few hundred ppm of 1, so the cut-off sits just under Nyquist.
///
/// Built once (the table is allocated in `init`); `interpolate` does no
/// allocation and is safe on the audio thread. It is inlinable, so the
/// playout loop runs it without a call.
///
/// The table is laid out for the interleaved input: each coefficient is
/// stored twice (once for the left sample, once for the right), so a row
/// multiplies `2·taps` consecutive input floats lane by lane in 8-wide SIMD
/// (131 KB for 512 phases of 32 taps).
// Sendable because its table is filled in init and only read afterwards.
public final class FractionalResampler: @unchecked Sendable {
    /// Taps on each side of the interpolation point.
    public let halfTaps: Int
    public let phases: Int
    /// `phases + 1` rows of `4·halfTaps` floats: each tap's coefficient for both channels.
    @usableFromInline let table: UnsafeMutablePointer<Float>
    /// 8-float groups per row (`4·halfTaps / 8`).
    @usableFromInline let groups: Int

    public init(halfTaps: Int = 16, phases: Int = 512, cutoff: Double = 0.94, beta: Double = 9.0) {
        precondition(halfTaps >= 2 && halfTaps % 2 == 0, "halfTaps must be even (8-float SIMD groups)")
        self.halfTaps = halfTaps
        self.phases = phases
        let taps = 2 * halfTaps
        groups = 2 * taps / 8
        func bessel0(_ x: Double) -> Double {
            var sum = 1.0, term = 1.0, k = 1.0
            while term > 1e-12 * sum { term *= (x / (2 * k)) * (x / (2 * k)); sum += term; k += 1 }
            return sum
        }
        let norm = bessel0(beta)
        // (phases + 1) rows of `taps` coefficients, as designed.
        var rows = [[Float]]()
        rows.reserveCapacity(phases + 1)
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
            rows.append(row.map { Float($0 / sum) })
        }
        let rowFloats = 2 * taps
        table = .allocate(capacity: (phases + 1) * rowFloats)
        for p in 0...phases {
            for j in 0..<taps {
                table[p * rowFloats + 2 * j] = rows[p][j]
                table[p * rowFloats + 2 * j + 1] = rows[p][j]
            }
        }
    }

    deinit { table.deallocate() }

    /// Stereo output at position `index + fraction` (0 ≤ fraction < 1) of the
    /// interleaved input `frames`, which must hold frames
    /// `index − halfTaps + 1 … index + halfTaps` (pointer at frame `index`).
    @inlinable @inline(__always)
    public func interpolate(at frame: UnsafePointer<Float>, fraction: Double) -> (Float, Float) {
        let scaled = fraction * Double(phases)
        let p = min(Int(scaled), phases - 1)
        let mix = SIMD8<Float>(repeating: Float(scaled - Double(p)))
        let rowFloats = 8 * groups
        let row = UnsafeRawPointer(table + p * rowFloats)
        let next = row + 4 * rowFloats
        let input = UnsafeRawPointer(frame - 2 * (halfTaps - 1))
        var sum = SIMD8<Float>()
        for g in 0..<groups {
            let offset = 32 * g
            // Linear interpolation between this phase and the next.
            let a = row.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
            let c = a + (next.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self) - a) * mix
            sum += c * input.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
        }
        // Even lanes are the left channel, odd lanes the right.
        return (sum.evenHalf.sum(), sum.oddHalf.sum())
    }
}
