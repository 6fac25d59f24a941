/// A follower's rules for what arrives on its stream, as actions on its
/// timeline and decoder (pure: `Follower` performs them; tests drive it
/// message by message).
///
/// The stream's first chunk places it on the timeline. Chunks of another
/// stream are ignored. Chunks pass through `ChunkSequencer` (order, loss).
/// A flush cuts at a leader time: what was written from there goes, and the
/// decoder starts afresh; until the next stream start nothing is written
/// before the cut, since a fresh decoder's first frames (Opus pre-roll)
/// would overwrite old audio still to be heard. A follow (the room moved to
/// another group) cuts the same way with a fade and switches streams on the
/// same timeline (every group's stream is on the leader's one grid).
public struct StreamIntake: Sendable {
    public enum Action: Equatable, Sendable {
        /// The stream's first chunk: place the stream on the timeline.
        case begin(epoch: LeaderTime, bufferNanoseconds: Int64)
        /// Decode `chunk` and write it, except any frames before `floor`.
        case decode(Chunk, floor: LeaderTime?)
        /// `count` chunks were lost: conceal each (`framesPerChunk` frames) after the last frame written.
        case conceal(count: Int, framesPerChunk: Int)
        /// Fade into `at` (when `fade`) and drop what was written from there; go on writing at `at`.
        case cut(at: LeaderTime, fade: Bool)
        /// The decoder starts afresh (no state from before a cut).
        case resetDecoder
        /// Decode `stream` from now on: with a decoder of its codec when `newCodec`, else the old one reset.
        case follow(StreamDescription, newCodec: Bool)
        /// The leader ended the stream at `at`.
        case end(at: LeaderTime)
    }

    public private(set) var stream: StreamDescription
    public private(set) var started = false
    /// Nothing is written before this (after a cut, until the next stream start).
    public private(set) var floor: LeaderTime?
    private var sequencer: ChunkSequencer

    public init(stream: StreamDescription, sequencer: ChunkSequencer = ChunkSequencer()) {
        self.stream = stream
        self.sequencer = sequencer
    }

    public var statistics: ChunkSequencer.Statistics { sequencer.statistics }

    public mutating func chunk(_ chunk: Chunk) -> [Action] {
        guard chunk.streamID == stream.streamID else { return [] }
        var actions: [Action] = []
        if !started {
            started = true
            floor = nil
            actions.append(.begin(epoch: chunk.pts, bufferNanoseconds: stream.bufferNanoseconds))
        }
        for event in sequencer.offer(chunk) {
            switch event {
            case .decode(let c): actions.append(.decode(c, floor: floor))
            case .conceal(_, let count): actions.append(.conceal(count: count, framesPerChunk: Int(stream.framesPerChunk)))
            }
        }
        return actions
    }

    public mutating func flush(streamID: UInt32, from: LeaderTime, fade: Bool) -> [Action] {
        guard streamID == stream.streamID, started else { return [] }
        sequencer.reset()
        floor = from
        return [.cut(at: from, fade: fade), .resetDecoder]
    }

    public mutating func follow(_ next: StreamDescription, from: LeaderTime) -> [Action] {
        var actions: [Action] = []
        if started {
            floor = from
            actions.append(.cut(at: from, fade: true))
        }
        sequencer.reset()
        actions.append(.follow(next, newCodec: next.codec != stream.codec))
        stream = next
        return actions
    }

    public mutating func streamEnd(streamID: UInt32, at: LeaderTime) -> [Action] {
        guard streamID == stream.streamID, started else { return [] }
        return [.end(at: at)]
    }
}
