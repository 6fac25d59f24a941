import Glibc

/// A room's reverb as people set it: a wet/dry mix, a size, and a damping,
/// or a preset that sets all three. Pure data; `ReverbDesign` turns it into
/// the numbers `ReverbProcessor` runs on the speaker, after the EQ.
public struct ReverbSettings: Equatable, Sendable {
    /// Wet share, 0…100 %. 0 bypasses the reverb: the samples pass untouched.
    public private(set) var mix: Double
    /// 0…1: the room's size, from a small room (0.2 s decay) to a cathedral (5 s).
    public private(set) var size: Double
    /// 0…1: how much faster the highs die away than the lows (0: as fast, a bright plate).
    public private(set) var damping: Double
    /// The preset these came from, if any (shown to people; a custom change drops it).
    public var preset: ReverbPreset?

    public static let off = ReverbSettings()

    public init() { mix = 0; size = 0.4; damping = 0.5; preset = nil }

    /// Out-of-range values are refused; the mix is rounded to whole percent.
    public init(mix: Double, size: Double, damping: Double, preset: ReverbPreset? = nil) throws(ReverbError) {
        guard mix.isFinite, (0...100).contains(mix) else { throw .outOfRange("mix", mix, "0–100 %") }
        guard size.isFinite, (0...1).contains(size) else { throw .outOfRange("size", size, "0–1") }
        guard damping.isFinite, (0...1).contains(damping) else { throw .outOfRange("damping", damping, "0–1") }
        self.mix = mix.rounded()
        self.size = size
        self.damping = damping
        self.preset = preset
    }

    /// A preset at `mix` percent.
    public init(preset: ReverbPreset, mix: Double) throws(ReverbError) {
        try self.init(mix: mix, size: preset.size, damping: preset.damping, preset: preset)
    }

    public var isOff: Bool { mix == 0 }

    /// The decay time (RT60, to −60 dB) at low frequencies, seconds: 0.2 s at
    /// size 0 to 5 s at size 1, evenly on a log scale (as rooms are heard).
    public var decaySeconds: Double { 0.2 * pow(25, size) }

    /// The size whose decay is `seconds` (the inverse of `decaySeconds`).
    public static func size(forDecay seconds: Double) -> Double { log(seconds / 0.2) / log(25) }
}

/// The presets, each with the decay time it states.
public enum ReverbPreset: String, CaseIterable, Equatable, Sendable {
    case smallRoom = "Small room", mediumRoom = "Medium room", largeHall = "Large hall", plate = "Plate", cathedral = "Cathedral"

    /// RT60 at low frequencies, seconds: what the preset promises (tested within 20 %).
    public var decaySeconds: Double {
        switch self {
        case .smallRoom: 0.4
        case .mediumRoom: 0.8
        case .largeHall: 1.8
        case .plate: 1.3
        case .cathedral: 3.5
        }
    }
    public var size: Double { ReverbSettings.size(forDecay: decaySeconds) }
    public var damping: Double {
        switch self {
        case .smallRoom: 0.6
        case .mediumRoom: 0.5
        case .largeHall: 0.45
        case .plate: 0.1
        case .cathedral: 0.35
        }
    }

    /// By name, as people type it: any case, spaces or hyphens optional ("hall" is the large hall).
    public static func named(_ name: String) -> ReverbPreset? {
        let key = name.lowercased().filter { $0.isLetter }
        if key == "hall" { return .largeHall }
        return allCases.first { $0.rawValue.lowercased().filter { $0.isLetter } == key }
    }
}

public enum ReverbError: Error, Equatable, CustomStringConvertible {
    case outOfRange(String, Double, String)
    case unknownPreset(String)

    public var description: String {
        switch self {
        case .outOfRange(let what, let v, let range): "reverb \(what) \(v) is outside \(range)"
        case .unknownPreset(let name):
            "no reverb preset '\(name)' (presets: \(ReverbPreset.allCases.map(\.rawValue).joined(separator: ", ")))"
        }
    }
}

