import CRubberBand
import TuttiCore
import TuttiSystem

/// librubberband, loaded at the first stretcher: a leader that never
/// changes speed or pitch never loads it nor libstdc++'s start-up (about 2 MiB resident).
private let rubberBand = Result { () throws(SharedLibraryError) in
    try FunctionTable<tutti_rubberband>.open("librubberband.so.2", symbols: [
        "rubberband_new", "rubberband_delete", "rubberband_set_max_process_size", "rubberband_get_start_delay",
        "rubberband_get_preferred_start_pad", "rubberband_process", "rubberband_available", "rubberband_retrieve"])
}

/// Playback speed without a change of pitch, and pitch without a change of
/// speed, through librubberband in its real-time (streaming) mode. One per
/// track at the leader, before the encode, so every room hears the same
/// stretched audio. Its start is padded and its delay trimmed, and
/// `finish` drains the tail, so a track of n frames comes out as n / speed
/// frames, aligned: positions map back to track time exactly.
public final class TimeStretcher {
    public let speed: Double
    public let pitchSemitones: Double
    private let state: OpaquePointer
    private let rb: tutti_rubberband
    /// Output frames still to drop: the stretcher's own start delay.
    private var toTrim: Int
    private var left: [Float], right: [Float]
    private var outLeft: [Float], outRight: [Float]
    /// What came out while the start was padded, handed on with the first block.
    private var early: [Float] = []
    /// Track frames in and stretched frames out, so the end can be made exact.
    private var framesIn = 0, framesOut = 0
    /// The largest block handed to librubberband at once (it reallocates above it).
    private static let block = 4_096

    /// `.faster` (R2) costs about a third of `.finer` (R3): a Pi-class leader can afford R2; see docs/sound.md.
    public enum Engine: String, Sendable, CaseIterable { case faster, finer }

    public init(speed: Double, pitchSemitones: Double, engine: Engine = .faster) throws(TimeStretchError) {
        guard PlaybackTempo.speedRange.contains(speed) else { throw .outOfRange("speed \(speed)") }
        guard PlaybackTempo.pitchRange.contains(pitchSemitones) else { throw .outOfRange("pitch \(pitchSemitones) semitones") }
        // Mixed transients: R2's default (crisp) resets phases so often that a held
        // tone at 1.5× came out 1.3 % sharp; mixed keeps it within 0.01 %
        // (TimeStretchTests) and still keeps drums sharp above 1 kHz.
        var options = Int32(RubberBandOptionProcessRealTime.rawValue | RubberBandOptionThreadingNever.rawValue
            | RubberBandOptionTransientsMixed.rawValue)
        options |= Int32(engine == .finer ? RubberBandOptionEngineFiner.rawValue : RubberBandOptionEngineFaster.rawValue)
        // Time ratio is output length over input length.
        let rb: tutti_rubberband
        switch rubberBand {
        case .success(let table): rb = table.functions
        case .failure(let why): throw .notInstalled(why.description)
        }
        guard let s = rb.new_(UInt32(StreamFormat.sampleRate), 2, options, 1 / speed, PlaybackTempo.pitchScale(semitones: pitchSemitones)) else {
            throw .unavailable
        }
        state = s
        self.rb = rb
        self.speed = speed
        self.pitchSemitones = pitchSemitones
        rb.set_max_process_size(s, UInt32(Self.block))
        left = [Float](repeating: 0, count: Self.block)
        right = [Float](repeating: 0, count: Self.block)
        outLeft = [Float](repeating: 0, count: Self.block)
        outRight = [Float](repeating: 0, count: Self.block)
        toTrim = Int(rb.get_start_delay(s))
        // Silence ahead of the track, as the library asks, so its first frame is not smeared.
        var pad = Int(rb.get_preferred_start_pad(s))
        while pad > 0 {
            let n = min(pad, Self.block)
            for i in 0..<n { left[i] = 0; right[i] = 0 }
            feed(frames: n, final: false, into: &early)
            pad -= n
        }
    }

