import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiGestures
import TuttiTimeStretch
import TuttiAuth
import TuttiDiscovery
import TuttiLibrary
import TuttiNet
import TuttiStreams
import TuttiSystem
import TuttiControlKit

/// One connected follower, seen from the leader.
// Sendable because `closed` is touched only under `state`, `saidGoodbye` is an Atomic, `name` and `version` are in a Mutex and an Atomic, the writer is Sendable, and the rest is immutable.
final class FollowerSession: @unchecked Sendable {
    /// The speaker's socket; nil for a room a surface serves (`surfaceRoom`), which owns its own connection.
    let connection: TCPConnection!
    /// Strong: a session's threads may finish after the leader stopped; it is released when the session is removed.
    let leader: Leader
    let log: Logger
    /// What waits to be sent to the speaker, written as the control
    /// clients' messages are (`ClientWriter`, `ClientOutbox`): bounded in
    /// bytes and in how long the oldest waits, beyond which the speaker
    /// could no longer play it in time and is dropped as too slow.
    private let writer: ClientWriter
    private let state = Condition()
    private var closed = false
    /// `sayGoodbye` queued the goodbye: `close` does not send another.
    private let saidGoodbye = Atomic<Bool>(false)
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

    /// What the peer speaks: Tutti's protocol, Snapcast's (a stock snapclient),
    /// or a surface's own (a Sendspin player: `surfaceRoom` gets the leader's messages).
    enum Dialect { case tutti, snapcast, surface }
    let dialect: Dialect
    let surfaceRoom: (any SurfaceRoom)?
    /// v7: the speaker's static key, once its handshake is done (nil before,
    /// and for older speakers on an open leader). Set by the reader thread
    /// before the session joins; read by `Leader.forget` on control threads.
    var speakerKey: [UInt8]? { speakerKeyCell.withLock { $0 } }
    private let speakerKeyCell = Mutex<[UInt8]?>(nil)
    /// The session's clock tag while registered with the clock server (reader thread, then `close`).
    private let clockTag = Mutex<UInt64?>(nil)
    /// Set by the reader thread once the handshake showed this speaker may
    /// command: it completed it as a paired speaker or with the room key, or
    /// the operator chose an open system. Read by `mayCommand`.
    private let authorized = Atomic<Bool>(false)
    /// The speaker waits in `pair` for a person's decision: its handshake
    /// deadline is the request's life, not 10 s.
    private let awaitingPairing = Atomic<Bool>(false)

    /// Whether the peer plays a channel map sent to it: a Tutti speaker of
    /// protocol v8 or later, or a surface's room that plays its room's sound.
    var playsChannelMaps: Bool {
        switch dialect {
        case .tutti: version >= WireProtocol.channelMapVersion
        case .snapcast: false
        case .surface: surfaceRoom?.playsRoomSound == true
        }
    }

    /// Snapcast only: the stream whose chunks go to this client (a
    /// snapclient knows no streams: chunks of the one it left are dropped here).
    let snapcastStream = Atomic<UInt32>(0)
    /// Its places on the speaker port, given back when it is removed.
    let ticket: ConnectionBudget.Ticket?
    let connectedAt = Monotonic.now()

    init(connection: TCPConnection?, leader: Leader, log: Logger, dialect: Dialect = .tutti, ticket: ConnectionBudget.Ticket? = nil,
         surfaceRoom: (any SurfaceRoom)? = nil) {
        self.connection = connection
        self.leader = leader
        self.log = log
        self.dialect = dialect
        self.ticket = ticket
        self.surfaceRoom = surfaceRoom
        let c = leader.configuration
        let limits = ClientOutbox.Limits(maximumBytes: c.maximumQueuedBytes, maximumMessages: 1 << 16,
                                         maximumAgeNanoseconds: Int64(c.maximumQueueDelayMilliseconds) * nanosecondsPerMillisecond)
        // The writer starts with the first message that has to wait (nearly
        // always the socket has room and a chunk goes on the fan-out's
        // thread: a wake-up per room per chunk was most of the leader's cost
        // per room); a connection that never says hello costs one thread.
        // A surface's room never queues here (`send` hands it the messages), so its writer never writes.
        writer = ClientWriter(peer: "speaker \(connection?.peer ?? "surface")", limits: limits, log: log,
                              write: { bytes in try connection?.send(bytes) },
                              writeIfFree: { bytes in try connection?.sendIfFree(bytes) ?? .notSent },
                              threads: leader.sessionWriters, logsDisconnect: false, disconnect: { connection?.close() })
    }

