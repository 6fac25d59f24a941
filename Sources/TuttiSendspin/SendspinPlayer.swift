import Synchronization
import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiSystem
import TuttiWeb
import TuttiControlKit

/// One Sendspin client on its WebSocket: a player is a Tutti room
/// (`SurfaceRoom`), a controller commands its group, a metadata client is
/// told what plays. Its transport security is its `channel`: Noise
/// `KKpsk2` for a client that starts with `client/init` (then the server
/// speaks first: `server/hello`, the client's hello, `server/activate`), or
/// plain for a legacy client that starts with a text `client/hello` (only
/// where the leader's speakers are open).
///
/// An encrypted client that is neither paired nor approved by a person is
/// activated with no roles and shows as "wants to join" in the speakers
/// list; once a person allows it, it is activated again with its roles and
/// becomes a room, on the same connection.
///
/// Threads: `received` comes on the socket's handler lane, one message at a
/// time; `deliver` on the group's source thread or a control thread;
/// `refresh` on the server's notifier thread. What the client is sent goes
/// through a bounded `ClientWriter` (its own thread while something
/// waits), except the answer to `client/time`, which is written at once by
/// the thread that read the request, its send time stamped under the
/// socket's write lock: never queued behind audio.
// Sendable because the mutable state is in `state` and `channel` (Mutexes) and `encrypted` (an atomic); the rest is immutable.
final class SendspinPlayer: SurfaceRoom, @unchecked Sendable {
    var kind: SurfaceRoomKind { .sendspinPlayer }
    let socket: WebSocket
    let leader: any LeaderControl
    let log: Logger
    private let server: SendspinIdentity
    private let channel: Mutex<SendspinServerChannel>
    /// Set once the Noise handshake is done; a client that started in the clear speaks
    /// the wire before spec #177: 9-byte audio headers, no `send_ahead`.
    private let encrypted = Atomic(false)
    private var legacyWire: Bool { !encrypted.load(ordering: .acquiring) }
    let trust: SendspinTrustStore
    /// When the connection opened (monotonic ns): one without a finished handshake 30 s on is closed.
    let openedAt = Condition.now()
    private var writer: ClientWriter!
    let state = Mutex(State())
    /// Chunks already sent, kept about one buffer back, to send again after a `stream/clear`.
    static let keptChunks = 64

    struct State {
        var hello: SendspinHello?
        /// The client the handshake authenticated (nil: plain, or not yet).
        var peer: SendspinPeer?
        /// Its roles are active (always, for a plain client; for an encrypted one once paired or allowed).
        var admitted = false
        var room: String?
        var format: SendspinAudioFormat?
        var streamID: UInt32 = 0
        var streaming = false
        var closed = false
        var attached = false
        var settings: RoomSettings?
        var reportedState = false
        var sentState: String?
        var sentGroup: String?
        var encoder: SendspinAudioEncoder?
        var sent: [(pts: Int64, frame: [UInt8])] = []
        /// The player's start-up lead (`required_lead_time_ms`, ns): after a `stream/start` or
        /// `stream/clear`, chunks that would play sooner than this after it are not sent.
        var requiredLead: Int64 = 0
        /// When the last `stream/start` or `stream/clear` went (monotonic ns).
        var restartedAt: Int64 = 0
        /// The artwork channels the client wants (from its `client/state`, or its hello).
        var artwork: [SendspinArtworkChannel] = []
        /// The channels last told in an artwork `stream/start` (nil: none yet).
        var artworkStarted: [SendspinArtworkChannel]?
        /// What each channel was last sent: a cover's key, or "" for cleared.
        var artworkSent: [Int: String] = [:]
        /// The Pairing PSK attempt of a client admitted under its staged pairing PSK.
        var pairing: PairingAttempt?
        /// The pairing-code attempt of an unpaired client that offers a code method (one per connection).
        var code: SendspinCodePairing?
        /// The person's code this connection took, until its round has an outcome.
        var codeOffer: UInt64?
        /// When the code attempt stored its record: the connection closes `pairedCloseNanoseconds` later.
        var codeFinishedAt: Int64?
        /// When the attempt noted its join request (monotonic ns), to withdraw that request when the connection ends.
        var codeSince: Int64?
    }

