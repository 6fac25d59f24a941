import Glibc

/// A capture device (a turntable, a TV or a CD player on a line input) as a
/// source: `line:hw:CARD=Device,DEV=0?name=Turntable&rate=48000&channels=2`.
/// The device is whatever libasound names (`hw:…`, `plughw:…`, `default`,
/// a plugin such as `pulse`). Pure: parsing only.
public struct LineInSpec: Equatable, Sendable {
    public var device: String
    /// The rate asked of the device (its crystal decides the true one: `CaptureClock`).
    public var sampleRate: Int
    public var channels: Int
    /// What now playing calls it (default: "Line in").
    public var name: String

    public static func isLineIn(_ uri: String) -> Bool { uri.hasPrefix("line:") }

    public init(parsing uri: String) throws(LineInSpecError) {
        guard Self.isLineIn(uri) else { throw .notALineIn(uri) }
        let rest = Substring(uri.dropFirst("line:".count))
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let device = String(parts[0])
        // A device name is libasound's: printable, no spaces or quotes (it is read by ALSA's config parser).
        guard !device.isEmpty, device.utf8.count <= 128,
              device.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "'") && $0 != UInt8(ascii: "\\") })
        else { throw .badDevice(uri) }
        self.device = device
        sampleRate = 48_000
        channels = 2
        name = "Line in"
        for pair in (parts.count > 1 ? parts[1] : "").split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            let key = String(kv[0]), value = kv.count > 1 ? String(kv[1]) : ""
            switch key {
            case "rate":
                guard let r = Int(value), (8_000...192_000).contains(r) else { throw .badValue(key: key, value: value, expected: "a sample rate 8000…192000") }
                sampleRate = r
            case "channels":
                guard let c = Int(value), (1...2).contains(c) else { throw .badValue(key: key, value: value, expected: "1 or 2") }
                channels = c
            case "name":
                guard !value.isEmpty, value.utf8.count <= 128 else { throw .badValue(key: key, value: value, expected: "a name of 1…128 bytes") }
                name = value.replacingPercentAndPlus()
            default:
                throw .badValue(key: key, value: value, expected: "one of rate, channels, name")
            }
        }
    }
}

public enum LineInSpecError: Error, Equatable, CustomStringConvertible {
    case notALineIn(String)
    case badDevice(String)
    case badValue(key: String, value: String, expected: String)
    public var description: String {
        switch self {
        case .notALineIn(let u): "\(u) is not a line-in source (line:hw:CARD=Device,DEV=0?name=Turntable)"
        case .badDevice(let u): "\(u): the line-in source needs an ALSA capture device name, as in line:hw:CARD=Device,DEV=0 (arecord -L lists them)"
        case .badValue(let k, let v, let e): "line-in source \(k)=\(v): expected \(e)"
        }
    }
}

/// Where a capture device's crystal really is, against the monotonic clock
/// the leader times its stream by.
///
/// A line input is a live source with a clock of its own: at +100 ppm it
/// delivers 0.36 s an hour more than the stream plays, at −100 ppm it runs
/// dry. The device's rate is measured as the slope of a least-squares line
/// through (time, frames captured by then) with exponential forgetting, so
/// the period-sized jitter of each reading (when the driver wakes us)
/// averages out: σ/√N over the window, not σ over one interval.
///
/// Times are nanoseconds, frames are counted since `start`; the sums are kept
/// relative to the first reading so that hours of frames keep their precision.
public struct CaptureClock: Sendable {
    public let nominalRate: Double
    /// Readings older than this count 1/e as much (seconds).
    public let memorySeconds: Double
    private var origin: (time: Int64, frames: Int64)?
    private var lastTime: Int64 = 0
    // Exponentially weighted sums of 1, t, f, t², t·f (t in s, f in frames, from the origin).
    private var w = 0.0, st = 0.0, sf = 0.0, stt = 0.0, stf = 0.0
    private var span = 0.0

    public init(nominalRate: Int, memorySeconds: Double = 120) {
        self.nominalRate = Double(nominalRate)
        self.memorySeconds = memorySeconds
    }

    /// `frames` had been captured by monotonic time `time` (ns).
    public mutating func observe(frames: Int64, at time: Int64) {
        guard let o = origin else {
            origin = (time, frames)
            lastTime = time
            add(t: 0, f: 0)
            return
        }
        guard time > lastTime else { return }
        let decay = exp(-Double(time - lastTime) / 1e9 / memorySeconds)
        w *= decay; st *= decay; sf *= decay; stt *= decay; stf *= decay
        lastTime = time
        let t = Double(time - o.time) / 1e9
        span = t
        add(t: t, f: Double(frames - o.frames))
    }

    private mutating func add(t: Double, f: Double) {
        w += 1; st += t; sf += f; stt += t * t; stf += t * f
    }

    /// The device's rate by the monotonic clock (frames a second), once two
    /// seconds of readings make the line worth more than the nominal rate.
    public var measuredRate: Double? {
        guard span >= 2 else { return nil }
        let varT = stt / w - (st / w) * (st / w)
        guard varT > 0 else { return nil }
        let slope = (stf / w - (st / w) * (sf / w)) / varT
        // A rate more than 0.5 % off is no crystal: a wrong reading, not a clock.
        guard abs(slope / nominalRate - 1) < 0.005 else { return nil }
        return slope
    }