    /// Serves the connection on the calling thread (one of the port's
    /// `TCPService` threads) until it closes.
    func run() {
        // Before the reader's first reply: every send is bounded in time.
        connection.setSendTimeout(milliseconds: 2_000)
        // A bounded kernel buffer, so a stalled follower shows up in our queue.
        connection.setSendBuffer(bytes: 128 * 1024)
        switch dialect {
        case .tutti: readLoop()
        case .snapcast: snapcastReadLoop()
        case .surface: break // its surface reads its connection
        }
    }

    // MARK: Admission

    /// By when the peer must have finished its handshake and joined (hello,
    /// and its proof on a closed system), else it is closed: 10 s, or 2 s on
    /// a place lent beyond the port's limit to a speaker that is to prove
    /// it is paired or has the room key. A pairing request waits for a
    /// person for as long as the request lives (`PairingRequests`, 5 min),
    /// but never on a lent place.
    var handshakeDeadline: Int64 {
        JoinDeadlines.deadline(connectedAt: connectedAt, lentPlace: ticket?.place == .provisional,
                               awaitingPerson: awaitingPairing.load(ordering: .acquiring))
    }

    /// Whether this speaker may act on the leader (room commands, a
    /// snapclient's mixer): on a closed system (paired speakers, or a room
    /// key), only a speaker that proved it in the handshake, or a snapclient
    /// when the operator let them in (`--snapcast-unkeyed`); on an open
    /// system, any. The one place that decides it.
    var mayCommand: Bool {
        switch dialect {
        case .tutti: return authorized.load(ordering: .acquiring)
        case .snapcast: return leader.speakerSecurity.open || leader.configuration.snapcastWithoutKey
        case .surface: return true // its surface decided when it admitted the player
        }
    }

    /// A room command from this speaker: to the leader's desk, which does
    /// it in turn with the others (never on a thread of its own).
    func receiveRoomCommand(_ command: ButtonCommand) {
        guard let room = name else { return }
        guard mayCommand else {
            log.debug("room \(room) from \(connection.peer): ignored \(command), it has not proved it is paired")
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
        case .surface:
            // The surface queues what it sends in its own bounded outbox, never blocking.
            for m in messages { surfaceRoom?.deliver(m) }
        }
    }

    /// Queues bytes for this follower without ever blocking the caller; a
    /// follower that falls too far behind is disconnected.
    private func enqueue(_ bytes: [UInt8]) {
        // After the goodbye nothing more goes: audio behind it would only hold up its flush.
        guard !saidGoodbye.load(ordering: .acquiring) else { return } // an atomic load: this runs per chunk per room
        writer.send(bytes)
        // The writer closed it (too slow, or a write failed): the session ends with its reason.
        if let reason = writer.closeReason { close(reason: reason) }
    }

    func close(reason: String) {
        // The writer's reason first: a write that failed or a speaker too slow closes the connection, which its reader then sees.
        let reason = writer.closeReason ?? reason
        let (wasOpen, goodbyeSent) = state.withLock { () -> (Bool, Bool) in
            defer { closed = true }
            return (!closed, saidGoodbye.load(ordering: .acquiring))
        }
        guard wasOpen else { return }
        if let tag = clockTag.withLock({ t in defer { t = nil }; return t }) { leader.speakerSecurity.unregisterClock(tag: tag) }
        log.info("follower \(name ?? connection?.peer ?? "?") disconnected: \(reason)")
        leader.remove(self)
        surfaceRoom?.close(reason: reason)
        // The goodbye goes only if the socket takes it at once: waiting on a
        // peer that stopped reading is never done on the caller's thread,
        // nor on a thread per closing connection (a peer that connects and
        // closes in a loop would make them). A snapclient knows no goodbye.
        if dialect == .tutti && !goodbyeSent && writer.closeReason == nil {
            _ = try? connection.sendIfFree(Message.bye(reason: reason).encoded())
        }
        writer.close(reason: reason) // closes the connection
        connection?.close()
    }

    /// The leader is stopping: audio still waiting is dropped (the speaker
    /// could not play it), and the goodbye goes after the message being
    /// written, through the writer, so it arrives whole even when the link
    /// is full. `waitUntilSent` then bounds how long it may take.
    func sayGoodbye(reason: String) {
        guard dialect == .tutti, state.withLock({ () -> Bool in
            guard !closed else { return false }
            saidGoodbye.store(true, ordering: .releasing)
            return true
        }) else { return }
        writer.sendLast(Message.bye(reason: reason).encoded())
    }