    /// One attempt: the pairing `server/activate` went at `since` (monotonic ns).
    struct PairingAttempt {
        var index = 1
        var since: Int64
        var initSeen = false
        /// The long-term PSK is stored and acknowledged: the connection ends shortly, and the client comes back under it.
        var finishedAt: Int64?
    }

    /// How long a client has for `client/pair-init` after the pairing `server/activate`, and for the whole
    /// attempt (aiosendspin's server bounds: 60 s and 180 s).
    static let pairInitSeconds: Int64 = 60
    static let pairAttemptSeconds: Int64 = 180
    /// After `server/pair-finalize`, the connection closes this much later (the client has stored its record by then),
    /// and the client reconnects under its long-term PSK: Tutti does not re-handshake on the open connection.
    static let pairedCloseNanoseconds: Int64 = 2_000_000_000

    /// Wakes the server's notifier thread (which calls `refresh`).
    let poke: @Sendable () -> Void

    init(socket: WebSocket, leader: any LeaderControl, server: SendspinIdentity, channel: SendspinServerChannel, trust: SendspinTrustStore,
         log: Logger, threads: ThreadGroup, poke: @escaping @Sendable () -> Void) {
        self.socket = socket
        self.poke = poke
        self.leader = leader
        self.server = server
        self.log = log
        self.channel = Mutex(channel)
        self.trust = trust
        let settings = leader.surfaceSettings
        writer = ClientWriter(peer: "Sendspin \(socket.peer)", limits: settings.outboxLimits, log: log,
                              write: { [weak self] bytes in try self?.write(bytes) }, threads: threads,
                              disconnect: { [socket] in socket.terminate() })
    }

    var roomName: String? { state.withLock { $0.admitted ? $0.room : nil } }

    /// When to give up on a handshake that has not finished, or end a pairing attempt; nil when nothing waits.
    var handshakeDeadline: Int64? {
        if !channel.withLock({ $0.isEstablished }) { return openedAt + Int64(SendspinServerChannel.handshakeTimeoutSeconds) * 1_000_000_000 }
        if let code = state.withLock({ s in s.code.map { (s.codeFinishedAt, $0.deadline) } }) {
            return code.0.map { $0 + Self.pairedCloseNanoseconds } ?? code.1
        }
        guard let p = state.withLock({ $0.pairing }) else { return nil }
        if let finished = p.finishedAt { return finished + Self.pairedCloseNanoseconds }
        return p.since + (p.initSeen ? Self.pairAttemptSeconds : Self.pairInitSeconds) * 1_000_000_000
    }

    /// Why `handshakeDeadline` closes the connection (for the log).
    var deadlineReason: String {
        guard channel.withLock({ $0.isEstablished }) else { return "no handshake in \(SendspinServerChannel.handshakeTimeoutSeconds) s" }
        if let reason = codeDeadlineReason { return reason }
        guard let p = state.withLock({ $0.pairing }) else { return "no deadline" }
        if p.finishedAt != nil { return "paired: it reconnects under its long-term PSK" }
        return p.initSeen ? "pairing did not finish in \(Self.pairAttemptSeconds) s" : "no client/pair-init in \(Self.pairInitSeconds) s"
    }
    var hello: SendspinHello? { state.withLock { $0.hello } }

    // MARK: Sending

    /// The writer's queue holds a kind byte (0 text, 1 binary) and the message.
    func queue(text: String) { writer.send([0] + Array(text.utf8)) }
    private func queue(binary: [UInt8]) { writer.send([1] + binary) }

    /// Seals a queued message and writes it, in order, under the channel's lock.
    private func write(_ item: [UInt8]) throws {
        guard let kind = item.first else { return }
        let body = Array(item.dropFirst())
        try channel.withLock { (channel) throws in
            let frames = kind == 0 ? channel.sealText(String(decoding: body, as: UTF8.self)) : channel.sealBinary(body)
            for case .sendRaw(let binary, let bytes) in frames { try socket.send { (binary, bytes) } }
        }
    }

