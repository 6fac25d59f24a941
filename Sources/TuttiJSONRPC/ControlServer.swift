import Dispatch
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiAuth
import TuttiNet
import TuttiSystem
import TuttiControlKit

/// JSON-RPC 2.0 for the `tutti` client, programs and the web app (see
/// docs/api.md): over TCP, one JSON object per line, and over the web
/// app's WebSocket, one object per text frame (`WebSurface`). Every
/// successful change is also sent to every connected client as a
/// notification, so no client needs to poll.
///
/// No client can hold up another, or the leader: each has a bounded
/// outbox written by its own writer (`ClientWriter`). Changes reach this
/// server as `LeaderEvent`s; the emitter only marks them pending, and one
/// notifier thread builds each notification once and offers it to every
/// outbox, where it replaces an older one of the same kind still waiting.
///
/// Bad input never closes the connection: malformed JSON, unknown methods
/// and bad parameters get JSON-RPC error objects; a line longer than 64 KiB
/// is discarded with a parse error.
// Sendable because its mutable state is in Mutexes and Atomics, and `subscription` is written once in start(), before the threads that read it.
public final class ControlServer: Service, JSONRPCServing, @unchecked Sendable {
    public var serviceName: String { "JSON-RPC" }
    public static let maxLineBytes = LineDiscipline.maxLineBytes

    let leader: any LeaderControl
    private let listener: TCPListener?
    let log: Logger
    private let clients: SurfaceClients
    private let running = Atomic<Bool>(true)
    /// Changes not yet turned into notifications.
    private let pendingEvents = Mutex<Set<LeaderEvent>>([])
    /// The web app's artist and album lists, encoded, with the library's
    /// `contentVersion` they were made at: they change only with a scan.
    let browseCache = Mutex<[String: (version: Int, json: EncodedJSON)]>([:])
    private let notifierWake = DispatchSemaphore(value: 0)
    private let notifier = Mutex<JoinableThread?>(nil)
    /// The TCP port's accept loop and connections (none without a port).
    private let tcp = Mutex<TCPService?>(nil)

    private var subscription = 0

    /// Where a client from `address` ("HOST:PORT") starts.
    public func initialLevel(address: String) -> ControlAccess.Level {
        leader.controlAccess.initialLevel(peerIsLoopback: ControlAccess.isLoopback(ControlLogin.host(of: address)))
    }

    /// `endpoint` nil: no TCP port, only the clients attached by other surfaces (the web app).
    public init(leader: any LeaderControl, endpoint: Endpoint?, log: Logger) throws(NetError) {
        self.leader = leader
        self.log = log
        clients = SurfaceClients(limits: leader.surfaceSettings.outboxLimits, log: log)
        listener = try endpoint.map { e throws(NetError) in try TCPListener(endpoint: e) }
    }

    /// Every change, from any surface, becomes a notification: the
    /// emitter's thread only records it (it may be the source thread).
    private func announce(_ event: LeaderEvent) {
        pendingEvents.withLock { _ = $0.insert(event) }
        notifierWake.signal()
    }

    /// Builds each pending notification once and offers it to every client.
    private func notifierLoop() {
        while running.load(ordering: .relaxed) {
            notifierWake.wait()
            let events = pendingEvents.withLock { e -> Set<LeaderEvent> in defer { e.removeAll() }; return e }
            var sent = Set<String>()
            for event in LeaderEvent.allCases where events.contains(event) {
                let (method, params) = notification(for: event)
                guard sent.insert(method).inserted else { continue } // .player and .options are one notification
                notify(method, params())
            }
        }
    }

    private func notification(for event: LeaderEvent) -> (String, () -> JSONValue) {
        switch event {
        case .player, .options: ("player.changed", { .object(self.statusObject()) })
        case .queue: ("queue.changed", { self.queueObject() })
        case .mixer, .rooms: ("rooms.changed", { ["rooms": .array(self.roomsObject())] })
        case .groups: ("groups.changed", { self.groupsObject() })
        case .library: ("library.changed", { self.warmBrowseCache(); return [:] })
        case .playlists: ("playlists.changed", { [:] })
        case .speakers: ("speakers.changed", { self.speakersObject() })
        case .health:
            ("rooms.health", {
                // A stereo pair's health is its speakers', each by its own name.
                ["rooms": .array(self.roomsObject().flatMap { room -> [JSONValue] in
                    (room["speakers"]?.array ?? [room]).compactMap { r in r["health"].map { ["name": r["name"] ?? .null, "health": $0] } }
                })]
            })
        }
    }

