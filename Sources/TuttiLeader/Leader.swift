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
import TuttiControlKit
import TuttiSources

// Sendable because shared state is in Mutexes and Atomics; the `var`s (main stream, clock socket, announcers) are set during init and start(), before the threads that read them, and never again.
public final class Leader: @unchecked Sendable {
    public let configuration: LeaderConfiguration
    /// The main group's stream.
    public var streamID: UInt32 { mainStream.id }
    public let log: Logger
    let listener: TCPListener
    /// Snapcast's stream port, when `snapcastStream` is set.
    let snapcastListener: TCPListener?
    let sessions = Mutex<[ObjectIdentifier: FollowerSession]>([:])
    /// Everything the leader runs, in the order it started (`start`, `stop`).
    let services = ServiceGroup()
    /// The one thread that waits on every TCP port (`TCPService`).
    public let acceptLoop: AcceptLoop
    /// The groups' source threads (a group made later adds one).
    let sourceThreads = ThreadGroup(name: "tutti-source")
    /// Speakers' writer threads, each while its speaker has something waiting.
    let sessionWriters = ThreadGroup(name: "tutti-session-w")
    /// Broadcast when a speaker's session is removed.
    let sessionsChanged = Condition()
    let running = Atomic<Bool>(true)
    let roomSettings = Mutex<[String: RoomSettings]>([:])
    /// Each room's equaliser and the preset it came from (Leader+Sound.swift).
    let roomEqualizers = Mutex<[String: RoomEqualizer]>([:])
    /// Each room's own channel map (Leader+Channels.swift); a pair's speakers play their side instead.
    let roomChannels = Mutex<[String: ChannelMap]>([:])
    /// Each room's reverb, when it has one other than off (Leader+Reverb.swift).
    let roomReverbs = Mutex<[String: ReverbSettings]>([:])
    /// Stereo pairs: two speakers that are one room to people.
    let stereoPairs = Mutex(StereoPairs())
    /// Presets people saved, usable in any room.
    let customPresets = Mutex<[EqualizerPreset]>([])
    /// A group volume or mute set while none of its rooms was known: applied to rooms as they join.
    let keptGroupSound = Mutex<[String: KeptGroupSound]>([:])
    /// Room settings or presets changed since the last save.
    let soundDirty = Atomic<Bool>(false)
    /// Each group's balance between its rooms while its volume slider moves (see `GroupVolume`).
    let groupBalance = Mutex<[String: (rooms: [String], balance: [Double])]>([:])
    /// Every stream's epoch is a whole number of frames from here, so a room
    /// that changes group stays on the same 48 kHz grid.
    let gridOrigin = LeaderTime(nanoseconds: Monotonic.now())
    /// The main group's stream (restored from the state store).
    var mainStream: LeaderStream!
    /// Each group's stream, by group id.
    let streams = Mutex<[String: LeaderStream]>([:])
    /// Which room is in which group.
    let grouping = Mutex(RoomGroups())
    /// Serialises group changes end to end (table, then sessions).
    let groupChanges = Condition() // a lock: one group change at a time
    /// A calibration plan is playing (`Leader+Calibration.swift`): one at a time.
    let calibrating = Atomic<Bool>(false)
    /// The calibration playing now, so a stopping leader puts its rooms back before the last checkpoint.
    let calibrationRun = Mutex<CalibrationRun?>(nil)
    /// The control surfaces, built by the composition root (`LeaderSurfaces`); nil: none.
    public let surfaces: (any LeaderSurfaces)?
    /// The AirPlay receivers, one per group, while `airplay` is on (Leader+AirPlay.swift).
    /// Set once they run, after the control surfaces started, whose threads
    /// read it: hence the Mutex.
    var airplay: AirPlayReceivers? {
        get { airplayCell.withLock { $0 } }
        set { airplayCell.withLock { $0 = newValue } }
    }
    private let airplayCell = Mutex<AirPlayReceivers?>(nil)
    /// Where clients may name files (see `confine`), and where playlists are imported and exported.
    public let mediaFolders: MediaFolders
    public let playlistFolder: String?