    deinit { rb.delete_(state) }

    /// Stretches interleaved stereo `input`, appending what comes out to `output`.
    public func process(_ input: UnsafeBufferPointer<Float>, into output: inout [Float]) {
        if !early.isEmpty { framesOut += early.count / 2; output.append(contentsOf: early); early = [] }
        let frames = input.count / 2
        framesIn += frames
        var done = 0
        while done < frames {
            let n = min(frames - done, Self.block)
            for i in 0..<n {
                left[i] = input[2 * (done + i)]
                right[i] = input[2 * (done + i) + 1]
            }
            let before = output.count
            feed(frames: n, final: false, into: &output)
            framesOut += (output.count - before) / 2
            done += n
        }
    }

    /// The end of the track: what the stretcher still holds, cut or
    /// padded to exactly the track's frames over the speed. (In real-time
    /// mode the library keeps its last window back even when told the input
    /// is final: silence pushes it out.)
    public func finish(into output: inout [Float]) {
        if !early.isEmpty { framesOut += early.count / 2; output.append(contentsOf: early); early = [] }
        let expected = Int((Double(framesIn) / speed).rounded())
        for i in 0..<Self.block { left[i] = 0; right[i] = 0 }
        var pushed = 0
        let start = output.count
        // At most a second of silence; the window is far shorter.
        while framesOut + (output.count - start) / 2 < expected && pushed < StreamFormat.sampleRate {
            feed(frames: Self.block, final: false, into: &output)
            pushed += Self.block
        }
        feed(frames: 0, final: true, into: &output)
        let have = framesOut + (output.count - start) / 2
        if have > expected { output.removeLast(2 * (have - expected)) }
        else if have < expected { output.append(contentsOf: repeatElement(0, count: 2 * (expected - have))) }
        framesOut = expected
    }

    private func feed(frames: Int, final: Bool, into output: inout [Float]) {
        left.withUnsafeBufferPointer { l in
            right.withUnsafeBufferPointer { r in
                var planes: [UnsafePointer<Float>?] = [l.baseAddress, r.baseAddress]
                planes.withUnsafeMutableBufferPointer { p in
                    rb.process(state, p.baseAddress, UInt32(frames), final ? 1 : 0)
                }
            }
        }
        drain(into: &output)
    }

    private func drain(into output: inout [Float]) {
        while true {
            let available = Int(rb.available(state))
            guard available > 0 else { return } // 0: wants more input; -1: finished
            let n = min(available, Self.block)
            let got = outLeft.withUnsafeMutableBufferPointer { l in
                outRight.withUnsafeMutableBufferPointer { r in
                    var planes: [UnsafeMutablePointer<Float>?] = [l.baseAddress, r.baseAddress]
                    return planes.withUnsafeMutableBufferPointer { p in Int(rb.retrieve(state, p.baseAddress, UInt32(n))) }
                }
            }
            guard got > 0 else { return }
            let skip = min(toTrim, got)
            toTrim -= skip
            guard skip < got else { continue }
            output.reserveCapacity(output.count + 2 * (got - skip))
            for i in skip..<got {
                output.append(outLeft[i])
                output.append(outRight[i])
            }
        }
    }
}

public enum TimeStretchError: Error, CustomStringConvertible, Equatable {
    case outOfRange(String)
    case unavailable
    /// librubberband 2 could not be loaded (the reason from the loader).
    case notInstalled(String)
    public var description: String {
        switch self {
        case .outOfRange(let what): "\(what) is out of range (speed \(PlaybackTempo.speedRange.lowerBound)–\(PlaybackTempo.speedRange.upperBound)×, pitch ±\(PlaybackTempo.pitchRange.upperBound) semitones)"
        case .unavailable: "librubberband could not start a stretcher"
        case .notInstalled(let why): "speed and pitch need librubberband 2 (apt-get install librubberband2): \(why)"
        }
    }
}
