import Foundation
import TuttiCore

/// Test helpers on the shared generator: every "random" test input is
/// reproducible from its seed.
extension SplitMix64 {
    /// Exponentially distributed with the given mean.
    mutating func exponential(mean: Double) -> Double { -mean * log(1 - unit()) }

    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

/// Signal-to-noise ratio in dB of `actual` against `ideal`.
func snrDecibels(ideal: [Double], actual: [Double]) -> Double {
    precondition(ideal.count == actual.count && !ideal.isEmpty)
    var signal = 0.0, noise = 0.0
    for (a, b) in zip(ideal, actual) {
        signal += a * a
        noise += (a - b) * (a - b)
    }
    return noise == 0 ? .infinity : 10 * log10(signal / noise)
}

/// Interleaved stereo floats as raw little-endian bytes helpers for WAV tests.
extension Array where Element == UInt8 {
    mutating func appendLE16(_ v: Int) {
        append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8))
    }
    mutating func appendLE24(_ v: Int) {
        append(UInt8(truncatingIfNeeded: v)); append(UInt8(truncatingIfNeeded: v >> 8)); append(UInt8(truncatingIfNeeded: v >> 16))
    }
    mutating func appendLE32(_ v: UInt32) {
        for s in stride(from: 0, to: 32, by: 8) { append(UInt8(truncatingIfNeeded: v >> UInt32(s))) }
    }
    mutating func appendTag(_ s: String) { append(contentsOf: Array(s.utf8)) }
}
