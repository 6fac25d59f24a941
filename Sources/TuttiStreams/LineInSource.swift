import TuttiAudio
import TuttiCore
import TuttiDecode

/// A line input read with libasound's capture API (a live source: no length,
/// no seeking). The frames come out at the device's nominal rate by the
/// monotonic clock (`CaptureRetimer`), so the delay from the input to the
/// rooms stays where it started for hours whatever the device's crystal
/// does. It runs on a `BackgroundSource`'s thread.
final class LineInSource: AudioDecoder, ReportsBuffering {
    let spec: LineInSpec
    private let capture: ALSACapture
    private let cancellation: NetworkCancellation
    private var retimer: CaptureRetimer
    private var captured: [Float] = []
    private var devicePending = 0

    var path: String { "line:\(spec.device)" }
    var sampleRate: Int { capture.sampleRate }
    var frameCount: Int? { nil }

    init(_ spec: LineInSpec, cancellation: NetworkCancellation) throws(AudioError) {
        self.spec = spec
        self.cancellation = cancellation
        capture = try ALSACapture(device: spec.device, sampleRate: spec.sampleRate, channels: spec.channels)
        // Read two periods behind the newest frame: one for the period that
        // is still arriving, one for the wake-up's lateness.
        retimer = CaptureRetimer(nominalRate: capture.sampleRate, targetDelay: Double(2 * capture.periodFrames))
    }

    func seek(toFrame frame: Int) throws(AudioError) {} // live: it goes on from now

    func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        let before = output.count
        while !cancellation.isCancelled && output.count == before {
            captured.removeAll(keepingCapacity: true)
            let read = try capture.read(timeoutMilliseconds: 100, into: &captured) // wakes to see a close
            guard read.frames > 0 else { continue }
            devicePending = read.pending
            captured.withUnsafeBufferPointer { retimer.process($0, at: read.at, pendingInDevice: read.pending, into: &output) }
        }
        return (output.count - before) / 2
    }

    /// What the input adds before the leader's own buffer: frames still in the
    /// device and the retimer's delay.
    var bufferedSeconds: Double { (retimer.backlog + Double(devicePending)) / Double(capture.sampleRate) }
    var downloadedFraction: Double? { nil }
    /// The crystal's error against the monotonic clock, once measured.
    var ppm: Double? { retimer.clock.ppm }
}
