/// Which frames of a stream are which queue entry's: what was sent (on the
/// leader's 48 kHz grid) and what is decoded but not sent yet. Pure: the
/// leader's source thread keeps one, `Transport` reads and cuts it.
public struct StreamTimeline: Sendable, Equatable {
    /// Sent, on the grid, oldest first; trimmed to what rooms may still hear.
    public var sent: [StreamSegment] = []
    /// Decoded, not sent: each `start` is given when it is sent.
    public var pending: [StreamSegment] = []
    /// Grid index of the next frame to send.
    public var streamFrame = 0
    /// The entry being decoded, and the track frame decoding has reached.
    public var decoding = TrackPosition(track: 0, frame: 0)

    public init() {}

    /// Where in which track the stream is at grid frame `frame`.
    public func position(atFrame frame: Int) -> TrackPosition {
        if let s = sent.last(where: { $0.start <= frame }), frame < s.start + s.count {
            return TrackPosition(track: s.track, frame: s.trackFrame(at: frame))
        }
        if frame >= streamFrame {
            if var p = pending.first {
                p.start = streamFrame
                return TrackPosition(track: p.track, frame: p.trackFrame(at: frame))
            }
            return decoding
        }
        if let s = sent.last { return TrackPosition(track: s.track, frame: s.trackFrame(at: s.start + s.count)) }
        return decoding
    }

    /// Cuts the stream at grid frame `frame`: what was sent from there on
    /// and everything pending is forgotten. True when sent audio was cut
    /// (the rooms hold it and must drop it).
    public mutating func cut(at frame: Int) -> Bool {
        pending.removeAll()
        guard frame < streamFrame else { return false }
        sent.removeAll { $0.start >= frame }
        if let i = sent.indices.last, sent[i].start + sent[i].count > frame {
            sent[i].count = frame - sent[i].start
        }
        return true
    }

    /// `count` frames go out from `streamFrame`: what they are moves from
    /// `pending` into `sent`, on the grid.
    public mutating func send(_ count: Int) {
        var remaining = count
        var at = streamFrame
        while remaining > 0, !pending.isEmpty {
            var s = pending[0]
            let take = min(remaining, s.count)
            sent.append(s.take(take, at: at))
            if s.count == 0 { pending.removeFirst() } else { pending[0] = s }
            remaining -= take; at += take
        }
        streamFrame += count
    }

    /// Forgets sent segments that end before grid frame `frame`, in batches
    /// of more than 64 (each trim copies what is kept).
    public mutating func forget(before frame: Int) {
        if let firstKept = sent.firstIndex(where: { $0.start + $0.count > frame }), firstKept > 64 {
            sent.removeFirst(firstKept)
        }
    }

    /// Every segment still to be heard from grid frame `at` on, sent or
    /// pending, the pending ones placed where they will go out.
    public func upcoming(from at: Int) -> [StreamSegment] {
        var out = sent.filter { $0.start + $0.count > at }
        var start = streamFrame
        for var s in pending {
            s.start = start
            start += s.count
            out.append(s)
        }
        return out
    }
}
