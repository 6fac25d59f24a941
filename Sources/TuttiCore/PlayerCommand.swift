/// Transport and queue commands, from any control surface.
public enum PlayerCommand: Sendable, Equatable {
    case play, pause, toggle, stop, next, previous
    /// Absolute position in the current track, seconds.
    case seek(seconds: Double)
    /// Relative to the position now heard, seconds.
    case seekBy(seconds: Double)
    /// Play queue entry `index` (user order) from its start.
    case playIndex(Int)
    /// Appends (or, with `next`, inserts after the current entry).
    case add(uris: [String], next: Bool)
    case remove(index: Int)
    case move(from: Int, to: Int)
    case clear
    case shuffle(Bool)
    case repeatMode(RepeatMode)
    /// Stop after the current entry (once, or every time).
    case single(SingleMode)
    /// Entries leave the queue once played.
    case consume(Bool)
    /// Removes the entry with this id (ids survive edits; indexes do not).
    case removeEntry(id: UInt32)
    /// Playback speed, 0.5–2.0×, pitch kept (the group's, at the leader).
    case speed(Double)
    /// Pitch in semitones, ±12, speed kept.
    case pitch(semitones: Double)
}

/// What now-playing shows. The transport is one of playing, paused and
/// stopped; `loading` and `buffering` are "playing, but waiting for a network
/// source" (opening it, or starved mid-play: silence is heard), and `error`
/// is "stopped because the last track failed" (`NowPlaying.error` says why).
public enum PlayerState: String, Sendable {
    case playing, paused, stopped, loading, buffering, error

    /// The transport is playing (perhaps waiting for the network).
    public var isActive: Bool { self == .playing || self == .loading || self == .buffering }
}

public enum PlayerError: Error, CustomStringConvertible, Equatable {
    case invalid(String)
    case busy
    public var description: String {
        switch self {
        case .invalid(let what): what
        case .busy: "the player did not answer in time"
        }
    }
}

extension PlayerState {
    public init(_ phase: PlayerPhase) { self = phase == .loading ? .loading : .buffering }
}

/// A place in a queue entry: its id and the 48 kHz frame within it.
public struct TrackPosition: Equatable, Sendable {
    public var track: UInt32
    public var frame: Int
    public init(track: UInt32, frame: Int) { self.track = track; self.frame = frame }
}
