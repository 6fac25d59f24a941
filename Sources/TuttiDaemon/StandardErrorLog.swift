import CTuttiShim
import Foundation
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
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            var tm = tm()
            var seconds = ts.tv_sec
            gmtime_r(&seconds, &tm)
            let stamp = String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                               tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1_000_000)
            let line = "\(stamp) \(level) \(label): \(message)\n"
            lock.withLock { _ in FileHandle.standardError.write(line.data(using: .utf8)!) }
        }
    }
}

/// Names the calling OS thread (shown by top and ps; Foundation's
/// `Thread.name` does not reach the kernel). At most 15 bytes are kept.
func nameThread(_ name: String) {
    tutti_set_thread_name(name)
}
