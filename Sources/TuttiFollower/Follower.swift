import Glibc
import Synchronization
import TuttiAudio
import TuttiAuth
import TuttiCore
import TuttiGestures
import TuttiNet
import TuttiSystem

/// How a follower is set up (`tuttid follower …`).
public struct FollowerConfiguration: Sendable {
    /// The room key shared with the leader (nil: none; the speaker then plays for any leader).
    public var roomKey: RoomKey? = nil
    /// A file holding the room key, read by `loadingRoomKey()` at start.
    public var roomKeyFile: String? = nil
    /// Where the speaker's key (`speaker.key`) and its paired leader's
    /// (`leader.pub`) are kept (nil: in memory, for this run only).
    public var stateDirectory: String? = nil
    /// `sudo tutti-follower pair`: show a six-digit code and pair with the leader it is typed into.
    public var pairByCode = false
    /// The leader's address (nil: find one over mDNS before every connection).
    public var leader: Endpoint? = nil
    /// With `leader` nil: the announced name of the leader to use (nil: the
    /// first by name among those found).
    public var leaderName: String? = nil
    /// Play for this Sendspin server instead of a Tutti leader (`--sendspin-server`).
    public var sendspinServer: SendspinServerAddress? = nil
    /// Play for a Sendspin server found over mDNS (`--sendspin-server mdns`), when `sendspinServer` is nil.
    public var sendspinDiscovery = false
    /// Wait for Sendspin servers to dial in here (`--sendspin-listen`), announced as `_sendspin._tcp`.
    public var sendspinListen: SendspinListenAddress? = nil
    /// The formats offered to a Sendspin server, preferred first (`--sendspin-codecs`);
    /// nil: as the output can carry them (`SendspinPlayerLink.offered(outputBits:)`).
    public var sendspinFormats: [SendspinAudioFormat]? = nil
    /// A Sendspin server's player rather than a Tutti leader's speaker.
    public var playsForSendspin: Bool { sendspinServer != nil || sendspinDiscovery || sendspinListen != nil }
    public var name = "follower"
    public var output = OutputSpec.alsa(device: "default")
    /// Who carries the room's volume: the samples, an ALSA mixer control, or nobody.
    public var volumeMixer = MixerSpec.software
    /// Test flags: read a simulated local clock offset and skewed from the real one.
    public var clockOffsetMilliseconds = 0.0
    public var clockSkewPPM = 0.0
    public var latencyMilliseconds = 0.0
    public var steering = true
    public var realtime = true
    /// A button mapping file (nil: no buttons).
    public var buttons: String? = nil
    /// The DAC's hardware mixer control (e.g. "Digital"), unmuted and set to
    /// 0 dB at start because the room's volume is applied in software; nil:
    /// leave the mixer alone.
    public var mixer: String? = nil
    /// The protocol version announced (tests use another to check refusal).
    public var protocolVersion = WireProtocol.version
    /// Unmap the program's start-up code 5 s into the first stream. Only for
    /// a process that is this one speaker: it unmaps the whole program's code,
    /// which in a process of many followers (tests, the demo) every one of
    /// them would do again, and every thread fault it back in.
    public var releasesStartUpCode = false

    public init() {}
}

/// Connects to a leader, keeps its clock model, decodes chunks into the
/// timeline and plays them through its sink; reconnects by itself.
///
/// Threads: the playout thread (see `PlayoutEngine`), a connection thread
/// (reads messages, decodes), and a sync thread per connection (sends clock
/// requests and health reports).
// Sendable because shared state is in Mutexes, Atomics and seqlocks, and `hardwareMixer` is used only by the connection thread (one connection at a time).
public final class Follower: @unchecked Sendable {
    public let configuration: FollowerConfiguration
    public let engine: PlayoutEngine
    let log: Logger
    /// Room for the longest buffer a leader allows (10 s) and then some; a
    /// stream only ever touches the part its own buffer needs.
    let timeline = AudioTimeline(seconds: 16)
    let clockModel = PublishedClockModel()
    let localClock: SimulatedClock
    let estimator = Mutex(ClockEstimator())
    /// When the last clock reply came as a datagram (monotonic ns, 0: none this session).
    private let lastDatagramReply = Atomic<Int64>(0)
    /// Lead of each chunk on arrival (connection thread writes, health reads).
    private let arrivalMargin = Mutex(ArrivalMargin())
    /// How late the TCP stream delivers, from the stream clock replies (v6).
    private let streamDelay = Mutex(StreamDelayTail())
    /// Whether the clock exchanges currently go over the TCP stream.
    private let clockOverStream = Atomic<Bool>(true)
    let running = Atomic<Bool>(true)
    let connection = Mutex<TCPConnection?>(nil)
    /// What `stop` says before it closes the connection: a Sendspin session's `client/goodbye`.
    let farewell = Mutex<(@Sendable () -> Void)?>(nil)
    /// With `--sendspin-listen`: the port servers dial (closed by `stop`).
    let sendspinListener = Mutex<TCPListener?>(nil)
    /// The last server that played here, without a state folder (the spec's tiebreak between servers).
    let memoryLastPlaybackServer = Mutex<String?>(nil)
    let connectedAtomic = Atomic<Bool>(false)
    let concealedAtomic = Atomic<Int>(0)
    let connectionsAtomic = Atomic<Int>(0)
    let lastError = Mutex<String?>(nil)
    private let roomSettings = Mutex(RoomSettings())
    private let roomEqualizer = Mutex(EqualizerSettings.flat)
    private let roomReverb = Mutex(ReverbSettings.off)
    /// The DAC's mixer control with `--mixer hw:CONTROL` (connection thread only).
    private let hardwareMixer: ALSAMixerControl?
    /// The version announced in hello: lowered once to an older leader's, so this speaker still plays there (without EQ).
    private let announcedVersion: Atomic<UInt16>
    /// The leader last found over mDNS, to log only changes (Follower+Discovery.swift).
    let foundLeader = Mutex<String?>(nil)
    let crypto = SodiumCrypto()
    /// This speaker's static key (from `stateDirectory`, or made for this run).
    let identity: StaticKey
    /// The paired leader's key when there is no state folder (in memory).
    private let memoryPin = Mutex<[UInt8]?>(nil)
    /// The legacy room key, stretched once (nil: none).
    private let psk: [UInt8]?
    /// `pairByCode`: the code this run shows (nil otherwise).
    public let pairingCode: String?
    private let pairedAtomic = Atomic<Bool>(false)
    private let pairingEnded = Mutex<String?>(nil)
    /// Announced leaders that failed to prove their key, until when (Follower+Discovery.swift).
    let distrusted = Mutex<[String: Int64]>([:])
    /// Clock requests sent and not yet answered (sync thread writes, receivers match).
    private let outstanding = Mutex(OutstandingClockRequests())

