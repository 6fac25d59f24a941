import Glibc

/// Deterministic test and demo signals, 48 kHz stereo interleaved floats.
public enum TestSignal {
    public static func sine(frequency: Double, seconds: Double, amplitude: Double = 0.5, rate: Int = StreamFormat.sampleRate) -> [Float] {
        let n = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: n * 2)
        for i in 0..<n {
            let v = Float(amplitude * sin(2 * Double.pi * frequency * Double(i) / Double(rate)))
            out[2 * i] = v; out[2 * i + 1] = v
        }
        return out
    }

    /// Something with the texture of music: a chord progression of
    /// harmonic tones with attack/decay envelopes, a bass line, different
    /// content left and right, and a soft click on every beat.
    /// `percussion` adds short noise bursts (hi-hat like); they are not a
    /// function of continuous time, so leave them out when comparing the
    /// same signal made at two sample rates.
    public static func music(seconds: Double, rate: Int = StreamFormat.sampleRate, seed: UInt64 = 1, percussion: Bool = true) -> [Float] {
        let n = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: n * 2)
        let chords: [[Double]] = [[261.63, 329.63, 392.00], [220.00, 261.63, 329.63], [174.61, 220.00, 261.63], [196.00, 246.94, 293.66]]
        let beat = 0.5
        var noise = seed
        for i in 0..<n {
            let t = Double(i) / Double(rate)
            let bar = Int(t / (4 * beat)) % chords.count
            let inBeat = t.truncatingRemainder(dividingBy: beat)
            let envelope = exp(-3 * inBeat) * min(1, inBeat * 200)
            var left = 0.0, right = 0.0
            for (k, f) in chords[bar].enumerated() {
                for h in 1...3 {
                    let partial = sin(2 * Double.pi * f * Double(h) * t + Double(k)) / Double(h * h)
                    if k % 2 == 0 { left += partial } else { right += partial }
                    if k == 1 { left += 0.5 * partial; right += 0.5 * partial }
                }
            }
            let bass = sin(2 * Double.pi * chords[bar][0] / 2 * t) * 0.6
            noise = noise &* 6364136223846793005 &+ 1442695040888963407
            let hiss = percussion ? (Double(noise >> 40) / Double(1 << 24) - 0.5) * exp(-40 * inBeat) * 0.3 : 0
            out[2 * i] = Float(0.18 * (left * envelope + bass) + hiss * 0.3)
            out[2 * i + 1] = Float(0.18 * (right * envelope + bass) + hiss * 0.3)
        }
        return out
    }

    /// Silence with a 2 ms burst every `interval` seconds (first at half an
    /// interval): the sync instrument. The burst is a cosine at 2 kHz, so its
    /// first sample is at the peak (a sharp onset) yet it is band-limited and
    /// survives resampling and Opus.
    public static func clicks(seconds: Double, interval: Double = 1, rate: Int = StreamFormat.sampleRate, amplitude: Double = 0.9) -> [Float] {
        let n = Int(seconds * Double(rate))
        var out = [Float](repeating: 0, count: n * 2)
        let period = Int(interval * Double(rate))
        let burst = rate / 500
        var start = period / 2
        while start < n {
            for i in start..<min(n, start + burst) {
                let v = Float(amplitude * cos(2 * Double.pi * 2_000 * Double(i - start) / Double(rate)))
                out[2 * i] = v; out[2 * i + 1] = v
            }
            start += period
        }
        return out
    }

    /// A 16-bit WAV file image of `samples` (interleaved stereo floats).
    public static func wav16(_ samples: [Float], rate: Int = StreamFormat.sampleRate, channels: Int = 2) -> [UInt8] {
        var bytes = wavHeader(sampleRate: rate, channels: channels, bitsPerSample: 16, dataBytes: samples.count * 2)
        bytes.reserveCapacity(bytes.count + samples.count * 2)
        for s in samples {
            let v = UInt16(bitPattern: sampleToInt16(s))
            bytes.append(UInt8(v & 0xff)); bytes.append(UInt8(v >> 8))
        }
        return bytes
    }
}

/// Comparisons of what came out with what went in.
public enum SignalMetrics {
    /// Index of the first sample with |x| ≥ threshold, nil if none.
    public static func firstAbove(_ x: [Float], threshold: Float, from: Int = 0) -> Int? {
        var i = from
        while i < x.count { if abs(x[i]) >= threshold { return i }; i += 1 }
        return nil
    }

    /// Normalised correlation of a[aStart...] and b[bStart...] over `count` samples.
    public static func correlation(_ a: [Float], _ aStart: Int, _ b: [Float], _ bStart: Int, count: Int) -> Double {
        var ab = 0.0, aa = 0.0, bb = 0.0
        for i in 0..<count {
            let x = Double(a[aStart + i]), y = Double(b[bStart + i])
            ab += x * y; aa += x * x; bb += y * y
        }
        return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
    }

    /// The shift of `b` against `a` (b[i + lag] ≈ a[i]) in `candidates`
    /// that correlates best over `count` samples from `aStart`.
    public static func bestLag(_ a: [Float], aStart: Int, _ b: [Float], candidates: ClosedRange<Int>, count: Int) -> (lag: Int, correlation: Double) {
        var best = (lag: candidates.lowerBound, correlation: -2.0)
        for lag in candidates where aStart + lag >= 0 && aStart + lag + count <= b.count && aStart + count <= a.count {
            let c = correlation(a, aStart, b, aStart + lag, count: count)
            if c > best.correlation { best = (lag, c) }
        }
        return best
    }

    /// SNR in dB of `b` against reference `a` after the best least-squares gain.
    public static func snr(_ a: [Float], _ aStart: Int, _ b: [Float], _ bStart: Int, count: Int) -> Double {
        var ab = 0.0, aa = 0.0
        for i in 0..<count { ab += Double(a[aStart + i]) * Double(b[bStart + i]); aa += Double(a[aStart + i]) * Double(a[aStart + i]) }
        let gain = aa > 0 ? ab / aa : 1
        var signal = 0.0, noise = 0.0
        for i in 0..<count {
            let s = gain * Double(a[aStart + i])
            let e = Double(b[bStart + i]) - s
            signal += s * s; noise += e * e
        }
        return noise > 0 ? 10 * log10(signal / noise) : .infinity
    }
}
