import CSoxr
import TuttiAudio
import TuttiCore

/// Sample-rate conversion to 48 kHz through libsoxr (high quality,
/// streaming). One per source file; `finish` drains the filter's tail so
/// consecutive files join without losing or adding frames.
public final class SoxrResampler {
    public let inputRate: Int
    private let soxr: OpaquePointer
    private var outBuffer: [Float] = []

    public init(inputRate: Int, outputRate: Int = StreamFormat.sampleRate) throws(AudioError) {
        var error: soxr_error_t? = nil
        // nil specs: interleaved float32 in and out, SOXR_HQ quality.
        guard let s = soxr_create(Double(inputRate), Double(outputRate), 2, &error, nil, nil, nil), error == nil else {
            throw .resampler(reason: error.map { String(cString: $0) } ?? "soxr_create failed")
        }
        self.inputRate = inputRate
        self.soxr = s
    }

    deinit { soxr_delete(soxr) }

    /// Resamples `frames` stereo frames from `input`, appending to `output`.
    public func process(_ input: UnsafePointer<Float>, frames: Int, into output: inout [Float]) throws(AudioError) {
        var consumed = 0
        while consumed < frames || frames == 0 {
            let capacity = max(4096, (frames - consumed) * 2 * 48_000 / inputRate + 64)
            if outBuffer.count < capacity * 2 { outBuffer = [Float](repeating: 0, count: capacity * 2) }
            var idone = 0, odone = 0
            let inPtr = frames == 0 ? nil : input + 2 * consumed
            let err = outBuffer.withUnsafeMutableBufferPointer { out in
                soxr_process(soxr, inPtr, frames - consumed, &idone, out.baseAddress, capacity, &odone)
            }
            if let err { throw .resampler(reason: String(cString: err)) }
            output.append(contentsOf: outBuffer[0..<(2 * odone)])
            consumed += idone
            if frames == 0 { if odone == 0 { break } else { continue } }
            if idone == 0 && odone == 0 { break }
        }
    }

    /// Drains what the filter still holds at the end of the input.
    public func finish(into output: inout [Float]) throws(AudioError) {
        let dummy = [Float](repeating: 0, count: 2)
        try dummy.withUnsafeBufferPointer { (p) throws(AudioError) in try process(p.baseAddress!, frames: 0, into: &output) }
    }
}