    public init(configuration: FollowerConfiguration, log: Logger) throws(AudioError) {
        self.configuration = configuration
        self.log = log
        localClock = SimulatedClock(offset: Int64(configuration.clockOffsetMilliseconds * 1e6),
                                    skewPPM: configuration.clockSkewPPM, origin: Monotonic.now())
        announcedVersion = Atomic(configuration.protocolVersion)
        if case .hardware(let control) = configuration.volumeMixer {
            guard case .alsa(let device) = configuration.output else {
                throw .badOutput(spec: "hw:\(control)", reason: "--mixer hw:CONTROL needs an ALSA output (--output alsa:DEVICE)")
            }
            hardwareMixer = try ALSAMixerControl(device: device, control: control)
        } else {
            hardwareMixer = nil
        }
        let sink: any AudioSink
        if case .alsa(let device) = configuration.output {
            // A DAC may be absent at boot or unplugged later: wait for it, in step.
            sink = HotplugOutput(name: "alsa:\(device)", open: { () throws(AudioError) in try ALSASink(device: device) }) { [log] change in
                switch change {
                case .lost(let reason): log.error("\(reason); waiting for the DAC (trying again every 0.5 s)")
                case .back: log.info("alsa:\(device) is open again: playing on, in step with the other rooms")
                }
            }
        } else {
            sink = try configuration.output.open()
        }
        // The DAC's own volume at full scale: a HAT that boots muted or at
        // -100 dB is the classic "no sound"; the room's volume is ours, in software.
        if let mixer = configuration.mixer, case .alsa(let device) = configuration.output {
            try ALSAMixer(card: Doctor.mixerDevice(forPCM: device)).setFullScale(mixer)
            log.info("mixer control '\(mixer)' unmuted at 0 dB")
        } else if configuration.mixer != nil {
            log.info("mixer: ignored for \(configuration.output) (not an ALSA device)")
        }
        engine = PlayoutEngine(sink: sink, timeline: timeline, clock: clockModel, localClock: localClock,
                               steering: configuration.steering, log: log)
        if let folder = configuration.stateDirectory {
            do {
                identity = try KeyFile.loadOrCreate(folder + "/speaker.key", crypto: crypto)
            } catch {
                throw .cannotOpen(path: folder + "/speaker.key", reason: "\(error) (the state folder must be writable by the speaker)")
            }
        } else {
            identity = crypto.newKey()
        }
        psk = configuration.roomKey.map { $0.stretched() }
        pairingCode = configuration.pairByCode ? crypto.pairingCode() : nil
        engine.latencyTrimNanoseconds = Int64(configuration.latencyMilliseconds * 1e6)
    }

    public var connected: Bool { connectedAtomic.load(ordering: .acquiring) }
    /// How many times a connection to the leader was established.
    public var connectionCount: Int { connectionsAtomic.load(ordering: .relaxed) }
    public var concealedChunks: Int { concealedAtomic.load(ordering: .relaxed) }
    public var clock: ClockModel? { clockModel.current() }
    /// Whether this run paired with a leader (by code or approval).
    public var paired: Bool { pairedAtomic.load(ordering: .acquiring) }
    /// Whether the connect loop still runs (`pairByCode` ends it once paired or refused).
    public var isRunning: Bool { running.load(ordering: .acquiring) }
    /// `pairByCode`: why pairing ended without success (three wrong codes), nil otherwise.
    public var pairingFailure: String? { pairingEnded.withLock { $0 } }
    /// This speaker's key fingerprint (as the leader lists it).
    public var keyFingerprint: String { TuttiCore.keyFingerprint(identity.publicKey, crypto: crypto) }