    public var endpoint: Endpoint? { listener?.endpoint }
    /// JSON-RPC connections served at once.
    private let budget = ConnectionBudget(name: "JSON-RPC", limit: 256)
    /// `warmBrowseCache`: 0 idle, else a thread is making the lists (and more changes came).
    let browseWarming = Atomic<Int>(0)


    public func start() throws {
        subscription = leader.events.subscribe { [weak self] event in self?.announce(event) }
        let notifier = try JoinableThread(name: "tutti-notify") { [self] in notifierLoop() }
        self.notifier.withLock { $0 = notifier }
        guard let listener else { return }
        log.info("control (JSON-RPC) on \(listener.endpoint)")
        let tcp = TCPService("JSON-RPC", listener: listener, loop: leader.acceptLoop, budget: budget, log: log, threadName: "tutti-ctl-client",
                             closeConnections: { [clients] in clients.close(reason: "leader stopping") { $0.newlineFramed } },
                             serve: { [self] connection, _ in serve(connection) })
        try tcp.start()
        self.tcp.withLock { $0 = tcp }
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        leader.events.unsubscribe(subscription)
        notifierWake.signal()
        notifier.withLock { $0 }?.join()
        tcp.withLock { $0 }?.stop()
        clients.close(reason: "leader stopping")
    }

    /// Registers a client; its messages go through `write`, which must give
    /// up after about the stall limit. `disconnect` ends its connection.
    public func attach(peer: String, address: String, newlineFramed: Bool, write: @escaping ClientWriter.Write,
                writeIfFree: ClientWriter.WriteIfFree? = nil, disconnect: @escaping @Sendable () -> Void) -> SurfaceClient {
        clients.attach(peer: peer, address: address, level: initialLevel(address: address), newlineFramed: newlineFramed,
                       write: write, writeIfFree: writeIfFree, disconnect: disconnect)
    }

    public func detach(_ client: SurfaceClient, reason: String = "connection closed") { clients.detach(client, reason: reason) }

    /// How many clients are connected (all surfaces that carry JSON-RPC).
    public var clientCount: Int { clients.count }

    private func serve(_ connection: TCPConnection) {
        clients.serveLines(connection, surface: "JSON-RPC", level: initialLevel(address: connection.peer),
                           stallMilliseconds: leader.surfaceSettings.clientStallMilliseconds,
                           accepting: { running.load(ordering: .acquiring) },
                           receive: { line, client in receive(line, from: client, onItsThread: true) },
                           lineTooLong: { client in
                               send(.error(id: nil, code: -32700, message: "request line longer than \(Self.maxLineBytes) bytes"), to: client, direct: true)
                           })
    }

    /// One request from a client (a line, or a WebSocket message); the reply
    /// goes to its outbox. False: it was no JSON-RPC request at all.
    /// `onItsThread`: called on the client's own reader thread, which may
    /// write the reply itself (`ClientWriter.reply`).
    @discardableResult
    public func receive(_ message: [UInt8], from client: SurfaceClient, onItsThread: Bool = false) -> Bool {
        guard !message.allSatisfy({ $0 == 32 || $0 == 13 || $0 == 9 || $0 == 10 }) else { return true }
        let reply = handle(message, level: client.level, peer: client.address) { level, token in
            client.level = level
            client.token.withLock { $0 = token }
        }
        guard let reply else { return true }
        send(reply, to: client, direct: onItsThread)
        return reply.errorCode != -32700 && reply.errorCode != -32600
    }

    private func send(_ reply: RPCReply, to client: SurfaceClient, direct: Bool = false) {
        var bytes = reply.bytes
        if client.newlineFramed { bytes.append(UInt8(ascii: "\n")) }
        if direct { client.writer.reply(bytes) } else { client.writer.send(bytes) }
    }

    /// Sends a notification to every client. `key` (default: the method)
    /// says which waiting notification a newer one replaces.
    public func notify(_ method: String, _ params: JSONValue, key: String? = nil) {
        let bare = RPCNotification(method: method, params: params).bytes
        let line = bare + [UInt8(ascii: "\n")]
        // A client that has not logged in hears nothing of what plays.
        for c in clients.all where c.level > .none { c.writer.send(c.newlineFramed ? line : bare, key: key ?? method) }
    }

