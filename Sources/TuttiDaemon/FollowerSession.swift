import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiTimeStretch
import TuttiAuth
import TuttiDiscovery
import TuttiLibrary
import TuttiNet
import TuttiStreams
import TuttiSystem

/// One connected follower, seen from the leader.
// Sendable because the queue, `closed`, `writing` and `writerStarted` are touched only under `queue`, `name` and `version` are in a Mutex and an Atomic, and the rest is immutable.
final class FollowerSession: @unchecked Sendable {
    let connection: TCPConnection
    /// Strong: a session's threads may finish after the leader stopped; it is released when the session is removed.
    let leader: Leader
    let log: Logger
    private let queue = Condition()
    private var queued: [(bytes: [UInt8], at: Int64)] = []
    private var queuedBytes = 0
    private var closed = false
    /// The writer thread is sending a message it took from `queued`: until it
    /// is done, `enqueue` must queue behind it rather than send.
    private var writing = false
    private var writerStarted = false
    /// The room, from the hello: written by the reader thread, read by
    /// control threads and `close` on any thread, hence the Mutex.
    var name: String? {
        get { nameCell.withLock { $0 } }
        set { nameCell.withLock { $0 = newValue } }
    }
    private let nameCell = Mutex<String?>(nil)
    /// The protocol version the follower spoke in its hello (0: a snapclient).
    var version: UInt16 {
        get { versionCell.load(ordering: .acquiring) }
        set { versionCell.store(newValue, ordering: .releasing) }
    }
    private let versionCell = Atomic<UInt16>(0)
    /// The stream this follower is sent (0 until it joined); set under that
    /// stream's backlog lock once its backlog was queued.
    let streamID = Atomic<UInt32>(0)

    /// What the peer speaks: Tutti's protocol, or Snapcast's (a stock snapclient).
    enum Dialect { case tutti, snapcast }
    let dialect: Dialect
    /// Snapcast only: the stream whose chunks go to this client (a
    /// snapclient knows no streams: chunks of the one it left are dropped here).
    let snapcastStream = Atomic<UInt32>(0)
    /// Its places on the speaker port, given back when it is removed.
    let ticket: ConnectionBudget.Ticket?
    let connectedAt = Monotonic.now()
    /// The speaker proved the room key in its handshake.
    let provedRoomKey = Atomic<Bool>(false)

    init(connection: TCPConnection, leader: Leader, log: Logger, dialect: Dialect = .tutti, ticket: ConnectionBudget.Ticket? = nil) {
        self.connection = connection
        self.leader = leader
        self.log = log
        self.dialect = dialect
        self.ticket = ticket
    }

    func start() {
        // Before the reader's first reply: every send is bounded in time.
        connection.setSendTimeout(milliseconds: 2_000)
        // A bounded kernel buffer, so a stalled follower shows up in our queue.
        connection.setSendBuffer(bytes: 128 * 1024)
        do {
            try startThread(name: "tutti-session-r") { [self] in
                switch dialect {
                case .tutti: readLoop()
                case .snapcast: snapcastReadLoop()
                }
            }
        } catch {
            close(reason: "\(error)") // the system refused a thread: this speaker is refused, the leader goes on
        }
    }

    // MARK: Admission

    /// By when the peer must have finished its handshake and joined (hello,
    /// and the room key where one is set), else it is closed: 10 s, or 2 s
    /// on a place lent beyond the port's limit to a speaker that is to prove
    /// the room key. The pairing handshake may need its own.
    var handshakeDeadline: Int64 {
        let seconds: Int64 = ticket?.place == .provisional ? 2 : 10
        return connectedAt + seconds * nanosecondsPerSecond
    }

    /// Whether this speaker may act on the leader (room commands, a
    /// snapclient's mixer): with a room key, only a speaker that proved it,
    /// or a snapclient when the operator let them in unkeyed
    /// (`--snapcast-unkeyed`); without one (an open system), any.
    /// The one place that decides it: pairing extends it.
    var mayCommand: Bool {
        guard leader.configuration.roomKey != nil else { return true }
        switch dialect {
        case .tutti: return provedRoomKey.load(ordering: .acquiring)
        case .snapcast: return leader.configuration.snapcastWithoutKey
        }
    }

