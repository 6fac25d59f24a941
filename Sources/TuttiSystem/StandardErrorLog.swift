import Glibc
import Synchronization
import TuttiCore

/// Log lines to stderr: `2026-11-30T02:30:00.123Z info leader: text`.
public enum StandardErrorLog {
    private static let minimum = Atomic<Int>(Logger.Level.info.rawValue)
    private static let lock = Mutex<Void>(())

    public static func setLevel(_ level: Logger.Level) { minimum.store(level.rawValue, ordering: .relaxed) }

    public static func logger(_ label: String) -> Logger {
        Logger(label: label) { level, label, message in
            guard level.rawValue >= minimum.load(ordering: .relaxed) else { return }
            let line = "\(timestamp()) \(level) \(label): \(message)\n"
            lock.withLock { _ in write(line) }
        }
    }

    /// Writes `text` to stderr whole (write(2) may take part of it).
    public static func write(_ text: String) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(2, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                offset += n
            }
        }
    }

    /// UTC wall-clock time with milliseconds, ISO 8601.
    static func timestamp() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var parts = tm()
        var seconds = ts.tv_sec
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(Int(parts.tm_year) + 1900, 4))-\(pad(Int(parts.tm_mon) + 1, 2))-\(pad(Int(parts.tm_mday), 2))"
            + "T\(pad(Int(parts.tm_hour), 2)):\(pad(Int(parts.tm_min), 2)):\(pad(Int(parts.tm_sec), 2))"
            + ".\(pad(ts.tv_nsec / 1_000_000, 3))Z"
    }
}