    // MARK: Requests

    /// A JSON-RPC error object to send back: its code and a message the user can act on.

    public func handle(_ request: [UInt8], level: ControlAccess.Level, peer: String, bearer: String?, language: Language?) -> RPCReply? {
        handle(request, level: level, peer: peer, bearer: bearer, language: language, login: { _, _ in })
    }

    /// One request from a client at `level`, connected from `peer`
    /// ("HOST:PORT"); `bearer`: the token a stateless request showed.
    /// `login` records a change of access (`auth.login`, `auth.logout`) and the token it came with.
    /// Errors are in the request's `lang`, else `language`, else English.
    public func handle(_ line: [UInt8], level: ControlAccess.Level = .full, peer: String = "", bearer: String? = nil,
                language: Language? = nil, login: (ControlAccess.Level, String?) -> Void = { _, _ in }) -> RPCReply? {
        let request: JSONRPCRequest
        switch JSONRPCRequest.parse(line) {
        case .request(let r): request = r
        case .invalid(let id, let code, let message): return .error(id: id, code: code, message: message)
        }
        let (id, method, params) = (request.id, request.method, request.params)
        let isNotification = id == nil
        let language = request.language ?? language ?? .english
        do {
            let result: RPCResult
            if method.hasPrefix("auth.") {
                result = .value(try authenticate(method, params, level: level, peer: peer, bearer: bearer, login: login))
            } else if ControlAccess.permits(level, method: method) {
                result = try dispatch(method, params)
            } else {
                throw RPCError(code: -32001, level == .guest ? UserMessage(.accessGuestOnlyLooks, ["method": method]) : UserMessage(.accessLoginFirst))
            }
            return id.map { RPCReply(id: $0, outcome: .result(result)) }
        } catch let e as RPCError {
            return isNotification ? nil : .error(id: id, code: e.code, message: e.text(in: language))
        } catch {
            return isNotification ? nil : .error(id: id, code: -32603, message: "\(error)")
        }
    }

    /// `auth.status`, `auth.login {password | token}`, `auth.logout {token}`
    /// and `auth.revokeAll`. Failures are counted per host (`ControlLogin`);
    /// over the limit the refusal is immediate, and nothing sleeps.
    private func authenticate(_ method: String, _ params: [String: JSONValue], level: ControlAccess.Level, peer: String, bearer: String?,
                              login: (ControlAccess.Level, String?) -> Void) throws -> JSONValue {
        let access = leader.controlAccess
        func refusal(_ failure: ControlLogin.Failure) -> RPCError {
            switch failure {
            case .limited: RPCError(code: -32002, failure.message)
            case .wrongPassword, .unknownToken: RPCError(code: -32001, failure.message)
            }
        }
        switch method {
        case "auth.status":
            return ["access": .string(level.name), "password": .bool(access.password != nil), "guest": .bool(access.guestReadOnly)]
        case "auth.login":
            if let password = params["password"]?.string, !password.isEmpty, password.utf8.count <= 1_024 {
                switch leader.login.login(password: password, peer: peer) {
                case .failure(let f): throw refusal(f)
                case .success(let token):
                    login(.full, token)
                    var result: [String: JSONValue] = ["access": .string(ControlAccess.Level.full.name)]
                    if let token { result["token"] = .string(token) }
                    return .object(result)
                }
            }
            if let token = params["token"]?.string, !token.isEmpty, token.utf8.count <= 1_024 {
                switch leader.login.login(token: token, peer: peer) {
                case .failure(let f): throw refusal(f)
                case .success:
                    login(.full, token)
                    return ["access": .string(ControlAccess.Level.full.name)]
                }
            }
            throw RPCError(code: -32602, UserMessage(.loginNeedsPassword))
        case "auth.logout":
            // The token named, or the one this request came with.
            guard let token = params["token"]?.string ?? bearer, !token.isEmpty, token.utf8.count <= 1_024 else {
                throw RPCError(code: -32602, message: "auth.logout needs \"token\" (the one auth.login returned)")
            }
            let revoked = leader.login.logout(token: token)
            demote { $0 == token }
            let after = initialLevel(address: peer)
            login(after, nil)
            return ["revoked": .bool(revoked), "access": .string(after.name)]
        case "auth.revokeAll":
            guard level == .full else {
                throw RPCError(code: -32001, message: "auth.revokeAll: log in first (auth.login {\"password\"})")
            }
            let count = leader.login.revokeAll()
            demote { $0 != nil }
            return ["revoked": .int(count)]
        default:
            throw RPCError(code: -32601, message: "no method \(method)")
        }
    }