    /// The leader this speaker is paired with (its public key), if any.
    public var pinnedLeader: [UInt8]? {
        guard let folder = configuration.stateDirectory else { return memoryPin.withLock { $0 } }
        do { return try KeyFile.read(folder + "/leader.pub") } catch {
            log.warning("\(error)")
            return nil
        }
    }

    private func pin(_ key: [UInt8]) throws {
        if let folder = configuration.stateDirectory {
            try KeyFile.write(folder + "/leader.pub", key)
        } else {
            memoryPin.withLock { $0 = key }
        }
        log.info("paired with the leader (key \(TuttiCore.keyFingerprint(key, crypto: crypto))): this speaker now plays for it only")
    }
    /// Sends a button's command to the leader, which applies it to this
    /// room and its group. Dropped (with a log line) while disconnected.
    public func send(_ command: ButtonCommand) {
        guard let conn = connection.withLock({ $0 }) else {
            log.warning("button \(command) ignored: not connected to the leader")
            return
        }
        do { try conn.send(Message.roomCommand(command).encoded()) } catch { log.warning("button \(command): \(error)") }
    }

    /// Volume, mute and latency trim as last set by the leader.
    public var settings: RoomSettings { roomSettings.withLock { $0 } }
    /// The equaliser as last set by the leader.
    public var equalizer: EqualizerSettings { roomEqualizer.withLock { $0 } }
    /// The reverb as last set by the leader (off until it says otherwise).
    public var reverb: ReverbSettings { roomReverb.withLock { $0 } }
    /// The channel map as last set by the leader (a pair's side, or the room's own).
    public var channelMap: ChannelMap { engine.channelMap }
    /// With `--sendspin-listen`: where servers can dial this speaker now (nil: not listening yet).
    public var sendspinListening: Endpoint? { sendspinListener.withLock { $0?.endpoint } }
    /// Why the last connection attempt or session ended.
    public var lastFailure: String? { lastError.withLock { $0 } }

    /// Starts playing for the leader; `whenEnded` runs on the connect
    /// loop's thread once that loop is over (`pairByCode`: paired or
    /// refused; otherwise after `stop`).
    public func start(whenEnded: @escaping @Sendable () -> Void = {}) {
        if let code = pairingCode {
            log.info("pairing code \(code.prefix(3)) \(code.dropFirst(3)): type it in the web app (Rooms), or run `tutti speakers pair \(code)` on the leader")
        } else if !configuration.playsForSendspin && pinnedLeader == nil && configuration.roomKey == nil {
            log.warning("not paired: this speaker asks the leader it finds to let it join (allow it in the web app), and plays for any open leader; `sudo tutti-follower pair` pairs by code")
        }
        engine.start(realtime: configuration.realtime)
        startEssentialThread(name: "tutti-follower") { [self] in
            connectLoop()
            whenEnded()
        }
    }

    public func stop() {
        running.store(false, ordering: .releasing)
        farewell.withLock { f in defer { f = nil }; return f }?()
        connection.withLock { $0?.close() }
        sendspinListener.withLock { $0?.close() }
        engine.stop()
        engine.sink.close()
    }

    func now() -> LocalTime { localClock.local(fromReal: Monotonic.now()) }

    private func connectLoop() {
        var backoff = ReconnectBackoff(policy: .speaker)
        var noJitter = SplitMix64(seed: 0) // the speaker's policy takes none off
        var lastLogged = ""
        while running.load(ordering: .relaxed) {
            do {
                if let listen = configuration.sendspinListen { try sendspinListen(listen) } else if configuration.playsForSendspin { try sendspinSession() } else { try session() }
                backoff.succeeded() // ended cleanly: the next attempt comes soon
            } catch {
                let text = "\(error)"
                lastError.withLock { $0 = text }
                if text != lastLogged { log.warning("\(configuration.playsForSendspin ? "Sendspin server \(configuration.sendspinServer.map { "\($0)" } ?? configuration.sendspinListen.map { "listening at \($0)" } ?? "(mDNS)")" : "leader \(configuration.leader.map { "\($0)" } ?? "(mDNS)")"): \(text); retrying"); lastLogged = text }
            }
            connectedAtomic.store(false, ordering: .releasing)
            // `sudo tutti-follower pair` after three wrong codes: that request is over.
            if pairingFailure != nil { running.store(false, ordering: .releasing) }
            guard running.load(ordering: .relaxed) else { return }
            guard case .retry(_, _, let delay) = backoff.failed(now: Monotonic.now(), using: &noJitter) else { return }
            Monotonic.sleep(nanoseconds: delay)
        }
    }