/// The numbers the processor runs: delay lengths, feedback gains, damping, mix.
public struct ReverbDesign: Equatable, Sendable {
    /// Eight lines mixed by a Hadamard matrix: dense enough for a smooth
    /// tail, and the mixing costs 24 additions a frame.
    public static let lineCount = 8
    /// Line `k`'s length at size 1 and 48 kHz, frames: mutually prime, spread
    /// over 1 : 2.4 so the echoes never line up (no flutter). A switch, not
    /// an array: the audio thread calls it.
    @inline(__always)
    static func longestLength(_ k: Int) -> Int {
        switch k {
        case 0: 2_203
        case 1: 2_687
        case 2: 3_119
        case 3: 3_511
        case 4: 3_989
        case 5: 4_409
        case 6: 4_793
        default: 5_279
        }
    }

    /// Line `k`'s length and its gain per pass, for `settings` (allocates nothing).
    @inline(__always)
    static func line(_ k: Int, _ settings: ReverbSettings, sampleRate: Double) -> (length: Int, feedback: Float) {
        let scale = smallestScale + (1 - smallestScale) * settings.size
        let length = min(maximumLineFrames, max(64, Int((Double(longestLength(k)) * scale * sampleRate / 48_000).rounded())))
        // A signal that passes a line of n frames loses 60 dB in t60 s: its gain per pass is 10^(−3 n / (rate t60)).
        return (length, Float(pow(10, -3 * Double(length) / (sampleRate * settings.decaySeconds))))
    }
    @inline(__always)
    static func damping(_ settings: ReverbSettings) -> Float { Float(0.7 * settings.damping) }
    /// The wet output's gain: a network that decays slowly sums more passes
    /// (power 1 / (1 − g²) for a gain g per pass), so every size sounds about
    /// as loud as the dry signal at 50 %.
    @inline(__always)
    static func wetGain(_ settings: ReverbSettings, sampleRate: Double) -> Float {
        let g = Double(line(lineCount / 2, settings, sampleRate: sampleRate).feedback)
        return Float(0.5 * (1 - g * g).squareRoot())
    }
    @inline(__always)
    static func preDelayFrames(_ settings: ReverbSettings, sampleRate: Double) -> Int {
        min(maximumPreDelayFrames, Int(settings.size * 0.04 * sampleRate))
    }
    /// The shortest lines, at size 0, as a share of the longest.
    static let smallestScale = 0.35
    /// Room for the longest line and the longest pre-delay.
    public static let maximumLineFrames = 5_280
    public static let maximumPreDelayFrames = 2_400

    public var mix: Float
    public var lengths: [Int]
    /// Per line, the loss per pass at low frequencies (RT60 exact there).
    public var feedback: [Float]
    /// The one-pole low-pass in each line's loop: 0 passes everything.
    public var damping: Float
    public var preDelayFrames: Int

    public init(_ settings: ReverbSettings, sampleRate: Double = 48_000) {
        mix = Float(settings.mix / 100)
        let lines = (0..<Self.lineCount).map { Self.line($0, settings, sampleRate: sampleRate) }
        lengths = lines.map(\.length)
        feedback = lines.map(\.feedback)
        // Up to 0.7: the highs of a damped hall die a few times faster than its lows.
        damping = Self.damping(settings)
        preDelayFrames = Self.preDelayFrames(settings, sampleRate: sampleRate)
    }
}

/// A room's reverb handed to the audio thread without a lock (a seqlock).
public final class PublishedReverb: Sendable {
    private let cell = SeqLockedValues()
    public init() {}

    /// Any thread but the audio thread; one writer.
    public func publish(_ settings: ReverbSettings) {
        cell.store(Int64(bitPattern: settings.mix.bitPattern), Int64(bitPattern: settings.size.bitPattern),
                   Int64(bitPattern: settings.damping.bitPattern), 1)
    }

    @inline(__always)
    func current() -> ReverbSettings? {
        guard let (m, s, d, valid) = cell.load(), valid == 1 else { return nil }
        return try? ReverbSettings(mix: Double(bitPattern: UInt64(bitPattern: m)), size: Double(bitPattern: UInt64(bitPattern: s)),
                                   damping: Double(bitPattern: UInt64(bitPattern: d)))
    }

