import TuttiCore

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

/// What a command did and when every room hears it.
public struct CommandOutcome: Sendable, Equatable {
    /// Leader monotonic ns when the source took the command.
    public var acceptedAt: Int64
    /// Leader monotonic ns (a PTS) at which the change is heard everywhere.
    public var effectiveAt: Int64
    public var state: PlayerState
    public var track: Int
    /// Entry ids added by `.add`.
    public var added: [UInt32] = []
}

public struct NowPlaying: Sendable, Equatable {
    public var state: PlayerState
    /// Index in the queue (user order) of what is heard; -1 when none.
    public var track: Int
    public var entryID: UInt32?
    public var path: String
    public var positionSeconds: Double
    public var durationSeconds: Double?
    public var trackCount: Int
    public var shuffle: Bool
    public var repeatMode: RepeatMode
    public var single: SingleMode = .off
    public var consume = false
    /// The group's speed (track seconds per second heard) and pitch shift; positions stay in track time.
    public var speed = 1.0
    public var pitchSemitones = 0.0
    /// Why the last track failed (it names the URL or file); cleared by the next play command.
    public var error: String? = nil
    /// Network source: seconds of audio downloaded ahead of what is heard.
    public var bufferedSeconds: Double? = nil
    /// Finite network file: the share of it downloaded, 0…1.
    public var bufferedFraction: Double? = nil

    /// Nothing queued: nothing can play, whatever the transport last said
    /// (JSON-RPC shows `idle`, MPD `stop`).
    public var isIdle: Bool { trackCount == 0 }
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
    init(_ phase: PlayerPhase) { self = phase == .loading ? .loading : .buffering }
}
