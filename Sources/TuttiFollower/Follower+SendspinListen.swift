import Synchronization
import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiDiscovery
import TuttiNet
import TuttiSystem

/// A Tutti speaker that Sendspin servers dial (`--sendspin-listen`): the
/// spec's server-initiated connections, the way Music Assistant finds its
/// players. The speaker listens on a port of its own (8928 and `/sendspin`
/// by default), announces itself over Avahi as `_sendspin._tcp` (TXT `path`
/// and `name`), and answers each server's WebSocket itself (TuttiCore's
/// `WebSocketUpgrade`, no HTTP server linked). Once a connection is admitted
/// (`SendspinAdmission`), its session is the very one a dialing speaker runs
/// (`runSendspinSession`): same link, clock model, playout and steering.
///
/// Threads: the connect loop's thread accepts; each connection is served on
/// a thread of `tutti-ss-conn` until it ends, at most `maximumConnections` of
/// them (the admitted one and `SendspinAdmission.maximumProvisional` waiting
/// for their activation), two per address; a connection beyond that is
/// answered `503` at once and closed.
extension Follower {
    /// Connections served at once: one playing, the others still proving what they are for.
    static let sendspinMaximumConnections = 1 + SendspinAdmission.maximumProvisional
    /// From one address (a server reconnecting while its old connection drains is two).
    static let sendspinConnectionsPerAddress = 2
    /// Where the last server that played here is remembered (its key, hex), for the spec's tiebreak.
    static let sendspinLastServerFile = "sendspin-last-server"

    /// Listens until stop (or until the port cannot be had: then it throws, and the connect loop tries again).
    func sendspinListen(_ where_: SendspinListenAddress) throws {
        let listener = try TCPListener(endpoint: Endpoint(host: where_.host, port: where_.port))
        sendspinListener.withLock { $0 = listener }
        defer {
            listener.close()
            sendspinListener.withLock { $0 = nil }
        }
        guard running.load(ordering: .relaxed) else { return }
        let port = listener.endpoint.port
        let announcement: ServicePublisher?
        do {
            announcement = try ServicePublisher(name: configuration.name, port: port, txt: ["path": where_.path, "name": configuration.name],
                                                type: Self.sendspinPlayerServiceType, log: log.with(label: "mdns"))
        } catch {
            log.warning("not announced over mDNS (\(error)); a server must be told ws://THIS-HOST:\(port)\(where_.path)")
            announcement = nil
        }
        defer { announcement?.stop() }
        log.info("waiting for Sendspin servers at ws://\(where_.host):\(port)\(where_.path) (announced as \(Self.sendspinPlayerServiceType) '\(configuration.name)')")

        let desk = SendspinListenDesk(lastPlaybackServer: readLastPlaybackServer(), log: log)
        let threads = ThreadGroup(name: "tutti-ss-conn")
        defer {
            desk.closeAll()
            if !threads.waitForAll(untilNanoseconds: Condition.deadline(afterSeconds: 2)) {
                log.warning("Sendspin: \(threads.running) connections still closing after 2 s")
            }
        }
        while running.load(ordering: .relaxed) {
            let conn: TCPConnection
            switch Result(catching: { () throws(NetError) in try listener.accept() }) {
            case .success(let c): conn = c
            case .failure(.closed): return
            case .failure(let error): throw error
            }
            let source = SourceAddress.parse(conn.peer) ?? .unknown
            guard let (token, place) = desk.arrived(conn, from: source) else { continue }
            do {
                try threads.start { [self] in
                    defer { desk.left(token: token, from: source, place: place) }
                    serveSendspinServer(conn, token: token, path: where_.path, desk: desk)
                }
            } catch {
                log.warning("Sendspin: \(error)")
                conn.close()
                desk.left(token: token, from: source, place: place)
            }
        }
    }

