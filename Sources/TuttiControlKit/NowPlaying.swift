import TuttiCore

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

    public init(acceptedAt: Int64, effectiveAt: Int64, state: PlayerState, track: Int, added: [UInt32] = []) {
        self.acceptedAt = acceptedAt; self.effectiveAt = effectiveAt; self.state = state; self.track = track; self.added = added
    }
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

    public init(state: PlayerState, track: Int, entryID: UInt32?, path: String, positionSeconds: Double, durationSeconds: Double?,
                trackCount: Int, shuffle: Bool, repeatMode: RepeatMode, single: SingleMode = .off, consume: Bool = false,
                speed: Double = 1.0, pitchSemitones: Double = 0.0, error: String? = nil, bufferedSeconds: Double? = nil,
                bufferedFraction: Double? = nil) {
        self.state = state; self.track = track; self.entryID = entryID; self.path = path
        self.positionSeconds = positionSeconds; self.durationSeconds = durationSeconds; self.trackCount = trackCount
        self.shuffle = shuffle; self.repeatMode = repeatMode; self.single = single; self.consume = consume
        self.speed = speed; self.pitchSemitones = pitchSemitones; self.error = error
        self.bufferedSeconds = bufferedSeconds; self.bufferedFraction = bufferedFraction
    }
}

/// A group as the surfaces show it: its rooms and what it plays.
public struct GroupStatus: Sendable, Equatable {
    public var id: String
    public var name: String
    /// Rooms in the group (connected or not), sorted.
    public var rooms: [String]
    public var streamID: UInt32
    public var nowPlaying: NowPlaying

    public init(id: String, name: String, rooms: [String], streamID: UInt32, nowPlaying: NowPlaying) {
        self.id = id; self.name = name; self.rooms = rooms; self.streamID = streamID; self.nowPlaying = nowPlaying
    }
}
