import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiNet
import TuttiSystem
import TuttiWeb
import TuttiControlKit
import TuttiLibrary
import TuttiAuth

/// Snapcast's control API (JSON-RPC 2.0, control protocol 2 as snapserver
/// 0.26 has it) for Home Assistant's integration, python-snapcast and
/// snapweb: on TCP (`--snapcast-control`, default 1705; lines end in
/// CRLF, as python-snapcast requires) and at `/jsonrpc` over HTTP POST and
/// WebSocket (`--snapcast-http`, default 1780). See docs/snapcast.md.
///
/// The model maps onto Tutti's own:
/// * a Snapcast client is a room (a Tutti speaker or a snapclient), its id the room's name;
/// * a Snapcast stream is a group's player (id: the group's id);
/// * a Snapcast group is a Tutti group, whose `stream_id` is the player its
///   rooms hear. `Group.SetStream` moves the group's rooms to the group
///   that owns that player, and the Snapcast group keeps its id and its
///   rooms, so setting its own stream back (what Home Assistant does after
///   an announcement) brings them home.
///
/// Each client has a bounded outbox (`ClientWriter`), as on every surface.
/// Notifications are worked out by comparing the whole status before and
/// after each change, so they say exactly what changed.
// Sendable because its mutable state is under Mutexes; `web` is set once in init and `subscription` once in start(), before other threads use them.
public final class SnapcastControl: Service, @unchecked Sendable {
    public var serviceName: String { "Snapcast control" }
    public static let snapserverVersion = "0.26.0"

    private let leader: any LeaderControl
    /// `--snapcast-control-open`: clients on other machines may change things although a password is set.
    private let trustsEveryone: Bool
    /// The codec the streams are sent in, as the status names it.
    private let codecName: String
    private let log: Logger
    private let listener: TCPListener?
    private var web: WebServer?
    private var pages: SnapcastPages?
    private let clients: SurfaceClients
    /// Snapcast JSON-RPC connections served at once.
    private let budget = ConnectionBudget(name: "Snapcast JSON-RPC", limit: 128)
    private let running = Atomic<Bool>(true)
    private var subscription = 0
    private let wake = DispatchSemaphore(value: 0)
    private let notifier = Mutex<JoinableThread?>(nil)
    private let tcp = Mutex<TCPService?>(nil)
    /// Client.SetName: a display name per room (the room keeps its name as its id).
    private let names = Mutex<[String: String]>([:])
    /// Rooms moved by Group.SetStream: their Snapcast group, and the Tutti group whose stream they were sent to.
    private let homes = Mutex<[String: (group: String, stream: String)]>([:])
    /// The status last announced, to work out what changed.
    private let last = Mutex<JSONValue?>(nil)
    private let serverLock = Condition() // one request's changes at a time, so notifications stay in order

    /// `control`: the TCP port (1705); `http`: the HTTP and WebSocket port (1780). Either may be nil.
    public init(leader: any LeaderControl, control: Endpoint?, http: Endpoint?, trustsEveryone: Bool, codecName: String, log: Logger) throws {
        self.leader = leader
        self.trustsEveryone = trustsEveryone
        self.codecName = codecName
        self.log = log
        clients = SurfaceClients(limits: leader.surfaceSettings.outboxLimits, log: log)
        listener = try control.map { e throws(NetError) in try TCPListener(endpoint: e) }
        if let http {
            let pages = SnapcastPages()
            // Snapweb pages and scripts; Home Assistant uses the TCP port.
            // Four: Snapweb pages and a Home Assistant socket or two; each is a thread.
            let web = WebServer(endpoint: http.description, threads: 4, timeoutMilliseconds: leader.surfaceSettings.clientStallMilliseconds,
                                webSocketPath: "/jsonrpc", socketHandler: pages, log: log) { [weak self] request in
                self?.respond(request) ?? .text(503, "the leader is stopping")
            }
            pages.control = self
            self.pages = pages
            try web.start()
            self.web = web
        }
    }

    public var controlEndpoint: Endpoint? { listener?.endpoint }
    public var httpEndpoint: Endpoint? { web.flatMap { try? Endpoint(parsing: $0.endpoint) } }