    /// One server's connection, from its WebSocket opening to its end.
    private func serveSendspinServer(_ conn: TCPConnection, token: Int, path: String, desk: SendspinListenDesk) {
        let arrived = Monotonic.now()
        conn.setReceiveTimeout(milliseconds: Self.sendspinSilenceMilliseconds)
        let socket = SendspinSocket(connection: conn, side: .accepted(path: path), identity: identity)
        desk.opened(token: token, socket: socket)
        let gate = SendspinGate(
            deadline: arrived + SendspinAdmission.provisionalNanoseconds,
            admit: { [self] serverID, activities in
                switch desk.activated(SendspinAdmission.Holder(token: token, serverID: serverID, activities: activities), persist: rememberLastPlaybackServer) {
                case .admit(let displaced):
                    if let displaced {
                        log.info("Sendspin server \(conn.peer) takes this speaker over (\(activities.isEmpty ? "no activity" : activities.joined(separator: ", "))); the one playing is told another_server")
                        displaced.leave(reason: "another_server")
                    }
                    return true
                case .reject:
                    log.info("Sendspin server \(conn.peer) refused: another server holds this speaker with an activity of equal or higher rank (concurrent_attempt)")
                    socket.leave(reason: "concurrent_attempt")
                    return false
                }
            },
            updated: { [self] activities in desk.updated(token: token, activities: activities, persist: rememberLastPlaybackServer) },
            claim: { desk.claimAudio(token: token) },
            release: { desk.releaseAudio(token: token) })
        do {
            try socket.open(deadline: gate.deadline)
            try runSendspinSession(socket, at: conn.peer, gate: gate)
        } catch {
            if running.load(ordering: .relaxed) {
                log.info("Sendspin server \(conn.peer): \(error)")
                lastError.withLock { $0 = "\(error)" }
            }
        }
        socket.close(reason: "")
    }

    private func readLastPlaybackServer() -> String? {
        guard let folder = configuration.stateDirectory else { return memoryLastPlaybackServer.withLock { $0 } }
        do { return try KeyFile.read(folder + "/" + Self.sendspinLastServerFile).map { Base64URL.encode($0) } } catch {
            log.warning("\(error)")
            return nil
        }
    }

    /// Kept before the admission is acted on (the spec: persisted); a failure is logged, the server still plays.
    private func rememberLastPlaybackServer(_ serverID: String) {
        guard let folder = configuration.stateDirectory else {
            memoryLastPlaybackServer.withLock { $0 = serverID }
            return
        }
        guard let key = Base64URL.decode(serverID), key.count == 32 else { return }
        do { try KeyFile.write(folder + "/" + Self.sendspinLastServerFile, key) } catch { log.warning("\(error)") }
    }

    static let sendspinPlayerServiceType = "_sendspin._tcp"
}

extension SendspinSocket {
    /// `client/goodbye` with the spec's reason, then the close (best effort, from any thread).
    func leave(reason: String) {
        try? send(SendspinPlayerLink.goodbye(reason: reason))
        close(reason: reason)
    }
}

/// The listening speaker's connections: the admission rules, the per-address
/// shares, each connection's socket (for the goodbyes and for stop), and which
/// one owns the audio path.
///
/// Thread contract: any thread; everything is under one lock (`Condition`),
/// and nothing slow is done under it (goodbyes and closes are done after).
// @unchecked Sendable: `state` is read and written only under `lock`; `log` is Sendable.
final class SendspinListenDesk: @unchecked Sendable {
    private struct State {
        var admission: SendspinAdmission
        var shares = ConnectionShares(limits: ConnectionShares.Limits(port: Follower.sendspinMaximumConnections,
                                                                      perAddress: Follower.sendspinConnectionsPerAddress, loopbackReserve: 0))
        var connections: [Int: TCPConnection] = [:]
        var sockets: [Int: SendspinSocket] = [:]
        /// The session that holds the audio path (nil: none).
        var audioOwner: Int?
        var closed = false
    }

    private let lock = Condition()
    private var state: State
    private let log: Logger