    /// Answers `client/time` now, on the reading thread: `server_received`
    /// is when civetweb handed the request over, `server_transmitted` is
    /// read under the socket's write lock, just before the write.
    private func answerTime(clientTransmitted: Int64, arrival: Int64) {
        channel.withLock { channel in
            var rest: [SendspinChannelEvent] = []
            try? socket.send {
                let now = Condition.now() / 1_000
                var frames = channel.sealText(Sendspin.serverTime(clientTransmitted: clientTransmitted, received: arrival / 1_000, transmitted: now))
                guard let first = frames.first, case .sendRaw(let binary, let bytes) = first else { return (false, []) }
                frames.removeFirst()
                rest = frames
                return (binary, bytes)
            }
            for case .sendRaw(let binary, let bytes) in rest { try? socket.send { (binary, bytes) } }
        }
    }

    // MARK: What the client says

    func received(_ bytes: [UInt8], binary: Bool, arrival: Int64) {
        let (events, handshakeDone) = channel.withLock { ch -> ([SendspinChannelEvent], SendspinPeer?) in
            let before = ch.isEstablished
            let events = ch.received(binary: binary, bytes: bytes)
            return (events, !before && ch.isEstablished && !ch.isPlain ? ch.peer : nil)
        }
        if let peer = handshakeDone {
            // The encrypted path: the server speaks first.
            encrypted.store(true, ordering: .releasing)
            state.withLock { $0.peer = peer }
            for event in events { if case .sendRaw(let binary, let bytes) = event { try? socket.send { (binary, bytes) } } }
            queue(text: Sendspin.serverHello(name: server.name))
            return
        }
        for event in events {
            switch event {
            case .sendRaw(let binary, let bytes):
                try? socket.send { (binary, bytes) }
            case .message(let text):
                handle(Array(text.utf8), arrival: arrival)
            case .binary:
                break // a player sends no binary messages this server uses
            case .close(let code, let reason):
                log.info("Sendspin \(socket.peer): closing (\(code) \(reason))")
                socket.terminate()
            }
        }
    }

    private func handle(_ text: [UInt8], arrival: Int64) {
        let message: SendspinClientMessage
        do { message = try Sendspin.parse(text) } catch {
            log.info("Sendspin \(socket.peer): \(error); closing")
            socket.terminate()
            return
        }
        switch message {
        case .time(let t):
            answerTime(clientTransmitted: t, arrival: arrival)
        case .hello(let hello):
            welcome(hello)
        case .state(_, let volume, let muted, let requiredLead, let artwork):
            if let requiredLead { state.withLock { $0.requiredLead = requiredLead } }
            if let artwork, hello?.has("artwork") == true {
                // Scaled and sent by the notifier thread, never this one.
                state.withLock { $0.artwork = artwork }
                poke()
            }
            // The player's own volume or mute moved: the room's follows. Not its
            // first report: at joining, the room's volume is Tutti's, sent to it.
            let first = state.withLock { s -> Bool in defer { s.reportedState = true }; return !s.reportedState }
            guard !first, let room = roomName, volume != nil || muted != nil else { return }
            var settings = leader.settings(of: room)
            let wanted = RoomSettings(volume: volume.map { UInt8($0) } ?? settings.volume, muted: muted ?? settings.muted,
                                      latencyTrimNanoseconds: settings.latencyTrimNanoseconds)
            guard wanted != settings else { return }
            settings = wanted
            state.withLock { $0.settings = settings } // what it says it is: not sent back to it
            leader.configure(room: room, settings)
        case .command(let command):
            control(command)
        case .requestFormat(let format):
            guard let chosen = Sendspin.chooseFormat(offered: [format], opusAvailable: leader.streamCodec == .opus) else { return }
            state.withLock { s in
                s.format = chosen
                s.encoder = nil
                if s.streaming { s.streaming = false } // the next chunk starts the stream in the new format
            }
        case .goodbye(let reason):
            log.info("Sendspin \(roomName ?? socket.peer) said goodbye (\(reason))")
            socket.terminate()
        case .pairInit, .pairFinalize, .pairFinalizeWrapped, .pairAbort, .pairPending, .pairAuth, .pairConfirm, .pairRetry:
            if state.withLock({ $0.code != nil }) { return codeMessage(message) }
            switch message {
            case .pairInit(let index, let commitment): pairInit(index: index, commitment: commitment != nil)
            case .pairFinalize(let psk): pairFinalize(psk)
            case .pairAbort(let reason):
                guard state.withLock({ $0.pairing != nil }) else { return }
                log.info("Sendspin \(hello?.name ?? socket.peer) abandoned pairing (\(reason)); closing")
                socket.terminate()
            default: break // a pairing-code message with no code attempt here: a leftover
            }
        case .other:
            break
        }
    }