    /// Frames the device had captured by `time`, on the fitted line.
    public func frames(at time: Int64) -> Double? {
        guard let o = origin, let rate = measuredRate else { return nil }
        let t = Double(time - o.time) / 1e9
        let mt = st / w, mf = sf / w
        return Double(o.frames) + mf + rate * (t - mt)
    }

    /// The device's error against its nominal rate, in ppm.
    public var ppm: Double? { measuredRate.map { ($0 / nominalRate - 1) * 1e6 } }
}

/// Turns a capture device's frames, which arrive at the device's own rate,
/// into frames at its nominal rate by the monotonic clock, so that a live
/// input keeps a constant delay for hours whatever its crystal does.
///
/// The read position follows the fitted line of `CaptureClock`, `targetDelay`
/// frames behind the newest captured frame (the sinc kernel needs frames on
/// both sides, and reads arrive a period at a time). Each output frame moves
/// it by the measured rate over the nominal one, which changes only as slowly
/// as the fit does, so the steering is never heard as pitch. Frames come out
/// as the line moves on in time, so their count follows the monotonic clock
/// at the nominal rate. A jump happens only when the input stalls or floods
/// (a device restarted), and is counted.
///
/// Allocates only as its input buffer grows to its working size.
public struct CaptureRetimer {
    public let resampler: FractionalResampler
    public let targetDelay: Double
    public private(set) var clock: CaptureClock
    /// Interleaved stereo input not yet passed by the read position (plus the kernel's history).
    private var input: [Float] = []
    /// Frame number (since the start) of `input[0]`.
    private var inputStart: Int64 = 0
    /// Frames captured so far.
    public private(set) var captured: Int64 = 0
    /// The read position, in captured frames (fractional).
    public private(set) var position = 0.0
    public private(set) var resyncs = 0
    private var started = false
    /// Input frames per output frame: the device's rate over its nominal one.
    public private(set) var step = 1.0

    public init(nominalRate: Int, targetDelay: Double, memorySeconds: Double = 120,
                resampler: FractionalResampler = FractionalResampler()) {
        self.resampler = resampler
        self.targetDelay = max(targetDelay, Double(resampler.halfTaps + 2))
        clock = CaptureClock(nominalRate: nominalRate, memorySeconds: memorySeconds)
    }

    /// How far the read position is behind the newest frame, in frames (the delay this adds).
    public var backlog: Double { Double(captured) - position }

    /// Takes `frames` captured frames (interleaved stereo) read at `time`,
    /// when `pendingInDevice` more were already waiting in the device;
    /// appends the frames now due at the nominal rate to `output`.
    public mutating func process(_ samples: UnsafeBufferPointer<Float>, at time: Int64, pendingInDevice: Int,
                                 into output: inout [Float]) {
        input.append(contentsOf: samples)
        captured += Int64(samples.count / 2)
        let deviceCount = captured + Int64(max(0, pendingInDevice))
        clock.observe(frames: deviceCount, at: time)
        // Where the read position should be now: the fitted line's newest
        // frame (smooth in time, unlike each reading), less the delay.
        let due = (clock.frames(at: time) ?? Double(deviceCount)) - targetDelay
        if !started || abs(due - position) > max(targetDelay, clock.nominalRate * 0.25) {
            // A stall or a flood (the device restarted, the process was stopped): start over at the target.
            if started {
                resyncs += 1
                // Its count no longer lies on the old line: measure afresh.
                clock = CaptureClock(nominalRate: Int(clock.nominalRate), memorySeconds: clock.memorySeconds)
                clock.observe(frames: deviceCount, at: time)
            }
            position = Double(deviceCount) - targetDelay
            started = true
            return
        }
        step = clock.measuredRate.map { $0 / clock.nominalRate } ?? 1
        let half = resampler.halfTaps
        // Up to where the line is now, and never past the frames the kernel needs.
        let limit = min(due, Double(captured - Int64(half) - 1))
        output.reserveCapacity(output.count + samples.count + 16)
        input.withUnsafeBufferPointer { buffer in
            while position <= limit {
                let index = Int64(position.rounded(.down))
                let local = Int(index - inputStart)
                if local >= half - 1 {
                    let (l, r) = resampler.interpolate(at: buffer.baseAddress! + 2 * local, fraction: position - Double(index))
                    output.append(l); output.append(r)
                } else {
                    output.append(0); output.append(0) // before the first frame (or forgotten): silence
                }
                position += step
            }
        }
        // Forget what the kernel can no longer reach, a few thousand frames at a time.
        let keepFrom = Int64(position.rounded(.down)) - Int64(half) - 1
        let drop = Int(min(max(0, keepFrom - inputStart), Int64(input.count / 2)))
        if drop > 4_096 {
            input.removeFirst(2 * drop)
            inputStart += Int64(drop)
        }
    }
}
