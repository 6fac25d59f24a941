import Dispatch
import Glibc
import Synchronization
import TuttiCore
import TuttiGestures
import TuttiInput

/// Collects what a source reports and lets a test wait for the end.
final class Collector: Sendable {
    private let events = Mutex<[ButtonSourceEvent]>([])
    private let done = DispatchSemaphore(value: 0)

    var handler: @Sendable (ButtonSourceEvent) -> Void {
        { [self] event in
            events.withLock { $0.append(event) }
            if case .finished = event { done.signal() }
        }
    }

    /// Waits for `.finished`; false on timeout.
    func waitForFinish(seconds: Double = 10) -> Bool {
        done.wait(timeout: .now() + seconds) == .success
    }

    var all: [ButtonSourceEvent] { events.withLock { $0 } }

    var commands: [ButtonCommandEvent] {
        all.compactMap { if case .command(let c) = $0 { c } else { nil } }
    }

    /// "command source trigger ms" for each command, relative to `origin`.
    func summary(origin: LocalTime = LocalTime(nanoseconds: 0)) -> [String] {
        commands.map { "\($0.command) \($0.source) \($0.trigger) \(($0.time - origin) / nanosecondsPerMillisecond)" }
    }

    var finishedWith: InputError?? {
        for e in all { if case .finished(let error) = e { return .some(error) } }
        return nil
    }
}

/// A `struct input_event` as the 64-bit kernel lays it out, written by
/// hand (not through the code under test): tv_sec and tv_usec as 8-byte
/// longs, then type u16, code u16, value s32, little-endian.
func rawEvent(ms: Int64, type: UInt16, code: UInt16, value: Int32) -> [UInt8] {
    var out: [UInt8] = []
    func le<T: FixedWidthInteger>(_ v: T) {
        for i in 0..<(T.bitWidth / 8) { out.append(UInt8(truncatingIfNeeded: v >> (8 * i))) }
    }
    le(Int64(ms / 1_000))
    le(Int64((ms % 1_000) * 1_000))
    le(type)
    le(code)
    le(value)
    return out
}

/// A key edge followed by SYN_REPORT, as a keyboard sends it.
func keyRecords(ms: Int64, code: UInt16, value: Int32) -> [UInt8] {
    rawEvent(ms: ms, type: 1, code: code, value: value) + rawEvent(ms: ms, type: 0, code: 0, value: 0)
}

/// A pipe: (read end, write end).
func makePipe() -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    precondition(pipe(&fds) == 0)
    return (fds[0], fds[1])
}

/// Writes `bytes` to `fd` in random pieces of 1…`maxPiece` bytes, now and
/// then pausing so the reader sees partial records, then closes `fd`.
func writeInPieces(_ bytes: [UInt8], to fd: Int32, seed: UInt64, maxPiece: Int = 60) {
    var rng = SplitMix64(seed: seed)
    var offset = 0
    while offset < bytes.count {
        let n = min(bytes.count - offset, 1 + Int(rng.next() % UInt64(maxPiece)))
        let written = bytes[offset..<offset + n].withUnsafeBytes { write(fd, $0.baseAddress, n) }
        precondition(written == n)
        offset += n
        if rng.next() % 8 == 0 { usleep(200) }
    }
    close(fd)
}

/// Captures log lines.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var logger: Logger { Logger(label: "test") { [self] _, _, line in lines.withLock { $0.append(line) } } }
    var all: [String] { lines.withLock { $0 } }
}