    private func welcome(_ received: SendspinHello) {
        var hello = received
        let peer = state.withLock { $0.peer }
        if let peer {
            hello.clientID = peer.id // the key the handshake proved, whatever the hello says
        } else if hello.clientID.isEmpty {
            log.info("Sendspin \(socket.peer): a plain client/hello without client_id; closing")
            return socket.terminate()
        }
        let format = hello.has("player") ? Sendspin.chooseFormat(offered: hello.formats, opusAvailable: leader.streamCodec == .opus) : nil
        let first = state.withLock { s -> Bool in
            guard s.hello == nil else { return false }
            s.hello = hello
            s.format = format
            if hello.has("artwork") { s.artwork = hello.artworkChannels }
            if format != nil { s.room = Sendspin.roomName(hello) }
            return true
        }
        guard first else { return }
        if hello.has("player") && format == nil {
            log.warning("Sendspin \(hello.name) from \(socket.peer): none of its formats is one Tutti sends (48 kHz stereo PCM, FLAC or Opus); closing")
            socket.terminate()
            return
        }
        log.info("Sendspin \(hello.name) (\(hello.clientID.prefix(16))) from \(socket.peer): roles \(hello.activeRoles.joined(separator: ", "))" +
                 (format.map { ", \($0.codec.rawValue) \($0.bitDepth)-bit" } ?? "") + (legacyWire ? ", unencrypted" : ""))
        guard let peer else {
            // Plain: the hello is answered with one that names the roles (the leader's speakers are open).
            queue(text: Sendspin.serverHello(serverID: server.id, name: server.name, activeRoles: hello.activeRoles))
            return admit()
        }
        if peer.category == .pairing {
            // Admitted under the pairing PSK a person staged: it may only pair.
            return startPairing(hello)
        }
        if leader.speakersMode == .open && hello.unpairedAccess || trust.mayPlay(peer) {
            return admit()
        }
        waitForAPerson(hello, peer)
    }

    /// Its roles go active: a player becomes a room.
    private func admit() {
        let (hello, encrypted) = state.withLock { s -> (SendspinHello?, Bool) in
            guard !s.admitted, !s.closed else { return (nil, false) }
            s.admitted = true
            s.code = nil // allowed instead: the activation below ends the client's attempt too
            return (s.hello, s.peer != nil)
        }
        guard let hello else { return }
        if encrypted { queue(text: Sendspin.serverActivate(playback: true, activeRoles: hello.activeRoles)) }
        if let room = roomName {
            state.withLock { $0.attached = true }
            leader.attach(room: room, self)
        }
        refresh()
        poke() // artwork: from the notifier thread
    }

    /// Neither paired nor allowed: active with no roles, and shown to a person as wanting to join.
    private func waitForAPerson(_ hello: SendspinHello, _ peer: SendspinPeer) {
        if let method = hello.codeMethod, startCodePairing(hello, peer, method) { return }
        guard hello.unpairedAccess else {
            log.info("Sendspin \(hello.name) from \(socket.peer) is not paired and does not allow unpaired access: it can only pair")
            queue(text: Sendspin.serverActivate(playback: false, activeRoles: []))
            return
        }
        do {
            let new = try trust.noteJoinRequest(clientID: peer.id, name: hello.name, address: Sendspin.host(ofPeer: socket.peer), now: Monotonic.now())
            if new {
                log.info("Sendspin \(hello.name) from \(socket.peer) wants to join: allow it in the web app, or `tutti speakers allow \(hello.name)`")
                leader.events.emit(.speakers)
            }
            queue(text: Sendspin.serverActivate(playback: false, activeRoles: []))
        } catch {
            log.info("Sendspin \(hello.name) from \(socket.peer) may not join: \(error); closing")
            socket.terminate()
        }
    }

    // MARK: Pairing (the Pairing PSK method)

