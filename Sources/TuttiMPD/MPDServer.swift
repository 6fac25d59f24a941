import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiAuth
import TuttiLibrary
import TuttiNet
import TuttiSystem
import TuttiControlKit

/// The MPD protocol server (`--mpd HOST:PORT`), so MPD clients (mpc,
/// ncmpcpp, python-mpd2, phone apps) control the leader. See docs/mpd.md.
///
/// Threads: one accept thread and one thread per client, which reads lines
/// and runs commands (commands block on the player's mailbox and the
/// library). Changes from any surface arrive through `LeaderEventHub` and
/// finish a waiting `idle` without blocking the thread that caused them:
/// each client writes through its own serial dispatch queue.
///
/// Bad input never crashes the server: unknown commands and bad arguments
/// get ACK lines; a line longer than 64 KiB or a command list longer than
/// 4096 commands closes that client's connection, as MPD does.
// Sendable because its mutable state is in Mutexes and Atomics, and `subscription` is written once in start(), before the threads that read it.
public final class MPDServer: Service, @unchecked Sendable {
    public var serviceName: String { "MPD" }
    public static let protocolVersion = "0.23.5"
    public static let maxLineBytes = 64 * 1024
    public static let maxListCommands = 4_096

    let leader: any LeaderControl
    let log: Logger
    let catalog: MPDCatalog
    private let listener: TCPListener
    private let clients = Mutex<[ObjectIdentifier: MPDClient]>([:])
    /// MPD connections served at once (MPD's own default is 100).
    private let budget = ConnectionBudget(name: "MPD", limit: 256)
    private let running = Atomic<Bool>(true)
    private var subscription = 0
    private let tcp = Mutex<TCPService?>(nil)
    let startedAt = Date()

    /// The queue's version (`playlist:` in status), bumped on every queue change.
    private let queueVersion = Atomic<Int>(1)
    /// Job id of a running `update`, 0 when none.
    let updateJob = Atomic<Int>(0)
    let nextUpdateJob = Atomic<Int>(1)
    /// ACK lines sent to clients: a count and the latest few, so tests (and
    /// anyone debugging a client) can see which commands a client needed
    /// that the server refused.
    private let acks = Mutex<(count: Int, recent: [String])>((0, []))
    static let recentAckLimit = 64

    public init(leader: any LeaderControl, endpoint: Endpoint, log: Logger) throws(NetError) {
        self.leader = leader
        self.log = log
        catalog = MPDCatalog(library: leader.library, musicDirectory: leader.surfaceSettings.musicDirectory, log: log)
        listener = try TCPListener(endpoint: endpoint)
    }

    public var endpoint: Endpoint { listener.endpoint }

    var playlistVersion: Int { queueVersion.load(ordering: .relaxed) }

    /// How many ACK (error) lines this server has sent, and the latest
    /// ones (at most 64, oldest first, without the newline). Any thread.
    public var errorsSent: (count: Int, recent: [String]) { acks.withLock { $0 } }

    /// Sends an ACK line, counting and logging it (debug) on the way.
    private func sendAck(_ bytes: [UInt8], to client: MPDClient) {
        record(ack: bytes, peer: client)
        client.send(bytes)
    }

    private func record(ack bytes: [UInt8], peer client: MPDClient) {
        let line = String(decoding: bytes.last == 0x0a ? bytes.dropLast() : bytes[...], as: UTF8.self)
        acks.withLock { a in
            a.count += 1
            a.recent.append(line)
            if a.recent.count > Self.recentAckLimit { a.recent.removeFirst(a.recent.count - Self.recentAckLimit) }
        }
        log.debug("\(client.connection.peer): \(line)")
    }

    public func start() throws {
        log.info("MPD protocol on \(listener.endpoint)")
        subscription = leader.events.subscribe { [weak self] event in self?.handle(event) }
        let tcp = TCPService("MPD", listener: listener, loop: leader.acceptLoop, budget: budget, log: log, threadName: "tutti-mpd-client",
                             closeConnections: { [self] in for c in clients.withLock({ Array($0.values) }) { c.connection.close() } },
                             serve: { [self] connection, _ in
                                 let client = MPDClient(connection: connection, settings: leader.surfaceSettings, access: leader.controlAccess, log: log)
                                 clients.withLock { $0[ObjectIdentifier(client)] = client }
                                 serve(client)
                             })
        try tcp.start()
        self.tcp.withLock { $0 = tcp }
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        leader.events.unsubscribe(subscription)
        tcp.withLock { $0 }?.stop()
    }