    @inline(__always)
    func currentBits() -> (Int64, Int64, Int64, Int64)? { cell.load() }
}

/// Runs a room's reverb on the audio thread: a feedback delay network of
/// eight lines (Jot's design) mixed by a Hadamard matrix, with a one-pole
/// low-pass per line for damping and a pre-delay. An FDN rather than
/// Freeverb's combs because its decay time is set exactly per line from the
/// preset (Freeverb's "room size" maps to no stated RT60), and eight lines
/// through one orthogonal matrix give a denser tail for less work.
///
/// The input is the mono sum; the two outputs tap the lines with different
/// signs, so left and right are uncorrelated. The mix moves to a new value
/// over 10 ms (no click); a new size or damping first fades the wet part
/// out, then starts the network anew. At 0 % the samples pass untouched.
///
/// Thread contract: created anywhere; `process` only on the audio thread.
/// Everything is allocated in `init`; `process` allocates nothing and takes
/// no lock (the design is made from the published numbers into fixed arrays).
// Sendable because it is handed to the audio thread and used only there after that; other threads reach it only through its PublishedReverb.
public final class ReverbProcessor: @unchecked Sendable {
    public static let fadeFrames = 480
    private static let lines = ReverbDesign.lineCount

    private let source: PublishedReverb
    private let buffers: UnsafeMutablePointer<Float>     // lines × maximumLineFrames
    private let preDelay: UnsafeMutablePointer<Float>    // maximumPreDelayFrames + 1
    private let lengths: UnsafeMutablePointer<Int>
    private let positions: UnsafeMutablePointer<Int>
    private let feedback: UnsafeMutablePointer<Float>
    private let lowpass: UnsafeMutablePointer<Float>     // each line's filter state
    private let taps: UnsafeMutablePointer<Float>        // each line's output this frame
    private var damping: Float = 0
    private var wetGain: Float = 0
    /// The network's input gain, rising over the fade after a rebuild.
    private var inputGain: Float = 0
    private var preDelayFrames = 0
    private var preDelayPosition = 0
    /// The mix heard now, and the one it moves to.
    private var mix: Float = 0
    private var targetMix: Float = 0
    /// A new network waits for the wet part to fade out.
    private var pendingRebuild = false
    private var seen: (Int64, Int64, Int64, Int64) = (0, 0, 0, 0)
    private var structure: (size: Int64, damping: Int64) = (-1, -1)
    private let step: Float = 1 / Float(ReverbProcessor.fadeFrames)

    private let sampleRate: Double

    public init(source: PublishedReverb, sampleRate: Double = 48_000) {
        self.source = source
        self.sampleRate = sampleRate
        buffers = .allocate(capacity: Self.lines * ReverbDesign.maximumLineFrames)
        buffers.initialize(repeating: 0, count: Self.lines * ReverbDesign.maximumLineFrames)
        preDelay = .allocate(capacity: ReverbDesign.maximumPreDelayFrames + 1)
        preDelay.initialize(repeating: 0, count: ReverbDesign.maximumPreDelayFrames + 1)
        lengths = .allocate(capacity: Self.lines); lengths.initialize(repeating: 64, count: Self.lines)
        positions = .allocate(capacity: Self.lines); positions.initialize(repeating: 0, count: Self.lines)
        feedback = .allocate(capacity: Self.lines); feedback.initialize(repeating: 0, count: Self.lines)
        lowpass = .allocate(capacity: Self.lines); lowpass.initialize(repeating: 0, count: Self.lines)
        taps = .allocate(capacity: Self.lines); taps.initialize(repeating: 0, count: Self.lines)
    }

    deinit {
        buffers.deallocate(); preDelay.deallocate(); lengths.deallocate()
        positions.deallocate(); feedback.deallocate(); lowpass.deallocate(); taps.deallocate()
    }

    /// True while the samples pass untouched (0 %, and nothing fading).
    public var isBypassed: Bool { mix == 0 && targetMix == 0 && !pendingRebuild }

