import Synchronization
import TuttiAudio
import TuttiCore
import TuttiNet
import TuttiSystem

/// A Tutti speaker as a Sendspin player (`--sendspin-server URL`): it joins
/// a Sendspin server (Music Assistant, aiosendspin's) as a player. What the
/// server's messages mean is TuttiCore's `SendspinPlayerLink`; this is the
/// shell: the socket (`SendspinSocket`), a thread for time requests, and the
/// link's actions done on the speaker's own clock model, stream writer and
/// playout engine, exactly as for a Tutti leader.
extension Follower {
    /// A server that says nothing for this long (it answers time requests ten times a second) is gone.
    static let sendspinSilenceMilliseconds = 10_000

    /// One connection to the Sendspin server (the configured one, or the one found over mDNS), until it ends.
    func sendspinSession() throws {
        let address = try configuration.sendspinServer ?? findSendspinServer()
        let conn = try TCPConnection.connect(to: Endpoint(host: address.host, port: address.port))
        connection.withLock { $0 = conn }
        defer {
            conn.close()
            connection.withLock { $0 = nil }
        }
        guard running.load(ordering: .relaxed) else { return }
        conn.setReceiveTimeout(milliseconds: Self.sendspinSilenceMilliseconds)
        let socket = SendspinSocket(connection: conn, side: .dialed(address), identity: identity)
        try socket.open()
        try runSendspinSession(socket, at: "\(address)", gate: nil)
    }

    /// What a session that a server dialed in (`--sendspin-listen`) must
    /// pass before it plays: `admit` at its first `server/activate` (the
    /// spec's arbitration between servers; false: it was refused and closed),
    /// `updated` at later ones, `deadline` for that first activation
    /// (monotonic ns), and `claim`/`release` around its use of the audio
    /// path (one session at a time; `claim` waits for a displaced one to leave).
    struct SendspinGate {
        var deadline: Int64
        var admit: (_ serverID: String, _ activities: [String]) -> Bool
        var updated: (_ activities: [String]) -> Void
        var claim: () -> Void
        var release: () -> Void
    }