    /// The v7 handshake and, for a speaker that asks, pairing: returns the
    /// welcome, with sealing on both directions, or throws. A pinned speaker
    /// answers nothing but `bye` to a leader that cannot prove the pinned key.
    private func handshake(_ conn: TCPConnection, reader: MessageReader, pinned: [UInt8]?, intent: PairIntent,
                           hs: inout SpeakerHandshake<SodiumCrypto>) throws -> (version: UInt16, stream: StreamDescription, keys: SessionKeys) {
        var keys: SessionKeys?
        var leaderKey: [UInt8] = []
        var askedToPair = false
        var timer = SpeakerJoinTimer()
        var message = try reader.next()
        // An older leader refuses the version before any handshake (a v7 one too: it proves its key at the next attempt).
        if case .reject(let version, let reason)? = message, version < announcedVersion.load(ordering: .relaxed) {
            try refusedByOlderLeader(version: version, reason: reason, pinned: pinned)
        }
        while true {
            guard let m = message else { throw NetError.closed }
            switch m {
            case .welcome(let version, let description):
                guard let keys else { throw FollowerError.unexpected("welcome before the handshake") }
                if askedToPair && intent == .approval && !paired {
                    try pin(leaderKey)
                    pairedAtomic.store(true, ordering: .releasing)
                }
                return (version, description, keys)
            case .reject(let version, let reason):
                throw FollowerError.refused(leaderVersion: version, reason: reason)
            case .bye(let reason):
                throw FollowerError.leaderClosed(reason)
            default:
                let step: SpeakerHandshake<SodiumCrypto>.Step
                do { step = try hs.receive(m) } catch {
                    if case .tooManyWrongCodes = error { pairingEnded.withLock { $0 = error.description } }
                    try? conn.send(Message.bye(reason: error.description).encoded())
                    throw FollowerError.handshake(error)
                }
                switch step {
                case .proveAndSeal(let proof, let k, let lKey, let flags):
                    try conn.send(proof.encoded())
                    conn.startSealing(ChaChaFrameCipher(key: k.toLeader))
                    try reader.startOpening(ChaChaFrameCipher(key: k.toSpeaker))
                    keys = k
                    leaderKey = lKey
                    if pinned == nil && psk == nil && flags.contains(.open) && intent == .approval {
                        log.warning("the leader is open (any speaker joins): playing, not paired")
                    }
                case .waiting(let status, let left):
                    askedToPair = true
                    // Held on the leader until a person decides (5 minutes at most); looked at every 5 s (below).
                    timer.waitingForPerson(now: Monotonic.now())
                    conn.setReceiveTimeout(milliseconds: Int(timer.receiveTimeout / nanosecondsPerMillisecond))
                    switch status {
                    case .waitingForApproval: log.info("waiting for the leader to allow this speaker (web app: Rooms; or `tutti speakers allow \(configuration.name)`)")
                    case .waitingForCode: log.info("waiting for the code \(pairingCode ?? "") to be typed on the leader")
                    case .wrongCode: log.warning("a wrong code was typed on the leader (\(left) tries left)")
                    }
                case .send(let messages):
                    for out in messages { try conn.send(out.encoded()) }
                case .paired(let lKey):
                    try pin(lKey)
                    pairedAtomic.store(true, ordering: .releasing)
                }
            }
            message = try nextWhileWaiting(reader, timer: timer, intent: intent)
        }
    }

    /// The next handshake message. While a request for approval waits on
    /// the leader (which sends nothing meanwhile), every 5 s: if this
    /// speaker got paired some other way (`tutti-follower pair` beside the
    /// service wrote `leader.pub`), it ends this request and reconnects.
    private func nextWhileWaiting(_ reader: MessageReader, timer: SpeakerJoinTimer, intent: PairIntent) throws -> Message? {
        while true {
            let result: Result<Message?, NetError> = Result { () throws(NetError) in try reader.next() }
            guard case .failure(let error) = result, case .timedOut = error, case .waitingForPerson = timer.phase else { return try result.get() }
            if intent == .approval, pinnedLeader != nil { throw FollowerError.pairedMeanwhile }
            if timer.silence(now: Monotonic.now()) == .giveUp || !running.load(ordering: .relaxed) { throw error }
        }
    }

    /// One connection to the leader, until it ends.
    private func session() throws {
        // Found again before each connection: the leader may have moved.
        let leaderEndpoint = try configuration.leader ?? findLeader()
        do { try connectedSession(to: leaderEndpoint) } catch FollowerError.handshake(let failure) {
            switch failure {
            case .notOurLeader, .badConfirmation, .roomKeyMismatch:
                if configuration.leader == nil { distrust(leaderEndpoint) }
            default: break
            }
            throw FollowerError.handshake(failure)
        }
    }

