import TuttiCore

/// Turns "what is heard now", sampled over time, into finished plays:
/// a play starts when a path starts being heard and ends when another path
/// is; paused time does not count.
struct PlayHistoryTracker {
    struct FinishedPlay: Equatable { var path: String; var startedAt: Int64; var playedMilliseconds: Int64 }

    private var path: String?
    private var startedAt: Int64 = 0
    private var heard: Int64 = 0
    private var lastSample: Int64?
    private var wasPlaying = false

    /// `current`: the path heard at monotonic `now`, nil while paused or
    /// stopped; `wallMilliseconds`: Unix time for the history. Returns the
    /// play that just ended; plays shorter than a second are not history.
    mutating func update(path current: String?, at now: Int64, wallMilliseconds: Int64) -> FinishedPlay? {
        defer { lastSample = now; wasPlaying = current != nil }
        guard let current else { return nil }
        if current == path {
            if wasPlaying, let last = lastSample { heard += now - last }
            return nil
        }
        let finished = path.flatMap { p in
            heard >= 1_000_000_000 ? FinishedPlay(path: p, startedAt: startedAt, playedMilliseconds: heard / 1_000_000) : nil
        }
        path = current
        startedAt = wallMilliseconds
        heard = 0
        return finished
    }
}