    public func start() throws {
        let initial = status()
        last.withLock { $0 = initial }
        subscription = leader.events.subscribe { [weak self] event in
            guard event != .health, event != .library, event != .playlists else { return }
            self?.wake.signal()
        }
        let notifier = try JoinableThread(name: "tutti-snap-notify") { [self] in
            while running.load(ordering: .relaxed) {
                wake.wait()
                guard running.load(ordering: .relaxed) else { return }
                announceChanges()
            }
        }
        self.notifier.withLock { $0 = notifier }
        guard let listener else { return }
        log.info("Snapcast control (JSON-RPC) on \(listener.endpoint)")
        let tcp = TCPService("Snapcast control", listener: listener, loop: leader.acceptLoop, budget: budget, log: log, threadName: "tutti-snap-client",
                             closeConnections: { [clients] in clients.close(reason: "leader stopping") { $0.newlineFramed } },
                             serve: { [self] connection, _ in serve(connection) })
        try tcp.start()
        self.tcp.withLock { $0 = tcp }
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        leader.events.unsubscribe(subscription)
        wake.signal()
        notifier.withLock { $0 }?.join()
        tcp.withLock { $0 }?.stop()
        web?.stop()
        pages?.loginWatch.stop()
        clients.close(reason: "leader stopping")
    }

    // MARK: Transports

    func attach(peer: String, address: String, newlineFramed: Bool, write: @escaping ClientWriter.Write,
                writeIfFree: ClientWriter.WriteIfFree? = nil, disconnect: @escaping @Sendable () -> Void) -> SurfaceClient {
        clients.attach(peer: peer, address: address, level: level(address: address), newlineFramed: newlineFramed,
                       write: write, writeIfFree: writeIfFree, disconnect: disconnect)
    }

    /// Snapcast's clients (Home Assistant, Snapweb) cannot log in: from
    /// another machine, with a password set, they may only look, unless
    /// `--snapcast-control-open` trusts them (`--snapcast-unkeyed` is about
    /// snapclients joining the stream, not about control).
    private func level(address: String) -> ControlAccess.Level {
        if trustsEveryone { return .full }
        let level = leader.controlAccess.initialLevel(peerIsLoopback: ControlAccess.isLoopback(ControlLogin.host(of: address)))
        return level == .full ? .full : (leader.controlAccess.guestReadOnly ? .guest : .none)
    }

    func detach(_ client: SurfaceClient, reason: String = "connection closed") { clients.detach(client, reason: reason) }

    private func serve(_ connection: TCPConnection) {
        // Snapcast's clients cannot log in: one that may do nothing goes after 10 s.
        clients.serveLines(connection, surface: "Snapcast JSON-RPC", level: level(address: connection.peer),
                           stallMilliseconds: leader.surfaceSettings.clientStallMilliseconds,
                           accepting: { running.load(ordering: .acquiring) },
                           receive: { line, client in receive(line, from: client, onItsThread: true) },
                           lineTooLong: { client in
                               send(.one(.error(id: nil, code: -32700, message: "request line longer than \(LineDiscipline.maxLineBytes) bytes")),
                                    to: client, direct: true)
                           })
    }

    /// False: the message was no request at all (not JSON). `onItsThread`:
    /// called on the client's own reading thread, which may write the reply
    /// itself (`ClientWriter.reply`).
    @discardableResult
    func receive(_ message: [UInt8], from client: SurfaceClient, onItsThread: Bool = false) -> Bool {
        guard let reply = handle(message, level: client.level) else { return true }
        send(reply.bytes, to: client, direct: onItsThread)
        if case .one(let one) = reply { return one.errorCode != -32700 }
        return true
    }

    private func send(_ reply: Reply, to client: SurfaceClient, direct: Bool = false) {
        send(reply.bytes, to: client, direct: direct)
    }

    private func send(_ message: [UInt8], to client: SurfaceClient, key: String? = nil, direct: Bool = false) {
        var bytes = message
        if client.newlineFramed { bytes += [13, 10] } // CRLF: python-snapcast reads nothing until a line ends in it
        if direct { client.writer.reply(bytes) } else { client.writer.send(bytes, key: key) }
    }