    // MARK: Events

    private func handle(_ event: LeaderEvent) {
        switch event {
        case .queue: queueVersion.add(1, ordering: .relaxed)
        default: break
        }
        notify(Set(MPDSubsystem.of(event)))
    }

    func notify(_ subsystems: Set<MPDSubsystem>) {
        for c in clients.withLock({ Array($0.values) }) { c.changed(subsystems) }
    }

    // MARK: Clients

    private func serve(_ client: MPDClient) {
        defer {
            clients.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(client)) }
            client.finish()
            client.connection.close()
        }
        client.reply(Array("OK MPD \(Self.protocolVersion)\n".utf8))
        var splitter = MPDLineSplitter(maxLineBytes: Self.maxLineBytes)
        var state = MPDSessionState(maxListCommands: Self.maxListCommands)
        var unknown = 0
        let buffer = ReceiveBuffer()
        let connectedAt = Monotonic.now()
        var commands = 0
        var partial = LineDiscipline.PartialLineClock()
        let hanging = { [log] in log.info("MPD client \(client.connection.peer): half a line left hanging for \(LineDiscipline.partialLineMilliseconds / 1000) s, closing") }
        // Asleep until bytes come or a deadline falls due; a stopping server closes the connection, which wakes it.
        var armed: Int64? = -1
        while running.load(ordering: .relaxed) {
            LineDiscipline.arm(client.connection, until: LineDiscipline.nextDeadline(connectedAt: connectedAt, requests: commands, loggedIn: client.level != .none,
                                                                                     partial: partial), now: Monotonic.now(), armed: &armed)
            let n: Int
            do { (n, _) = try buffer.receive(from: client.connection) } catch NetError.timedOut {
                // Every real client asks something at once (an idling one has asked `idle`).
                if commands == 0, Monotonic.now() - connectedAt > Int64(LineDiscipline.firstRequestMilliseconds) * nanosecondsPerMillisecond {
                    log.info("MPD client \(client.connection.peer): no command within \(LineDiscipline.firstRequestMilliseconds / 1000) s, closing")
                    return
                }
                if partial.expired(now: Monotonic.now()) { hanging(); return }
                if notLoggedIn(client, since: connectedAt) { return }
                continue
            } catch { return }
            guard n > 0 else { return }
            let lines = splitter.feed(buffer.storage[0..<n])
            commands += lines.count
            let now = Monotonic.now()
            partial.update(unfinished: splitter.hasUnfinishedLine, lineEnded: !lines.isEmpty, now: now)
            if partial.expired(now: now) { hanging(); return }
            if notLoggedIn(client, since: connectedAt) { return }
            for line in lines {
                // An idle answered by an event leaves the state machine idling: catch up.
                if state.idling && !client.isWaiting { state.idling = false }
                switch state.receive(line: line) {
                case .none:
                    break
                case .reply(let bytes):
                    sendAck(bytes, to: client) // the state machine replies only with errors
                case .close(let reply):
                    if !reply.isEmpty { sendAck(reply, to: client) }
                    client.flush()
                    return
                case .idle(let command):
                    if !ControlAccess.permitsMPD(client.level, command: "idle") {
                        state.idling = false
                        sendAck(MPDError(.permission, "you don't have permission for \"idle\"").ackLine(index: 0, command: "idle"), to: client)
                    } else if let error = client.beginIdle(command.arguments) {
                        state.idling = false
                        sendAck(error, to: client)
                    }
                case .noidle:
                    client.endIdle()
                    state.idling = false
                case .run(let commands, let isList, let listOK):
                    let reply = run(commands, isList: isList, listOK: listOK, client: client)
                    client.reply(reply)
                    // Random bytes make one unknown command after another: each costs a parse and an ACK.
                    unknown = reply.starts(with: Array("ACK [5@".utf8)) ? unknown + 1 : 0
                    if unknown >= LineDiscipline.maxConsecutiveMalformed {
                        log.info("MPD client \(client.connection.peer): \(unknown) unknown commands in a row, closing")
                        client.flush()
                        return
                    }
                }
            }
            if splitter.overflow {
                log.info("MPD client \(client.connection.peer): line longer than \(Self.maxLineBytes) bytes, closing")
                sendAck(MPDError(.argument, "Line too long").ackLine(index: 0, command: ""), to: client)
                client.flush()
                return
            }
        }
    }

    /// A client that may do nothing until it logs in, and has not within
    /// `LineDiscipline.loginMilliseconds`, only holds a place (however many
    /// pings it sends): true when it is closed for that.
    private func notLoggedIn(_ client: MPDClient, since connectedAt: Int64) -> Bool {
        guard client.level == .none,
              Monotonic.now() - connectedAt > Int64(LineDiscipline.loginMilliseconds) * nanosecondsPerMillisecond else { return false }
        log.info("MPD client \(client.connection.peer): not logged in within \(LineDiscipline.loginMilliseconds / 1000) s, closing")
        return true
    }

    /// `password` raises the client to full access; anything else must be allowed at its level.
    private func authorize(_ command: MPDCommand, client: MPDClient) throws(MPDError) {
        if command.name == "password", let secret = command.arguments.first {
            // Failures are counted per host; over the limit the refusal is immediate (nothing sleeps).
            switch leader.login.loginMPD(secret: secret, peer: client.connection.peer) {
            case .success: client.level = .full
            case .failure(.limited(let refusal)): throw MPDError(.password, refusal.description)
            case .failure: throw MPDError(.password, "incorrect password")
            }
            return
        }
        guard ControlAccess.permitsMPD(client.level, command: command.name) else {
            throw MPDError(.permission, "you don't have permission for \"\(command.name)\"")
        }
    }

    /// Runs a command or a command list; the bytes to send.
    func run(_ commands: [MPDCommand], isList: Bool, listOK: Bool, client: MPDClient) -> [UInt8] {
        // Long answers (search, listallinfo) go out as they are made, waiting
        // while the client's outbox is full: memory stays at a few chunks.
        let streamed = Atomic<Int>(0)
        var response = MPDResponse(stream: { [client] bytes in
            streamed.add(bytes.count, ordering: .relaxed)
            client.sendWaitingForRoom(bytes)
        })
        defer {
            // A long answer's chunks were freed in this thread's malloc arena: give them back.
            if streamed.load(ordering: .relaxed) > 1 << 20 {
                if let library = catalog.library { library.releaseBulkReadMemory() } else { returnFreedMemory() }
            }
        }
        client.settleUntil = 0
        defer {
            // Reply once the change is heard (at most 1 s on), so the client's next status shows it.
            let wait = min(client.settleUntil - Monotonic.now(), 1_000_000_000)
            if wait > 0 { usleep(UInt32(wait / 1_000) + 1_000) }
        }
        for (index, command) in commands.enumerated() {
            do {
                try authorize(command, client: client)
                try execute(command, client: client, into: &response)
            } catch {
                let ack = error.ackLine(index: index, command: command.name)
                record(ack: ack, peer: client)
                response.append(raw: ack)
                return response.bytes
            }
            if listOK { response.append(raw: Array("list_OK\n".utf8)) }
        }
        response.append(raw: Array("OK\n".utf8))
        return response.bytes
    }
}

