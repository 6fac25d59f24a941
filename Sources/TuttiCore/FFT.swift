import Glibc

/// An in-place radix-2 complex FFT over split real and imaginary arrays.
///
/// Why here and not a Debian library: TuttiCore imports no C module (the
/// calibration analysis must stay pure and testable), and the one use —
/// a few transforms of a recording a few seconds long, off the audio
/// thread — needs no more than this. Not for the real-time path.
public struct FFT: Sendable {
    /// Transform length, a power of two.
    public let count: Int
    private let cosines: [Double]
    private let sines: [Double]

    public init(count: Int) {
        precondition(count >= 2 && count & (count - 1) == 0, "FFT length must be a power of two")
        self.count = count
        let half = count / 2
        var c = [Double](repeating: 0, count: half), s = [Double](repeating: 0, count: half)
        for k in 0..<half {
            let angle = -2 * Double.pi * Double(k) / Double(count)
            c[k] = cos(angle); s[k] = sin(angle)
        }
        cosines = c; sines = s
    }

    /// The smallest power of two at least `n`.
    public static func length(atLeast n: Int) -> Int {
        var size = 2
        while size < n { size <<= 1 }
        return size
    }

    /// Forward transform (e^{-i…}); `inverse` gives the unscaled inverse
    /// (divide by `count` to undo a forward transform).
    public func transform(real: inout [Double], imaginary: inout [Double], inverse: Bool = false) {
        precondition(real.count == count && imaginary.count == count)
        let n = count
        real.withUnsafeMutableBufferPointer { re in
            imaginary.withUnsafeMutableBufferPointer { im in
                cosines.withUnsafeBufferPointer { cs in
                    sines.withUnsafeBufferPointer { sn in
                        // Bit reversal.
                        var j = 0
                        for i in 1..<n {
                            var bit = n >> 1
                            while j & bit != 0 { j ^= bit; bit >>= 1 }
                            j |= bit
                            if i < j { re.swapAt(i, j); im.swapAt(i, j) }
                        }
                        let sign: Double = inverse ? -1 : 1
                        var size = 2
                        while size <= n {
                            let half = size / 2, step = n / size
                            var start = 0
                            while start < n {
                                var k = 0
                                for m in 0..<half {
                                    let wr = cs[k], wi = sign * sn[k]
                                    let a = start + m, b = a + half
                                    let tr = re[b] * wr - im[b] * wi
                                    let ti = re[b] * wi + im[b] * wr
                                    re[b] = re[a] - tr; im[b] = im[a] - ti
                                    re[a] += tr; im[a] += ti
                                    k += step
                                }
                                start += size
                            }
                            size <<= 1
                        }
                    }
                }
            }
        }
    }
}