    private func respond(_ request: WebRequest) -> WebResponse {
        guard request.path == "/jsonrpc" else { return .text(404, "Snapcast's control API is at /jsonrpc") }
        guard request.method == "POST" else { return .text(405, "POST a JSON-RPC request to /jsonrpc") }
        // JSON only (a cross-site form POST cannot send it without asking first, which is never allowed),
        // and not from another site's page: a page opened in the house must not drive the music.
        guard request.headers["content-type"]?.lowercased().hasPrefix("application/json") == true else {
            return .text(415, "send the JSON-RPC request with Content-Type: application/json")
        }
        if let refusal = request.crossSiteRefusal(log: log) { return refusal }
        guard let reply = handle(request.body, level: level(address: request.peer)) else { return WebResponse(status: 204) }
        return WebResponse(status: 200, headers: [("Content-Type", "application/json")], body: reply.bytes)
    }

    // Sendable because `control` is set once in SnapcastControl.init, before the web server that calls these methods starts, and `sockets` is under a Mutex.
    final class SnapcastPages: WebSocketHandler, @unchecked Sendable {
        weak var control: SnapcastControl?
        private let sockets = Mutex<[ObjectIdentifier: SurfaceClient]>([:])
        /// Snapcast's pages cannot log in: one that may do nothing goes after 10 s.
        let loginWatch = DeadlineWatch(name: "tutti-snap-login")
        func opened(_ socket: WebSocket) {
            guard let control else { return }
            let client = control.attach(peer: "Snapcast web \(socket.peer)", address: socket.peer, newlineFramed: false,
                                        write: { bytes in try socket.send(text: bytes) }, disconnect: { socket.close() })
            sockets.withLock { $0[ObjectIdentifier(socket)] = client }
            client.closeUnlessLoggedIn(watch: loginWatch) { socket.terminate() }
        }
        func received(_ message: [UInt8], on socket: WebSocket) {
            guard let client = sockets.withLock({ $0[ObjectIdentifier(socket)] }) else { return }
            control?.receive(message, from: client)
        }
        func closed(_ socket: WebSocket) {
            guard let client = sockets.withLock({ $0.removeValue(forKey: ObjectIdentifier(socket)) }) else { return }
            control?.detach(client)
        }
    }

    // MARK: Requests

    struct Failure: Error { var code: Int; var message: String }

    /// What a request or a batch of them is answered with.
    public enum Reply: Sendable {
        case one(RPCReply)
        case batch([RPCReply])

