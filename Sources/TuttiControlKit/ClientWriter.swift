import TuttiCore
import TuttiAudio
import TuttiNet
import TuttiSystem

/// Writes one control client's messages (JSON-RPC, MPD, WebSocket) on a
/// thread of its own, from a bounded `ClientOutbox`, so that whoever
/// produces a message (a command's reply, a notification fanned out to
/// everyone) never waits for that client to read.
///
/// A client is disconnected, with the reason logged, when its outbox
/// overflows (it asks faster than it reads) or when a write makes no
/// progress for the stall limit (it stopped reading: a phone asleep with
/// its socket open). `write` must give up after about that long; sockets
/// do it with a send timeout.
///
/// Thread contract: `send`, `flush` and `close` may be called from any
/// thread; `send` and `close` never block.
/// The thread starts with the first message that has to wait: a client
/// that reads what it is sent as it comes (its replies, notifications that
/// fit its socket at once: `writeIfFree`), or never speaks at all (hundreds
/// of idle connections), costs no thread for writing.
// Sendable because `outbox`, `reason` and `started` are touched only under `condition`; the rest is immutable.
public final class ClientWriter: @unchecked Sendable {
    public typealias Write = @Sendable ([UInt8]) throws -> Void
    /// Sends without waiting, as far as the socket takes (`TCPConnection.sendIfFree`).
    public typealias WriteIfFree = @Sendable ([UInt8]) throws -> TCPConnection.QuickSend

    public let peer: String
    private let log: Logger
    private let write: Write
    private let writeIfFree: WriteIfFree?
    private let disconnect: @Sendable () -> Void
    private let threads: ThreadGroup?
    private let logsDisconnect: Bool
    private let condition = Condition()
    private var outbox: ClientOutbox
    private var reason: String?
    private var started = false

    /// `write` sends all bytes or throws; `disconnect` wakes the client's
    /// reader so its connection ends (called once, from the thread that
    /// found the fault). `writeIfFree`, where the transport has it, lets a
    /// message to a client that has caught up go on the sender's thread.
    /// `threads`: where the writer thread is started, so its owner can wait
    /// for it; `logsDisconnect` false: the owner logs the reason (`closeReason`).
    public init(peer: String, limits: ClientOutbox.Limits, log: Logger, write: @escaping Write, writeIfFree: WriteIfFree? = nil,
         threads: ThreadGroup? = nil, logsDisconnect: Bool = true, disconnect: @escaping @Sendable () -> Void) {
        self.peer = peer
        self.log = log
        self.write = write
        self.writeIfFree = writeIfFree
        self.threads = threads
        self.logsDisconnect = logsDisconnect
        self.disconnect = disconnect
        outbox = ClientOutbox(limits: limits)
    }

    /// Why the client was closed (nil while open).
    public var closeReason: String? { condition.withLock { reason } }

    /// A writer thread with nothing to write for this long ends; the next
    /// message that has to wait starts one again.
    public static let lingerSeconds = 2.0

    /// Queues a message. `key` marks a state notification: it replaces a
    /// waiting one with the same key.
    public func send(_ bytes: [UInt8], key: String? = nil) {
        condition.lock()
        var bytes = bytes
        if let writeIfFree, reason == nil, outbox.isEmpty, !outbox.writing {
            do {
                switch try writeIfFree(bytes) {
                case .sent: condition.unlock(); return
                case .started: bytes = [] // the connection keeps the rest: the writer's next write finishes it
                case .notSent: break
                }
            } catch {
                condition.unlock()
                close(reason: "\(error)")
                return
            }
        }
        let admission = outbox.enqueue(bytes, key: key, at: Monotonic.now())
        let start = !started && !outbox.isEmpty
        if start { started = true }
        condition.broadcast() // the writer, and any flush or waiting sender
        condition.unlock()
        if start {
            do {
                if let threads {
                    try threads.start(stackSize: 256 << 10) { [self] in run() }
                } else {
                    try startThread(name: "tutti-client-w", stackSize: 256 << 10) { [self] in run() }
                }
            } catch {
                close(reason: "\(error)") // the system refused a thread: this client goes, the leader stays
                return
            }
        }
        switch admission {
        case .overflow(let why): close(reason: "not reading fast enough: \(why)")
        case .stalled(let why): close(reason: why)
        default: break
        }
    }