    /// Adds the reverb to `frames` interleaved stereo frames in place.
    public func process(_ block: UnsafeMutablePointer<Float>, frames: Int) {
        take()
        if isBypassed { return }
        let lines = Self.lines
        for i in 0..<frames {
            // The mix moves a step a frame toward its target: to 0 first when a new network waits.
            let goal = pendingRebuild ? 0 : targetMix
            if mix < goal { mix = min(goal, mix + step) } else if mix > goal { mix = max(goal, mix - step) }
            if pendingRebuild && mix == 0 { rebuild() }
            let left = block[2 * i], right = block[2 * i + 1]
            // A fresh network takes its input in over the fade too, so the
            // first echoes of music already playing rise instead of stepping in.
            let mono = 0.5 * (left + right) * inputGain
            if inputGain < 1 { inputGain = min(1, inputGain + step) }
            // Pre-delay of the mono input.
            let input: Float
            if preDelayFrames > 0 {
                input = preDelay[preDelayPosition]
                preDelay[preDelayPosition] = mono
                preDelayPosition = preDelayPosition + 1 == preDelayFrames ? 0 : preDelayPosition + 1
            } else {
                input = mono
            }
            // Each line's output, damped and attenuated for its length.
            let o = taps
            for k in 0..<lines {
                let y = buffers[k * ReverbDesign.maximumLineFrames + positions[k]]
                let s = (1 - damping) * y + damping * lowpass[k]
                lowpass[k] = s
                o[k] = s * feedback[k]
            }
            // Outputs: two sign patterns over the lines (uncorrelated left and right).
            let wetL = o[0] - o[1] + o[2] - o[3] + o[4] - o[5] + o[6] - o[7]
            let wetR = o[0] + o[1] - o[2] - o[3] + o[4] + o[5] - o[6] - o[7]
            // The fast Hadamard transform (scaled by 1/√8: lossless), then the input into every line.
            Self.hadamard8(o)
            for k in 0..<lines {
                let value = o[k] + (k & 1 == 0 ? input : -input)
                buffers[k * ReverbDesign.maximumLineFrames + positions[k]] = abs(value) < 1e-20 ? 0 : value
                positions[k] = positions[k] + 1 == lengths[k] ? 0 : positions[k] + 1
            }
            block[2 * i] = left + mix * (wetGain * wetL - left)
            block[2 * i + 1] = right + mix * (wetGain * wetR - right)
        }
    }

    /// Reads the published settings when they changed.
    private func take() {
        guard let bits = source.currentBits(), bits != seen else { return }
        seen = bits
        guard let settings = source.current() else { return }
        targetMix = Float(settings.mix / 100)
        let shape = (bits.1, bits.2)
        // A new size or damping, or a reverb coming back from 0 % (its lines
        // hold what played before it was bypassed): a fresh network, once the
        // wet part is silent.
        if shape != structure || mix == 0 {
            structure = shape
            pendingRebuild = targetMix > 0 || mix > 0
        }
    }

    /// A fresh network for the published size and damping (the wet part is silent now).
    private func rebuild() {
        pendingRebuild = false
        inputGain = 0
        guard let settings = source.current() else { return }
        for k in 0..<Self.lines {
            (lengths[k], feedback[k]) = ReverbDesign.line(k, settings, sampleRate: sampleRate)
            positions[k] = 0
            lowpass[k] = 0
        }
        damping = ReverbDesign.damping(settings)
        preDelayFrames = ReverbDesign.preDelayFrames(settings, sampleRate: sampleRate)
        wetGain = ReverbDesign.wetGain(settings, sampleRate: sampleRate)
        preDelayPosition = 0
        buffers.update(repeating: 0, count: Self.lines * ReverbDesign.maximumLineFrames)
        preDelay.update(repeating: 0, count: ReverbDesign.maximumPreDelayFrames + 1)
    }

    @inline(__always)
    private static func hadamard8(_ x: UnsafeMutablePointer<Float>) {
        var h = 1
        while h < 8 {
            var i = 0
            while i < 8 {
                for j in i..<(i + h) {
                    let a = x[j], b = x[j + h]
                    x[j] = a + b; x[j + h] = a - b
                }
                i += 2 * h
            }
            h *= 2
        }
        let norm: Float = 0.353_553_39 // 1/√8
        for k in 0..<8 { x[k] *= norm }
    }
}
