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
    /// An outside source takes over (an AirPlay receiver's pipe): it plays
    /// at once as an entry after the current one, and what was heard
    /// before is remembered for `uncue`. A second cue while one holds
    /// replaces it and keeps the first one's memory.
    case cue(uri: String)
    /// The outside source `uri` is done: its entry leaves the queue and,
    /// when it was heard, the group goes back to what played before, paused.
    case uncue(uri: String)
}

extension PlayerCommand {
    /// The furthest a position may lie in a track, seconds (about 115
    /// days): a seek further on is clamped here before it becomes frames,
    /// so 48 kHz frames of any position, and sums of two of them, stay far
    /// from `Int`'s limits (4.8 × 10¹¹ frames).
    public static let maximumSeconds: Double = 10_000_000

    /// The most entries a queue holds (MPD's own default,
    /// `max_playlist_length`): an `add` beyond it is refused. Queue edits
    /// run on the player's thread and cost time in proportion to the
    /// queue, so a peer must not make it any length it likes.
    public static let maximumQueueEntries = 16_384

    /// The numbers a command carries, checked where they enter the player
    /// (`Transport.apply`, whatever surface sent it: JSON-RPC, MPD,
    /// Snapcast, the web app, buttons), so no surface can hand the player a
    /// number it cannot use. Positions must be finite and are clamped to
    /// `±maximumSeconds` (`Transport` then clamps them to the track); queue
    /// indexes must be ≥ 0 (the queue's own length is checked against its
    /// state); speed and pitch must be finite and in range. Returns the
    /// command to run, or an error a user can act on; never traps.
    public func checked() -> Result<PlayerCommand, PlayerError> {
        switch self {
        case .seek(let seconds):
            guard seconds.isFinite, seconds >= 0 else {
                return .failure(.invalid(UserMessage(.playerSeekPosition, ["seconds": "\(seconds)"])))
            }
            return .success(.seek(seconds: min(seconds, Self.maximumSeconds)))
        case .seekBy(let seconds):
            guard seconds.isFinite else { return .failure(.invalid(UserMessage(.playerSeekOffset, ["seconds": "\(seconds)"]))) }
            return .success(.seekBy(seconds: max(-Self.maximumSeconds, min(seconds, Self.maximumSeconds))))
        case .playIndex(let index), .remove(let index):
            guard index >= 0 else { return .failure(.invalid(UserMessage(.playerPositionsFromZero, ["index": "\(index)"]))) }
        case .move(let from, let to):
            guard from >= 0, to >= 0 else { return .failure(.invalid(UserMessage(.playerPositionsFromZero, ["index": "\(min(from, to))"]))) }
        case .add(let uris, _):
            guard uris.count <= Self.maximumQueueEntries else {
                return .failure(.invalid(UserMessage(.playerTooManyToAdd, ["max": "\(Self.maximumQueueEntries)", "count": "\(uris.count)"])))
            }
        case .speed(let value):
            guard PlaybackTempo.validSpeed(value) != nil else {
                return .failure(.invalid(PlayerError.speedRange(value)))
            }
        case .pitch(let value):
            guard PlaybackTempo.validPitch(value) != nil else {
                return .failure(.invalid(PlayerError.pitchRange(value)))
            }
        case .cue(let uri), .uncue(let uri):
            guard !uri.isEmpty, uri.utf8.count <= 4_096 else { return .failure(.invalid(UserMessage(.playerSourceLength))) }
        case .play, .pause, .toggle, .stop, .next, .previous, .clear, .shuffle, .repeatMode, .single, .consume, .removeEntry:
            break
        }
        return .success(self)
    }
}

extension StreamFormat {
    /// 48 kHz frames in `seconds`, rounded toward zero and saturating at
    /// `Int`'s limits (NaN is 0): `Int(seconds * 48_000)` traps on a number
    /// out of range, and the seconds may come from the network.
    public static func frames(seconds: Double) -> Int {
        let f = (seconds * Double(sampleRate)).rounded(.towardZero)
        guard !f.isNaN else { return 0 }
        if f >= 9.223_372_036_854_775_807e18 { return .max }
        if f <= -9.223_372_036_854_775_808e18 { return .min }
        return Int(f)
    }
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

/// Why a player command was refused, as the person is told (the message
/// catalogue's `player.*`); `description` is its English text, for logs and MPD.
public enum PlayerError: Error, CustomStringConvertible, Equatable {
    /// The command cannot be done as asked (a position out of the queue, an empty queue, a number out of range).
    case invalid(UserMessage)
    /// The group's player did not take the command in time.
    case busy

    public var message: UserMessage {
        switch self {
        case .invalid(let message): message
        case .busy: UserMessage(.playerBusy)
        }
    }

    public var description: String { message.description }

    static func speedRange(_ value: Double) -> UserMessage {
        UserMessage(.playerSpeedRange, ["low": "\(PlaybackTempo.speedRange.lowerBound)", "high": "\(PlaybackTempo.speedRange.upperBound)", "value": "\(value)"])
    }

    static func pitchRange(_ value: Double) -> UserMessage {
        UserMessage(.playerPitchRange, ["low": "\(Int(PlaybackTempo.pitchRange.lowerBound))", "high": "\(Int(PlaybackTempo.pitchRange.upperBound))",
                                        "value": "\(value)"])
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