    private func connectedSession(to leaderEndpoint: Endpoint) throws {
        let conn = try TCPConnection.connect(to: leaderEndpoint)
        connection.withLock { $0 = conn }
        defer {
            conn.close()
            connection.withLock { $0 = nil }
        }
        guard running.load(ordering: .relaxed) else { return }
        let pinned = configuration.pairByCode ? nil : pinnedLeader
        let intent: PairIntent = configuration.pairByCode ? .code : pinned != nil || psk != nil ? .join : .approval
        let announced = announcedVersion.load(ordering: .relaxed)
        var hs = SpeakerHandshake(crypto: crypto, identity: identity, pinned: pinned, psk: psk, name: configuration.name,
                                  intent: intent, code: pairingCode)
        // The offer goes with the hello, before the leader's first word.
        try conn.send(Message.hello(version: announced, name: configuration.name).encoded() +
                      (announced >= WireProtocol.handshakeVersion ? hs.offer().encoded() : []))
        let reader = MessageReader(connection: conn)
        conn.setReceiveTimeout(milliseconds: Int(SpeakerJoinTimer.replyTimeout / nanosecondsPerMillisecond))
        var stream: StreamDescription
        let leaderVersion: UInt16
        var keys: SessionKeys? = nil
        if announced >= WireProtocol.handshakeVersion {
            let joined = try handshake(conn, reader: reader, pinned: pinned, intent: intent, hs: &hs)
            (leaderVersion, stream, keys) = (joined.version, joined.stream, joined.keys)
            if configuration.pairByCode && paired {
                // `sudo tutti-follower pair` is done; the service plays.
                running.store(false, ordering: .releasing)
                return
            }
        } else {
            switch try reader.next() {
            case .welcome(let version, let description)?: stream = description; leaderVersion = version
            case .reject(let version, let reason)?: try refusedByOlderLeader(version: version, reason: reason, pinned: pinned)
            case let other?: throw FollowerError.unexpected("\(other.type) before welcome")
            case nil: throw NetError.closed
            }
        }
        log.info("connected to leader \(leaderEndpoint) as \(configuration.name): \(stream.codec), \(stream.framesPerChunk)-frame chunks")
        connectedAtomic.store(true, ordering: .releasing)
        connectionsAtomic.add(1, ordering: .relaxed)
        lastError.withLock { $0 = nil }
        estimator.withLock { $0.reset() }
        arrivalMargin.withLock { $0.reset() }
        streamDelay.withLock { $0.reset() }
        lastDatagramReply.store(0, ordering: .relaxed)
        outstanding.withLock { $0.reset() }

        // v5: clock exchanges as datagrams to the same address and port, off the audio stream.
        let datagrams = leaderVersion >= WireProtocol.clockChannelVersion ? openClockSocket(leaderEndpoint) : nil
        defer { datagrams?.close() }
        if let datagrams {
            startEssentialThread(name: "tutti-clock-rx") { [self, keys] in clockReceiveLoop(datagrams, keys: keys) }
        }
        // Ends when `conn` is closed (the defer above).
        startEssentialThread(name: "tutti-sync") { [self, keys] in syncLoop(conn, datagrams: datagrams, leaderVersion: leaderVersion, keys: keys) }

        let writer = try StreamWriter(stream: stream, timeline: timeline, log: log) { [unowned self] n in concealedAtomic.add(n, ordering: .relaxed) }
        // Announcements (v9): decoded apart from the music, into the engine's overlay ring.
        var announcements = AnnouncementIntake(engine: engine)
        let overlayScratch = UnsafeMutablePointer<Float>.allocate(capacity: WireProtocol.maxChunkFrames * 2)
        defer { overlayScratch.deallocate() }
        conn.setReceiveTimeout(milliseconds: Int(SpeakerJoinTimer.sessionSilence / nanosecondsPerMillisecond))

        while running.load(ordering: .relaxed), let (message, arrival) = try reader.nextTimed() {
            switch message {
            case .timeResponse(let id, let t1, let t2, let t3):
                // Only the answer to a request this session sent, once.
                guard outstanding.withLock({ $0.match(id: id, t1: t1) }) else { continue }
                if leaderVersion >= WireProtocol.streamDelayVersion, let model = clockModel.current() {
                    // Queued behind the audio: how late what the leader sends now gets here.
                    // (When it shared a read, that read's stamp: the time this thread took
                    // to decode what came before it in the read is not the stream's delay.)
                    let real = arrival ?? reader.lastReadArrival ?? Monotonic.now()
                    let arrived = model.leaderTime(at: localClock.local(fromReal: real)).nanoseconds
                    streamDelay.withLock { $0.record(sent: t3.nanoseconds, arrived: arrived, at: real) }
                }
                // A reply that shared its read with other data has no exact arrival time: skip it.
                guard let arrival else { continue }
                accept(ClockSample(t1: t1, t2: t2, t3: t3, t4: localClock.local(fromReal: arrival)), overStream: true)
            case .chunk(let chunk):
                releaseStartUpCodeWhenDue()
                if chunk.streamID == writer.streamID, let model = clockModel.current() {
                    let real = arrival ?? reader.lastReadArrival ?? Monotonic.now()
                    let lead = chunk.pts - model.leaderTime(at: localClock.local(fromReal: real))
                    arrivalMargin.withLock { $0.record(lead: lead, at: real) }
                }
                try writer.chunk(chunk)
            case .flush(let id, let from, let fade):
                try writer.flush(streamID: id, from: from, fade: fade)
            case .follow(let next, let from):
                // The room changed group: the old stream plays up to `from`, the new one from there.
                try writer.follow(next, from: from)
            case .settings(let settings):
                apply(settings)
            case .equalizer(let settings):
                // Designed here, on the connection thread; the audio thread only swaps coefficients.
                engine.setEqualizer(settings)
                roomEqualizer.withLock { $0 = settings }
            case .channels(let map):
                engine.channelMap = map
            case .reverb(let settings):
                engine.setReverb(settings)
                roomReverb.withLock { $0 = settings }
            case .overlay(let chunk):
                announcements.add(chunk, scratch: overlayScratch, log: log)
            case .streamEnd(let id, let at):
                try writer.streamEnd(streamID: id, at: at)
            case .bye(let reason):
                throw FollowerError.leaderClosed(reason)
            default:
                throw FollowerError.unexpected("\(message.type) from the leader")
            }
        }
        throw NetError.closed
    }