    /// A client that connected under its staged pairing PSK is activated for pairing only.
    private func startPairing(_ hello: SendspinHello) {
        state.withLock { $0.pairing = PairingAttempt(since: Condition.now()) }
        log.info("Sendspin \(hello.name) from \(socket.peer) connected with its pairing PSK: pairing")
        queue(text: Sendspin.serverActivatePairing(method: .pairingPSK))
        poke() // the notifier keeps the attempt's deadline
    }

    private func pairInit(index: Int, commitment: Bool) {
        let verdict = state.withLock { s -> String? in
            guard var p = s.pairing, p.finishedAt == nil else { return "" } // no attempt: a leftover, ignored
            if index < p.index { return "" }
            if index > p.index { return "client/pair-init names pairing activation \(index), ahead of the server's \(p.index)" }
            if commitment { return "client/pair-init carries commit_B, which the Pairing PSK method has not" }
            p.initSeen = true
            s.pairing = p
            return nil
        }
        guard let verdict, !verdict.isEmpty else { return }
        log.info("Sendspin \(socket.peer): \(verdict); closing")
        socket.terminate()
    }

    /// The client delivers its long-term PSK: stored on disk first, then acknowledged.
    private func pairFinalize(_ psk: [UInt8]?) {
        let ready = state.withLock { s -> (SendspinPeer, String)? in
            guard let p = s.pairing, p.initSeen, p.finishedAt == nil, let peer = s.peer else { return nil }
            return (peer, s.hello?.name ?? "")
        }
        guard let (peer, name) = ready else { return } // before its pair-init, or after: a leftover
        guard let psk else {
            log.info("Sendspin \(name) from \(socket.peer): client/pair-finalize without long_term_psk; closing")
            return socket.terminate()
        }
        do {
            try trust.finalizePairing(clientID: peer.id, psk: psk, method: .pairingPSK, name: name)
        } catch {
            log.warning("Sendspin \(name) from \(socket.peer): pairing not stored: \(error); closing")
            return socket.terminate()
        }
        state.withLock { $0.pairing?.finishedAt = Condition.now() }
        queue(text: Sendspin.serverPairFinalize())
        log.info("Sendspin \(name) (\(peer.id.prefix(16))) is paired (Pairing PSK); it plays once it reconnects under its long-term PSK")
        leader.events.emit(.speakers)
        poke()
    }

    /// A waiting client a person has since allowed is activated; one denied is closed.
    private func admitIfAllowed() {
        let waiting = state.withLock { s -> (SendspinPeer, String)? in
            guard !s.admitted, !s.closed, let peer = s.peer, let hello = s.hello else { return nil }
            return (peer, hello.name)
        }
        guard let (peer, name) = waiting else { return }
        if trust.mayPlay(peer) {
            log.info("Sendspin \(name) was allowed: it joins")
            return admit()
        }
        if trust.trust.requests.contains(where: { $0.clientID == peer.id && $0.decision == .deny }) {
            log.info("Sendspin \(name) was denied; closing")
            socket.terminate()
        }
    }

    private var groupID: String? {
        if let room = roomName { return leader.group(ofRoom: room).id }
        return nil // a controller without a player commands the main group
    }

    private func control(_ command: SendspinControllerCommand) {
        guard hello?.has("controller") == true, state.withLock({ $0.admitted }) else { return }
        let group = groupID ?? RoomGroups.mainID
        do {
            switch command {
            case .play: try leader.perform(.play, group: group)
            case .pause: try leader.perform(.pause, group: group)
            case .stop: try leader.perform(.stop, group: group)
            case .next: try leader.perform(.next, group: group)
            case .previous: try leader.perform(.previous, group: group)
            case .seek(let ms): try leader.perform(.seek(seconds: Double(ms) / 1_000), group: group)
            case .volume(let v): leader.setVolume(group: group, UInt8(v))
            case .mute(let m): leader.setMuted(group: group, m)
            case .repeatMode(let mode): try leader.perform(.repeatMode(RepeatMode(rawValue: mode) ?? .off), group: group)
            case .shuffle(let on): try leader.perform(.shuffle(on), group: group)
            case .switch: break // not offered in supported_commands
            }
        } catch {
            log.info("Sendspin \(roomName ?? socket.peer): \(command) refused: \(error)")
        }
    }

    // MARK: What the leader sends the room

