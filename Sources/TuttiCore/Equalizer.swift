import Glibc

/// A room's equaliser as people set it: ten one-octave bands, bass and
/// treble shelves, and a preamp. Pure data; `EqualizerDesign` turns it
/// into filters, `EqualizerProcessor` runs them on the speaker.
public struct EqualizerSettings: Equatable, Sendable {
    /// Band centres, Hz (ISO octave bands).
    public static let bandFrequencies: [Double] = [32, 64, 125, 250, 500, 1_000, 2_000, 4_000, 8_000, 16_000]
    public static let bandCount = 10
    /// Every gain (bands, shelves, manual preamp) is in this range, in 0.5 dB steps.
    public static let gainRange: ClosedRange<Double> = -12...12
    /// Where the shelves turn: bass below, treble above.
    public static let bassShelfFrequency = 100.0
    public static let trebleShelfFrequency = 8_000.0

    public enum Preamp: Equatable, Sendable {
        /// Headroom equal to the largest boost, so a boosted room never clips more than a flat one.
        case auto
        case manual(decibels: Double)
    }

    /// Ten gains in dB, lowest band first.
    public private(set) var gains: [Double]
    public private(set) var bass: Double
    public private(set) var treble: Double
    public var preamp: Preamp

    public static let flat = EqualizerSettings()

    public init() { gains = Array(repeating: 0, count: Self.bandCount); bass = 0; treble = 0; preamp = .auto }

    /// Gains are rounded to the 0.5 dB grid; out-of-range values are refused.
    public init(gains: [Double], bass: Double = 0, treble: Double = 0, preamp: Preamp = .auto) throws(EqualizerError) {
        guard gains.count == Self.bandCount else { throw .bandCount(gains.count) }
        self.gains = try gains.map { g throws(EqualizerError) in try Self.validated(g, what: "band gain") }
        self.bass = try Self.validated(bass, what: "bass")
        self.treble = try Self.validated(treble, what: "treble")
        if case .manual(let db) = preamp { self.preamp = .manual(decibels: try Self.validated(db, what: "preamp")) } else { self.preamp = .auto }
    }

    static func validated(_ value: Double, what: String) throws(EqualizerError) -> Double {
        guard value.isFinite, gainRange.contains(value) else { throw .outOfRange(what, value) }
        return (value * 2).rounded() / 2
    }

    /// The preamp applied, dB: with `.auto`, minus the largest boost (0 without boosts).
    public var preampDecibels: Double {
        switch preamp {
        case .auto: -max(0, (gains + [bass, treble]).max() ?? 0)
        case .manual(let db): db
        }
    }

    /// Nothing to do: the speaker bypasses the equaliser and plays the samples untouched.
    public var isFlat: Bool { gains.allSatisfy { $0 == 0 } && bass == 0 && treble == 0 && preampDecibels == 0 }
}

public enum EqualizerError: Error, Equatable, CustomStringConvertible {
    case bandCount(Int)
    case outOfRange(String, Double)
    case unknownPreset(String, known: [String])
    case builtInPreset(String)
    case badPresetName(String)

    /// What the person is told (the catalogue's `eq.*`).
    public var message: UserMessage {
        switch self {
        case .bandCount(let n): UserMessage(.eqBandCount, ["count": "\(n)"])
        case .outOfRange(let what, let v): UserMessage(.eqOutOfRange, ["what": what, "value": "\(v)"])
        case .unknownPreset(let name, let known): UserMessage(.eqUnknownPreset, ["name": name, "known": known.joined(separator: ", ")])
        case .builtInPreset(let name): UserMessage(.eqBuiltInPreset, ["name": name])
        case .badPresetName(let name): UserMessage(.eqBadPresetName, ["name": name])
        }
    }

    public var description: String { message.description }
}

/// A named set of band gains.
public struct EqualizerPreset: Equatable, Sendable {
    public var name: String
    public var gains: [Double]
    public var builtIn: Bool

    public init(name: String, gains: [Double], builtIn: Bool = false) { self.name = name; self.gains = gains; self.builtIn = builtIn }

    public var settings: EqualizerSettings { (try? EqualizerSettings(gains: gains)) ?? .flat }

