import Synchronization
import TuttiAuth
import TuttiCore
import TuttiSystem
import TuttiNet
import TuttiWeb
import TuttiControlKit

/// The leader as a Sendspin server (`--sendspin HOST:PORT`, path
/// `/sendspin`): a listener of its own (civetweb), where each Sendspin
/// player becomes a Tutti room, each controller commands its group, and
/// metadata clients are told what plays. Connections are Noise `KKpsk2`
/// (the leader's `sendspinTrust` holds the key and who is trusted), or
/// plain for legacy clients where the leader's speakers are open. See
/// docs/sendspin.md.
///
/// Threads: civetweb's (a worker per open connection, and the handler
/// lane); a writer per client while it has something waiting
/// (`ClientWriter`); `tutti-sendspin`, which sends `group/update`,
/// `server/state` and artwork (scaling covers) when the leader's state changes, lets in a waiting client
/// a person allowed, closes a connection whose handshake has not
/// finished in 30 s, and releases to each player the audio its
/// `buffer_capacity` held back once there is room (`SendspinSendWindow`). Stopping ends the
/// players (their rooms leave), stops civetweb, joins the notifier.
// Sendable because `server` and `notifier` are set in start() before any connection and cleared in stop(); the rest is in Mutexes or immutable.
public final class SendspinServer: Service, WebSocketHandler, @unchecked Sendable {
    public let serviceName = "Sendspin"
    public static let path = "/sendspin"
    public static let defaultPort: UInt16 = 8927

    private let leader: any LeaderControl
    private let log: Logger
    private let requested: Endpoint
    private let identity: SendspinIdentity
    private var server: WebServer?
    private let players = Mutex<[ObjectIdentifier: SendspinPlayer]>([:])
    private let writers = ThreadGroup(name: "tutti-sendspin-w")
    private let wake = Condition()
    private var pending = false
    /// A player's next release came sooner than the notifier may be waiting for.
    private var rearmed = false
    private var running = false
    private var notifier: JoinableThread?
    private var subscription: Int?
    /// Covers scaled for the artwork clients, shared: a group of displays costs one scale.
    private let covers: SendspinCovers

    /// At most this many clients at once (each holds a civetweb worker).
    public static let maximumClients = 16

    public init(leader: any LeaderControl, endpoint: Endpoint, serverID: String, name: String, log: Logger) {
        self.leader = leader
        self.requested = endpoint
        self.identity = SendspinIdentity(id: serverID, name: name)
        self.log = log
        self.covers = SendspinCovers(leader: leader, log: log)
    }

    /// Where it listens (the real port when 0 was asked for).
    public var endpoint: Endpoint? { server.flatMap { try? Endpoint(parsing: $0.endpoint) } }

    /// The rooms its players are, sorted.
    public var rooms: [String] { players.withLock { $0.values.compactMap(\.roomName) }.sorted() }

    public func start() throws {
        let web = WebServer(endpoint: requested.description, threads: Self.maximumClients + 2,
                            timeoutMilliseconds: leader.surfaceSettings.clientStallMilliseconds, webSocketPath: Self.path,
                            maximumMessageBytes: Sendspin.maximumClientMessageBytes, label: "Sendspin",
                            socketHandler: self, log: log) { _ in .text(404, "Sendspin: connect a WebSocket to \(SendspinServer.path)") }
        try web.start()
        server = web
        wake.withLock { running = true }
        subscription = leader.events.subscribe { [weak self] event in
            guard event == .player || event == .mixer || event == .groups || event == .options || event == .rooms || event == .speakers else { return }
            self?.poke()
        }
        notifier = try JoinableThread(name: "tutti-sendspin") { [self] in notify() }
    }

    public func stop() {
        if let subscription { leader.events.unsubscribe(subscription) }
        for player in players.withLock({ Array($0.values) }) { player.close(reason: "leader stopping") }
        server?.stop()
        server = nil
        wake.withLock { running = false; wake.signal() }
        notifier?.join()
        writers.waitForAll(untilNanoseconds: Condition.deadline(afterSeconds: 1))
    }

    func poke() { wake.withLock { pending = true; wake.signal() } }
    func rearm() { wake.withLock { rearmed = true; wake.signal() } }

    /// Sends each client what changed; asleep until something does, or until
    /// the next unfinished handshake runs out of time.
    private func notify() {
        while true {
            let now = Condition.now()
            let open = players.withLock { Array($0.values) }
            var next: Int64?
            for player in open {
                // Audio the player's buffer had no room for, now that enough has played.
                if let due = player.nextRelease, due <= now { player.releaseDue() }
                if let due = player.nextRelease { next = min(next ?? due, due) }
                guard let deadline = player.handshakeDeadline else { continue }
                if deadline <= now {
                    log.info("Sendspin \(player.socket.peer): \(player.deadlineReason); closing")
                    player.close(reason: player.deadlineReason)
                } else {
                    next = min(next ?? deadline, deadline)
                }
            }
            wake.lock()
            guard running else { wake.unlock(); return }
            if !pending && !rearmed {
                if let next { _ = wake.wait(untilNanoseconds: next) } else { wake.wait() }
            }
            let changed = pending
            pending = false
            rearmed = false
            wake.unlock()
            if changed {
                for player in players.withLock({ Array($0.values) }) {
                    player.refresh()
                    player.refreshArtwork(covers)
                }
            }
        }
    }

    // MARK: WebSocketHandler

    public func opened(_ socket: WebSocket) {
        // Noise for every client that asks for it; plain (legacy) ones only where the leader's speakers are open.
        let configuration = SendspinServerChannel.Configuration(allowPlain: leader.speakersMode == .open,
                                                                maxMessageBytes: Sendspin.maximumClientMessageBytes)
        guard let trust = leader.sendspinTrust else {
            // The leader makes one whenever `--sendspin` is given, and only then is there a server.
            log.error("Sendspin: the leader keeps no Sendspin trust; refusing \(socket.peer)")
            return socket.terminate()
        }
        let player = SendspinPlayer(socket: socket, leader: leader, server: identity, channel: trust.serverChannel(configuration: configuration),
                                    trust: trust, log: log,
                                    threads: writers, poke: { [weak self] in self?.poke() }, rearm: { [weak self] in self?.rearm() })
        players.withLock { $0[ObjectIdentifier(socket)] = player }
        poke() // the notifier now minds this handshake's deadline
    }

    public func received(_ message: [UInt8], on socket: WebSocket) {}

    public func received(_ message: [UInt8], binary: Bool, arrival: Int64, on socket: WebSocket) {
        players.withLock { $0[ObjectIdentifier(socket)] }?.received(message, binary: binary, arrival: arrival)
    }

    public func closed(_ socket: WebSocket) {
        let player = players.withLock { $0.removeValue(forKey: ObjectIdentifier(socket)) }
        player?.close(reason: socket.closedByPage ? "it closed the connection" : "connection lost")
    }
}
