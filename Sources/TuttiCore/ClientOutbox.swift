/// What waits to be written to one control client (a JSON-RPC socket, an
/// MPD client, a web page's WebSocket), so that the thread that produced a
/// message never waits for the client to read it.
///
/// Bounded: a client that does not keep up is disconnected rather than
/// allowed to grow the leader's memory or hold up anyone else. State
/// notifications carry a `key` (the notification's method): a new one
/// replaces the one of the same key still waiting, so a slow client gets
/// the latest state, not a backlog. The replaced message is removed and
/// the new one goes to the tail, after every reply queued before it, so a
/// client never reads a reply that is newer than the last state it saw.
///
/// Pure: no I/O, no clock; the writer that owns it does the writing.
public struct ClientOutbox: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Bytes that may wait. One message larger than this is still
        /// admitted into an empty outbox (a large reply to a client that
        /// keeps up), never behind others.
        public var maximumBytes: Int
        /// Messages that may wait.
        public var maximumMessages: Int
        /// How long the client may go without catching up (nothing waiting,
        /// nothing being written) while more is offered; nil: no limit. A
        /// client that stopped reading never catches up, even while its
        /// kernel trickles a few bytes into a full receive buffer.
        public var maximumBusyNanoseconds: Int64?
        /// How long the oldest waiting message may have waited; nil: no
        /// limit. For audio: a speaker that falls this far behind could no
        /// longer play what waits in time, though it may keep reading.
        public var maximumAgeNanoseconds: Int64?
        public init(maximumBytes: Int = 4 << 20, maximumMessages: Int = 1_024, maximumBusyNanoseconds: Int64? = nil,
                    maximumAgeNanoseconds: Int64? = nil) {
            self.maximumBytes = maximumBytes
            self.maximumMessages = maximumMessages
            self.maximumBusyNanoseconds = maximumBusyNanoseconds
            self.maximumAgeNanoseconds = maximumAgeNanoseconds
        }
    }

    public enum Admission: Equatable, Sendable {
        /// Queued at the tail.
        case queued
        /// Queued at the tail; the waiting message with the same key was dropped.
        case replaced
        /// Not queued: the client is too far behind. The reason says by how much.
        case overflow(reason: String)
        /// Not queued: the client has not caught up for longer than the limit.
        case stalled(reason: String)
        /// Not queued: the outbox was closed.
        case closed
    }

    private struct Entry: Sendable {
        var bytes: [UInt8]
        var key: String?
        var at: Int64 = 0
    }

    public let limits: Limits
    private var entries: [Entry] = []
    private var head = 0
    public private(set) var queuedBytes = 0
    public private(set) var isClosed = false
    /// Notifications replaced by newer ones (coalesced), since the start.
    public private(set) var coalesced = 0
    /// The writer holds a message it took and has not finished writing.
    public private(set) var writing = false
    /// Since when (injected time, ns) something has been waiting or being written, nil while caught up.
    public private(set) var busySince: Int64?

    public init(limits: Limits = Limits()) { self.limits = limits }

    public var count: Int { entries.count - head }
    public var isEmpty: Bool { count == 0 }

    /// Offers a message; `key` marks it as a state notification that a
    /// newer one of the same key supersedes.
    public mutating func enqueue(_ bytes: [UInt8], key: String? = nil, at now: Int64 = 0) -> Admission {
        guard !isClosed else { return .closed }
        if let since = busySince, let limit = limits.maximumBusyNanoseconds, now - since > limit {
            return .stalled(reason: "did not read for \((now - since) / 1_000_000_000) s (\(count) messages, \(queuedBytes) bytes waiting)")
        }
        if let limit = limits.maximumAgeNanoseconds, head < entries.count, now - entries[head].at > limit {
            let waited = now - entries[head].at
            return .stalled(reason: "too slow: \(queuedBytes) bytes waiting to be sent, oldest for \(waited / 1_000_000) ms")
        }
        if isEmpty && !writing { busySince = now }
        var replaced = false
        if let key, let i = entries[head...].firstIndex(where: { $0.key == key }) {
            queuedBytes -= entries[i].bytes.count
            entries.remove(at: i)
            coalesced += 1
            replaced = true
        }
        if !isEmpty && (queuedBytes + bytes.count > limits.maximumBytes || count + 1 > limits.maximumMessages) {
            return .overflow(reason: "\(count) messages (\(queuedBytes) bytes) still waiting to be read, limit \(limits.maximumMessages) messages or \(limits.maximumBytes) bytes")
        }
        entries.append(Entry(bytes: bytes, key: key, at: now))
        queuedBytes += bytes.count
        return replaced ? .replaced : .queued
    }

    /// Takes the oldest message, for the writer; call `finishedWriting` once it is written.
    public mutating func next() -> [UInt8]? {
        guard head < entries.count else { return nil }
        writing = true
        let bytes = entries[head].bytes
        entries[head].bytes = []
        head += 1
        queuedBytes -= bytes.count
        // Compact once the consumed prefix dominates, so the array stays small.
        if head >= 64 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
        if head == entries.count { entries.removeAll(keepingCapacity: true); head = 0 }
        return bytes
    }

    /// The message taken last is written; with nothing else waiting, the client has caught up.
    public mutating func finishedWriting() {
        writing = false
        if isEmpty { busySince = nil }
    }

    /// Drops everything waiting, and lets later messages in again (a
    /// speaker's goodbye: the audio that waits will not be played).
    public mutating func dropWaiting() {
        entries.removeAll()
        head = 0
        queuedBytes = 0
        if !writing { busySince = nil }
    }

    /// Drops everything waiting; later messages are refused.
    public mutating func close() {
        isClosed = true
        entries.removeAll()
        head = 0
        queuedBytes = 0
    }
}