    func deliver(_ message: Message) {
        switch message {
        case .chunk(let chunk):
            sendChunk(chunk)
        case .follow(let stream, let from):
            let changed = state.withLock { s -> Bool in
                defer { s.streamID = stream.streamID }
                return s.streamID != 0 && s.streamID != stream.streamID
            }
            if changed { clear(before: from.nanoseconds) }
            poke() // group/update from the notifier thread: never call the leader under its backlog lock
        case .flush(let stream, let from, _):
            guard state.withLock({ $0.streamID == stream }) else { return }
            clear(before: from.nanoseconds)
        case .streamEnd(let stream, _):
            let ended = state.withLock { s -> Bool in
                guard s.streamID == stream, s.streaming else { return false }
                s.streaming = false
                s.sent.removeAll()
                return true
            }
            if ended { queue(text: Sendspin.streamEnd(roles: ["player"])) }
        case .settings(let settings):
            let (previous, commands) = state.withLock { s -> (RoomSettings?, [String]) in
                defer { s.settings = settings }
                return (s.settings, s.hello?.playerCommands ?? [])
            }
            if previous?.volume != settings.volume, commands.contains("volume") { queue(text: Sendspin.playerCommand(volume: Int(settings.volume))) }
            if previous?.muted != settings.muted, commands.contains("mute") { queue(text: Sendspin.playerCommand(muted: settings.muted)) }
        default:
            break
        }
    }

    /// A cut at `from` (leader ns): the client drops all it holds
    /// (`stream/clear`), and is sent again what it held that still plays before the cut.
    private func clear(before from: Int64) {
        let now = Condition.now()
        let again: [[UInt8]] = state.withLock { s in
            guard s.streaming else { return [] }
            let kept = s.sent.filter { $0.pts > now && $0.pts < from }
            s.sent = kept
            return kept.map(\.frame)
        }
        guard state.withLock({ s in
            if s.streaming { s.restartedAt = now }
            return s.streaming
        }) else { return }
        queue(text: Sendspin.streamClear(roles: ["player"]))
        for frame in again { queue(binary: restamped(frame)) }
    }

    /// A kept frame's `send_ahead` as of now.
    private func restamped(_ frame: [UInt8]) -> [UInt8] {
        guard !legacyWire, frame.count >= 13 else { return frame }
        var f = frame
        let ts = f[1..<9].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let header = Sendspin.binaryHeader(type: Sendspin.audioChunkType, timestamp: ts, sendAhead: ts - Condition.now() / 1_000)
        f.replaceSubrange(0..<13, with: header)
        return f
    }

    private func sendChunk(_ chunk: Chunk) {
        var out: [[UInt8]] = []
        state.withLock { s in
            guard !s.closed, chunk.streamID == s.streamID, let format = s.format else { return }
            if s.encoder == nil {
                do { s.encoder = try SendspinAudioEncoder(format: format, streamCodec: leader.streamCodec) } catch {
                    log.error("Sendspin \(s.room ?? socket.peer): \(error)")
                    return
                }
            }
            guard let encoder = s.encoder else { return }
            if !s.streaming {
                s.streaming = true
                s.restartedAt = Condition.now()
                out.append([0] + Array(Sendspin.streamStart(player: format, codecHeader: encoder.codecHeader).utf8))
            }
            // A player that needs more lead than the group's commands give (Tutti's 100 ms) starts
            // in step a little later instead: what it could not start in time is not sent.
            guard chunk.pts.nanoseconds >= s.restartedAt + s.requiredLead else { return }
            let encoded: (pts: Int64, payload: [UInt8])?
            do { encoded = try encoder.encode(chunk) } catch {
                log.error("Sendspin \(s.room ?? socket.peer): \(error)")
                return
            }
            guard let encoded, !encoded.payload.isEmpty else { return }
            let ts = encoded.pts / 1_000
            let frame = Sendspin.binaryHeader(type: Sendspin.audioChunkType, timestamp: ts,
                                              sendAhead: legacyWire ? nil : ts - Condition.now() / 1_000) + encoded.payload
            s.sent.append((encoded.pts, frame))
            if s.sent.count > Self.keptChunks { s.sent.removeFirst(s.sent.count - Self.keptChunks) }
            out.append([1] + frame)
        }
        for item in out { writer.send(item) }
    }