/// One MPD client connection: its idle state and per-client settings.
/// Everything it is sent goes through its bounded outbox (`ClientWriter`):
/// a client that stops reading is disconnected, never waited for.
// Sendable because `idle` is under a Mutex and `binaryLimit`, `settleUntil` and `tagTypes` are touched only by the client's own reader thread (its commands).
final class MPDClient: @unchecked Sendable {
    let connection: TCPConnection
    private let writer: ClientWriter
    private struct Idle {
        var pending: Set<MPDSubsystem> = []
        var waiting: Set<MPDSubsystem>?
    }
    private let idle = Mutex(Idle())
    // Touched only by the client's own thread.
    var binaryLimit = 8_192
    /// Monotonic ns when the last transport command of this request is heard.
    var settleUntil: Int64 = 0
    /// What this client may do: raised by `password`.
    var level: ControlAccess.Level
    var tagTypes = Set(MPDTags.all) {
        didSet {
            shownTags = MPDTags.all.map { tagTypes.contains($0) }
            shownTagBits = MPDTags.all.enumerated().reduce(UInt8(0)) { $0 | (tagTypes.contains($1.element) ? UInt8(1) << UInt8($1.offset) : 0) }
        }
    }
    /// `shownTags` as bits (bit i: `MPDTags.all[i]`): read once per song of a long answer, with no array to retain.
    private(set) var shownTagBits: UInt8 = 0xFF
    /// `tagTypes` as flags in `MPDTags.all` order: a song block asks eight times per song.
    private(set) var shownTags = MPDTags.all.map { _ in true }