    init(lastPlaybackServer: String?, log: Logger) {
        state = State(admission: SendspinAdmission(lastPlaybackServer: lastPlaybackServer))
        self.log = log
    }

    /// A connection came: its token and place, or nil when it was refused (answered 503 and closed here).
    func arrived(_ conn: TCPConnection, from source: SourceAddress) -> (Int, ConnectionShares.Place)? {
        let taken: Result<(Int, ConnectionShares.Place), WebSocketUpgrade.Refusal> = lock.withLock {
            guard !state.closed else { return .failure(WebSocketUpgrade.Refusal(status: 503, reason: "this speaker is stopping")) }
            switch state.shares.admit(source) {
            case .failure(let refusal):
                return .failure(WebSocketUpgrade.Refusal(status: 503, reason: "\(refusal)"))
            case .success(let place):
                guard let token = state.admission.arrived() else {
                    state.shares.release(source, place: place)
                    return .failure(WebSocketUpgrade.Refusal(status: 503, reason: "\(SendspinAdmission.maximumProvisional) Sendspin servers are already connecting"))
                }
                state.connections[token] = conn
                return .success((token, place))
            }
        }
        switch taken {
        case .success(let t): return t
        case .failure(let refusal):
            log.info("Sendspin: refused \(conn.peer): \(refusal.reason)")
            // Never blocks the accepting thread on a peer that does not read.
            conn.setSendTimeout(milliseconds: 200)
            _ = try? conn.sendIfFree(WebSocketUpgrade.refusal(refusal))
            conn.close()
            return nil
        }
    }

    func opened(token: Int, socket: SendspinSocket) {
        let late = lock.withLock { () -> Bool in
            state.sockets[token] = socket
            return state.closed
        }
        if late { socket.connection.close() }
    }

    /// The first `server/activate`: the decision, and the socket to tell `another_server` when it displaces one.
    func activated(_ holder: SendspinAdmission.Holder, persist: (String) -> Void) -> SendspinAdmissionOutcome {
        let (decision, toPersist, displaced) = lock.withLock { () -> (SendspinAdmission.Decision, String?, SendspinSocket?) in
            let (d, p) = state.admission.activated(holder)
            if case .admit(let old?) = d { return (d, p, state.sockets[old]) }
            return (d, p, nil)
        }
        if let toPersist { persist(toPersist) }
        switch decision {
        case .admit: return .admit(displaced: displaced)
        case .reject: return .reject
        }
    }

    func updated(token: Int, activities: [String], persist: (String) -> Void) {
        if let id = lock.withLock({ state.admission.updated(token: token, activities: activities) }) { persist(id) }
    }

    /// Waits until no other session holds the audio path (a displaced one leaves within moments of its close), then takes it.
    func claimAudio(token: Int) {
        lock.withLock {
            let deadline = Condition.deadline(afterSeconds: 5)
            while let owner = state.audioOwner, owner != token {
                if !lock.wait(untilNanoseconds: deadline) {
                    log.warning("Sendspin: the displaced session still holds the audio path after 5 s; taking it")
                    break
                }
            }
            state.audioOwner = token
        }
    }

    func releaseAudio(token: Int) {
        lock.withLock {
            if state.audioOwner == token { state.audioOwner = nil }
            lock.broadcast()
        }
    }

    func left(token: Int, from source: SourceAddress, place: ConnectionShares.Place) {
        lock.withLock {
            state.admission.left(token: token)
            state.shares.release(source, place: place)
            state.connections[token] = nil
            state.sockets[token] = nil
            if state.audioOwner == token { state.audioOwner = nil }
            lock.broadcast()
        }
    }

    /// Stop: every connection closed (the admitted one's goodbye is `stop`'s farewell).
    func closeAll() {
        let all = lock.withLock { () -> [TCPConnection] in
            state.closed = true
            return Array(state.connections.values)
        }
        for conn in all { conn.close() }
    }
}

enum SendspinAdmissionOutcome {
    case admit(displaced: SendspinSocket?)
    case reject
}