    /// The presets every leader has. Flat to Electronic as the issue asked;
    /// the rest after the usual shapes of players' presets, kept within ±6 dB
    /// so the automatic preamp costs little loudness.
    public static let builtIn: [EqualizerPreset] = [
        .init(name: "Flat", gains: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0], builtIn: true),
        .init(name: "Bass", gains: [6, 5, 4, 2, 0, 0, 0, 0, 0, 0], builtIn: true),
        .init(name: "Treble", gains: [0, 0, 0, 0, 0, 0, 2, 4, 5, 6], builtIn: true),
        .init(name: "Vocal", gains: [-2, -1, 0, 2, 4, 4, 3, 2, 1, 0], builtIn: true),
        .init(name: "Electronic", gains: [4, 3, 0, -2, -1, 0, 2, 3, 4, 4], builtIn: true),
        // A "smile": punchy lows and present highs, a dip where guitars crowd the mids.
        .init(name: "Rock", gains: [4, 3, 2, 0, -1, -1, 0, 2, 3, 4], builtIn: true),
        // Vocals forward, gentle bass lift, sides tamed.
        .init(name: "Pop", gains: [-1, 1, 2, 3, 2, 0, -1, -1, 0, 1], builtIn: true),
        // Warm low mids and a little air, nothing aggressive.
        .init(name: "Jazz", gains: [2, 2, 1, 2, -1, -1, 0, 1, 2, 3], builtIn: true),
        // Nearly flat; a small lift at both ends for orchestral weight and air.
        .init(name: "Classical", gains: [3, 2, 1, 0, 0, 0, 0, 1, 2, 3], builtIn: true),
        // Equal-loudness compensation for listening quietly: lows and highs up.
        .init(name: "Loudness", gains: [6, 4, 2, 0, -1, 0, 0, 2, 4, 5], builtIn: true),
    ]

    /// A preset by name, case-insensitive, among the built-ins then `custom`.
    public static func find(_ name: String, custom: [EqualizerPreset]) -> EqualizerPreset? {
        let key = name.lowercased()
        return (builtIn + custom).first { $0.name.lowercased() == key }
    }

    /// The preset after `current` in the cycle a button steps through (built-ins then custom; unknown: Flat's successor).
    public static func next(after current: String?, custom: [EqualizerPreset]) -> EqualizerPreset {
        let all = builtIn + custom
        let key = current?.lowercased()
        guard let i = all.firstIndex(where: { $0.name.lowercased() == key }) else { return all[1] }
        return all[(i + 1) % all.count]
    }
}

/// Normalised biquad coefficients (a0 = 1), after the RBJ Audio EQ Cookbook.
public struct BiquadCoefficients: Equatable, Sendable {
    public var b0, b1, b2, a1, a2: Double

    public init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        self.b0 = b0; self.b1 = b1; self.b2 = b2; self.a1 = a1; self.a2 = a2
    }

    public static let identity = BiquadCoefficients(b0: 1, b1: 0, b2: 0, a1: 0, a2: 0)

    /// Peaking EQ: `gainDB` exactly at `frequency`, 0 dB far from it.
    public static func peaking(frequency: Double, gainDB: Double, q: Double, sampleRate: Double) -> Self {
        let a = pow10(gainDB / 40)
        let w0 = 2 * Double.pi * frequency / sampleRate
        let alpha = sin(w0) / (2 * q)
        let cw = cos(w0)
        let a0 = 1 + alpha / a
        return .init(b0: (1 + alpha * a) / a0, b1: -2 * cw / a0, b2: (1 - alpha * a) / a0,
                     a1: -2 * cw / a0, a2: (1 - alpha / a) / a0)
    }

    /// Shelves with slope S = 1 (the steepest without overshoot).
    public static func lowShelf(frequency: Double, gainDB: Double, sampleRate: Double) -> Self {
        shelf(frequency: frequency, gainDB: gainDB, sampleRate: sampleRate, high: false)
    }

    public static func highShelf(frequency: Double, gainDB: Double, sampleRate: Double) -> Self {
        shelf(frequency: frequency, gainDB: gainDB, sampleRate: sampleRate, high: true)
    }

    private static func shelf(frequency: Double, gainDB: Double, sampleRate: Double, high: Bool) -> Self {
        let a = pow10(gainDB / 40)
        let w0 = 2 * Double.pi * frequency / sampleRate
        let cw = cos(w0)
        let alpha = sin(w0) / 2 * 2.0.squareRoot() // S = 1
        let sa = 2 * a.squareRoot() * alpha
        let s: Double = high ? -1 : 1
        let b0 = a * ((a + 1) - s * (a - 1) * cw + sa)
        let b1 = s * 2 * a * ((a - 1) - s * (a + 1) * cw)
        let b2 = a * ((a + 1) - s * (a - 1) * cw - sa)
        let a0 = (a + 1) + s * (a - 1) * cw + sa
        let a1 = -s * 2 * ((a - 1) + s * (a + 1) * cw)
        let a2 = (a + 1) + s * (a - 1) * cw - sa
        return .init(b0: b0 / a0, b1: b1 / a0, b2: b2 / a0, a1: a1 / a0, a2: a2 / a0)
    }

    /// |H(e^jω)| in dB at `frequency`.
    public func gainDB(at frequency: Double, sampleRate: Double) -> Double {
        let w = 2 * Double.pi * frequency / sampleRate
        let c1 = cos(w), s1 = sin(w), c2 = cos(2 * w), s2 = sin(2 * w)
        let nr = b0 + b1 * c1 + b2 * c2, ni = -(b1 * s1 + b2 * s2)
        let dr = 1 + a1 * c1 + a2 * c2, di = -(a1 * s1 + a2 * s2)
        return 10 * log10((nr * nr + ni * ni) / (dr * dr + di * di))
    }
}