    init(connection: TCPConnection, settings configuration: SurfaceSettings, access: ControlAccess, log: Logger) {
        self.connection = connection
        level = access.initialLevel(peerIsLoopback: ControlAccess.isLoopback(ControlLogin.host(of: connection.peer)))
        let stall = configuration.clientStallMilliseconds
        connection.setSendTimeout(milliseconds: stall)
        connection.setSendBuffer(bytes: 64 * 1024)
        writer = ClientWriter(peer: "MPD \(connection.peer)", limits: configuration.outboxLimits, log: log, write: { bytes in
            do { try connection.send(bytes) } catch NetError.timedOut {
                throw MPDError(.system, "did not read for \(stall / 1000) s")
            }
        }, writeIfFree: { bytes in try connection.sendIfFree(bytes) }, disconnect: { connection.close() })
    }

    /// Sends after everything queued before; never blocks the caller.
    func send(_ bytes: [UInt8]) { writer.send(bytes) }

    /// A command's reply, from the client's own thread: written there when
    /// nothing else waits (`ClientWriter.reply`), else queued.
    func reply(_ bytes: [UInt8]) { writer.reply(bytes) }

    /// Sends once less than `MPDClient.streamingBacklog` bytes wait: for a
    /// long answer, from the client's own thread (it may block).
    func sendWaitingForRoom(_ bytes: [UInt8]) { writer.send(bytes, waitingBelow: Self.streamingBacklog) }
    static let streamingBacklog = 256 * 1024

    /// Waits until everything queued has been written (bounded).
    func flush() { writer.flush() }

    /// The connection ended: the writer stops.
    func finish() { writer.close(reason: "connection closed") }

    var isWaiting: Bool { idle.withLock { $0.waiting != nil } }

    /// Starts an `idle`; returns an ACK line for unknown subsystem names.
    func beginIdle(_ names: [String]) -> [UInt8]? {
        var mask = Set<MPDSubsystem>()
        for name in names {
            guard let s = MPDSubsystem(rawValue: name.lowercased()) else {
                return MPDError(.argument, "Unrecognized idle event: \(name)").ackLine(index: 0, command: "idle")
            }
            mask.insert(s)
        }
        if mask.isEmpty { mask = Set(MPDSubsystem.allCases) }
        let reply: [UInt8]? = idle.withLock { state in
            let ready = state.pending.intersection(mask)
            if ready.isEmpty {
                state.waiting = mask
                return nil
            }
            state.pending.subtract(ready)
            return Self.changedLines(ready)
        }
        if let reply { send(reply) }
        return nil
    }

    /// `noidle`: finishes a waiting idle with what has changed (normally nothing).
    func endIdle() {
        let reply: [UInt8]? = idle.withLock { state in
            guard let mask = state.waiting else { return nil }
            state.waiting = nil
            let ready = state.pending.intersection(mask)
            state.pending.subtract(ready)
            return Self.changedLines(ready)
        }
        if let reply { send(reply) }
    }

    /// Records changes; answers a waiting idle that asked for any of them.
    func changed(_ subsystems: Set<MPDSubsystem>) {
        let reply: [UInt8]? = idle.withLock { state in
            state.pending.formUnion(subsystems)
            guard let mask = state.waiting else { return nil }
            let ready = state.pending.intersection(mask)
            guard !ready.isEmpty else { return nil }
            state.pending.subtract(ready)
            state.waiting = nil
            return Self.changedLines(ready)
        }
        if let reply { send(reply) }
    }

    private static func changedLines(_ subsystems: Set<MPDSubsystem>) -> [UInt8] {
        var r = MPDResponse()
        for s in MPDSubsystem.allCases where subsystems.contains(s) { r.add("changed", s.rawValue) }
        r.append(raw: Array("OK\n".utf8))
        return r.bytes
    }
}
