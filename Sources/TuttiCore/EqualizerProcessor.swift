import Glibc
import Synchronization

/// An `EqualizerDesign` handed to the audio thread without a lock: one
/// writer publishes coefficients into preallocated atomics under a
/// sequence number (a seqlock); the audio thread copies them out when the
/// number changed, and retries if a write overlapped its read.
// Sendable because `slots` points to atomics allocated in init and freed in deinit; every access is an atomic load or store under the sequence number.
public final class PublishedEqualizer: @unchecked Sendable {
    /// Section count, preamp gain, then five coefficients per section.
    static let slotCount = 2 + 5 * EqualizerDesign.maxSections
    private let sequence = Atomic<UInt64>(0)
    private let slots: UnsafeMutablePointer<Atomic<UInt64>>

    public init() {
        slots = .allocate(capacity: Self.slotCount)
        for i in 0..<Self.slotCount { (slots + i).initialize(to: Atomic<UInt64>(0)) }
        slots[1].store(Double(1).bitPattern, ordering: .relaxed)
    }

    deinit {
        slots.deinitialize(count: Self.slotCount)
        slots.deallocate()
    }

    /// Single writer only; any thread but the audio thread.
    public func publish(_ design: EqualizerDesign) {
        let sections = design.sections.prefix(EqualizerDesign.maxSections)
        sequence.add(1, ordering: .relaxed) // odd: write in progress
        atomicMemoryFence(ordering: .releasing)
        slots[0].store(UInt64(sections.count), ordering: .relaxed)
        slots[1].store(pow(10, design.preampDecibels / 20).bitPattern, ordering: .relaxed)
        for (k, c) in sections.enumerated() {
            let base = 2 + 5 * k
            slots[base].store(c.b0.bitPattern, ordering: .relaxed)
            slots[base + 1].store(c.b1.bitPattern, ordering: .relaxed)
            slots[base + 2].store(c.b2.bitPattern, ordering: .relaxed)
            slots[base + 3].store(c.a1.bitPattern, ordering: .relaxed)
            slots[base + 4].store(c.a2.bitPattern, ordering: .relaxed)
        }
        sequence.add(1, ordering: .releasing)
    }

    /// The version last published (0: never).
    @inline(__always) var version: UInt64 { sequence.load(ordering: .acquiring) }

    /// Copies the latest design into `coefficients` (5 per section); returns
    /// the section count, the preamp gain and the version read. Lock-free.
    @inline(__always)
    func read(into coefficients: UnsafeMutablePointer<Double>) -> (count: Int, preamp: Double, version: UInt64) {
        while true {
            let s1 = sequence.load(ordering: .acquiring)
            if s1 & 1 == 1 { continue }
            let count = min(Int(slots[0].load(ordering: .relaxed)), EqualizerDesign.maxSections)
            let preamp = Double(bitPattern: slots[1].load(ordering: .relaxed))
            for i in 0..<(5 * count) { coefficients[i] = Double(bitPattern: slots[2 + i].load(ordering: .relaxed)) }
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == s1 { return (count, preamp, s1) }
        }
    }
}

/// Runs a room's equaliser on the audio thread: a cascade of biquads (direct
/// form I, in double precision: a 32 Hz band's poles sit too close to the
/// unit circle for Float) and a preamp. Plain scalar code, which debug
/// builds (the tests) also run in real time for a dozen rooms at once.
///
/// A new design is crossfaded in over `fadeFrames` (10 ms), the new cascade
/// starting from the old one's signal history, so a preset change makes no
/// click. A flat design, once faded to, is bypassed entirely: the samples
/// pass untouched, bit-exact.
///
/// Thread contract: created anywhere; `process` only on the audio thread.
/// Everything is allocated in `init`; `process` allocates nothing and takes
/// no lock.
// Sendable because it is handed to the audio thread and used only there after that; it reads other threads' designs only through its PublishedEqualizer.
public final class EqualizerProcessor: @unchecked Sendable {
    public static let fadeFrames = 480
    private static let sectionStride = 5
    /// Per signal: left and right one frame back, then two frames back.
    private static let historyStride = 4 * (EqualizerDesign.maxSections + 1)

    private let source: PublishedEqualizer
    private let maxFrames: Int
    /// Two banks: the cascade playing, and the one faded from.
    private let coefficients: UnsafeMutablePointer<Double>
    /// Per bank, per signal (input, after section 1, …): the last two samples, both channels.
    private let history: UnsafeMutablePointer<Double>
    private let scratch: UnsafeMutablePointer<Float>
    private var count = (0, 0)
    private var preamp = (1.0, 1.0)
    private var current = 0
    private var fadeDone = 0
    private var fading = false
    private var seen: UInt64 = 0
    /// The dry input's last two frames, for a cascade that starts from bypass.
    private var dry: (l1: Double, r1: Double, l2: Double, r2: Double) = (0, 0, 0, 0)

