/// When a group's source thread sends its next chunk: `buffer` ahead of the
/// chunk's PTS, two chunks a wake-up (the second a chunk early) while the
/// source keeps up; while a network source starves, silence as it falls due
/// (a start latency ahead of its PTS), one chunk at a time, so the rooms keep
/// time on what they hold. Pure: the source thread (`StreamPlayer.run`) gives
/// it the moment and what it holds, and does what it returns.
public struct SourcePacing: Sendable, Equatable {
    /// How far ahead of its PTS a chunk is sent (the rooms' buffer), ns.
    public let buffer: Int64
    /// How far ahead of its PTS silence goes out while the source starves, ns.
    public let startLatency: Int64
    public let framesPerChunk: Int
    /// The longest wait before the thread looks again (commands wake it
    /// sooner): pacing, and while the source starves (it may have caught up).
    public let longestWait: Int64, longestStarvedWait: Int64

    public init(buffer: Int64, startLatency: Int64, framesPerChunk: Int,
                longestWait: Int64 = 100 * nanosecondsPerMillisecond, longestStarvedWait: Int64 = 20 * nanosecondsPerMillisecond) {
        self.buffer = buffer; self.startLatency = startLatency; self.framesPerChunk = framesPerChunk
        self.longestWait = longestWait; self.longestStarvedWait = longestStarvedWait
    }

    public enum Action: Equatable, Sendable {
        /// The list is done and everything sent: send the stream's end.
        case finish
        /// Add this many frames of silence to what is pending (marked as the
        /// starved phase: now playing reads loading/buffering).
        case appendSilence(frames: Int)
        /// Sleep this long (ns), or until a command; then ask again.
        case wait(Int64)
        /// Encode and send this many chunks now, in one write per room.
        case send(chunks: Int)
    }

    /// What the source thread does at `now` (monotonic ns), holding
    /// `pendingFrames` decoded frames whose first goes out at `nextPTS` (leader ns).
    /// `starved`: a network source is late; `endOfList`: nothing more will be decoded.
    public func next(now: Int64, nextPTS: Int64, pendingFrames: Int, starved: Bool, endOfList: Bool) -> [Action] {
        if pendingFrames == 0 && endOfList { return [.finish] }
        var actions: [Action] = []
        var pending = pendingFrames
        if starved && pending < framesPerChunk {
            // Followers play from their buffer until this chunk is due; then silence goes out so they keep time.
            let due = nextPTS - startLatency
            if due > now { return [.wait(min(due - now, longestStarvedWait))] }
            actions.append(.appendSilence(frames: framesPerChunk - pending))
            pending = framesPerChunk
        }
        let sendAt = nextPTS - buffer
        if sendAt > now { return actions + [.wait(min(sendAt - now, longestWait))] }
        // The second chunk goes a chunk early (the buffer is a second), so the
        // thread and every room wake 25 times a second, not 50. Not while the
        // source starves: then silence is made only as it falls due.
        let chunks = !starved && pending >= 2 * framesPerChunk ? 2 : 1
        return actions + [.send(chunks: chunks)]
    }
}