    /// Waits until nothing is waiting or being written, or the session is
    /// closed, or `deadline` (CLOCK_MONOTONIC ns) passes; true when it all went.
    @discardableResult
    func waitUntilSent(deadline: Int64) -> Bool { writer.flush(untilNanoseconds: deadline) }

    /// Whether `close` has run (the speaker left, or was closed).
    var isClosed: Bool { state.withLock { closed } }

    /// Refuses in the clear or sealed (whichever the connection is at), and closes.
    private func refuse(_ room: String, _ reason: String, tell: String? = nil) {
        try? connection.send(Message.reject(version: WireProtocol.version, reason: tell ?? reason).encoded())
        close(reason: "refused '\(room)' from \(connection.peer): \(reason)")
    }

    /// The v7 handshake (docs/protocol.md): our proof of the leader's key
    /// first, then the speaker's, then sealed frames both ways; then whether
    /// it may join (paired, room key, open system) or may ask to pair.
    /// False: refused (and closed).
    private func handshake(reader: MessageReader, room: String) throws -> Bool {
        let security = leader.speakerSecurity
        var hs = security.handshake()
        guard let offer = try reader.next() else { close(reason: "closed during the handshake"); return false }
        let reply: Message
        do { reply = try hs.reply(to: offer, name: room) } catch {
            refuse(room, "\(error)")
            return false
        }
        try connection.send(reply.encoded())
        let proof = try reader.next()
        if case .bye(let reason)? = proof {
            close(reason: "refused '\(room)' from \(connection.peer): \(reason)")
            return false
        }
        guard let proof else { close(reason: "closed during the handshake"); return false }
        let keys: SessionKeys
        do { keys = try hs.receive(proof: proof) } catch {
            // No answer: a peer that cannot prove its key learns nothing more.
            close(reason: "refused '\(room)' from \(connection.peer): \(error)")
            return false
        }
        // From here on every frame both ways is sealed.
        connection.startSealing(ChaChaFrameCipher(key: keys.toSpeaker))
        try reader.startOpening(ChaChaFrameCipher(key: keys.toLeader))
        let key = hs.speakerKey
        if security.pairedSpeaker(key: key) != nil || hs.flags.contains(.roomKey) {
            authorized.store(true, ordering: .releasing)
        } else if security.open {
            authorized.store(true, ordering: .releasing) // the operator chose an open system
        } else if hs.intent == .join || !security.pairedOnly {
            let why = security.pairedOnly
                ? "this speaker is not paired with this leader (forgotten, or paired with another): pair it again (`sudo tutti-follower pair`, or allow it in the web app)"
                : "this speaker has no room key: this leader needs a room key (set room-key in tutti.conf [speaker])"
            refuse(room, why)
            return false
        } else {
            // Kept after success too: the session joins at once, and a deadline
            // back at 10 s from connecting would close it on its way in.
            awaitingPairing.store(true, ordering: .releasing)
            guard try pair(hs: &hs, reader: reader, room: room) else { return false }
            authorized.store(true, ordering: .releasing)
        }
        speakerKeyCell.withLock { $0 = key }
        security.registerClock(keys)
        clockTag.withLock { $0 = keys.clockTag }
        return true
    }