    /// A room command from this speaker: to the leader's desk, which does
    /// it in turn with the others (never on a thread of its own).
    func receiveRoomCommand(_ command: ButtonCommand) {
        guard let room = name else { return }
        guard mayCommand else {
            log.debug("room \(room) from \(connection.peer): ignored \(command), it has not proved the room key")
            return
        }
        leader.roomCommands.submit(command, from: ObjectIdentifier(self), room: room)
    }

    /// Sends a message of the leader's (`encoded` is its Tutti form, shared by every session).
    func send(_ message: Message, encoded: [UInt8]) { send(CollectionOfOne(message), joined: encoded) }

    /// Sends messages in one write (`joined`: their Tutti forms, one after the other).
    func send<Messages: Sequence<Message>>(_ messages: Messages, joined: [UInt8]) {
        switch dialect {
        case .tutti: enqueue(joined)
        case .snapcast:
            // A snapclient knows only some messages: the others are dropped here.
            let bytes = messages.reduce(into: [UInt8]()) { $0 += snapcastForm(of: $1) ?? [] }
            if !bytes.isEmpty { enqueue(bytes) }
        }
    }

    /// Queues bytes for this follower without ever blocking the caller; a
    /// follower that falls too far behind is disconnected.
    private func enqueue(_ bytes: [UInt8]) {
        var bytes = bytes
        queue.lock()
        if closed { queue.unlock(); return }
        if queued.isEmpty && !writing {
            // Nearly always the socket has room: the message goes from the
            // caller's thread without waking the writer (a wake-up per room
            // per chunk was most of the leader's cost per room).
            do {
                switch try connection.sendIfFree(bytes) {
                case .sent: queue.unlock(); return
                case .started: bytes = [] // the connection keeps the rest; the writer's next send finishes it
                case .notSent: break
                }
            } catch {
                queue.unlock()
                close(reason: "\(error)")
                return
            }
        }
        let now = Monotonic.now()
        let waited = queued.first.map { now - $0.at } ?? 0
        if queuedBytes + bytes.count > leader.configuration.maximumQueuedBytes
            || waited > Int64(leader.configuration.maximumQueueDelayMilliseconds) * nanosecondsPerMillisecond {
            let reason = "too slow: \(queuedBytes) bytes waiting to be sent, oldest for \(waited / nanosecondsPerMillisecond) ms"
            queue.unlock()
            close(reason: reason)
            return
        }
        queued.append((bytes, now))
        queuedBytes += bytes.count
        // The writer starts with the first message that has to wait: a
        // connection that never says hello costs one thread, not two.
        let start = !writerStarted
        writerStarted = true
        queue.signal()
        queue.unlock()
        if start {
            do { try startThread(name: "tutti-session-w", stackSize: 256 << 10) { [self] in writeLoop() } } catch {
                close(reason: "\(error)")
            }
        }
    }

    func close(reason: String) {
        queue.lock()
        let wasOpen = !closed
        closed = true
        queued.removeAll()
        queuedBytes = 0
        queue.broadcast()
        queue.unlock()
        guard wasOpen else { return }
        log.info("follower \(name ?? connection.peer) disconnected: \(reason)")
        leader.remove(self)
        // The goodbye goes only if the socket takes it at once: waiting on a
        // peer that stopped reading is never done on the caller's thread,
        // nor on a thread per closing connection (a peer that connects and
        // closes in a loop would make them). A snapclient knows no goodbye.
        if dialect == .tutti { _ = try? connection.sendIfFree(Message.bye(reason: reason).encoded()) }
        connection.close()
    }

    private func writeLoop() {
        while true {
            queue.lock()
            while queued.isEmpty && !closed { queue.wait() }
            if closed { queue.unlock(); return }
            let bytes = queued.removeFirst().bytes
            queuedBytes -= bytes.count
            writing = true
            queue.unlock()
            do { try connection.send(bytes) } catch {
                close(reason: "\(error)")
                return
            }
            queue.lock()
            writing = false
            queue.unlock()
        }
    }