    /// The session on an open socket: the link's messages and actions until
    /// the connection ends. With a `gate`, nothing of the audio path is
    /// touched until the gate admits the connection.
    func runSendspinSession(_ socket: SendspinSocket, at address: String, gate: SendspinGate?) throws {
        // The connection's own thread ends when it closes, and the time requests' with it.
        let conn = socket.connection
        let formats = configuration.sendspinFormats ?? SendspinPlayerLink.offered(outputBits: engine.sink.outputBits)
        let link = SharedLink(SendspinPlayerLink(configuration: SendspinPlayerLink.Configuration(name: configuration.name, formats: formats)))
        var writer: StreamWriter?
        var clockStarted = false
        var owning = false

        /// This session takes the audio path: clock model, stream writer, settings, `stop`'s farewell.
        func claim() {
            gate?.claim()
            owning = true
            if gate != nil { connection.withLock { $0 = conn } }
            // On stop, the server hears why the player leaves (`client/goodbye`) before the close.
            farewell.withLock { $0 = { [socket] in
                try? socket.send(SendspinPlayerLink.goodbye(reason: "shutdown"))
                socket.close(reason: "shutdown")
            } }
            estimator.withLock { $0.reset() }
        }
        defer {
            if owning {
                // A server that displaced this one, or a stop: what this one sent is not played on.
                if gate != nil, let id = writer?.streamID, let serverNow = clockModel.current()?.leaderTime(at: now()) {
                    try? writer?.flush(streamID: id, from: serverNow, fade: true)
                }
                writer = nil
                farewell.withLock { $0 = nil }
                if gate != nil { connection.withLock { if $0 === conn { $0 = nil } } }
                connectedAtomic.store(false, ordering: .releasing)
                gate?.release()
            }
        }
        if gate == nil { claim() }

        func perform(_ actions: [SendspinPlayerLink.Action]) throws {
            for action in actions {
                switch action {
                case .send(let text):
                    try socket.send(text)
                case .activated(let server):
                    log.info("Sendspin server '\(server)' at \(address): playing as '\(configuration.name)' (client id \(socket.clientID))")
                    connectedAtomic.store(true, ordering: .releasing)
                    connectionsAtomic.add(1, ordering: .relaxed)
                    lastError.withLock { $0 = nil }
                    if !clockStarted {
                        clockStarted = true
                        // Ends when the connection closes (the defer above).
                        startEssentialThread(name: "tutti-ss-clock") { [self] in sendspinClockLoop(socket, link: link) }
                    }
                case .waitingForApproval(let server):
                    connectedAtomic.store(false, ordering: .releasing)
                    log.info("Sendspin server '\(server)' has not allowed this speaker to play yet (client id \(socket.clientID)); waiting")
                case .begin(let stream, let format, let header):
                    // PCM and Opus are Tutti's own wire codecs (PCM at 24 bits too); FLAC goes through libFLAC, opened at the first FLAC stream.
                    let decoder: (any ChunkDecoder)? = format.codec == .flac ? try FLACChunkDecoder(header: header)
                        : format.codec == .pcm && format.bitDepth == 24 ? PCMDecoder(bitDepth: 24) : nil
                    writer = try StreamWriter(stream: stream, timeline: timeline, log: log, decoder: decoder) { [unowned self] n in concealedAtomic.add(n, ordering: .relaxed) }
                    log.info("Sendspin stream \(stream.streamID): \(format.codec.rawValue) \(format.sampleRate) Hz \(format.bitDepth) bit")
                case .chunk(let chunk):
                    releaseStartUpCodeWhenDue()
                    try writer?.chunk(chunk)
                case .clear(let id, let from):
                    try writer?.flush(streamID: id, from: from, fade: true)
                case .end(let id, let at):
                    try writer?.streamEnd(streamID: id, at: at)
                case .settings(let settings):
                    apply(settings)
                case .clockSample(let sample):
                    accept(sample, overStream: true)
                    if estimator.withLock({ $0.ready }) { try perform(link.state.withLock { $0.clockBecameReady() }) }
                case .group(let state, let name):
                    log.debug("Sendspin group '\(name ?? "?")': \(state ?? "?")")
                case .close(let reason):
                    socket.close(code: 1002, reason: String(reason.prefix(100)))
                    throw FollowerError.sendspin(reason)
                }
            }
        }

        /// Before the audio path is this session's, only the hello exchange may run; at the first activation the gate decides.
        func admitted(_ actions: [SendspinPlayerLink.Action], activationsBefore: Int) throws -> Bool {
            guard let gate else { return true }
            let (activations, activities) = link.state.withLock { ($0.activations, $0.activities) }
            if owning {
                if activations > activationsBefore { gate.updated(activities) }
                return true
            }
            guard activations > 0 else {
                if Monotonic.now() > gate.deadline { throw FollowerError.sendspin("no server/activate within 30 s of the connection") }
                return true
            }
            guard gate.admit(socket.serverID ?? "", activities) else { return false }
            claim()
            return true
        }

        while running.load(ordering: .relaxed) {
            let next: (SendspinSocket.Received, arrival: Int64?)?
            do { next = try socket.next() } catch NetError.timedOut(let what) {
                // Waiting for a person to allow this speaker, the server may say nothing for minutes.
                if link.state.withLock({ $0.phase }) == .waitingForApproval { continue }
                throw NetError.timedOut(what)
            }
            guard let (message, arrival) = next else { break }
            let before = link.state.withLock { $0.activations }
            let actions: [SendspinPlayerLink.Action]
            switch message {
            case .text(let text):
                let local = arrival.map { localClock.local(fromReal: $0) }
                let serverNow = owning ? clockModel.current()?.leaderTime(at: now()) : nil
                actions = link.state.withLock { $0.received(text: text, arrival: local, serverNow: serverNow) }
            case .binary(let bytes):
                actions = link.state.withLock { $0.received(binary: bytes) }
            }
            guard try admitted(actions, activationsBefore: before) else { return }
            try perform(actions)
        }
        throw NetError.closed
    }

    /// Time requests, as `SendspinPlayerLink.timeRequestInterval` paces
    /// them, each stamped under the send lock just before it is written.
    private func sendspinClockLoop(_ socket: SendspinSocket, link: SharedLink) {
        var sent = 0
        while running.load(ordering: .relaxed) && !socket.connection.closed {
            do {
                try socket.send { [self] in
                    let t1 = now()
                    return link.state.withLock { $0.timeRequest(at: t1) }
                }
            } catch { return }
            sent += 1
            Monotonic.sleep(nanoseconds: SendspinPlayerLink.timeRequestInterval(sent: sent, ready: estimator.withLock { $0.ready }))
        }
    }
}

/// The link of one Sendspin session, shared by its connection thread and its clock thread.
final class SharedLink: Sendable {
    let state: Mutex<SendspinPlayerLink>
    init(_ link: SendspinPlayerLink) { state = Mutex(link) }
}
