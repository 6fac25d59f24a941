/// What one Sendspin player is sent of its group's audio, and when, so that
/// the audio it holds never exceeds its `buffer_capacity`: the spec's hard
/// per-player cap on "compressed audio messages in the buffer that are yet
/// to be played" (player@v1; "servers MUST NOT send data that would cause a
/// player's queued compressed audio to exceed this limit").
///
/// An audio message counts, in bytes as sent (header and payload), from
/// when it is released to the writer until its last sample has played by
/// the server's clock (its `end`) and `releaseGuard` more, as aiosendspin's
/// server counts it to the end of the chunk; the guard covers a player that
/// plays up to the spec's ±1 ms after the server's time. Messages that do
/// not fit are held, in order, and released as those sent before them
/// finish playing (`nextRelease` says when). A held chunk whose start has
/// passed is dropped: the player could not play it (the spec has players
/// drop late chunks), and it would take room until its end. Markers (no
/// bytes: an in-place `stream/start`, `stream/end`) keep their place in
/// the order; one that empties the player (`stream/end`) ends the count.
///
/// Bounded: it holds no more than `maximumEntries` messages and has at
/// most that many counted; the shell sets it from the leader's own buffer
/// ahead, which is all the group's source ever produces ahead, so the
/// bound binds only if something is wrong. Where the player's capacity is
/// larger than the audio the leader sends ahead, nothing is held and every
/// chunk goes as it comes.
///
/// Pure: no I/O, time injected (ns on the server's clock, the clock of the
/// leader's PTS). Not thread-safe: its player calls it under its own lock.
public struct SendspinSendWindow<Item: Sendable>: Sendable {
    public struct Limits: Sendable, Equatable {
        /// The player's `buffer_capacity` (bytes).
        public var capacity: Int
        /// Messages held, and messages counted, at most each.
        public var maximumEntries: Int
        /// How long after its end a sent chunk still counts (ns).
        public var releaseGuard: Int64

        public init(capacity: Int, maximumEntries: Int, releaseGuard: Int64 = SendspinSendWindow.defaultReleaseGuard) {
            precondition(capacity > 0 && maximumEntries > 0 && releaseGuard >= 0)
            self.capacity = capacity
            self.maximumEntries = maximumEntries
            self.releaseGuard = releaseGuard
        }

        /// For a leader that sends chunks of `chunkNanoseconds` at most
        /// `bufferAheadNanoseconds` ahead of their time: room for all of them
        /// and a quarter more, and four (a player with room was seen holding
        /// 52 of 20 ms a second ahead: the one playing, the one just ended, 50 ahead).
        public init(capacity: Int, bufferAheadNanoseconds: Int64, chunkNanoseconds: Int64) {
            precondition(chunkNanoseconds > 0)
            let chunks = Int((bufferAheadNanoseconds + chunkNanoseconds - 1) / chunkNanoseconds)
            self.init(capacity: capacity, maximumEntries: max(1, chunks) * 5 / 4 + 4)
        }
    }

    /// The spec's accuracy floor: a player may play this much after the server's time for a sample.
    public static var defaultReleaseGuard: Int64 { 1_000_000 }

    private enum Kind: Sendable {
        case audio(start: Int64, end: Int64, bytes: Int)
        case marker(emptiesPlayer: Bool)
    }

    private struct Entry: Sendable {
        var kind: Kind
        var item: Item
    }

    private struct Counted: Sendable {
        var start: Int64
        var end: Int64
        var bytes: Int
        var item: Item
    }

    public let limits: Limits
    /// Released chunks the player still holds, by their end (in the order sent, where ends come in order).
    private var counted: [Counted] = []
    /// Messages not yet released, in order.
    private var held: [Entry] = []
    /// Bytes of `counted`: what the player holds now, by the server's clock.
    public private(set) var countedBytes = 0
    /// Held chunks dropped because their start passed before they fitted.
    public private(set) var droppedLate = 0
    /// Held chunks dropped because `maximumEntries` were held.
    public private(set) var droppedOverflow = 0
    /// Chunks dropped because they are larger than the capacity (they could never be sent).
    public private(set) var droppedOversize = 0
    /// The most bytes counted at once, since the start.
    public private(set) var peakBytes = 0