    /// Opens a database; one that is damaged (a power cut, a failing SD card)
    /// is moved aside, with its journal, and a new one started, so the
    /// leader comes up rather than stopping at every start.
    static func openRecovering<T>(_ path: String, what: String, log: Logger, rebuilt: String,
                                  _ open: () throws(LibraryError) -> T) throws(LibraryError) -> T {
        do { return try open() } catch where error.isDamagedDatabase {
            var stamp = timespec()
            clock_gettime(CLOCK_REALTIME, &stamp)
            let aside = "\(path).damaged-\(stamp.tv_sec)"
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                try? FileManager.default.moveItem(atPath: path + suffix, toPath: aside + suffix)
            }
            log.warning("\(what) \(path) is damaged (\(error)): moved aside to \(aside) and started anew; \(rebuilt)")
            return try open()
        }
    }

    /// The path with every symlink and `..` resolved (nil: it does not exist).
    static func canonical(_ path: String) -> String? { PathText.canonical(path) }

    /// The media folder local file `path` lies in, when the file is missing
    /// and the folder is gone or empty: an unplugged disk or an unmounted
    /// share, not a deleted file (nil then, and for a file that is there).
    static func unavailableFolder(of path: String, in folders: MediaFolders) -> String? {
        let path = path.hasPrefix("file://") ? String(path.dropFirst(7)) : path
        guard path.hasPrefix("/"), access(path, F_OK) != 0 else { return nil }
        let parent = Self.canonical(PathText.parent(path)) ?? PathText.parent(path)
        guard let root = folders.root(containing: parent + "/" + PathText.lastComponent(path)) else { return nil }
        return access(root, R_OK | X_OK) != 0 || Library.folderIsEmpty(root) ? root : nil
    }

    /// A file URI a control client named, checked against `mediaFolders`
    /// by its canonical path (a link is judged by where it points; a file
    /// not there yet, by its folder); returned as given. Web streams pass
    /// unless their host, as written, is an address the leader does not
    /// fetch from (the authoritative check is made on each connection, see
    /// `StreamDestinationPolicy`); a pipe's path is checked.
    public func confine(_ uri: String) throws(PathConfinementError) -> String {
        if MediaFolders.isRemote(uri) {
            if let host = StreamDestinationPolicy.host(ofURL: uri), let refusal = configuration.network.destinations.refusal(forHost: host) {
                throw PathConfinementError(path: uri, refusal: refusal)
            }
            return uri
        }
        if LineInSpec.isLineIn(uri) {
            // A capture device is the household's to offer, not a client's to pick (a microphone is one too).
            guard let spec = try? LineInSpec(parsing: uri) else { return uri } // refused later with its own reason
            guard configuration.lineInputs.contains(spec.device) else {
                throw PathConfinementError(path: uri, notLineInput: spec.device)
            }
            return uri
        }
        var path = uri
        if PipeSourceSpec.isPipe(uri) {
            guard let spec = try? PipeSourceSpec(parsing: uri) else { return uri } // refused later with its own reason
            path = spec.path
        } else if path.hasPrefix("file://") {
            path = String(path.dropFirst(7))
        }
        guard path.hasPrefix("/") else { throw PathConfinementError(path: uri) }
        let resolved = Self.canonical(path) ?? Self.canonical(PathText.parent(path)).map {
            $0 + "/" + PathText.lastComponent(path)
        }
        guard let resolved, !PathText.lastComponent(path).hasPrefix(".."), mediaFolders.contains(canonical: resolved) else {
            throw PathConfinementError(path: uri)
        }
        return uri // as given: the library knows its files by the paths it scanned
    }

    /// Who may do what on the control surfaces.
    public let controlAccess: ControlAccess
    /// Logging in: the password, tokens, failures per address (every control surface).
    public let login: ControlLogin

    /// The control password: given, or (a surface beyond loopback, none
    /// given) read from or generated into `control-password` beside the library.
    static func controlAccess(_ c: LeaderConfiguration, stateFolder: String?, log: Logger) -> ControlAccess {
        let surfaces = [c.control, c.web?.endpoint, c.mpd, c.snapcastControl, c.snapcastHTTP].compactMap { $0 }
        let exposed = surfaces.filter { !ControlAccess.isLoopback($0.host) }
        var password = c.password
        if password == nil, !exposed.isEmpty, !c.openControl {
            let file = stateFolder.map { $0 + "/control-password" }
            if let file, let bytes = try? readWholeFile(file, limit: 4_096), case let saved = String(decoding: bytes, as: UTF8.self).trimmingSpaces, !saved.isEmpty {
                password = saved
                log.info("control from other machines needs the password in \(file)")
            } else {
                let fresh = RoomKey.randomPassword()
                password = fresh
                let surfaces = exposed.map(\.description).joined(separator: ", ")
                // The log is the journal, readable by more people than the file (mode 0600): it says where, never what.
                if let file, FileManager.default.createFile(atPath: file, contents: Data((fresh + "\n").utf8), attributes: [.posixPermissions: 0o600]) {
                    log.warning("\(surfaces) listen beyond this machine: other machines log in with the password generated into \(file) (read it with: sudo cat \(file); or set password in tutti.conf to choose one)")
                } else if isatty(STDERR_FILENO) == 1 {
                    // Nowhere to keep it: only a terminal (not a journal) may see it, for this run.
                    log.warning("\(surfaces) listen beyond this machine: other machines log in with the password \(fresh) (for this run; set password in tutti.conf to keep one)")
                } else {
                    log.warning("\(surfaces) listen beyond this machine: they need a password, and one was generated for this run but cannot be shown here or saved (no library folder): set password in tutti.conf")
                }
            }
        } else if password == nil, !exposed.isEmpty {
            log.warning("open control: anyone on the network can control the music on \(exposed.map(\.description).joined(separator: ", "))")
        }
        return ControlAccess(password: password, guestReadOnly: c.guestReadOnly, trustsLoopback: !c.passwordOnLoopback)
    }
    /// The mDNS announcement, while `announce` is on (Leader+Announce.swift).
    var announcer: ServicePublisher?
    var snapcastAnnouncer: ServicePublisher?
    /// What the surfaces asked to be announced besides the leader (`LeaderSurfaces.announcedServices`).
    var surfaceAnnouncers: [ServicePublisher] = []
    /// The music library, when a music folder or database was configured.
    public let library: Library?
    /// Changes, for every control surface.
    public let events = LeaderEventHub()
    /// The offline cache for network tracks, when there is a place for it.
    public let cache: StreamCache?
    /// Podcast subscriptions, their refresh schedule and episode positions (with a library).
    public let podcasts: PodcastService?
    /// Station and title of each network stream, as its ICY metadata says.
    let streamMetadata = StreamMetadataBoard()
    /// Where the player's state is checkpointed (with a library).
    let stateStore: PlayerStateStore?
    /// The leader's key, paired speakers, pairing requests (SpeakerSecurity.swift).
    let speakerSecurity: SpeakerSecurity
    /// Sendspin clients' trust (the server's key, pairings, a person's approvals, requests
    /// waiting), with `--sendspin`: kept beside the speakers', so a person answers every
    /// new device in one list (`pairingRequests`, `decidePairing`).
    public let sendspinTrust: SendspinTrustStore?
    let stateDirty = Atomic<Bool>(false)
    /// Whether checkpoints are being written (a full disk fails them all).
    let saveHealth = Mutex(SaveHealth())
    /// Why the player state is not being saved now (nil: it is); shown in status.
    public var saveFailure: String? { saveHealth.withLock { $0.failure } }
    let stateWake = DispatchSemaphore(value: 0)
    let healthReports = Mutex<[String: HealthReport]>([:])
    let syncReports = Mutex<[String: SyncReport]>([:])
    /// One command-lead update at a time, so a slower one cannot write an older lead over a newer.
    let commandLeadUpdates = Mutex(())
    /// Answers clock requests on UDP at the listener's port (protocol v5); nil if that port was taken.
    var clockServer: UDPSocket?
    let lastHealthAnnounced = Atomic<Int64>(0)
    /// Every room that has joined since start: a speaker switched off is still a room (shown offline).
    /// Bounded (`SeenRooms`): an open leader's peer may join under a new name on every connection.
    let seenRooms = Mutex(SeenRooms())
    /// Speaker connections (Tutti and Snapcast) served at once; a home has a few dozen rooms at most.
    /// With a room key, 8 places beyond it are lent for 2 s to speakers that go on to prove it.
    let sessionBudget = ConnectionBudget(name: "speaker port", limit: 256, provisionalReserve: 8)
    /// Speakers' room commands: merged, rate-limited, done on one thread.
    let roomCommands = RoomCommandDesk()
    /// Wakes the handshake watch (a connection came, or the leader stops).
    let handshakeWake = Condition()

    /// Wakes the heard-watcher: a command, or a player's next heard change moved.
    let heardWake = DispatchSemaphore(value: 0)
    /// Announcements: when the next may start, and their blocks still to send (Leader+Announcements.swift).
    let announcementQueue = Mutex(AnnouncementQueue())
    let announcementOutbox = Mutex<[PendingOverlay]>([])
    /// Paces announcements' blocks out; its thread runs only while some wait (set at start).
    let announcementPacer = Mutex<OnDemandWorker?>(nil)
    /// Makes the web app's previews (with a library; set at start).
    let previewService = Mutex<PreviewService?>(nil)
    /// The main group's time heard playing: finished spans, and the start of the current one.
    let playTime = Mutex<(total: Int64, since: Int64?)>((0, nil))

    /// Nanoseconds the main group has been heard playing since the leader started (MPD `stats`).
    public var playedNanoseconds: Int64 { playTime.withLock { $0.total + ($0.since.map { Monotonic.now() - $0 } ?? 0) } }
    let opener: SourceOpener

    /// A leader serving `surfaces` (nil: none; tuttid passes TuttiDaemon's
    /// `ControlSurfaces`), which it starts in its order (`start`).
    public init(configuration: LeaderConfiguration, log: Logger, surfaces: (any LeaderSurfaces)?) throws {
        self.configuration = configuration
        self.log = log
        self.surfaces = surfaces
        acceptLoop = AcceptLoop(log: log)
        listener = try TCPListener(endpoint: configuration.listen)
        do {
            snapcastListener = try configuration.snapcastStream.map { e throws(NetError) in try TCPListener(endpoint: e) }
        } catch {
            guard !configuration.snapcastStreamRequired else { throw error }
            log.warning("\(error); Snapcast clients cannot join (give --snapcast-stream HOST:PORT to choose another port)")
            snapcastListener = nil
        }
        var snapshot: PlayerSnapshot?
        var stateFolder: String?
        var savedGroups: RoomGroups?
        var groupSnapshots: [String: PlayerSnapshot] = [:]
        let seed = UInt64.random(in: 1...UInt64(UInt32.max))
        if configuration.musicDirectory != nil || configuration.databasePath != nil {
            let path = configuration.databasePath ?? Library.defaultDatabasePath(asService: getuid() == 0 && configuration.listen.port == 4953)
            let folder = PathText.parent(path)
            stateFolder = folder
            try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            library = try Self.openRecovering(path, what: "the library database", log: log, rebuilt: "a scan of the music folder fills it again") {
                () throws(LibraryError) in try Library(path: path, logger: log.with(label: "library"))
            }
            let store = try Self.openRecovering(folder + "/state.db", what: "the player state database", log: log, rebuilt: "queue, volumes and groups start afresh") {
                () throws(LibraryError) in try PlayerStateStore(path: folder + "/state.db")
            }
            stateStore = store
            // Files named on the command line start a fresh queue; otherwise the saved one comes back.
            if configuration.files.isEmpty { snapshot = try store.load(seed: seed) }
            savedGroups = try store.loadGroups()
            let (rooms, presets) = (try store.loadRooms(), try store.loadPresets())
            roomSettings.withLock { s in for (name, r) in rooms { s[name] = r.settings } }
            roomEqualizers.withLock { e in for (name, r) in rooms { e[name] = RoomEqualizer(settings: r.equalizer, preset: r.preset) } }
            roomChannels.withLock { c in for (name, r) in rooms where r.channels != .stereo { c[name] = r.channels } }
            roomReverbs.withLock { c in for (name, r) in rooms where r.reverb != .off { c[name] = r.reverb } }
            let pairs = try store.loadPairs()
            stereoPairs.withLock { $0 = pairs }
            seenRooms.withLock { s in
                for p in pairs.pairs { s.saw(all: p.speakers) }
                s.saw(all: rooms.keys.sorted())
            }
            customPresets.withLock { $0 = presets }
            for g in savedGroups?.groups ?? [] where g.id != RoomGroups.mainID {
                groupSnapshots[g.id] = try store.load(group: g.id, seed: seed)
            }
        } else {
            library = nil
            stateStore = nil
        }
        speakerSecurity = try SpeakerSecurity(configuration: configuration, folder: configuration.stateDirectory ?? stateFolder, log: log)
        sendspinTrust = configuration.sendspin == nil ? nil : try SendspinTrustStore(stateDirectory: configuration.stateDirectory ?? stateFolder)
        controlAccess = Self.controlAccess(configuration, stateFolder: stateFolder, log: log)
        let playlists = configuration.playlistDirectory ?? stateFolder.map { $0 + "/playlists" }
        if let playlists { try? FileManager.default.createDirectory(atPath: playlists, withIntermediateDirectories: true) }
        playlistFolder = playlists
        login = ControlLogin(password: controlAccess.password, store: stateStore, log: log.with(label: "control"))
        let cacheFolder = configuration.cacheDirectory ?? library.map { PathText.parent($0.path) + "/cache" }
        cache = try cacheFolder.map { folder in
            try StreamCache(directory: folder, capacityBytes: Int64(configuration.cacheCapacityMegabytes) << 20, options: configuration.network,
                            log: log.with(label: "cache"))
        }
        let roots = [configuration.musicDirectory, cacheFolder, playlists].compactMap { $0 } + configuration.allowedFolders
        // A file named on the command line is allowed alone, not its folder (which may be a home folder).
        let files = configuration.files.filter { !MediaFolders.isRemote($0) && !PipeSourceSpec.isPipe($0) && !LineInSpec.isLineIn($0) }
            .map { $0.hasPrefix("file://") ? String($0.dropFirst(7)) : $0 }
            .map { $0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0 }
        // A folder missing now (a disk not mounted yet) is still a media folder, by its name.
        mediaFolders = MediaFolders(roots: roots.map { Self.canonical($0) ?? PathText.standardized($0) },
                                    files: files.map { Self.canonical($0) ?? PathText.standardized($0) })
        opener = SourceOpener(cache: cache, options: configuration.network, log: log.with(label: "stream"),
                              autoCache: configuration.autoCache) { [streamMetadata, events] uri, metadata in
            streamMetadata.set(metadata, for: uri)
            events.emit(.player) // the stream title is part of now playing
        }
        podcasts = library.map { [events] library in
            PodcastService(library: library, options: configuration.network, events: events, refreshInterval: configuration.podcastRefreshSeconds,
                           log: log.with(label: "podcasts"))
        }
        mainStream = makeStream(group: RoomGroups.mainID, restoring: snapshot, files: configuration.files, loop: configuration.loop)
        streams.withLock { $0[RoomGroups.mainID] = mainStream }
        if let savedGroups {
            grouping.withLock { $0 = savedGroups }
            for g in savedGroups.groups where g.id != RoomGroups.mainID {
                // Each group's queue and position come back, paused, as the main group's do.
                let stream = makeStream(group: g.id, restoring: groupSnapshots[g.id], files: [], loop: false)
                streams.withLock { $0[g.id] = stream }
            }
        }
    }

    /// A group's stream with its own player; its source thread starts with the leader (or at once after).
    func makeStream(group: String, restoring snapshot: PlayerSnapshot?, files: [String], loop: Bool) -> LeaderStream {
        var setup = configuration
        setup.files = files
        setup.loop = loop
        let stream = LeaderStream(id: UInt32.random(in: 1...UInt32.max), group: group, commandLead: LiveCommandLead(configuration))
        let opener = self.opener
        stream.player = StreamPlayer(configuration: setup, streamID: stream.id, gridOrigin: gridOrigin, log: log.with(label: group == RoomGroups.mainID ? "player" : "player \(group)"),
                                     restoring: snapshot, commandLead: stream.commandLead,
                                     opener: { uri, frame in try opener.openForPlayback(uri, startFrame: frame) },
                                     unavailableFolder: { [mediaFolders] path in Self.unavailableFolder(of: path, in: mediaFolders) },
                                     // Weak: a stopped leader may be gone while its source thread finishes its last chunk.
                                     broadcast: { [weak self, weak stream] messages in
                                         guard let self, let stream else { return }
                                         broadcast(messages, on: stream)
                                     },
                                     purge: { [weak stream] pts in stream?.backlog.withLock { $0.removeAll { $0.pts >= pts } } })
        stream.player.onHeardChangeMoved = { [heardWake] in heardWake.signal() }
        return stream
    }

    /// Where followers connect (the real port when 0 was asked for).
    public var endpoint: Endpoint { listener.endpoint }

    /// Where Snapcast clients connect, when enabled (the real port when 0 was asked for).
    public var snapcastEndpoint: Endpoint? { snapcastListener?.endpoint }

    /// True once every file has been played (never with `loop`).
    public var finished: Bool { mainStream.player.ended }

    /// Rooms connected now, as people see them: a stereo pair once, by its name, while either of its speakers is.
    public var followerNames: [String] {
        let speakers = connectedSpeakers
        return stereoPairs.withLock { $0.collapse(speakers) }.sorted()
    }

    /// Speakers connected now, by the names they joined with (a pair's two apart), sorted.
    var connectedSpeakers: [String] { sessions.withLock { $0.values.compactMap { $0.name } }.sorted() }
    public var speakerNames: [String] { connectedSpeakers }

    public var health: [String: HealthReport] { healthReports.withLock { $0 } }
    /// Each v5 room's clock confidence and arrival margin.
    public var syncHealth: [String: SyncReport] { syncReports.withLock { $0 } }

    /// Starts the leader's services in order (`ServiceGroup`, see
    /// `startServices`): the accept loop, guards and clock, the players and
    /// what watches them, the speaker ports, the control surfaces
    /// (`surfaces`), and last what tells the network the leader is here
    /// (mDNS, AirPlay). `stop` ends them in reverse: withdrawn first, then
    /// nobody can command, then speakers hear the goodbye, then the players stop.
    public func start() throws {
        // Fail early on an impossible encoder configuration.
        _ = try makeEncoder(configuration.codec, bitrateKbps: configuration.bitrateKbps, frameSize: configuration.framesPerChunk)
        log.info("leader listening on \(listener.endpoint), \(configuration.codec) \(configuration.codec == .opus ? "\(configuration.bitrateKbps) kbps " : "")\(configuration.frameMilliseconds) ms chunks, buffer \(configuration.bufferMilliseconds) ms")
        if speakerSecurity.open {
            log.warning("no room key: any device on the network can join as a speaker (set speakers = paired in tutti.conf [leader])")
        } else {
            log.info("speakers: \(configuration.pairedSpeakersOnly ? "paired ones only" : "those proving the room key") (leader key \(speakerSecurity.fingerprint))")
        }
        do { try startServices() } catch {
            running.store(false, ordering: .releasing)
            services.stop()
            throw error
        }
        log.info("groups: \(grouping.withLock { $0.groups.map(\.name) }.joined(separator: ", "))")
    }

    /// In the order they stop in reverse: what tells the network the
    /// leader is here goes first (AirPlay, mDNS), then the control surfaces
    /// (nobody can command any more), then the speaker ports (every speaker
    /// hears goodbye), then what plays and watches (a last checkpoint while
    /// the players still answer), the scan, the clock, the guards.
    private func startServices() throws {
        try services.start(acceptLoop)
        try services.start(speakerGuards())
        if let clock = clockService() { try services.start(clock) }
        try startPlaying()
        try services.start(speakerPort(listener, dialect: .tutti))
        if let snapcastListener {
            log.info("Snapcast clients on \(snapcastListener.endpoint)")
            try services.start(speakerPort(snapcastListener, dialect: .snapcast))
        }
        // The control surfaces (JSON-RPC, the web app, MPD, Snapcast's control), as the composition root built them.
        try surfaces?.start(serving: self, in: services)
        try startAnnouncements()
    }

    /// The library scan, the players and what watches them.
    private func startPlaying() throws {
        if let library, let folder = configuration.musicDirectory {
            // The start-up scan runs beside playback; unchanged files are not re-read. A stopping leader ends it between two files.
            var options = ScanOptions()
            options.shouldStop = { [weak self] in self?.running.load(ordering: .relaxed) != true }
            try services.start(LoopService("library scan", threadName: "tutti-scan", stackSize: 1 << 20, wake: {}) { [log, self, options] in
                do {
                    let summary = try library.scan(folder: folder, options: options) // the library logs its own summary
                    guard !summary.stopped else { return }
                    self.events.emit(.library)
                    self.dropMissingFilesFromQueue()
                } catch {
                    log.error("library scan of \(folder) failed: \(error)")
                }
            })
        }
        try services.start(CallbackService("players", start: { [self] in
            for stream in streams.withLock({ Array($0.values) }) { try stream.start(in: sourceThreads) }
        }, stop: { [self] in
            for stream in streams.withLock({ Array($0.values) }) { stream.player.stop() }
            if !sourceThreads.waitForAll(untilNanoseconds: Condition.deadline(afterSeconds: 0.5)) {
                log.warning("\(sourceThreads.running) players still finishing a read after 0.5 s")
            }
        }))
        if let stateStore {
            events.subscribe { [weak self] event in
                guard let self, event == .player || event == .queue || event == .options || event == .groups || event == .mixer else { return }
                self.stateDirty.store(true, ordering: .releasing)
                self.stateWake.signal()
            }
            // Stopped before the players: the last checkpoint reads them.
            try services.start(LoopService("state", threadName: "tutti-state", wake: { [self] in checkpoint(); stateWake.signal() }) { [self] in
                checkpointLoop(stateStore)
            })
        } else {
            try services.start(CallbackService("state", stop: { [self] in checkpoint() }))
        }
        // Stopped before the state: a calibration still playing puts the rooms back first.
        try services.start(CallbackService("calibration", stop: { [self] in calibrationRun.withLock { $0 }?.finish() }))
        // Track changes that no command caused (a track ended, the list ran out)
        // are announced when they are heard: the thread sleeps until the next
        // moment a player says what is heard will change, or until a command.
        events.subscribe { [heardWake] event in
            if event == .player || event == .groups || event == .queue { heardWake.signal() }
        }
        try services.start(LoopService("heard watch", threadName: "tutti-heard", wake: { [heardWake] in heardWake.signal() }) { [self] in
            heardLoop()
        })
        if let podcasts { try services.start(CallbackService("podcasts", start: { podcasts.start() }, stop: { podcasts.stop() })) }
        // Announcements' blocks go out paced, a second ahead of their PTS (every speaker's outbox stays small).
        let pacer = OnDemandWorker("announcements", threadName: "tutti-announce", log: log) { [self] in announcementRound() }
        announcementPacer.withLock { $0 = pacer }
        try services.start(pacer)
        // Previews for the web app: a thread only while one is being made.
        if let library {
            let previews = PreviewService(library: library, log: log.with(label: "preview"))
            previewService.withLock { $0 = previews }
            try services.start(previews)
        }
    }

    /// mDNS and AirPlay: once everything they point at runs.
    private func startAnnouncements() throws {
        if configuration.announce {
            try services.start(CallbackService("mDNS", start: { [self] in startAnnouncing() }, stop: { [self] in
                snapcastAnnouncer?.stop()
                for announcer in surfaceAnnouncers { announcer.stop() }
                announcer?.stop() // withdrawn first: nobody should find a leader that is going
            }))
        }
        if configuration.airplay {
            // Once the players run: it may clean their queues. Withdrawn first: no phone should find a receiver that plays nowhere.
            try services.start(CallbackService("AirPlay", start: { [self] in startAirPlay() }, stop: { [self] in airplay?.stop() }))
        }
    }

    private func heardLoop() {
        while running.load(ordering: .relaxed) {
            let players = streams.withLock { $0.values.map(\.player!) }
            // "Deciding" first: a change published while this looks wakes it at once.
            for p in players { p.heardWatchDeadline.store(.max, ordering: .releasing) }
            let now = Monotonic.now()
            let next = players.compactMap { $0.nextHeardChange(after: now) }.min()
            for p in players { p.heardWatchDeadline.store(next ?? .max, ordering: .releasing) }
            if let next {
                // A millisecond late, so the frame that changes is already heard.
                _ = heardWake.wait(timeout: .now() + .nanoseconds(Int(next - now + nanosecondsPerMillisecond)))
            } else {
                heardWake.wait()
            }
            guard running.load(ordering: .relaxed) else { return }
            for stream in streams.withLock({ Array($0.values) }) { watchHeard(stream) }
        }
    }

    /// Announces what a stream's listeners hear change, and records finished plays.
    func watchHeard(_ stream: LeaderStream) {
        let now = stream.player.nowPlaying()
        if stream.group == RoomGroups.mainID {
            let t = Monotonic.now()
            playTime.withLock { p in
                if now.state.isActive, p.since == nil { p.since = t }
                if !now.state.isActive, let since = p.since { p.total += t - since; p.since = nil }
            }
        }
        if let (state, entry) = stream.lastHeard, state != now.state || entry != now.entryID {
            events.emit(stream.group == RoomGroups.mainID ? .player : .groups)
            // Consume: an entry that was being heard and no longer is (it ended, or was skipped) leaves the queue.
            if now.consume, state.isActive, let entry, entry != now.entryID || (now.state == .stopped && stream.player.ended) {
                _ = try? perform(.removeEntry(id: entry), group: stream.group)
            }
        }
        stream.lastHeard = (now.state, now.entryID)
        // Plays go into the library's history once they end, with how long they were heard.
        if let finished = stream.heard.update(path: now.state == .playing && !now.path.isEmpty ? now.path : nil, at: Monotonic.now(),
                                              wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000)), let library,
           let track = try? library.track(atPath: finished.path) {
            do { try library.recordPlay(track.id, startedAt: finished.startedAt, playedMilliseconds: finished.playedMilliseconds) } catch {
                log.warning("recording a play of \(finished.path): \(error)")
            }
        }
    }

    /// Stops every service in reverse order, joining what each started:
    /// announcements withdrawn, players and watchers ended, speakers told
    /// goodbye, control clients closed.
    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        services.stop(log: log)
    }
}