    /// The room-key exchange: our nonce, the speaker's proof, ours. False: refused (and closed).
    private func checkRoomKey(_ key: RoomKey, reader: MessageReader, room: String) throws -> Bool {
        let nonce = RoomKey.nonce()
        try connection.send(Message.authChallenge(nonce: nonce).encoded())
        switch try reader.next() {
        case .authResponse(let theirs, let proof)?:
            guard theirs != nonce, key.verify(proof, .follower, leaderNonce: nonce, followerNonce: theirs, room: room) else {
                try? connection.send(Message.reject(version: WireProtocol.version, reason: "wrong room key").encoded())
                close(reason: "refused '\(room)' from \(connection.peer): wrong room key")
                return false
            }
            try connection.send(Message.authProof(proof: key.proof(.leader, leaderNonce: nonce, followerNonce: theirs, room: room)).encoded())
            return true
        case .bye(let reason)?:
            close(reason: "refused '\(room)' from \(connection.peer): \(reason)")
            return false
        default:
            close(reason: "refused '\(room)' from \(connection.peer): it did not answer the room-key challenge")
            return false
        }
    }

    private func readLoop() {
        let reader = MessageReader(connection: connection)
        connection.setReceiveTimeout(milliseconds: 5_000)
        do {
            guard case .hello(let version, let peerName)? = try reader.next() else {
                close(reason: "did not start with hello"); return
            }
            guard (WireProtocol.oldestFollowerVersion...WireProtocol.version).contains(version) else {
                let reason = "protocol version mismatch: follower speaks v\(version), leader speaks v\(WireProtocol.version)"
                try? connection.send(Message.reject(version: WireProtocol.version, reason: reason).encoded())
                close(reason: reason)
                return
            }
            if let key = leader.configuration.roomKey {
                guard version >= WireProtocol.authVersion else {
                    let reason = "this leader needs a room key, and the speaker (protocol v\(version)) cannot prove one: update it and set its room-key"
                    try? connection.send(Message.reject(version: WireProtocol.version, reason: reason).encoded())
                    close(reason: "refused '\(peerName)': \(reason)")
                    return
                }
                guard try checkRoomKey(key, reader: reader, room: peerName) else { return }
                provedRoomKey.store(true, ordering: .releasing)
            }
            name = peerName.isEmpty ? connection.peer : peerName
            self.version = version
            leader.admitDuringParty(name!)
            leader.applyKeptGroupSound(toJoining: name!)
            let stream = leader.stream(forRoom: name!)
            try connection.send(Message.welcome(version: WireProtocol.version, stream: leader.describe(stream)).encoded())
            log.info("follower \(name!) joined from \(connection.peer)")
            try connection.send(Message.settings(leader.settings(of: name!)).encoded())
            if version >= WireProtocol.equalizerVersion {
                // Always, flat too: a speaker keeps its last EQ across reconnects.
                try connection.send(Message.equalizer(leader.equalizer(of: name!).settings).encoded())
            } else if !leader.equalizer(of: name!).settings.isFlat {
                log.warning("room \(name!) speaks protocol v\(version): its EQ is kept but not heard until its tutti is updated")
            }
            leader.join(self, stream: stream)
            connection.setReceiveTimeout(milliseconds: 30_000)
            while let (message, arrival) = try reader.nextTimed() {
                switch message {
                case .timeRequest(let id, let t1):
                    let t2 = LeaderTime(nanoseconds: arrival ?? Monotonic.now())
                    // t3 is stamped under the send lock, right before the write.
                    try connection.send {
                        Message.timeResponse(id: id, t1: t1, t2: t2, t3: LeaderTime(nanoseconds: Monotonic.now())).encoded()
                    }
                case .health(let report):
                    leader.record(health: report, from: name!)
                case .syncReport(let report) where version >= WireProtocol.clockChannelVersion:
                    leader.record(sync: report, from: name!)
                case .roomCommand(let command):
                    receiveRoomCommand(command)
                case .bye(let reason):
                    close(reason: "follower said bye: \(reason)")
                    return
                default:
                    close(reason: "unexpected \(message.type) message from a follower")
                    return
                }
            }
            close(reason: "connection closed")
        } catch {
            close(reason: "\(error)")
        }
    }
}