    public init(limits: Limits) { self.limits = limits }

    /// Messages waiting for room.
    public var heldCount: Int { held.count }
    /// Bytes of the chunks waiting for room.
    public var heldBytes: Int {
        held.reduce(0) { sum, e in if case .audio(_, _, let b) = e.kind { sum + b } else { sum } }
    }
    /// Chunks counted as held by the player.
    public var countedCount: Int { counted.count }

    /// A chunk of `bytes` that plays from `start` to `end`: what to send now (it, and any held before it, as they fit).
    public mutating func offer(_ item: Item, start: Int64, end: Int64, bytes: Int, now: Int64) -> [Item] {
        precondition(end >= start && bytes >= 0)
        guard bytes <= limits.capacity else {
            droppedOversize += 1
            return release(now: now)
        }
        if held.count >= limits.maximumEntries {
            held.removeFirst()
            droppedOverflow += 1
        }
        held.append(Entry(kind: .audio(start: start, end: end, bytes: bytes), item: item))
        return release(now: now)
    }

    /// A message of no audio that keeps its place in the order; one that
    /// `emptiesPlayer` (`stream/end`) ends the count when it is released.
    public mutating func mark(_ item: Item, emptiesPlayer: Bool, now: Int64) -> [Item] {
        if held.count >= limits.maximumEntries, let i = held.firstIndex(where: { if case .audio = $0.kind { true } else { false } }) {
            held.remove(at: i)
            droppedOverflow += 1
        }
        held.append(Entry(kind: .marker(emptiesPlayer: emptiesPlayer), item: item))
        return release(now: now)
    }

    /// What may go now: chunks that finished playing stop counting, and held
    /// messages go in order while they fit.
    public mutating func release(now: Int64) -> [Item] {
        forgetPlayed(now: now)
        var out: [Item] = []
        while let first = held.first {
            switch first.kind {
            case .marker(let empties):
                held.removeFirst()
                if empties { counted.removeAll(); countedBytes = 0 }
                out.append(first.item)
            case .audio(let start, let end, let bytes):
                if start <= now {
                    held.removeFirst()
                    droppedLate += 1
                    continue
                }
                guard countedBytes + bytes <= limits.capacity, counted.count < limits.maximumEntries else { return out }
                held.removeFirst()
                // By end: a chunk out of order (one an encoder held across a cut) must not keep those that end before it counted.
                let at = counted.lastIndex { $0.end <= end }.map { $0 + 1 } ?? 0
                counted.insert(Counted(start: start, end: end, bytes: bytes, item: first.item), at: at)
                countedBytes += bytes
                peakBytes = max(peakBytes, countedBytes)
                out.append(first.item)
            }
        }
        return out
    }

    /// When `release` will next send something (ns): when enough of what
    /// was sent has played for the first held chunk to fit; in the past when
    /// it fits already (`release` was not called since); nil while nothing is held.
    public var nextRelease: Int64? {
        guard let first = held.first else { return nil }
        guard case .audio(_, _, let bytes) = first.kind else { return nil } // a marker goes at once: never left first
        var freedBytes = 0
        var freedCount = 0
        var at = Int64.min // fits already: due at once
        for c in counted {
            if countedBytes - freedBytes + bytes <= limits.capacity && counted.count - freedCount < limits.maximumEntries { break }
            freedBytes += c.bytes
            freedCount += 1
            at = max(at, c.end + limits.releaseGuard)
        }
        return at
    }