    /// A pairing request: held until a person allows or denies it, or types
    /// the code the speaker shows (CPace, at most three wrong codes), or it
    /// expires (5 min). True: paired.
    private func pair(hs: inout LeaderHandshake<SodiumCrypto>, reader: MessageReader, room: String) throws -> Bool {
        let security = leader.speakerSecurity
        guard PairedSpeakerList.valid(name: room) else { refuse(room, "a room name with a tab or line break cannot be paired"); return false }
        let host = ControlLogin.host(of: connection.peer)
        let id: UInt64
        do { id = try security.addRequest(name: room, address: host, key: hs.speakerKey, intent: hs.intent) } catch {
            refuse(room, "\(error)")
            return false
        }
        defer {
            security.removeRequest(id)
            leader.events.emit(.speakers)
        }
        leader.events.emit(.speakers)
        let fingerprint = keyFingerprint(hs.speakerKey, crypto: security.crypto)
        if hs.intent == .approval {
            log.info("speaker '\(room)' from \(connection.peer) asks to join (key \(fingerprint)): allow it in the web app, or `tutti speakers allow \(room)`")
        } else {
            log.info("speaker '\(room)' from \(connection.peer) asks to pair by code (key \(fingerprint)): type the code it shows in the web app, or `tutti speakers pair CODE`")
        }
        try connection.send(Message.pairStatus(hs.intent == .approval ? .waitingForApproval : .waitingForCode,
                                               attemptsLeft: UInt8(HandshakeLimits.maxWrongCodes)).encoded())
        connection.setReceiveTimeout(milliseconds: 10_000)
        while true {
            guard let request = security.request(id) else {
                refuse(room, "its pairing request expired (5 minutes) or was replaced")
                return false
            }
            if connection.closed { return false }
            if connection.peerHasClosed {
                close(reason: "'\(room)' from \(connection.peer) left before its pairing request was decided")
                return false
            }
            switch request.decision {
            case .allow?:
                security.pair(name: room, key: hs.speakerKey)
                return true
            case .deny?:
                refuse(room, "pairing denied on the leader")
                return false
            case nil:
                break
            }
            if let code = security.takeCode(id), let share = hs.startPake(code: code) {
                try connection.send(share.encoded())
                guard case .pakeShare(let theirs)? = try reader.next(), case .pakeConfirm(let tag)? = try reader.next() else {
                    close(reason: "refused '\(room)' from \(connection.peer): it did not answer the pairing exchange")
                    return false
                }
                if let confirm = hs.finishPake(speakerShare: theirs, speakerTag: tag) {
                    security.attempted(id, paired: true)
                    security.pair(name: room, key: hs.speakerKey)
                    try connection.send(confirm.encoded())
                    return true
                }
                let wrong = security.attempted(id, paired: false)
                let left = max(0, HandshakeLimits.maxWrongCodes - wrong)
                log.warning("speaker '\(room)' from \(connection.peer): wrong pairing code (\(left) tries left)")
                try connection.send(Message.pairStatus(.wrongCode, attemptsLeft: UInt8(left)).encoded())
                if left == 0 {
                    close(reason: "refused '\(room)' from \(connection.peer): \(HandshakeFailure.tooManyWrongCodes)")
                    return false
                }
            }
            Monotonic.sleep(nanoseconds: 100 * nanosecondsPerMillisecond)
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
            if version >= WireProtocol.handshakeVersion {
                guard try handshake(reader: reader, room: peerName) else { return }
            } else if leader.speakerSecurity.open {
                authorized.store(true, ordering: .releasing) // v2…v6 on an open system, as before: nothing sealed
            } else {
                let reason = "this leader admits only paired speakers (or ones with its room key), and the speaker (protocol v\(version)) cannot prove one: update it"
                try? connection.send(Message.reject(version: WireProtocol.version, reason: reason).encoded())
                close(reason: "refused '\(peerName)': \(reason)")
                return
            }
            name = peerName.isEmpty ? connection.peer : peerName
            self.version = version
            leader.admitDuringParty(name!)
            leader.applyKeptGroupSound(toJoining: name!)
            let stream = leader.stream(forRoom: name!)
            try connection.send(Message.welcome(version: WireProtocol.version, stream: leader.describe(stream)).encoded())
            log.info("follower \(name!) joined from \(connection.peer)")
            try connection.send(Message.settings(leader.settings(ofSpeaker: name!)).encoded())
            if version >= WireProtocol.equalizerVersion {
                // Always, flat too: a speaker keeps its last EQ across reconnects.
                try connection.send(Message.equalizer(leader.equalizer(of: name!).settings).encoded())
            } else if !leader.equalizer(of: name!).settings.isFlat {
                log.warning("room \(name!) speaks protocol v\(version): its EQ is kept but not heard until its tutti is updated")
            }
            let channels = leader.channelsToPlay(speaker: name!)
            if version >= WireProtocol.channelMapVersion {
                // Always, stereo too: a speaker keeps its last map across reconnects.
                try connection.send(Message.channels(channels).encoded())
            } else if channels != .stereo {
                log.warning("room \(name!) speaks protocol v\(version): it plays both channels, not \(channels), until its tutti is updated")
            }
            let reverb = leader.reverb(of: name!)
            if version >= WireProtocol.reverbVersion {
                // Always, off too: a speaker keeps its last reverb across reconnects.
                try connection.send(Message.reverb(reverb).encoded())
            } else if !reverb.isOff {
                log.warning("room \(name!) speaks protocol v\(version): its reverb (\(reverb.summary)) is kept but not heard until its tutti is updated")
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
