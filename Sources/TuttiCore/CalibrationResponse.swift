import Glibc

/// Room correction from the same recording: each room's response at the
/// equaliser's ten band centres, and the EQ gains that flatten it (cuts, and
/// at most `boostLimit` of boost: filling a room's dip with power mostly
/// heats the amplifier, and a null does not fill at all).
extension Calibration {
    public static let boostLimit = 3.0
    public static let cutLimit = -12.0
    /// How long after the sweep the room's reverberation is kept, seconds.
    static let responseTail = 0.1

    /// The response around one arrival: the recording from just before
    /// `position` (fractional sample) to the end of the sweep and its tail,
    /// divided by the sweep, power-averaged over a sixth of an octave
    /// around each band centre, in dB relative to the mean of the 250 Hz–4 kHz
    /// bands. nil for a band the sweep (or the recorder's rate) does not reach.
    public static func response(_ recording: [Float], sampleRate: Int, sweep: CalibrationSweep, at position: Double) -> [Double?] {
        let fs = Double(sampleRate)
        let top = min(sweep.endFrequency, 0.45 * fs)
        let reference = sweep.samples(sampleRate: sampleRate, endingAt: sweep.time(atFrequency: top))
        let start = max(0, Int(position) - Int(0.002 * fs))
        let length = min(recording.count - start, reference.count + Int((responseTail + 0.002) * fs))
        let bands = EqualizerSettings.bandFrequencies
        guard length > reference.count / 2 else { return bands.map { _ in nil } }
        let n = FFT.length(atLeast: length)
        let fft = FFT(count: n)
        var xr = [Double](repeating: 0, count: n), xi = [Double](repeating: 0, count: n)
        for i in 0..<length { xr[i] = Double(recording[start + i]) }
        var sr = [Double](repeating: 0, count: n), si = [Double](repeating: 0, count: n)
        for (i, v) in reference.enumerated() { sr[i] = v }
        fft.transform(real: &xr, imaginary: &xi)
        fft.transform(real: &sr, imaginary: &si)
        // The impulse response (X / S where the sweep has energy), kept only
        // from the arrival to the end of the tail: the noise of the rest of
        // the second is left out (at 16 kHz a sweep spends milliseconds, and
        // a whole second of noise there would fill in a dip).
        var strongest = 0.0
        for k in 0...(n / 2) { strongest = max(strongest, sr[k] * sr[k] + si[k] * si[k]) }
        for k in 0..<n {
            let power = sr[k] * sr[k] + si[k] * si[k]
            if power < strongest * 1e-5 { xr[k] = 0; xi[k] = 0; continue }
            let re = (xr[k] * sr[k] + xi[k] * si[k]) / power, im = (xi[k] * sr[k] - xr[k] * si[k]) / power
            xr[k] = re; xi[k] = im
        }
        fft.transform(real: &xr, imaginary: &xi, inverse: true)
        let keep = Int((0.002 + responseTail) * fs), fade = Int(0.2 * responseTail * fs)
        for t in 0..<n {
            var w = 0.0
            if t < keep - fade { w = 1 } else if t < keep { w = 0.5 + 0.5 * cos(Double.pi * Double(t - keep + fade) / Double(fade)) }
            xr[t] *= w / Double(n); xi[t] = 0
        }
        fft.transform(real: &xr, imaginary: &xi)
        // Only where the sweep is at full level: away from its fades and its ends.
        let low = sweep.startFrequency * 1.15, high = top / 1.15
        var levels: [Double?] = []
        for centre in bands {
            let from = max(low, centre / pow(2, 1.0 / 12)), to = min(high, centre * pow(2, 1.0 / 12))
            guard to > from else { levels.append(nil); continue }
            let k0 = Int((from / fs * Double(n)).rounded(.up)), k1 = Int((to / fs * Double(n)).rounded(.down))
            guard k1 >= k0 else { levels.append(nil); continue }
            var sum = 0.0
            for k in k0...k1 { sum += xr[k] * xr[k] + xi[k] * xi[k] }
            levels.append(10 * log10(max(sum / Double(k1 - k0 + 1), 1e-30)))
        }
        let mid = zip(bands, levels).compactMap { f, l in (250...4_000).contains(f) ? l : nil }
        guard !mid.isEmpty else { return levels }
        let reference0 = mid.reduce(0, +) / Double(mid.count)
        return levels.map { $0.map { $0 - reference0 } }
    }

    /// EQ gains that undo `response` (0 where it was not measured), within
    /// `cutLimit`…`boostLimit`, in the equaliser's 0.5 dB steps.
    public static func correction(for response: [Double?]) -> [Double] {
        response.map { r in
            guard let r else { return 0 }
            return (min(boostLimit, max(cutLimit, -r)) * 2).rounded() / 2 + 0 // + 0: no "-0"
        }
    }
}