        public var bytes: [UInt8] {
            switch self {
            case .one(let reply): return reply.bytes
            case .batch(let replies):
                var out: [UInt8] = [UInt8(ascii: "[")]
                for (i, reply) in replies.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    reply.append(to: &out)
                }
                out.append(UInt8(ascii: "]"))
                return out
            }
        }
    }

    /// One request (or a batch); the reply, nil for notifications only.
    public func handle(_ bytes: [UInt8], level: ControlAccess.Level = .full) -> Reply? {
        if JSONNesting.exceeds(bytes) {
            return .one(.error(id: nil, code: -32600, message: "nested deeper than \(JSONNesting.limit) levels"))
        }
        guard let json = JSONValue.parsing(bytes) else {
            return .one(.error(id: nil, code: -32700, message: "Parse error"))
        }
        if let batch = json.array {
            guard batch.count <= 256 else { return .one(.error(id: nil, code: -32600, message: "batch of more than 256 requests")) }
            let replies = batch.compactMap { one($0, level: level) }
            return replies.isEmpty ? nil : .batch(replies)
        }
        return one(json, level: level).map(Reply.one)
    }

    private func one(_ json: JSONValue, level: ControlAccess.Level) -> RPCReply? {
        guard let request = json.object, let method = request["method"]?.string else {
            return .error(id: nil, code: -32600, message: "Invalid request")
        }
        let id = request["id"]
        let params = request["params"]?.object ?? [:]
        do {
            let looks = method.hasSuffix(".GetStatus") || method == "Server.GetRPCVersion"
            guard level == .full || (level == .guest && looks) else {
                throw Failure(code: -32001, message: "\(method): this leader has a password, and Snapcast clients on other machines cannot log in (snapcast-control-open trusts them)")
            }
            let result = try serverLock.withLock { try dispatch(method, params) }
            announceChanges() // the change's notifications go out before its reply, as snapserver sends them
            guard let id else { return nil }
            return RPCReply(id: id, outcome: .result(.value(result)))
        } catch let f as Failure {
            guard let id else { return nil }
            return .error(id: id, code: f.code, message: f.message)
        } catch {
            guard let id else { return nil }
            return .error(id: id, code: -32603, message: "\(error)")
        }
    }

    private func string(_ p: [String: JSONValue], _ key: String) throws -> String {
        guard let v = p[key]?.string, !v.isEmpty, v.utf8.count <= 1_024 else { throw Failure(code: -32602, message: "Invalid params: \"\(key)\" must be a string") }
        return v
    }

    private func knownRoom(_ p: [String: JSONValue]) throws -> String {
        let id = try string(p, "id")
        guard leader.knownRooms.contains(id) else { throw Failure(code: -32603, message: "Client not found: \(id)") }
        return id
    }

    /// A Snapcast group id: the Tutti group the room's home is in.
    private func groupRooms(_ id: String, in status: JSONValue) throws -> [String] {
        guard let g = Self.group(id, in: status) else { throw Failure(code: -32603, message: "Group not found: \(id)") }
        return (g["clients"]?.array ?? []).compactMap { $0["id"]?.string }
    }

    /// The Snapcast group `id` of a status tree.
    private static func group(_ id: String, in status: JSONValue) -> JSONValue? {
        status["server"]?["groups"]?.array?.first { $0["id"]?.string == id }
    }

    private func dispatch(_ method: String, _ p: [String: JSONValue]) throws -> JSONValue {
        func group(_ e: () throws(GroupError) -> Void) throws {
            do { try e() } catch { throw Failure(code: -32603, message: error.description) }
        }
        switch method {
        case "Server.GetRPCVersion":
            return ["major": 2, "minor": 0, "patch": 0]
        case "Server.GetStatus":
            return ["server": status()["server"] ?? .null]
        case "Server.DeleteClient":
            let room = try knownRoom(p)
            guard !leader.followerNames.contains(room) else { throw Failure(code: -32603, message: "Client \(room) is connected; only a client that is gone can be deleted") }
            leader.forget(room: room)
            return ["server": status()["server"] ?? .null]
        case "Client.GetStatus":
            let room = try knownRoom(p)
            return ["client": clientObject(room)]
        case "Client.SetVolume":
            let room = try knownRoom(p)
            guard let v = p["volume"]?.object else { throw Failure(code: -32602, message: "Invalid params: volume must be {\"percent\", \"muted\"}") }
            var s = leader.settings(of: room)
            if let percent = v["percent"]?.number {
                guard percent.isFinite, (0...100).contains(percent) else { throw Failure(code: -32602, message: "Invalid params: percent must be 0…100") }
                s.volume = UInt8(percent.rounded())
            }
            if let muted = v["muted"]?.bool { s.muted = muted }
            leader.configure(room: room, s)
            leader.forgetBalance(ofGroup: leader.group(ofRoom: room).id)
            return ["volume": ["percent": .int(s.volume), "muted": .bool(s.muted)]]
        case "Client.SetLatency":
            let room = try knownRoom(p)
            guard let ms = p["latency"]?.number, ms.isFinite, (-1_000...5_000).contains(ms) else {
                throw Failure(code: -32602, message: "Invalid params: latency must be milliseconds, −1000…5000")
            }
            var s = leader.settings(of: room)
            s.latencyTrimNanoseconds = Int64(ms.rounded()) * nanosecondsPerMillisecond
            leader.configure(room: room, s)
            return ["latency": .int(Int(ms.rounded()))]
        case "Client.SetName":
            let room = try knownRoom(p)
            guard let name = p["name"]?.string, name.utf8.count <= 256 else { throw Failure(code: -32602, message: "Invalid params: name must be a string") }
            names.withLock { $0[room] = name.isEmpty ? nil : name }
            return ["name": .string(name)]
        case "Group.GetStatus":
            let id = try string(p, "id")
            let s = status()
            guard let group = Self.group(id, in: s) else { throw Failure(code: -32603, message: "Group not found: \(id)") }
            return ["group": group]
        case "Group.SetMute":
            let id = try string(p, "id")
            guard let mute = p["mute"]?.bool else { throw Failure(code: -32602, message: "Invalid params: mute must be true or false") }
            for room in try groupRooms(id, in: status()) {
                var s = leader.settings(of: room)
                s.muted = mute
                leader.configure(room: room, s)
            }
            return ["mute": .bool(mute)]
        case "Group.SetName":
            let id = try string(p, "id")
            guard let name = p["name"]?.string, !name.isEmpty else { throw Failure(code: -32602, message: "Invalid params: name must be a non-empty string") }
            _ = try groupRooms(id, in: status())
            try group { () throws(GroupError) in _ = try leader.renameGroup(id, to: name) }
            return ["name": .string(name)]
        case "Group.SetStream":
            let id = try string(p, "id"), stream = try string(p, "stream_id")
            guard leader.groups.contains(where: { $0.id == stream }) else { throw Failure(code: -32603, message: "Stream not found: \(stream)") }
            let rooms = try groupRooms(id, in: status())
            try group { () throws(GroupError) in _ = try leader.moveRooms(rooms, to: stream) }
            // The rooms stay this Snapcast group's, now hearing another player (unless it is the group's own).
            homes.withLock { h in for room in rooms { h[room] = stream == id ? nil : (id, stream) } }
            return ["stream_id": .string(stream)]
        case "Group.SetClients":
            let id = try string(p, "id")
            guard let wanted = p["clients"]?.strings, wanted.count <= 256 else { throw Failure(code: -32602, message: "Invalid params: clients must be a list of client ids") }
            let known = Set(leader.knownRooms)
            if let unknown = wanted.first(where: { !known.contains($0) }) { throw Failure(code: -32603, message: "Client not found: \(unknown)") }
            let s = status()
            let before = try groupRooms(id, in: s)
            let target = homes.withLock { h in before.compactMap { h[$0]?.stream }.first } ?? id
            try group { () throws(GroupError) in
                if !wanted.isEmpty { _ = try leader.moveRooms(wanted, to: target) }
                for room in before where !wanted.contains(room) { _ = try leader.separate(room: room) }
            }
            homes.withLock { h in
                for room in before where !wanted.contains(room) { h[room] = nil }
                for room in wanted { h[room] = target == id ? nil : (id, target) }
            }
            return ["server": status()["server"] ?? .null]
        case "Stream.Control":
            let stream = try string(p, "id"), command = try string(p, "command")
            let args = p["params"]?.object ?? [:]
            let player: PlayerCommand
            switch command {
            case "play": player = .play
            case "pause": player = .pause
            case "playPause": player = .toggle
            case "stop": player = .stop
            case "next": player = .next
            case "previous": player = .previous
            case "seek":
                guard let offset = args["offset"]?.number, offset.isFinite else { throw Failure(code: -32602, message: "Invalid params: seek needs \"offset\" (seconds)") }
                player = .seekBy(seconds: offset)
            case "setPosition":
                guard let position = args["position"]?.number, position.isFinite, position >= 0 else { throw Failure(code: -32602, message: "Invalid params: setPosition needs \"position\" (seconds)") }
                player = .seek(seconds: position)
            default:
                throw Failure(code: -32602, message: "Invalid params: unknown command \(command) (play, pause, playPause, stop, next, previous, seek, setPosition)")
            }
            do { _ = try leader.perform(player, group: stream) } catch { throw Failure(code: -32603, message: error.description) }
            return "ok"
        case "Stream.SetProperty":
            let stream = try string(p, "id"), property = try string(p, "property")
            let value = p["value"]
            let player: PlayerCommand
            switch (property, value) {
            case ("shuffle", .bool(let on)?): player = .shuffle(on)
            case ("loopStatus", .string(let mode)?):
                guard let m = ["none": RepeatMode.off, "track": .one, "playlist": .all][mode] else { throw Failure(code: -32602, message: "Invalid params: loopStatus is none, track or playlist") }
                player = .repeatMode(m)
            case ("volume", .number(let v)?):
                let rooms = leader.groups.first { $0.id == stream }?.rooms ?? []
                for (room, volume) in zip(rooms, GroupVolume.scaled(balance: leader.balance(ofGroup: stream, rooms: rooms), to: UInt8(max(0, min(100, v.isFinite ? v.rounded() : 0))))) {
                    var s = leader.settings(of: room); s.volume = volume; leader.configure(room: room, s)
                }
                return "ok"
            case ("mute", .bool(let m)?):
                for room in leader.groups.first(where: { $0.id == stream })?.rooms ?? [] {
                    var s = leader.settings(of: room); s.muted = m; leader.configure(room: room, s)
                }
                return "ok"
            default:
                throw Failure(code: -32602, message: "Invalid params: property \(property) cannot be set to that (shuffle, loopStatus, volume, mute)")
            }
            do { _ = try leader.perform(player, group: stream) } catch { throw Failure(code: -32603, message: error.description) }
            return "ok"
        default:
            throw Failure(code: -32601, message: "Method not found")
        }
    }

    // MARK: The status tree

    private func clientObject(_ room: String) -> JSONValue {
        let s = leader.settings(of: room)
        let connected = leader.followerNames.contains(room)
        let now = Date().timeIntervalSince1970
        return [
            "id": .string(room), "connected": .bool(connected),
            "config": ["instance": 1, "latency": .int(Int((Double(s.latencyTrimNanoseconds) / 1e6).rounded())), "name": .string(names.withLock { $0[room] } ?? ""),
                       "volume": ["muted": .bool(s.muted), "percent": .int(s.volume)]],
            "host": ["arch": "", "ip": "", "mac": "", "name": .string(room), "os": ""],
            "lastSeen": ["sec": .int(Int(now)), "usec": .int(Int((now - now.rounded(.down)) * 1e6))],
            "snapclient": ["name": "Snapclient", "protocolVersion": 2, "version": .string(Self.snapserverVersion)],
        ]
    }

    /// The whole tree as Server.GetStatus gives it.
    func status() -> JSONValue {
        let groups = leader.groups
        // Rooms moved by Group.SetStream still belong to their Snapcast group while they hear the stream they were sent to.
        let current = Dictionary(uniqueKeysWithValues: groups.flatMap { g in g.rooms.map { ($0, g.id) } })
        let homesNow = homes.withLock { h -> [String: (group: String, stream: String)] in
            for (room, home) in h where current[room] != home.stream { h[room] = nil }
            return h
        }
        var members: [String: [String]] = [:]
        var streamOf: [String: String] = [:]
        for g in groups {
            for room in g.rooms {
                let snapGroup = homesNow[room]?.group ?? g.id
                members[snapGroup, default: []].append(room)
                streamOf[snapGroup] = g.id
            }
        }
        let snapGroups: [JSONValue] = members.keys.sorted().map { id in
            let rooms = members[id]!
            let name = groups.first { $0.id == id }?.name ?? id
            return ["id": .string(id), "name": .string(name), "stream_id": .string(streamOf[id] ?? id),
                    "muted": .bool(rooms.allSatisfy { leader.settings(of: $0).muted }),
                    "clients": .array(rooms.map(clientObject))]
        }
        let streams: [JSONValue] = groups.map { g in
            let now = g.nowPlaying
            let playback = now.state.isActive ? "playing" : (now.state == .paused ? "paused" : "stopped")
            var metadata: [String: JSONValue] = [:]
            if let phone = leader.airPlayNowPlaying(group: g.id) {
                // A phone plays through AirPlay (MPRIS-style keys, as Snapcast's own metadata).
                metadata["title"] = .string(phone.title ?? phone.source)
                if let a = phone.artist { metadata["artist"] = [.string(a)] }
                if let a = phone.album { metadata["album"] = .string(a) }
                if let d = phone.durationSeconds { metadata["duration"] = .number(d) }
                if let id = phone.artworkID { metadata["artUrl"] = .string("/art/" + id) }
            } else if let library = leader.library, !now.path.isEmpty, let t = try? library.track(atPath: now.path) {
                metadata["title"] = .string(t.title)
                if let a = t.artist { metadata["artist"] = [.string(a)] }
                if let a = t.album { metadata["album"] = .string(a) }
            } else if !now.path.isEmpty {
                metadata["title"] = .string(leader.metadata(ofStream: now.path)?.title ?? PathText.title(now.path))
            }
            if let d = now.durationSeconds { metadata["duration"] = .number(d) }
            let loop = ["off": "none", "one": "track", "all": "playlist"][now.repeatMode.rawValue] ?? "none"
            let properties: JSONValue = [
                "playbackStatus": .string(playback), "loopStatus": .string(loop), "shuffle": .bool(now.shuffle),
                "position": .number((now.positionSeconds * 1000).rounded() / 1000),
                "canControl": true, "canGoNext": .bool(now.trackCount > 0), "canGoPrevious": .bool(now.trackCount > 0),
                "canPlay": .bool(now.trackCount > 0), "canPause": true, "canSeek": .bool(now.durationSeconds != nil), "metadata": .object(metadata),
            ]
            return ["id": .string(g.id), "status": now.state.isActive ? "playing" : "idle", "properties": properties,
                    "uri": ["raw": "tutti:///\(g.id)?name=\(g.name)", "scheme": "tutti", "host": "", "path": "/\(g.id)", "fragment": "",
                            "query": ["name": .string(g.name), "codec": .string(codecName), "sampleformat": "48000:16:2"]]]
        }
        let host = ProcessInfo.processInfo.hostName
        let server: JSONValue = [
            "host": ["arch": "", "ip": "", "mac": "", "name": .string(host), "os": "Linux"],
            "snapserver": ["controlProtocolVersion": 1, "name": "Snapserver", "protocolVersion": 1, "version": .string(Self.snapserverVersion)],
        ]
        return ["server": ["groups": .array(snapGroups), "server": server, "streams": .array(streams)]]
    }

    // MARK: Notifications

    /// Compares the status with the last announced one and sends what changed.
    private func announceChanges() {
        let after = status()
        let before = last.withLock { l -> JSONValue? in defer { l = after }; return l }
        guard let before else { return }
        for (method, params) in Self.changes(from: before, to: after) {
            let message = RPCNotification(method: method, params: params).bytes
            let key = method == "Server.OnUpdate" ? method : nil // a newer whole tree replaces a waiting one
            for c in clients.all where c.level > .none { send(message, to: c, key: key) }
        }
    }

    /// What Snapcast notifications take `before` to `after`: Server.OnUpdate
    /// when groups or their members changed, else one per changed field.
    static func changes(from before: JSONValue, to after: JSONValue) -> [(String, JSONValue)] {
        func tree(_ s: JSONValue) -> (groups: [JSONValue], streams: [JSONValue]) {
            (s["server"]?["groups"]?.array ?? [], s["server"]?["streams"]?.array ?? [])
        }
        let (g0, s0) = tree(before), (g1, s1) = tree(after)
        func id(_ v: JSONValue) -> String { v["id"]?.string ?? "" }
        func shape(_ groups: [JSONValue]) -> [String] {
            groups.map { g in id(g) + "=" + (g["clients"]?.array ?? []).map(id).joined(separator: ",") }
        }
        if shape(g0) != shape(g1) || s0.map(id) != s1.map(id) {
            return [("Server.OnUpdate", ["server": after["server"] ?? .null])]
        }
        var out: [(String, JSONValue)] = []
        for (a, b) in zip(g0, g1) {
            let gid = b["id"] ?? .null
            if a["muted"] != b["muted"] { out.append(("Group.OnMute", ["id": gid, "mute": b["muted"] ?? .null])) }
            if a["name"] != b["name"] { out.append(("Group.OnNameChanged", ["id": gid, "name": b["name"] ?? .null])) }
            if a["stream_id"] != b["stream_id"] { out.append(("Group.OnStreamChanged", ["id": gid, "stream_id": b["stream_id"] ?? .null])) }
            for (ca, cb) in zip(a["clients"]?.array ?? [], b["clients"]?.array ?? []) {
                let cid = cb["id"] ?? .null
                let fa = ca["config"], fb = cb["config"]
                if ca["connected"] != cb["connected"] {
                    out.append((cb["connected"]?.bool == true ? "Client.OnConnect" : "Client.OnDisconnect", ["id": cid, "client": cb]))
                }
                if fa?["volume"] != fb?["volume"] { out.append(("Client.OnVolumeChanged", ["id": cid, "volume": fb?["volume"] ?? .null])) }
                if fa?["latency"] != fb?["latency"] { out.append(("Client.OnLatencyChanged", ["id": cid, "latency": fb?["latency"] ?? .null])) }
                if fa?["name"] != fb?["name"] { out.append(("Client.OnNameChanged", ["id": cid, "name": fb?["name"] ?? .null])) }
            }
        }
        // The position moves by itself: a stream's properties changed when anything but it did.
        func stable(_ p: JSONValue?) -> JSONValue? { p?.object.map { var d = $0; d["position"] = nil; return .object(d) } }
        for (a, b) in zip(s0, s1) where stable(a["properties"]) != stable(b["properties"]) {
            out.append(("Stream.OnProperties", ["id": b["id"] ?? .null, "properties": b["properties"] ?? .null]))
        }
        return out
    }
}