    public init(source: PublishedEqualizer, maxFrames: Int) {
        self.source = source
        self.maxFrames = maxFrames
        coefficients = .allocate(capacity: 2 * Self.sectionStride * EqualizerDesign.maxSections)
        coefficients.initialize(repeating: 0, count: 2 * Self.sectionStride * EqualizerDesign.maxSections)
        history = .allocate(capacity: 2 * Self.historyStride)
        history.initialize(repeating: 0, count: 2 * Self.historyStride)
        scratch = .allocate(capacity: 2 * maxFrames)
        scratch.initialize(repeating: 0, count: 2 * maxFrames)
    }

    deinit {
        coefficients.deallocate()
        history.deallocate()
        scratch.deallocate()
    }

    /// True while the samples pass untouched (flat, and no fade under way).
    public var isBypassed: Bool { !fading && isBypass(current) }

    @inline(__always) private func sections(_ bank: Int) -> Int { bank == 0 ? count.0 : count.1 }
    @inline(__always) private func gain(_ bank: Int) -> Double { bank == 0 ? preamp.0 : preamp.1 }
    @inline(__always) private func isBypass(_ bank: Int) -> Bool { sections(bank) == 0 && gain(bank) == 1 }

    /// Filters `frames` interleaved stereo frames in place (at most `maxFrames`).
    public func process(_ block: UnsafeMutablePointer<Float>, frames: Int) {
        let frames = min(frames, maxFrames)
        if !fading && source.version != seen { load() }
        defer { rememberDry(block, frames: frames) }
        if !fading && isBypass(current) { return }
        if fading {
            let from = 1 - current
            scratch.update(from: block, count: 2 * frames)
            run(bank: from, scratch, frames: frames)
            run(bank: current, block, frames: frames)
            let length = Float(Self.fadeFrames)
            for n in 0..<frames {
                let t = min(1, Float(fadeDone + n + 1) / length)
                block[2 * n] = scratch[2 * n] + t * (block[2 * n] - scratch[2 * n])
                block[2 * n + 1] = scratch[2 * n + 1] + t * (block[2 * n + 1] - scratch[2 * n + 1])
            }
            fadeDone += frames
            if fadeDone >= Self.fadeFrames { fading = false }
        } else {
            run(bank: current, block, frames: frames)
        }
    }

    /// Takes the latest design into the idle bank and starts the fade to it.
    private func load() {
        let next = 1 - current
        let (n, g, version) = source.read(into: coefficients + next * Self.sectionStride * EqualizerDesign.maxSections)
        seen = version
        if next == 0 { count.0 = n; preamp.0 = g } else { count.1 = n; preamp.1 = g }
        // Each signal of the new cascade starts from the matching signal of
        // the old one (past its end: the old output), or from the dry input.
        let old = history + current * Self.historyStride, new = history + next * Self.historyStride
        let oldSections = isBypass(current) ? -1 : sections(current)
        for j in 0...n {
            if oldSections < 0 {
                new[4 * j] = dry.l1; new[4 * j + 1] = dry.r1; new[4 * j + 2] = dry.l2; new[4 * j + 3] = dry.r2
            } else {
                let k = min(j, oldSections)
                for i in 0..<4 { new[4 * j + i] = old[4 * k + i] }
            }
        }
        // From bypass to bypass there is nothing to fade.
        fading = !(isBypass(current) && isBypass(next))
        fadeDone = 0
        current = next
    }

    private func rememberDry(_ block: UnsafeMutablePointer<Float>, frames: Int) {
        guard frames >= 2 else {
            if frames == 1 { dry = (Double(block[0]), Double(block[1]), dry.l1, dry.r1) }
            return
        }
        let l = 2 * (frames - 1)
        dry = (Double(block[l]), Double(block[l + 1]), Double(block[l - 2]), Double(block[l - 1]))
    }

    /// One bank's cascade and preamp over the block, in place.
    private func run(bank: Int, _ block: UnsafeMutablePointer<Float>, frames: Int) {
        let n = sections(bank)
        let g = gain(bank)
        let c = coefficients + bank * Self.sectionStride * EqualizerDesign.maxSections
        let h = history + bank * Self.historyStride
        for i in 0..<frames {
            var l = Double(block[2 * i]), r = Double(block[2 * i + 1])
            for k in 0..<n {
                let b = c + Self.sectionStride * k
                let x = h + 4 * k, y = x + 4
                let outL = b[0] * l + b[1] * x[0] + b[2] * x[2] - b[3] * y[0] - b[4] * y[2]
                let outR = b[0] * r + b[1] * x[1] + b[2] * x[3] - b[3] * y[1] - b[4] * y[3]
                x[2] = x[0]; x[3] = x[1]; x[0] = l; x[1] = r
                l = outL; r = outR
            }
            let last = h + 4 * n
            last[2] = last[0]; last[3] = last[1]; last[0] = l; last[1] = r
            block[2 * i] = Float(l * g); block[2 * i + 1] = Float(r * g)
        }
        // A decaying filter would otherwise crawl through denormals (slow) after the music stops.
        for j in 0..<(4 * n + 4) where abs(h[j]) < 1e-20 { h[j] = 0 }
    }
}
