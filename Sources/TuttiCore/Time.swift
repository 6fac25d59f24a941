/// A point on the leader's monotonic clock, in nanoseconds. Presentation
/// times (PTS) are leader times.
public struct LeaderTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public static func < (a: LeaderTime, b: LeaderTime) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: LeaderTime, d: Int64) -> LeaderTime { LeaderTime(nanoseconds: a.nanoseconds &+ d) }
    public static func - (a: LeaderTime, d: Int64) -> LeaderTime { LeaderTime(nanoseconds: a.nanoseconds &- d) }
    /// Signed distance in nanoseconds.
    public static func - (a: LeaderTime, b: LeaderTime) -> Int64 { a.nanoseconds &- b.nanoseconds }
    public var description: String { "L\(nanoseconds)ns" }
}

/// A point on this machine's (follower's) monotonic clock, in nanoseconds.
/// Kept distinct from `LeaderTime` so a PTS is never compared with a local
/// timestamp without going through the clock model.
public struct LocalTime: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64
    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public static func < (a: LocalTime, b: LocalTime) -> Bool { a.nanoseconds < b.nanoseconds }
    public static func + (a: LocalTime, d: Int64) -> LocalTime { LocalTime(nanoseconds: a.nanoseconds &+ d) }
    public static func - (a: LocalTime, d: Int64) -> LocalTime { LocalTime(nanoseconds: a.nanoseconds &- d) }
    public static func - (a: LocalTime, b: LocalTime) -> Int64 { a.nanoseconds &- b.nanoseconds }
    public var description: String { "l\(nanoseconds)ns" }
}

public let nanosecondsPerSecond: Int64 = 1_000_000_000
public let nanosecondsPerMillisecond: Int64 = 1_000_000

/// The fixed format every stream carries after decoding and resampling.
public enum StreamFormat {
    public static let sampleRate = 48_000
    public static let channels = 2

    /// Duration of `frames` frames at 48 kHz, rounded to the nearest nanosecond.
    @inline(__always)
    public static func nanoseconds(frames: Int) -> Int64 {
        // 1e9 / 48000 = 62500 / 3: exact integer arithmetic, no drift.
        let n = Int64(frames) * 62_500
        return n >= 0 ? (n + 1) / 3 : -((-n + 1) / 3)
    }

    /// Frames (possibly fractional) in `nanoseconds`.
    @inline(__always)
    public static func frames(nanoseconds: Int64) -> Double {
        Double(nanoseconds) * 3.0 / 62_500.0
    }
}