    /// An older leader refused our version: speak its version next time,
    /// unless this speaker is paired or keyed and the leader predates the
    /// handshake (it cannot prove a key: never go down to it).
    private func refusedByOlderLeader(version: UInt16, reason: String, pinned: [UInt8]?) throws -> Never {
        if version < WireProtocol.handshakeVersion, pinned != nil || configuration.roomKey != nil {
            throw FollowerError.refused(leaderVersion: version, reason: "\(reason); it cannot prove its key, update the leader")
        }
        if version >= WireProtocol.oldestFollowerVersion, version < announcedVersion.load(ordering: .relaxed) {
            announcedVersion.store(version, ordering: .relaxed)
            log.warning("leader speaks protocol v\(version): playing, but until the leader is updated \(Self.missing(atLeaderVersion: version))")
        }
        throw FollowerError.refused(leaderVersion: version, reason: reason)
    }

    /// When the start-up code is released (monotonic ns; 0: not yet due, -1: done). Connection thread only.
    private var startUpCodeRelease: Int64 = 0

    /// 5 s into the first stream, start-up (options, connecting, the first
    /// decode and periods) is over: its code pages are unmapped, and only
    /// what runs while playing faults back (see `releaseStartUpCode`).
    func releaseStartUpCodeWhenDue() {
        guard configuration.releasesStartUpCode, startUpCodeRelease >= 0 else { return }
        let now = Monotonic.now()
        if startUpCodeRelease == 0 { startUpCodeRelease = now + 5 * nanosecondsPerSecond; return }
        guard now >= startUpCodeRelease else { return }
        startUpCodeRelease = -1
        if releaseStartUpCode() == nil { log.debug("start-up code not released: \(String(cString: strerror(errno)))") }
    }

    /// What this speaker does without, for a leader of `version` (for its log line).
    static func missing(atLeaderVersion version: UInt16) -> String {
        var without: [String] = []
        if version < WireProtocol.equalizerVersion { without.append("there is no EQ") }
        if version < WireProtocol.clockChannelVersion { without.append("clock exchanges go over TCP, behind the audio") }
        if version < WireProtocol.streamDelayVersion { without.append("commands do not wait longer when this speaker's network is slow") }
        if version < WireProtocol.handshakeVersion { without.append("nothing is encrypted or authenticated (the leader is open)") }
        if version < WireProtocol.channelMapVersion { without.append("it plays both channels (no channel map, no stereo pair)") }
        if version < WireProtocol.overlayVersion { without.append("announcements are not heard here") }
        if version < WireProtocol.reverbVersion { without.append("there is no reverb") }
        return without.joined(separator: "; ")
    }

    /// Volume by the mixer chosen (a mute fades over 30 ms, a change ramps
    /// over 5 ms), and the latency trim.
    func apply(_ settings: RoomSettings) {
        let before = roomSettings.withLock { old in defer { old = settings }; return old }
        let ramp = before.muted != settings.muted ? GainRamp.muteFrames : GainRamp.volumeFrames
        switch configuration.volumeMixer {
        case .software:
            engine.setVolume(settings.gain, rampFrames: ramp)
        case .none:
            engine.setVolume(settings.muted ? 0 : 1, rampFrames: ramp)
        case .hardware:
            engine.setVolume(1, rampFrames: 0)
            do { try hardwareMixer?.set(decibels: settings.decibels) } catch { log.warning("volume: \(error)") }
        }
        engine.latencyTrimNanoseconds = settings.latencyTrimNanoseconds + Int64(configuration.latencyMilliseconds * 1e6)
    }

    /// The UDP socket for clock exchanges with a v5 leader, at the address and port of its TCP stream.
    private func openClockSocket(_ endpoint: Endpoint) -> UDPSocket? {
        do { return try UDPSocket.connect(to: endpoint) } catch {
            log.warning("clock exchanges over UDP unavailable (\(error)): using the TCP stream")
            return nil
        }
    }

    /// An exchange's result: into the estimator, and out to the audio
    /// thread once the estimator is ready (so nothing plays on a guess).
    func accept(_ sample: ClockSample, overStream: Bool) {
        let model: ClockModel? = estimator.withLock { e in
            e.add(sample, overStream: overStream) && e.ready ? e.model : nil
        }
        if let model { clockModel.publish(model) }
    }