    // MARK: State for controllers and metadata clients

    /// Sends `group/update` and `server/state` where they changed (the notifier thread, and after the hello).
    func refresh() {
        takeOfferedCode()
        admitIfAllowed()
        guard state.withLock({ $0.admitted }) else { return }
        refreshGroup()
        guard let hello, hello.has("controller") || hello.has("metadata") else { return }
        let group = groupID ?? RoomGroups.mainID
        let controller: JSONValue? = hello.has("controller")
            ? Sendspin.controllerState(volume: Int(leader.volume(ofGroup: group) ?? 0), muted: leader.muted(group: group)) : nil
        var metadata: JSONValue?
        if hello.has("metadata"), let playing = try? leader.nowPlaying(group: group) {
            metadata = SendspinMetadata.of(playing, leader: leader).json(timestamp: Condition.now() / 1_000)
        }
        // Compared without the timestamp: it moves every time.
        var key = controller?.serialized ?? ""
        if case .object(var m)? = metadata { m["timestamp"] = nil; key += JSONValue.object(m).serialized }
        let changed = state.withLock { s -> Bool in
            defer { s.sentState = key }
            return s.sentState != key
        }
        if changed { queue(text: Sendspin.serverState(metadata: metadata, controller: controller)) }
    }

    /// Sends each artwork channel the cover of what its group plays, scaled
    /// to the channel's size and format (`covers` scales once for all
    /// clients), where it changed; a track with no cover clears the channel.
    /// On the server's notifier thread only: scaling takes milliseconds.
    func refreshArtwork(_ covers: SendspinCovers) {
        guard let hello, hello.has("artwork") else { return }
        let wanted = state.withLock { s -> (channels: [SendspinArtworkChannel], start: Bool, single: Bool)? in
            guard s.admitted, !s.closed, !s.artwork.isEmpty else { return nil }
            let start = s.artworkStarted != s.artwork
            if start {
                s.artworkStarted = s.artwork
                s.artworkSent = [:]
            }
            return (s.artwork, start, !hello.artworkChannels.isEmpty)
        }
        guard let wanted else { return }
        if wanted.start { queue(text: Sendspin.streamStart(artwork: wanted.channels)) }
        let group = groupID ?? RoomGroups.mainID
        let path = (try? leader.nowPlaying(group: group))?.path ?? ""
        let album = path.isEmpty ? nil : (try? leader.library?.track(atPath: path))?.coverHash
        for (number, channel) in wanted.channels.enumerated() where channel.source != .none {
            // Only album covers are in the library: an artist channel stays clear.
            let cover = channel.source == .album ? album : nil
            let key = cover.map { "\($0) \(channel.width)x\(channel.height) \(channel.format)" } ?? ""
            let changed = state.withLock { s -> Bool in
                defer { s.artworkSent[number] = key }
                return s.artworkSent[number] != key
            }
            guard changed else { continue }
            let image = cover.flatMap { covers.image(hash: $0, channel: channel) } ?? []
            for message in Sendspin.artworkMessages(channel: number, timestamp: Condition.now() / 1_000, image: image,
                                                    singleMessage: wanted.single) {
                queue(binary: message)
            }
        }
    }

    private func refreshGroup() {
        guard hello != nil else { return }
        let id = groupID ?? RoomGroups.mainID
        let group = leader.groups.first { $0.id == id }
        let text = Sendspin.groupUpdate(state: group?.nowPlaying.state ?? .stopped, groupID: id, groupName: group?.name ?? id)
        let changed = state.withLock { s -> Bool in
            defer { s.sentGroup = text }
            return s.sentGroup != text
        }
        if changed { queue(text: text) }
    }

    // MARK: Ending

    /// The leader ends the room, or the socket closed.
    func close(reason: String) {
        let wasAttached = state.withLock { s -> Bool? in
            guard !s.closed else { return nil }
            s.closed = true
            defer { s.attached = false }
            return s.attached
        }
        guard let wasAttached else { return }
        endCodeAttempt(reason: reason)
        if wasAttached { leader.detach(self) }
        writer.close(reason: reason)
        socket.terminate()
    }
}

/// Who this server is, as `server/hello` says it.
struct SendspinIdentity: Sendable {
    var id: String
    var name: String
}