    /// The player was told `stream/clear` now, for a cut at `cut`: it holds
    /// nothing any more. What it had been sent that plays after now and
    /// before the cut goes again, then what was held before the cut;
    /// chunks from the cut on are dropped. Returns what to send after the clear.
    public mutating func clear(cut: Int64, now: Int64) -> [Item] {
        var again: [Entry] = counted.filter { $0.start > now && $0.start < cut }.sorted { $0.start < $1.start }
            .map { Entry(kind: .audio(start: $0.start, end: $0.end, bytes: $0.bytes), item: $0.item) }
        for e in held {
            if case .audio(let start, _, _) = e.kind, start >= cut { continue }
            again.append(e)
        }
        counted.removeAll()
        countedBytes = 0
        held = Array(again.suffix(limits.maximumEntries))
        droppedOverflow += again.count - held.count
        return release(now: now)
    }

    /// Forgets everything: the player's stream ended without a marker (it closed, or starts afresh).
    public mutating func reset() {
        counted.removeAll()
        held.removeAll()
        countedBytes = 0
    }

    private mutating func forgetPlayed(now: Int64) {
        var n = 0
        while n < counted.count, counted[n].end + limits.releaseGuard <= now {
            countedBytes -= counted[n].bytes
            n += 1
        }
        if n > 0 { counted.removeFirst(n) }
    }
}

/// Why a player cannot be served in any format it offered.
public enum SendspinFormatRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    /// None of its formats is one the server sends (48 kHz stereo PCM or FLAC of 16 or 24 bits, Opus where the leader encodes it).
    case noFormat
    /// Its `buffer_capacity` cannot hold two of the largest chunks of any format it offered that the server sends:
    /// `least` bytes for the one that needs least.
    case bufferTooSmall(capacity: Int, least: Int, format: SendspinAudioFormat)

    public var description: String {
        switch self {
        case .noFormat:
            "none of its formats is one Tutti sends (48 kHz stereo PCM or FLAC of 16 or 24 bits, or Opus from an Opus leader)"
        case .bufferTooSmall(let capacity, let least, let format):
            "its buffer_capacity of \(capacity) bytes cannot hold two chunks of \(format.codec.rawValue) \(format.bitDepth)-bit " +
            "(\(least) bytes are needed: one chunk playing while the next arrives), so it could not play without gaps"
        }
    }
}

extension Sendspin {
    /// The most bytes one audio message can take in `format` for a chunk of
    /// `frames` frames, with the 13-byte header: PCM exactly; FLAC as
    /// libFLAC's verbatim fallback (the samples as they are, a frame header
    /// of at most 16 bytes, a subframe header a channel, the CRC, rounded
    /// up); Opus as RFC 6716's largest frame (1,275 bytes).
    public static func largestChunkBytes(_ format: SendspinAudioFormat, frames: Int) -> Int {
        let header = 13
        let pcm = frames * format.channels * ((format.bitDepth + 7) / 8)
        switch format.codec {
        case .pcm: return header + pcm
        case .flac: return header + pcm + 64
        case .opus: return header + 1_275
        }
    }

    /// The least `buffer_capacity` a player needs in `format`: two of the
    /// largest chunks. With less, a chunk could go only once the one before
    /// it had finished playing, that is after its own start: nothing would play on time.
    public static func leastBufferCapacity(_ format: SendspinAudioFormat, frames: Int) -> Int {
        2 * largestChunkBytes(format, frames: frames)
    }

    /// The first of `offered` (preferred first) the server sends and whose
    /// chunks (of `frames` frames) fit `capacity` as `leastBufferCapacity` says.
    public static func chooseFormat(offered: [SendspinAudioFormat], opusAvailable: Bool, capacity: Int,
                                    frames: Int) -> Result<SendspinAudioFormat, SendspinFormatRefusal> {
        let served = offered.filter { chooseFormat(offered: [$0], opusAvailable: opusAvailable) != nil }
        if let fits = served.first(where: { leastBufferCapacity($0, frames: frames) <= capacity }) { return .success(fits) }
        guard let smallest = served.min(by: { leastBufferCapacity($0, frames: frames) < leastBufferCapacity($1, frames: frames) }) else {
            return .failure(.noFormat)
        }
        return .failure(.bufferTooSmall(capacity: capacity, least: leastBufferCapacity(smallest, frames: frames), format: smallest))
    }
}