    /// Clock replies over UDP, stamped by the kernel on arrival.
    private func clockReceiveLoop(_ socket: UDPSocket, keys: SessionKeys?) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)
        defer { buffer.deallocate() }
        socket.setReceiveTimeout(milliseconds: 200)
        while running.load(ordering: .relaxed) && !socket.closed {
            let received: (count: Int, arrival: Int64, from: UDPSocket.Peer)
            do { received = try socket.receive(into: buffer) } catch {
                if case .closed = error { return }
                continue // a timeout, or an ICMP error for an earlier datagram
            }
            let datagram = UnsafeRawBufferPointer(rebasing: buffer[0..<received.count])
            guard received.arrival != 0 else { continue }
            let (id, t1, t2, t3): (UInt32, LocalTime, LeaderTime, LeaderTime)
            switch ClockDatagram.decode(datagram) {
            case .clockResponse(let i, let a, let b, let c, _)? where keys.map({ ClockAuth.verify(datagram, key: $0.clock, crypto: crypto) }) == true:
                (id, t1, t2, t3) = (i, a, b, c)
            case .timeResponse(let i, let a, let b, let c)? where keys == nil:
                (id, t1, t2, t3) = (i, a, b, c) // an older, open leader: unauthenticated, still matched
            default:
                continue
            }
            // Only the answer to a request this session sent, once.
            guard outstanding.withLock({ $0.match(id: id, t1: t1) }) else { continue }
            lastDatagramReply.store(received.arrival, ordering: .relaxed)
            accept(ClockSample(t1: t1, t2: t2, t3: t3, t4: localClock.local(fromReal: received.arrival)), overStream: false)
        }
    }

    /// Clock requests (as `ClockExchangeSchedule` says: a burst at join,
    /// then steady; datagrams when the leader offers them, the TCP stream
    /// otherwise or while datagrams go unanswered) and the health reports.
    private func syncLoop(_ conn: TCPConnection, datagrams: UDPSocket?, leaderVersion: UInt16, keys: SessionKeys?) {
        let streamDelayWanted = leaderVersion >= WireProtocol.streamDelayVersion
        var schedule = ClockExchangeSchedule(datagramsOffered: datagrams != nil, streamProbes: streamDelayWanted && datagrams != nil,
                                             start: Monotonic.now())
        var id: UInt32 = 0
        while running.load(ordering: .relaxed) && !conn.closed {
            let real = Monotonic.now()
            let replied = lastDatagramReply.load(ordering: .relaxed)
            if replied != 0 { schedule.datagramReplied(at: replied) }
            let (ready, uncertainty, queueing, inOrder) = estimator.withLock { ($0.ready, $0.uncertainty, $0.queueing, $0.inOrderExcess) }
            if ready { schedule.estimatorReady(at: real) }
            schedule.clockPath(uncertainty: uncertainty, queueing: queueing, inOrderExcess: inOrder)
            let (actions, next) = schedule.poll(now: real)
            clockOverStream.store(schedule.usingStream(at: real), ordering: .relaxed)
            do {
                for action in actions {
                    id &+= 1
                    switch action {
                    case .request(.datagram):
                        // A lost or refused datagram is just a missing sample.
                        let t1 = now()
                        outstanding.withLock { $0.sent(id: id, t1: t1) }
                        if let keys {
                            let zero = [UInt8](repeating: 0, count: ClockAuth.macBytes)
                            try? datagrams?.send(ClockAuth.sealed(.clockRequest(tag: keys.clockTag, id: id, t1: t1, mac: zero), key: keys.clock, crypto: crypto))
                        } else {
                            try? datagrams?.send(ClockDatagram.request(id: id, t1: t1))
                        }
                    case .request(.stream):
                        try conn.send {
                            let t1 = now()
                            outstanding.withLock { $0.sent(id: id, t1: t1) }
                            return Message.timeRequest(id: id, t1: t1).encoded()
                        }
                    case .health:
                        if !localClock.isIdentity { logSimulatedClockError(at: real) }
                        try conn.send(Message.health(healthReport()).encoded())
                        if leaderVersion >= WireProtocol.clockChannelVersion {
                            try conn.send(Message.syncReport(syncReport(withStreamDelay: streamDelayWanted)).encoded())
                        }
                    }
                }
            } catch { return }
            // Woken at least at the quiet pace, to see readiness and uncertainty change.
            let wait = min(max(next - Monotonic.now(), 0), schedule.configuration.quietInterval)
            if wait > 0 { Monotonic.sleep(nanoseconds: wait) }
        }
    }

    /// With a simulated clock (tests, bench/sync) the truth is known when
    /// the leader runs on this machine's clock: the model's error against
    /// it, at debug level, once a second (for `bench/sync/run.sh --clock-log`).
    private func logSimulatedClockError(at real: Int64) {
        let (model, uncertainty, ready) = estimator.withLock { ($0.model, $0.uncertainty, $0.ready) }
        guard let model else { return }
        let error = model.leaderTime(at: localClock.local(fromReal: real)).nanoseconds - real
        let skewError = (model.skew - (1 / (1 + localClock.skew) - 1)) * 1e6
        let output = engine.statistics.outputErrorNanoseconds
        log.debug("clock vs this machine's: error \(error / 1000) µs, skew error \(Int(skewError.rounded())) ppm, " +
                  "uncertainty \((uncertainty ?? -1) / 1000) µs, ready \(ready), output error \(output / 1000) µs")
    }

    /// Clock confidence, the arrival margin and (for a v6 leader) the stream's delay, for the leader.
    /// (No default: the stream delay must only go to a v6 leader, an older one refuses the bytes.)
    public func syncReport(withStreamDelay: Bool) -> SyncReport {
        let now = Monotonic.now()
        let (uncertainty, samples) = estimator.withLock { ($0.uncertainty ?? 0, $0.sampleCount) }
        let (lead, late) = arrivalMargin.withLock { ($0.minimum(at: now) ?? 0, $0.lateChunks) }
        let delay = withStreamDelay ? streamDelay.withLock { $0.maximum(at: now) } : nil
        return SyncReport(clockUncertaintyNanoseconds: uncertainty, clockSamples: UInt32(clamping: samples),
                          clockChannel: clockOverStream.load(ordering: .relaxed) ? .stream : .datagram,
                          arrivalLeadMinimumNanoseconds: lead, lateChunks: UInt32(clamping: late),
                          streamDelayMaximumNanoseconds: delay)
    }

    public func healthReport() -> HealthReport {
        let stats = engine.statistics
        let (model, rtt) = estimator.withLock { ($0.model, $0.bestRoundTrip) }
        return HealthReport(clockOffsetNanoseconds: model?.offset ?? 0,
                            clockSkewPPB: Int64(((model?.skew ?? 0) * 1e9).rounded()),
                            roundTripNanoseconds: rtt,
                            bufferedNanoseconds: stats.bufferedNanoseconds,
                            outputErrorNanoseconds: stats.outputErrorNanoseconds,
                            resampleRatioPPB: stats.ratioPPB,
                            underruns: UInt32(clamping: stats.underruns),
                            hardResyncs: UInt32(clamping: stats.hardResyncs),
                            concealedChunks: UInt32(clamping: concealedChunks))
    }
}