    /// Clients that logged in with a token `matches` picks go back to where they started.
    private func demote(_ matches: (String?) -> Bool) {
        for c in clients.all where c.token.withLock({ matches($0) }) {
            c.token.withLock { $0 = nil }
            c.level = initialLevel(address: c.address)
        }
    }

    private func number(_ params: [String: JSONValue], _ key: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let raw = params[key] else { return nil }
        guard let v = raw.number else { throw RPCError(code: -32602, UserMessage(.requestNotANumber, ["key": key])) }
        guard v.isFinite, range.contains(v) else {
            throw RPCError(code: -32602, UserMessage(.requestOutOfRange, ["key": key, "value": "\(v)",
                                                                          "low": "\(range.lowerBound)", "high": "\(range.upperBound)"]))
        }
        return v
    }

    private func dispatch(_ method: String, _ params: [String: JSONValue]) throws -> RPCResult {
        // Player and queue methods act on one group's stream: "group" (id or name), default the main group.
        let group: String?
        switch params["group"] {
        case nil, .null?: group = nil
        case .string(let name)? where !name.isEmpty && name.utf8.count <= 256: group = name
        default: throw RPCError(code: -32602, UserMessage(.requestBadGroupParameter))
        }
        if let group, method.hasPrefix("player.") || method.hasPrefix("queue."), (try? leader.nowPlaying(group: group)) == nil {
            throw RPCError(code: -32602, GroupError.unknownGroup(group, known: leader.groups.map(\.name)).message)
        }
        func player(_ command: PlayerCommand) throws -> RPCResult {
            do {
                let outcome = try leader.perform(command, group: group) // announced to every client through the event hub
                // The reply says what is heard once the change is: transport changes
                // take effect a start latency ahead (100 ms), so wait that long.
                switch command {
                case .add, .move, .shuffle, .repeatMode, .single, .consume: break
                default:
                    let wait = outcome.effectiveAt - Monotonic.now()
                    if wait > 0 { Monotonic.sleep(nanoseconds: min(wait, nanosecondsPerSecond) + 2 * nanosecondsPerMillisecond) }
                }
                var result = statusObject(group: group)
                if !outcome.added.isEmpty { result["added"] = .array(outcome.added.map { .int($0) }) }
                // Monotonic nanoseconds: past 10^15 (11.6 days up) a Double would write them in exponent form, past 2^53 inexactly.
                return .object(result, encoded: ["acceptedAt": .integer(outcome.acceptedAt), "effectiveAt": .integer(outcome.effectiveAt)])
            } catch {
                throw RPCError(code: -32000, error.message)
            }
        }
        func index(_ key: String) throws -> Int {
            guard let v = try number(params, key, in: 0...1_000_000), v == v.rounded() else {
                throw RPCError(code: -32602, message: "\(method) needs \"\(key)\" (a queue position, 0-based)")
            }
            return Int(v)
        }
        switch method {
        case "player.play": return try player(.play)
        case "player.pause": return try player(.pause)
        case "player.toggle": return try player(.toggle)
        case "player.next": return try player(.next)
        case "player.previous": return try player(.previous)
        case "player.seek":
            // Any finite number: the player clamps it to the track (PlayerCommand.checked), as for MPD and Snapcast.
            if let raw = params["position"] {
                guard let v = raw.number, v.isFinite, v >= 0 else { throw RPCError(code: -32602, message: "position must be a number of seconds ≥ 0") }
                return try player(.seek(seconds: v))
            }
            if let raw = params["by"] {
                guard let v = raw.number, v.isFinite else { throw RPCError(code: -32602, message: "by must be a number of seconds (+ ahead, − back)") }
                return try player(.seekBy(seconds: v))
            }
            throw RPCError(code: -32602, message: "player.seek needs \"position\" (seconds) or \"by\" (± seconds)")
        case "player.stop": return try player(.stop)
        case "player.setSpeed":
            guard let speed = try number(params, "speed", in: PlaybackTempo.speedRange) else {
                throw RPCError(code: -32602, message: "player.setSpeed needs \"speed\": 0.5–2.0 (1 is normal)")
            }
            return try player(.speed(speed))
        case "player.setPitch":
            guard let pitch = try number(params, "semitones", in: PlaybackTempo.pitchRange) else {
                throw RPCError(code: -32602, message: "player.setPitch needs \"semitones\": −12…+12 (0 is normal)")
            }
            return try player(.pitch(semitones: pitch))
        case "player.shuffle":
            guard let on = params["on"]?.bool else {
                throw RPCError(code: -32602, message: "player.shuffle needs \"on\": true or false")
            }
            return try player(.shuffle(on))
        case "player.repeat":
            let mode: RepeatMode
            if let text = params["mode"]?.string {
                guard let m = RepeatMode(rawValue: text) else { throw RPCError(code: -32602, message: "mode must be off, all or one") }
                mode = m
            } else if params["mode"] == nil {
                mode = try leader.nowPlaying(group: group).repeatMode.next // no mode: cycle off → all → one
            } else {
                throw RPCError(code: -32602, message: "mode must be off, all or one")
            }
            return try player(.repeatMode(mode))
        case "player.single":
            // No mode: toggle on/off.
            let mode: SingleMode
            if let text = params["mode"]?.string, let m = SingleMode(rawValue: text) { mode = m }
            else if params["mode"] == nil { mode = try leader.nowPlaying(group: group).single == .off ? .on : .off }
            else { throw RPCError(code: -32602, message: "mode must be off, on or oneshot") }
            return try player(.single(mode))
        case "player.consume":
            guard let on = params["on"]?.bool else {
                throw RPCError(code: -32602, message: "player.consume needs \"on\": true or false")
            }
            return try player(.consume(on))
        case "player.status":
            return .value(.object(statusObject(group: group)))
        case "queue.list":
            return .value(queueObject(group: group))
        case "queue.add":
            guard let uris = try urisToAdd(params), !uris.isEmpty, uris.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 4_096 }) else {
                throw RPCError(code: -32602, message: "queue.add needs one of \"uris\" (file paths or URLs), \"trackIds\", \"album\", \"playlist\" or \"search\", resolving to at least one entry")
            }
            guard uris.count <= 10_000 else { throw RPCError(code: -32602, message: "at most 10000 entries per call") }
            for uri in uris {
                try confined(uri)
            }
            let next = params["next"]?.bool ?? params["next"]?.number.map { $0 != 0 } ?? false
            return try player(.add(uris: uris, next: next))
        case "queue.remove": return try player(.remove(index: try index("index")))
        case "queue.move": return try player(.move(from: try index("from"), to: try index("to")))
        case "queue.clear": return try player(.clear)
        case "queue.play": return try player(.playIndex(try index("index")))
        case "rooms.list":
            return .value(["rooms": .array(roomsObject())])
        case "rooms.set":
            guard let room = params["room"]?.string, !room.isEmpty else {
                throw RPCError(code: -32602, UserMessage(.requestNeedsRoom, ["method": method]))
            }
            var settings = leader.settings(of: room)
            if let v = try number(params, "volume", in: 0...100) { settings.volume = UInt8(v.rounded()) }
            if let raw = params["muted"] {
                guard let muted = raw.bool else { throw RPCError(code: -32602, UserMessage(.requestMutedTrueOrFalse)) }
                settings.muted = muted
            }
            if let ms = try number(params, "latencyMs", in: -1_000...5_000) { settings.latencyTrimNanoseconds = Int64(ms * 1e6) }
            leader.configure(room: room, settings)
            leader.forgetBalance(ofGroup: leader.group(ofRoom: room).id) // the room's own level is the new balance
            if let pair = leader.stereoPairList.first(where: { $0.name == room }) { return .value(pairObject(pair, health: leader.health)) }
            return .value(roomObject(room, settings: leader.settings(of: room), health: leader.health[room]))
        default:
            if let result = try dispatchSound(method, params) { return .value(result) }
            if let result = try dispatchLibrary(method, params) { return result }
            if let result = try dispatchCache(method, params) { return .value(result) }
            if let result = try dispatchPodcasts(method, params, group: group) { return .value(result) }
            if let result = try dispatchGroups(method, params) { return .value(result) }
            if let result = try dispatchSpeakers(method, params) { return .value(result) }
            if let result = try dispatchCalibration(method, params) { return .value(result) }
            throw RPCError(code: -32601, UserMessage(.requestUnknownMethod, ["method": method]))
        }
    }

    /// The state as clients see it: nothing queued is idle.
    static func stateName(_ now: NowPlaying) -> String { now.isIdle ? "idle" : now.state.rawValue }

    func statusObject(group: String? = nil) -> [String: JSONValue] {
        let now = (try? leader.nowPlaying(group: group)) ?? leader.nowPlaying
        var object: [String: JSONValue] = [
            "state": .string(Self.stateName(now)), "track": .int(now.track), "trackCount": .int(now.trackCount),
            "file": .string(now.path), "position": .number((now.positionSeconds * 1000).rounded() / 1000),
            "shuffle": .bool(now.shuffle), "repeat": .string(now.repeatMode.rawValue), "single": .string(now.single.rawValue),
            "consume": .bool(now.consume),
        ]
        if let id = now.entryID { object["id"] = .int(id) }
        if let failure = leader.saveFailure { object["warning"] = "the player state is not being saved: \(failure)" }
        // Title, artist, album and artwork from the library when the file is in it.
        if let phone = leader.airPlayNowPlaying(group: group) {
            // A phone plays through the group's AirPlay receiver: what it says it plays.
            object["source"] = .string(phone.source)
            object["title"] = .string(phone.title ?? phone.source)
            if let v = phone.artist { object["artist"] = .string(v) }
            if let v = phone.album { object["album"] = .string(v) }
            if let id = phone.artworkID { object["coverHash"] = .string(id) }
            if let p = phone.position(at: Monotonic.now()) { object["position"] = .number((p * 1000).rounded() / 1000) }
            if let d = phone.durationSeconds { object["duration"] = .number((d * 1000).rounded() / 1000) }
            object["live"] = true
        } else if let library = leader.library, !now.path.isEmpty, let track = try? library.track(atPath: now.path) {
            object["title"] = .string(track.title)
            if let v = track.artist { object["artist"] = .string(v) }
            if let v = track.album { object["album"] = .string(v) }
            if let v = track.coverHash { object["coverHash"] = .string(v) }
            object["trackId"] = .int(track.id.rawValue)
        } else if let podcasts = leader.podcastControl, podcasts.isEpisode(now.path), let episode = try? podcasts.library.episodes(playing: now.path).first {
            // A podcast episode: its title, and the show as the artist.
            object["title"] = .string(episode.title)
            if let show = try? podcasts.library.podcast(episode.podcast) { object["artist"] = .string(show.title) }
            object["episodeId"] = .int(episode.id.rawValue)
        } else if let meta = leader.metadata(ofStream: now.path) {
            // A radio stream: the station, and the title it announces (usually "Artist - Title").
            if let v = meta.stationName { object["station"] = .string(v) }
            if let v = meta.title { object["title"] = .string(v) } else if let v = meta.stationName { object["title"] = .string(v) }
        } else if PipeSourceSpec.isPipe(now.path), let pipe = try? PipeSourceSpec(parsing: now.path) {
            object["title"] = .string(pipe.name) // a player feeding a pipe (AirPlay, Spotify): the name it was given
        } else if LineInSpec.isLineIn(now.path), let line = try? LineInSpec(parsing: now.path) {
            object["title"] = .string(line.name) // a turntable, a TV: the name it was given
            object["live"] = true
        } else if !now.path.isEmpty {
            object["title"] = .string(PathText.title(now.path))
        }
        if let d = now.durationSeconds, object["live"] == nil {
            object["duration"] = .number((d * 1000).rounded() / 1000)
            // Positions are track time; at another speed the track ends sooner or later than that says.
            object["remaining"] = .number((max(0, d - now.positionSeconds) / now.speed * 1000).rounded() / 1000)
        }
        object["speed"] = .number(now.speed)
        object["pitch"] = .number(now.pitchSemitones)
        if let e = now.error { object["error"] = .string(e) }
        if let b = now.bufferedSeconds { object["bufferedSeconds"] = .number(b) }
        if let f = now.bufferedFraction { object["bufferedFraction"] = .number((f * 1000).rounded() / 1000) }
        return object
    }

    private func queueObject(group: String? = nil) -> JSONValue {
        let queue = (try? leader.queue(group: group)) ?? leader.queue
        let entries: [JSONValue] = queue.entries.enumerated().map { ["index": .int($0.offset), "id": .int($0.element.id), "uri": .string($0.element.uri)] }
        return ["entries": .array(entries), "playOrder": .array(queue.order.map { .int($0) }),
                "current": .int(((try? leader.nowPlaying(group: group)) ?? leader.nowPlaying).track)]
    }

    func roomsObject() -> [JSONValue] {
        let health = leader.health
        let connected = Set(leader.followerNames)
        let pairs = leader.stereoPairList
        return leader.knownRooms.map { name in
            if let pair = pairs.first(where: { $0.name == name }) { return pairObject(pair, health: health) }
            return roomObject(name, settings: leader.settings(of: name), health: health[name], connected: connected.contains(name))
        }
    }

    /// A stereo pair as one room: the shared volume, mute and EQ, and its two speakers, each with its side, trim and health.
    func pairObject(_ pair: StereoPair, health: [String: HealthReport]) -> JSONValue {
        let speakers = Set(leader.speakerNames)
        var object = roomObject(pair.name, settings: leader.settings(of: pair.name), health: nil,
                                connected: speakers.contains(pair.left) || speakers.contains(pair.right)).object ?? [:]
        object["channels"] = "pair"
        object["pair"] = ["left": .string(pair.left), "right": .string(pair.right)]
        object["speakers"] = .array(pair.speakers.map { speaker in
            var o = roomObject(speaker, settings: leader.settings(of: speaker), health: health[speaker], connected: speakers.contains(speaker)).object ?? [:]
            o["side"] = .string(speaker == pair.left ? "left" : "right")
            for key in ["eq", "reverb", "group", "groupName"] { o[key] = nil } // the pair's
            return .object(o)
        })
        return .object(object)
    }

    private func roomObject(_ name: String, settings: RoomSettings, health: HealthReport?, connected: Bool? = nil) -> JSONValue {
        let group = leader.group(ofRoom: name)
        var object: [String: JSONValue] = [
            "name": .string(name), "connected": .bool(connected ?? leader.followerNames.contains(name)), "volume": .int(settings.volume),
            "muted": .bool(settings.muted), "latencyMs": .number(Double(settings.latencyTrimNanoseconds) / 1e6), "group": .string(group.id),
            "groupName": .string(group.name), "eq": Self.eqObject(leader.equalizer(of: name)),
            "channels": .string(leader.channels(of: name).name), "reverb": Self.reverbObject(leader.reverb(of: name)),
        ]
        if let h = health {
            var fields: [String: JSONValue] = [
                "clockOffsetUs": .number(Double(h.clockOffsetNanoseconds) / 1e3), "clockSkewPpm": .number(Double(h.clockSkewPPB) / 1e3),
                "rttUs": .number(Double(h.roundTripNanoseconds) / 1e3), "bufferMs": .number(Double(h.bufferedNanoseconds) / 1e6),
                "outputErrorUs": .number(Double(h.outputErrorNanoseconds) / 1e3), "ratioPpm": .number(Double(h.resampleRatioPPB) / 1e3),
                "underruns": .int(h.underruns), "hardResyncs": .int(h.hardResyncs), "concealed": .int(h.concealedChunks),
            ]
            // v5 rooms: the clock's confidence and the arrival margin (the tail of the delay).
            if let sync = leader.syncHealth[name] {
                fields["clockUncertaintyUs"] = .number(Double(sync.clockUncertaintyNanoseconds) / 1e3)
                // Playing on a clock not yet sure to tens of µs (a link that queues): converging by steering.
                fields["settling"] = .bool(h.bufferedNanoseconds > 0 && sync.clockUncertaintyNanoseconds > ClockEstimator.Configuration().readyUncertainty)
                fields["clockSamples"] = .int(sync.clockSamples)
                fields["clockChannel"] = sync.clockChannel == .datagram ? "udp" : "tcp"
                fields["arrivalLeadMinMs"] = .number(Double(sync.arrivalLeadMinimumNanoseconds) / 1e6)
                fields["lateChunks"] = .int(sync.lateChunks)
                if let d = sync.streamDelayMaximumNanoseconds { fields["streamDelayMaxMs"] = .number(Double(d) / 1e6) } // v6
            }
            object["health"] = .object(fields)
        }
        return .object(object)
    }
}
