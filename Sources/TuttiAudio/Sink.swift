import TuttiCore

/// Where a follower's samples go: a DAC through ALSA, or the virtual DAC.
///
/// Thread contract: opened on any thread, then used only from the playout
/// thread. `write` blocks until the device has room (that is the playout
/// clock); `delay` says how long until the next written frame is heard.
public protocol AudioSink: AnyObject {
    /// A short description for logs (`alsa:hw:0`, `file:/tmp/a.raw`).
    var name: String { get }
    /// Frames per write that the device prefers.
    var periodFrames: Int { get }
    /// Frames queued below which the next write is due. A sink that
    /// takes several periods per wake-up says how low it lets the queue
    /// go, so late audio is waited for until then (`PlayoutSchedule.Step.wait`);
    /// 0 (the default): writes are due whenever they fit.
    var writeDueFrames: Int { get }
    /// Frames written but not yet played, and the monotonic time (ns) at
    /// which that was true.
    func delay() -> (frames: Int, at: Int64)
    /// Writes interleaved S16 stereo frames, blocking until they fit.
    /// Returns false if the device failed for good.
    func write(_ samples: UnsafePointer<Int16>, frames: Int) -> Bool
    /// Underruns (the device ran dry and was restarted).
    var underruns: Int { get }
    /// When the first frame of the latest write leaves the device, if the
    /// device knows it exactly (the virtual DAC does); nil otherwise.
    var lastWriteLeaveTime: Int64? { get }
    /// Changes when the device behind the sink was replaced (unplugged and
    /// plugged back in): what was queued in the old one is gone.
    var generation: Int { get }
    /// Why the last write failed for good (what the device said), if it did.
    var failure: String? { get }
    /// Bits per sample that reach the device (what a Sendspin server is
    /// offered by default: 24-bit formats only where more than 16 get through).
    var outputBits: Int { get }
    func close()
}

public extension AudioSink {
    var writeDueFrames: Int { 0 }
    var lastWriteLeaveTime: Int64? { nil }
    var generation: Int { 0 }
    var failure: String? { nil }
    var outputBits: Int { 16 }
}

/// `--output` values: `alsa:DEVICE` or `file:PATH[,ppm=N][,delay-ms=N]`.
public enum OutputSpec: Equatable, Sendable, CustomStringConvertible {
    case alsa(device: String)
    case file(path: String, ppm: Double, delayMilliseconds: Double)

    public init(parsing spec: String) throws(AudioError) {
        if spec.hasPrefix("alsa:") {
            let device = String(spec.dropFirst(5))
            guard !device.isEmpty else { throw .badOutput(spec: spec, reason: "no ALSA device name after 'alsa:'") }
            self = .alsa(device: device)
        } else if spec.hasPrefix("file:") {
            let parts = spec.dropFirst(5).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard let path = parts.first, !path.isEmpty else { throw .badOutput(spec: spec, reason: "no path after 'file:'") }
            var ppm = 0.0, delay = 0.0
            for option in parts.dropFirst() {
                let kv = option.split(separator: "=", maxSplits: 1).map(String.init)
                guard kv.count == 2, let value = Double(kv[1]), value.isFinite else {
                    throw .badOutput(spec: spec, reason: "option '\(option)' is not name=number")
                }
                switch kv[0] {
                case "ppm":
                    guard abs(value) <= 10_000 else { throw .badOutput(spec: spec, reason: "ppm \(value) outside ±10000") }
                    ppm = value
                case "delay-ms":
                    guard value >= 0, value <= 10_000 else { throw .badOutput(spec: spec, reason: "delay-ms \(value) outside 0…10000") }
                    delay = value
                default: throw .badOutput(spec: spec, reason: "unknown option '\(kv[0])' (ppm, delay-ms)")
                }
            }
            self = .file(path: path, ppm: ppm, delayMilliseconds: delay)
        } else {
            throw .badOutput(spec: spec, reason: "expected alsa:DEVICE or file:PATH[,ppm=N][,delay-ms=N]")
        }
    }

    public var description: String {
        switch self {
        case .alsa(let d): "alsa:\(d)"
        case .file(let p, let ppm, let d): "file:\(p),ppm=\(ppm),delay-ms=\(d)"
        }
    }

    public func open() throws(AudioError) -> any AudioSink {
        switch self {
        case .alsa(let device): try ALSASink(device: device)
        case .file(let path, let ppm, let delay): try VirtualDAC(path: path, ppm: ppm, delayMilliseconds: delay)
        }
    }
}