public enum FollowerError: Error, CustomStringConvertible {
    case refused(leaderVersion: UInt16, reason: String)
    case leaderClosed(String)
    case unexpected(String)
    /// No leader (or none with the asked name) answered over mDNS.
    case noLeaderFound(named: String?, seen: [String])
    case discovery(String)
    /// Paired, and no announcement carries the paired leader's key.
    case noPairedLeaderFound(fingerprint: String, seen: [String])
    /// The leader asks for a room key this speaker does not have.
    case roomKeyNeeded
    /// The handshake failed (not our leader, a wrong key or code, …).
    case handshake(HandshakeFailure)
    /// Paired by `tutti-follower pair` while a request for approval waited: reconnecting as paired.
    case pairedMeanwhile
    /// A Sendspin server broke the protocol, refused this speaker or closed.
    case sendspin(String)

    public var description: String {
        switch self {
        case .roomKeyNeeded: "the leader needs a room key: set room-key (or room-key-file) in the [speaker] section of tutti.conf, or --room-key-file FILE"
        case .handshake(let failure): failure.description
        case .pairedMeanwhile: "paired by code meanwhile: joining as a paired speaker"
        case .sendspin(let what): "Sendspin: \(what)"
        case .refused(let v, let reason): "leader (protocol v\(v)) refused this follower (v\(WireProtocol.version)): \(reason)"
        case .leaderClosed(let reason): "leader closed the connection: \(reason)"
        case .unexpected(let what): "unexpected \(what)"
        case .noLeaderFound(let name?, let seen):
            "no leader named '\(name)' found over mDNS (found: \(seen.isEmpty ? "none" : seen.map { "'\($0)'" }.joined(separator: ", ")))"
        case .noLeaderFound(nil, _): "no leader found over mDNS (_tutti._tcp); is one running with announcing on, or give --leader HOST:PORT"
        case .discovery(let message): "cannot look for a leader: \(message)"
        case .noPairedLeaderFound(let f, let seen):
            "the leader this speaker is paired with (key \(f)) is not announced over mDNS (found: \(seen.isEmpty ? "none" : seen.map { "'\($0)'" }.joined(separator: ", "))); others are ignored (`sudo tutti-follower pair` pairs with another)"
        }
    }
}

/// Announcements (v9 `overlay`) into the playout engine's overlay ring, on
/// the connection thread: decoded with a decoder of their own, the gain
/// applied, written at their PTS. A new announcement that starts within
/// 1 s of the end of what is written continues that ring stream (queued
/// announcements, music ducked between them); otherwise it starts afresh.
struct AnnouncementIntake {
    let engine: PlayoutEngine
    private var decoder: (any ChunkDecoder)?
    private var codec: Codec?
    private var announcementID: UInt32?

    init(engine: PlayoutEngine) { self.engine = engine }

    mutating func add(_ chunk: OverlayChunk, scratch: UnsafeMutablePointer<Float>, log: Logger) {
        let ring = engine.overlay
        if chunk.codec != codec || decoder == nil {
            do { decoder = try makeDecoder(chunk.codec) } catch {
                log.warning("announcement: \(error)")
                return
            }
            codec = chunk.codec
        }
        guard let decoder else { return }
        if chunk.announcementID != announcementID {
            decoder.reset()
            announcementID = chunk.announcementID
            let index = ring.hasStream ? ring.frameIndex(of: chunk.pts) : Int.min
            let reachable = index >= ring.readStart && index <= ring.writeEnd + StreamFormat.sampleRate
                && index + Int(chunk.frames) <= ring.readStart + ring.capacity
            if !reachable { ring.beginStream(epoch: chunk.pts) }
            engine.duckGain = chunk.duckGain
            log.info("announcement \(chunk.announcementID): mixed in from leader time \(chunk.pts.nanoseconds), music down \(Double(chunk.duckCentibels) / 100) dB")
        }
        let n: Int
        do {
            n = try decoder.decode(chunk.payload, frames: Int(chunk.frames), into: scratch, maxFrames: WireProtocol.maxChunkFrames)
        } catch {
            n = decoder.conceal(frames: Int(chunk.frames), into: scratch)
        }
        let gain = chunk.gain
        for k in 0..<2 * n { scratch[k] *= gain }
        ring.write(scratch, count: n, at: ring.frameIndex(of: chunk.pts))
    }
}
