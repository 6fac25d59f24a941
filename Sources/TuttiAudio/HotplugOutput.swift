import Glibc
import TuttiCore

/// What a `HotplugOutput` reports about its device.
public enum HotplugChange: Sendable, Equatable {
    /// The device failed or could not be opened; retrying.
    case lost(String)
    /// The device is open again.
    case back
}

/// The output of a DAC that may be unplugged (a USB DAC, a HAT that
/// browns out) and plugged back in.
///
/// While the device is absent, writes go nowhere, paced by the system
/// clock, so the playout engine keeps time with the leader as if it were
/// playing; every `retryNanoseconds` it tries to open the device again. A
/// write that fails for good closes the device. Each reopen bumps
/// `generation`, so the engine lines up again on the leader's clock
/// instead of carrying on from where the old device stopped.
///
/// Opening and logging happen on the playout thread, but only while there
/// is no device to hear a glitch. Generic over the device, so its writes
/// are direct calls (a speaker's is `HotplugOutput<ALSASink>`).
public final class HotplugOutput<Device: AudioSink>: AudioSink {
    public typealias Opener = () throws(AudioError) -> Device
    public typealias Change = HotplugChange

    public let name: String
    public let periodFrames: Int
    private let openDevice: Opener
    private let retryNanoseconds: Int64
    private let onChange: (Change) -> Void
    private var device: Device?
    private var nextAttempt: Int64 = 0
    private var pacingStart: Int64 = 0
    private var pacedFrames = 0
    /// Underruns of devices already closed.
    private var closedUnderruns = 0
    public private(set) var generation = 0

    /// Opens the device now; if that fails, starts without it (and says why through `onChange`).
    public init(name: String, periodFrames: Int = 480, retryMilliseconds: Int = 500,
                open: @escaping Opener, onChange: @escaping (Change) -> Void = { _ in }) {
        self.name = name
        self.openDevice = open
        self.retryNanoseconds = Int64(retryMilliseconds) * 1_000_000
        self.onChange = onChange
        do {
            let d = try open()
            device = d
            self.periodFrames = d.periodFrames
        } catch {
            self.periodFrames = periodFrames
            onChange(.lost("\(error)"))
        }
    }

    public var isPresent: Bool { device != nil }

    public var underruns: Int { closedUnderruns + (device?.underruns ?? 0) }

    public var lastWriteLeaveTime: Int64? { device?.lastWriteLeaveTime }

    public func delay() -> (frames: Int, at: Int64) {
        if let device { return device.delay() }
        return (0, Monotonic.now())
    }

    public func write(_ samples: UnsafePointer<Int16>, frames: Int) -> Bool {
        if device == nil { reopenIfDue() }
        if let device {
            if device.write(samples, frames: frames) { return true }
            drop(reason: "\(device.name) failed while playing" + (device.failure.map { ": \($0)" } ?? ""))
        }
        pace(frames)
        return true
    }

    public func close() {
        device?.close()
        device = nil
    }

    private func drop(reason: String) {
        if let device {
            closedUnderruns += device.underruns
            device.close()
        }
        device = nil
        pacedFrames = 0
        nextAttempt = Monotonic.now() + retryNanoseconds
        onChange(.lost(reason))
    }

    private func reopenIfDue() {
        let now = Monotonic.now()
        guard now >= nextAttempt else { return }
        nextAttempt = now + retryNanoseconds
        guard let d = try? openDevice() else { return }
        device = d
        generation += 1
        onChange(.back)
    }

    /// Absent: a write takes as long as its frames would play.
    private func pace(_ frames: Int) {
        let now = Monotonic.now()
        if pacedFrames == 0 { pacingStart = now }
        pacedFrames += frames
        let due = pacingStart + StreamFormat.nanoseconds(frames: pacedFrames)
        if due > now { Monotonic.sleep(nanoseconds: due - now) }
        if now - due > nanosecondsPerSecond { pacedFrames = 0 }
    }
}
