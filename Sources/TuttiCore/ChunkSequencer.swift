/// Orders received chunks for decoding: drops duplicates and chunks that
/// arrive too late to play, holds chunks that arrive ahead of a missing one
/// briefly, then declares the missing ones lost so the decoder conceals
/// them. Works on sequence numbers; time only bounds how long it waits.
public struct ChunkSequencer: Sendable {
    public enum Event: Equatable, Sendable {
        /// Decode this chunk next.
        case decode(Chunk)
        /// `count` chunks starting at `sequence` were lost: conceal them.
        case conceal(sequence: UInt64, count: Int)
    }

    public struct Statistics: Equatable, Sendable {
        public var duplicates = 0
        public var late = 0
        public var concealed = 0
        public var reordered = 0
        public init() {}
    }

    /// Chunks ahead of a gap wait at most this many chunks before the gap is
    /// given up on.
    public let maximumHeld: Int
    /// The most chunks a single gap may conceal; a larger jump (the leader
    /// restarted or skipped) just restarts the sequence.
    public let maximumConcealed: Int

    private var expected: UInt64?
    private var held: [UInt64: Chunk] = [:]
    public private(set) var statistics = Statistics()

    public init(maximumHeld: Int = 8, maximumConcealed: Int = 25) {
        self.maximumHeld = maximumHeld
        self.maximumConcealed = maximumConcealed
    }

    public var nextExpected: UInt64? { expected }

    public mutating func reset() {
        expected = nil
        held.removeAll()
    }

    /// Offers a received chunk; returns what to decode, in order.
    public mutating func offer(_ chunk: Chunk) -> [Event] {
        guard let next = expected else {
            expected = chunk.sequence &+ 1
            return [.decode(chunk)]
        }
        if chunk.sequence < next || held[chunk.sequence] != nil {
            // Already decoded or already waiting: a duplicate or too late.
            if chunk.sequence < next && next - chunk.sequence > UInt64(maximumHeld) { statistics.late += 1 } else { statistics.duplicates += 1 }
            return []
        }
        if chunk.sequence == next {
            var events: [Event] = [.decode(chunk)]
            expected = next &+ 1 // sequences come off the wire: UInt64.max must not trap
            events += releaseHeld()
            return events
        }
        if chunk.sequence - next > UInt64(maximumConcealed) {
            // Too far ahead to be a gap: the stream jumped. Start again here.
            held.removeAll()
            expected = chunk.sequence &+ 1
            return [.decode(chunk)]
        }
        statistics.reordered += 1
        held[chunk.sequence] = chunk
        if held.count > maximumHeld { return giveUpOnGap() }
        return []
    }

    /// Declares the current gap lost (the playout deadline for it passed).
    public mutating func giveUpOnGap() -> [Event] {
        guard let next = expected, let first = held.keys.min() else { return [] }
        let missing = Int(first - next)
        statistics.concealed += missing
        expected = first
        return [.conceal(sequence: next, count: missing)] + releaseHeld()
    }

    private mutating func releaseHeld() -> [Event] {
        var events: [Event] = []
        while let next = expected, let chunk = held.removeValue(forKey: next) {
            events.append(.decode(chunk))
            expected = next &+ 1
        }
        return events
    }
}