/// The door the control surfaces use (TuttiControlKit): the engine's
/// members they need, and no more.
extension Leader: LeaderControl {
    public var surfaceSettings: SurfaceSettings {
        SurfaceSettings(outboxLimits: configuration.outboxLimits, clientStallMilliseconds: configuration.clientStallMilliseconds,
                        musicDirectory: configuration.musicDirectory, framesPerChunk: configuration.framesPerChunk,
                        bufferAheadNanoseconds: Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond)
    }
    public var podcastControl: (any PodcastControl)? { podcasts }

    public func preview(of track: TrackID, for address: SourceAddress) throws(PreviewError) -> TrackPreview {
        guard library != nil else { throw .noLibrary }
        guard let service = previewService.withLock({ $0 }) else { throw .stopping }
        return try service.preview(track, for: address).get()
    }

    /// Previews encoded since start (a cache hit adds none).
    public var previewEncodes: Int { previewService.withLock { $0 }?.encodes.load(ordering: .relaxed) ?? 0 }
    /// Preview requests waiting now from `address`, and from all (each holds a web server lane).
    public func previewsWaiting(from address: SourceAddress) -> (address: Int, total: Int) {
        previewService.withLock { $0 }?.waiting(from: address) ?? (0, 0)
    }
    /// The most preview requests one address has had waiting at once since start.
    public var previewsMostWaitingFromOneAddress: Int { previewService.withLock { $0 }?.mostHeldByOneAddress.load(ordering: .relaxed) ?? 0 }
}
