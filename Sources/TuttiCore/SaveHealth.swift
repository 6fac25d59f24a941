/// Whether the leader's saved state is being written. A full disk fails
/// every checkpoint, once a second: this says so once, says when saving
/// works again, and holds what status shows meanwhile.
public struct SaveHealth: Sendable, Equatable {
    /// What failed and why, while saving fails.
    public private(set) var failure: String?
    /// Checkpoints that failed since the last one that worked.
    public private(set) var failedAttempts = 0

    public init() {}

    /// A save failed; returns the line to log (the first failure, or a new reason), else nil.
    public mutating func failed(_ reason: String) -> String? {
        failedAttempts += 1
        guard reason != failure else { return nil }
        failure = reason
        return "the player state is not being saved: \(reason); playback goes on, and saving is retried every second"
    }

    /// A save worked; returns the line to log when it had been failing, else nil.
    public mutating func succeeded() -> String? {
        guard failure != nil else { return nil }
        defer { failure = nil; failedAttempts = 0 }
        return "the player state is saved again (after \(failedAttempts) failed attempts)"
    }
}