    /// A reply from the client's own request thread (it has nothing else
    /// to do until the client asks again): written on this thread at once
    /// when nothing waits or is being written and it fits an empty socket
    /// buffer (`directBytes`), else queued as `send` does. A request then
    /// wakes one thread instead of two: on a loaded machine each wake-up of
    /// a niced leader can wait milliseconds for a core. A client that stops
    /// reading makes this write time out as the writer's would (the send
    /// timeout), which disconnects it.
    public func reply(_ bytes: [UInt8]) {
        condition.lock()
        guard reason == nil, bytes.count <= Self.directBytes, outbox.isEmpty, !outbox.writing,
              outbox.enqueue(bytes, at: Monotonic.now()) == .queued, let taken = outbox.next() else {
            condition.unlock()
            send(bytes)
            return
        }
        condition.unlock()
        var failure: String?
        do { try write(taken) } catch { failure = "\(error)" }
        condition.lock()
        outbox.finishedWriting()
        condition.broadcast() // the writer waits while this write holds the socket; flush() waits for it too
        condition.unlock()
        if let failure { close(reason: failure) }
    }

    /// What `reply` writes on the caller's thread: well below any socket's send buffer.
    public static let directBytes = 32 * 1024

    /// Queues a message once fewer than `limit` bytes wait to be written:
    /// for a producer that can wait (a long answer made on the client's own
    /// thread). A client that stops reading is disconnected by the writer's
    /// send timeout, which ends this wait too.
    public func send(_ bytes: [UInt8], waitingBelow limit: Int) {
        condition.lock()
        while outbox.queuedBytes >= limit && reason == nil { condition.wait() }
        condition.unlock()
        send(bytes)
    }

    /// Waits until everything queued so far is written (or the client is gone), at most `timeoutMilliseconds`.
    public func flush(timeoutMilliseconds: Int = 2_000) {
        flush(untilNanoseconds: Condition.deadline(afterSeconds: Double(timeoutMilliseconds) / 1000))
    }

    /// Waits until everything queued so far is written, or the client is
    /// gone, or `deadline` (CLOCK_MONOTONIC ns); true when it all went.
    @discardableResult
    public func flush(untilNanoseconds deadline: Int64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while (!outbox.isEmpty || outbox.writing) && reason == nil {
            if !condition.wait(untilNanoseconds: deadline) { break }
        }
        return outbox.isEmpty && !outbox.writing && reason == nil
    }

    /// A last message: what waits is dropped (a stopping leader's audio
    /// that will never be played) and `bytes` goes after the message being
    /// written, so it arrives whole. `flush(untilNanoseconds:)` bounds the wait.
    public func sendLast(_ bytes: [UInt8]) {
        condition.withLock { outbox.dropWaiting() }
        send(bytes)
    }

    public var isClosed: Bool { condition.withLock { reason != nil } }

    /// Ends the client: drops what waits and disconnects it. The first reason is logged.
    public func close(reason why: String) {
        condition.lock()
        let first = reason == nil
        if first { reason = why }
        outbox.close()
        condition.broadcast()
        condition.unlock()
        guard first else { return }
        if logsDisconnect && why != "connection closed" { log.info("client \(peer) disconnected: \(why)") }
        disconnect()
    }

    private func run() {
        while true {
            condition.lock()
            // `writing` here is a `reply` being written on its own thread: the socket is its until it ends.
            var idle = false
            while (outbox.isEmpty || outbox.writing) && reason == nil && !idle {
                idle = !condition.wait(untilNanoseconds: Condition.deadline(afterSeconds: Self.lingerSeconds)) && outbox.isEmpty && !outbox.writing
            }
            if idle && reason == nil {
                started = false // the next message that has to wait starts a writer again
                condition.unlock()
                return
            }
            guard reason == nil, let bytes = outbox.next() else { condition.unlock(); return }
            condition.unlock()
            var failure: String?
            do { try write(bytes) } catch { failure = "\(error)" }
            condition.lock()
            outbox.finishedWriting()
            condition.broadcast() // flush() waits for an idle writer
            condition.unlock()
            if let failure { close(reason: failure); return }
        }
    }
}