/// The filters for one `EqualizerSettings`: a cascade of biquads and a
/// preamp gain. Computed off the audio thread.
///
/// One-octave peaking bands one octave apart overlap: left alone, Bass's
/// +6 +5 +4 would come out near +9 dB at 32 Hz. The bands' own gains are
/// therefore solved (a few Newton steps on the 10×10 interaction matrix)
/// so that the cascade's response at each band centre is the slider's
/// value: presets sound as they read.
public struct EqualizerDesign: Equatable, Sendable {
    public static let sampleRate = Double(StreamFormat.sampleRate)
    /// One octave: Q = √2 / (2 − 1).
    public static let bandQ = 2.0.squareRoot()
    /// Ten bands and two shelves.
    public static let maxSections = 12

    public var sections: [BiquadCoefficients]
    public var preampDecibels: Double
    /// The gains the bands' filters were given (after the overlap correction).
    public var bandFilterGains: [Double]

    public init(_ settings: EqualizerSettings) {
        preampDecibels = settings.preampDecibels
        guard !settings.isFlat else { sections = []; bandFilterGains = Array(repeating: 0, count: 10); return }
        let targets = settings.gains
        var filterGains = Self.solveBandGains(targets)
        if targets.allSatisfy({ $0 == 0 }) { filterGains = targets }
        bandFilterGains = filterGains
        var s: [BiquadCoefficients] = []
        for (f, g) in zip(EqualizerSettings.bandFrequencies, filterGains) where g != 0 {
            s.append(.peaking(frequency: f, gainDB: g, q: Self.bandQ, sampleRate: Self.sampleRate))
        }
        if settings.bass != 0 { s.append(.lowShelf(frequency: EqualizerSettings.bassShelfFrequency, gainDB: settings.bass, sampleRate: Self.sampleRate)) }
        if settings.treble != 0 { s.append(.highShelf(frequency: EqualizerSettings.trebleShelfFrequency, gainDB: settings.treble, sampleRate: Self.sampleRate)) }
        sections = s
    }

    /// True when nothing is to be done (the speaker bypasses the EQ).
    public var isBypass: Bool { sections.isEmpty && preampDecibels == 0 }

    /// The cascade's gain at `frequency`, without the preamp.
    public func filterGainDB(at frequency: Double) -> Double {
        sections.reduce(0) { $0 + $1.gainDB(at: frequency, sampleRate: Self.sampleRate) }
    }

    /// What the listener gets at `frequency`: filters and preamp.
    public func gainDB(at frequency: Double) -> Double { filterGainDB(at: frequency) + preampDecibels }

    static func bandsResponse(_ gains: [Double]) -> [Double] {
        let filters = zip(EqualizerSettings.bandFrequencies, gains).map { BiquadCoefficients.peaking(frequency: $0, gainDB: $1, q: bandQ, sampleRate: sampleRate) }
        return EqualizerSettings.bandFrequencies.map { f in filters.reduce(0) { $0 + $1.gainDB(at: f, sampleRate: sampleRate) } }
    }

    /// How much 1 dB on band j moves the response at centre i (measured at ±3 dB, whose shape is typical).
    static let interaction: [[Double]] = {
        let freqs = EqualizerSettings.bandFrequencies
        return freqs.map { fi in
            freqs.map { fj in
                let up = BiquadCoefficients.peaking(frequency: fj, gainDB: 3, q: bandQ, sampleRate: sampleRate).gainDB(at: fi, sampleRate: sampleRate)
                return up / 3
            }
        }
    }()

    static func solveBandGains(_ targets: [Double]) -> [Double] {
        var g = targets
        for _ in 0..<8 {
            let r = bandsResponse(g)
            let error = zip(targets, r).map { $0 - $1 }
            if error.allSatisfy({ abs($0) < 0.005 }) { break }
            let step = solve(interaction, error)
            for i in g.indices { g[i] = min(24, max(-24, g[i] + step[i])) }
        }
        return g
    }

    /// Gaussian elimination with partial pivoting (10×10, well conditioned).
    static func solve(_ m: [[Double]], _ v: [Double]) -> [Double] {
        var a = m, b = v
        let n = b.count
        for col in 0..<n {
            let pivot = (col..<n).max { abs(a[$0][col]) < abs(a[$1][col]) }!
            a.swapAt(col, pivot); b.swapAt(col, pivot)
            for row in (col + 1)..<n {
                let f = a[row][col] / a[col][col]
                for k in col..<n { a[row][k] -= f * a[col][k] }
                b[row] -= f * b[col]
            }
        }
        var x = [Double](repeating: 0, count: n)
        for row in stride(from: n - 1, through: 0, by: -1) {
            var s = b[row]
            for k in (row + 1)..<n { s -= a[row][k] * x[k] }
            x[row] = s / a[row][row]
        }
        return x
    }
}

@inline(__always) func pow10(_ x: Double) -> Double { pow(10, x) }
