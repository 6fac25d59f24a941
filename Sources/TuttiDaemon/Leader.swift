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

/// Where the web app is served, and from which files.
public struct WebOptions: Sendable, Equatable {
    public var endpoint: Endpoint
    /// Asked for explicitly: failing to serve it stops the leader. The
    /// default port, when taken, is skipped with a warning instead.
    public var required: Bool
    /// The web app's files (nil: found beside the executable, or /usr/share/tutti/web).
    public var root: String?
    public init(endpoint: Endpoint, required: Bool = true, root: String? = nil) {
        self.endpoint = endpoint
        self.required = required
        self.root = root
    }
}

/// How a leader is set up (`tuttid leader …`).
public struct LeaderConfiguration: Sendable {
    public var listen = Endpoint(host: "0.0.0.0", port: 4953)
    /// Where the JSON-RPC control socket listens (nil: none).
    public var control: Endpoint? = nil
    /// Where the MPD protocol server listens (nil: none).
    public var mpd: Endpoint? = nil
    /// The web app (nil: none).
    public var web: WebOptions? = nil
    /// The music folder to scan into the library (nil: no library scan).
    public var musicDirectory: String? = nil
    /// The library database (nil with a music folder: the default path).
    public var databasePath: String? = nil
    /// A button mapping file (nil: no buttons).
    public var buttons: String? = nil
    /// The offline cache of network tracks (nil: beside the library, or none without one).
    public var cacheDirectory: String? = nil
    public var cacheCapacityMegabytes = 2_048
    /// Keep finite network files in the cache as they play (`--no-auto-cache` turns it off).
    public var autoCache = true
    /// Timeouts, buffer and reconnection for network sources.
    public var network = NetworkOptions()
    public var files: [String] = []
    public var loop = false
    public var codec = Codec.opus
    public var bitrateKbps = 160
    public var frameMilliseconds = 20
    /// Steady-state buffer: how far ahead of its PTS each chunk is sent.
    public var bufferMilliseconds = 1_000
    /// How far ahead new audio is scheduled (start, resume, skip, seek), and
    /// so how soon a command is heard; the leader then sends ahead faster
    /// than real time until the buffer is full.
    public var startLatencyMilliseconds = 100
    /// The room key speakers must prove (nil: any speaker may join).
    public var roomKey: RoomKey? = nil
    public var roomKeyFile: String? = nil
    /// With a room key, let snapclients in anyway (they cannot prove it).
    public var snapcastWithoutKey = false
    /// The password control clients from other machines log in with (nil:
    /// generated and saved beside the library when a surface listens beyond
    /// loopback; see docs/security.md).
    public var password: String? = nil
    public var passwordFile: String? = nil
    /// Clients from other machines that have not logged in may look (not change).
    public var guestReadOnly = false
    /// No password even beyond loopback: anyone on the network controls the music.
    public var openControl = false
    /// Clients on this machine log in too (a reverse proxy here forwards strangers).
    public var passwordOnLoopback = false
    /// Where M3U playlists are imported from and exported to (nil: `playlists` beside the library).
    public var playlistDirectory: String? = nil
    /// More folders clients may name files in (besides music, cache, playlists).
    public var allowedFolders: [String] = []
    /// librubberband's engine for speed and pitch.
    public var timeStretchEngine = TimeStretcher.Engine.faster
    /// Bytes a follower may have queued before it is dropped as too slow.
    public var maximumQueuedBytes = 2 << 20
    /// How long a chunk may wait in a follower's queue before that follower
    /// is dropped as too slow (by then it could no longer play it in time).
    public var maximumQueueDelayMilliseconds = 2_000
    /// A control client (JSON-RPC, MPD, web page) whose writes make no
    /// progress for this long has stopped reading, and is disconnected.
    public var clientStallMilliseconds = 10_000
    /// What may wait for one control client before it is disconnected.
    public var clientOutbox = ClientOutbox.Limits()

    /// The outbox limits with the stall limit in them.
    var outboxLimits: ClientOutbox.Limits {
        var l = clientOutbox
        if l.maximumBusyNanoseconds == nil { l.maximumBusyNanoseconds = Int64(clientStallMilliseconds) * 1_000_000 }
        return l
    }
    /// Announce this leader over mDNS (`_tutti._tcp`). Off unless asked for,
    /// so tests that build leaders directly stay off the network; the
    /// command line turns it on (see docs/discovery.md).
    public var announce = false
    /// Where stock Snapcast clients (snapclient, Snapdroid, ESP32 speakers)
    /// connect with Snapcast's binary protocol (nil: none); see docs/snapcast.md.
    public var snapcastStream: Endpoint? = nil
    /// Asked for explicitly: a taken port stops the leader; the default one is skipped with a warning.
    public var snapcastStreamRequired = true
    /// Snapcast's control API over TCP (Home Assistant, python-snapcast), and over HTTP/WebSocket at /jsonrpc (snapweb).
    public var snapcastControl: Endpoint? = nil
    public var snapcastHTTP: Endpoint? = nil
    /// The announced service name (nil: "Tutti on HOSTNAME").
    public var announceName: String? = nil

    public init() {}

    public var framesPerChunk: Int { StreamFormat.sampleRate * frameMilliseconds / 1000 }
}

/// Decodes the play list, stamps and encodes each chunk once, and fans the
/// chunks out to every connected follower.
///
/// Threads: one source thread (decode, encode, pace), one accept thread,
/// and per follower one reader (hello, clock sync, health) and one writer
/// (drains that follower's bounded queue). No follower can block another
/// or the source.
// Sendable because shared state is in Mutexes and Atomics; the `var`s (main stream, servers, announcers) are set during init and start(), before the threads that read them, and never again.
public final class Leader: @unchecked Sendable {
    public let configuration: LeaderConfiguration
    /// The main group's stream.
    public var streamID: UInt32 { mainStream.id }
    let log: Logger
    private let listener: TCPListener
    /// Snapcast's stream port, when `snapcastStream` is set.
    private let snapcastListener: TCPListener?
    private let sessions = Mutex<[ObjectIdentifier: FollowerSession]>([:])
    private let running = Atomic<Bool>(true)
    private let roomSettings = Mutex<[String: RoomSettings]>([:])
    /// Each room's equaliser and the preset it came from (Leader+Sound.swift).
    let roomEqualizers = Mutex<[String: RoomEqualizer]>([:])
    /// Presets people saved, usable in any room.
    let customPresets = Mutex<[EqualizerPreset]>([])
    /// A group volume or mute set while none of its rooms was known: applied to rooms as they join.
    let keptGroupSound = Mutex<[String: KeptGroupSound]>([:])
    /// Room settings or presets changed since the last save.
    let soundDirty = Atomic<Bool>(false)
    /// Each group's balance between its rooms while its volume slider moves (see `GroupVolume`).
    private let groupBalance = Mutex<[String: (rooms: [String], balance: [Double])]>([:])
    /// Every stream's epoch is a whole number of frames from here, so a room
    /// that changes group stays on the same 48 kHz grid.
    let gridOrigin = LeaderTime(nanoseconds: Monotonic.now())
    /// The main group's stream (restored from the state store).
    private var mainStream: LeaderStream!
    /// Each group's stream, by group id.
    let streams = Mutex<[String: LeaderStream]>([:])
    /// Which room is in which group.
    let grouping = Mutex(RoomGroups())
    /// Serialises group changes end to end (table, then sessions).
    let groupChanges = Condition() // a lock: one group change at a time
    private var controlServer: ControlServer?
    private var mpdServer: MPDServer?
    private var webSurface: WebSurface?
    private var snapcastControlServer: SnapcastControl?
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
    static func canonical(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

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
    /// not there yet, by its folder); returned as given. Web streams pass;
    /// a pipe's path is checked.
    public func confine(_ uri: String) throws(PathConfinementError) -> String {
        if MediaFolders.isRemote(uri) { return uri }
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

    /// Who may do what on the control surfaces, and the token a login returns (derived from the password).
    public let controlAccess: ControlAccess
    let controlToken: String

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
                if let file, FileManager.default.createFile(atPath: file, contents: Data((fresh + "\n").utf8), attributes: [.posixPermissions: 0o600]) {
                    log.warning("\(exposed.map(\.description).joined(separator: ", ")) listen beyond this machine: other machines log in with the password \(fresh) (saved in \(file); set password in tutti.conf to choose one)")
                } else {
                    log.warning("\(exposed.map(\.description).joined(separator: ", ")) listen beyond this machine: other machines log in with the password \(fresh) (for this run; set password in tutti.conf to keep one)")
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
    /// The music library, when a music folder or database was configured.
    public let library: Library?
    /// Changes, for every control surface.
    public let events = LeaderEventHub()
    /// The offline cache for network tracks, when there is a place for it.
    public let cache: StreamCache?
    /// Station and title of each network stream, as its ICY metadata says.
    private let streamMetadata = StreamMetadataBoard()
    /// Where the player's state is checkpointed (with a library).
    let stateStore: PlayerStateStore?
    private let stateDirty = Atomic<Bool>(false)
    /// Whether checkpoints are being written (a full disk fails them all).
    let saveHealth = Mutex(SaveHealth())
    /// Why the player state is not being saved now (nil: it is); shown in status.
    public var saveFailure: String? { saveHealth.withLock { $0.failure } }
    private let stateWake = DispatchSemaphore(value: 0)
    private let healthReports = Mutex<[String: HealthReport]>([:])
    private let syncReports = Mutex<[String: SyncReport]>([:])
    /// Answers clock requests on UDP at the listener's port (protocol v5); nil if that port was taken.
    private var clockServer: UDPSocket?
    private let lastHealthAnnounced = Atomic<Int64>(0)
    /// Every room that has joined since start: a speaker switched off is still a room (shown offline).
    let seenRooms = Mutex<Set<String>>([])
    /// Wakes the heard-watcher: a command, or a player's next heard change moved.
    private let heardWake = DispatchSemaphore(value: 0)
    /// The main group's time heard playing: finished spans, and the start of the current one.
    private let playTime = Mutex<(total: Int64, since: Int64?)>((0, nil))

    /// Nanoseconds the main group has been heard playing since the leader started (MPD `stats`).
    public var playedNanoseconds: Int64 { playTime.withLock { $0.total + ($0.since.map { Monotonic.now() - $0 } ?? 0) } }
    private let opener: SourceOpener

    public init(configuration: LeaderConfiguration, log: Logger) throws {
        self.configuration = configuration
        self.log = log
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
            seenRooms.withLock { $0.formUnion(rooms.keys) }
            customPresets.withLock { $0 = presets }
            for g in savedGroups?.groups ?? [] where g.id != RoomGroups.mainID {
                groupSnapshots[g.id] = try store.load(group: g.id, seed: seed)
            }
        } else {
            library = nil
            stateStore = nil
        }
        controlAccess = Self.controlAccess(configuration, stateFolder: stateFolder, log: log)
        let playlists = configuration.playlistDirectory ?? stateFolder.map { $0 + "/playlists" }
        if let playlists { try? FileManager.default.createDirectory(atPath: playlists, withIntermediateDirectories: true) }
        playlistFolder = playlists
        controlToken = controlAccess.password.map { RoomKey.hexMAC(key: $0, message: "tutti control token v1") } ?? ""
        let cacheFolder = configuration.cacheDirectory ?? library.map { PathText.parent($0.path) + "/cache" }
        cache = try cacheFolder.map { folder in
            try StreamCache(directory: folder, capacityBytes: Int64(configuration.cacheCapacityMegabytes) << 20, log: log.with(label: "cache"))
        }
        let roots = [configuration.musicDirectory, cacheFolder, playlists].compactMap { $0 } + configuration.allowedFolders
            + configuration.files.filter { !MediaFolders.isRemote($0) && !PipeSourceSpec.isPipe($0) }.map { PathText.parent($0) }
        // A folder missing now (a disk not mounted yet) is still a media folder, by its name.
        mediaFolders = MediaFolders(roots: roots.map { Self.canonical($0) ?? PathText.standardized($0) })
        opener = SourceOpener(cache: cache, options: configuration.network, log: log.with(label: "stream"),
                              autoCache: configuration.autoCache) { [streamMetadata, events] uri, metadata in
            streamMetadata.set(metadata, for: uri)
            events.emit(.player) // the stream title is part of now playing
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
        let stream = LeaderStream(id: UInt32.random(in: 1...UInt32.max), group: group)
        let opener = self.opener
        stream.player = StreamPlayer(configuration: setup, streamID: stream.id, gridOrigin: gridOrigin, log: log.with(label: group == RoomGroups.mainID ? "player" : "player \(group)"),
                                     restoring: snapshot,
                                     opener: { uri, frame in try opener.openForPlayback(uri, startFrame: frame) },
                                     unavailableFolder: { [mediaFolders] path in Self.unavailableFolder(of: path, in: mediaFolders) },
                                     // Weak: a stopped leader may be gone while its source thread finishes its last chunk.
                                     broadcast: { [weak self, weak stream] message, pts in
                                         guard let self, let stream else { return }
                                         broadcast(message, pts: pts, on: stream)
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

    public var followerNames: [String] { sessions.withLock { $0.values.compactMap { $0.name } }.sorted() }

    public var health: [String: HealthReport] { healthReports.withLock { $0 } }
    /// Each v5 room's clock confidence and arrival margin.
    public var syncHealth: [String: SyncReport] { syncReports.withLock { $0 } }


    /// The JSON-RPC endpoint, once started (the real port when 0 was asked for).
    public var controlEndpoint: Endpoint? { controlServer?.endpoint }

    /// Where the web app is served, once started (the real port when 0 was asked for).
    public var webEndpoint: Endpoint? { webSurface?.endpoint }

    /// Snapcast's control API endpoints, once started.
    public var snapcastControlEndpoint: Endpoint? { snapcastControlServer?.controlEndpoint }
    public var snapcastHTTPEndpoint: Endpoint? { snapcastControlServer?.httpEndpoint }

    /// Control clients connected over every JSON-RPC surface (TCP and the web app).
    public var controlClientCount: Int { controlServer?.clientCount ?? 0 }

    /// The MPD protocol endpoint, once started (the real port when 0 was asked for).
    public var mpdEndpoint: Endpoint? { mpdServer?.endpoint }

    /// ACK lines the MPD server has sent (count, latest ones); nil without one.
    public var mpdErrorsSent: (count: Int, recent: [String])? { mpdServer?.errorsSent }

    public func start() throws {
        // Fail early on an impossible encoder configuration.
        _ = try makeEncoder(configuration.codec, bitrateKbps: configuration.bitrateKbps, frameSize: configuration.framesPerChunk)
        log.info("leader listening on \(listener.endpoint), \(configuration.codec) \(configuration.codec == .opus ? "\(configuration.bitrateKbps) kbps " : "")\(configuration.frameMilliseconds) ms chunks, buffer \(configuration.bufferMilliseconds) ms")
        if configuration.roomKey == nil {
            log.warning("no room key: any device on the network can join as a speaker (set room-key in tutti.conf [leader])")
        }
        startThread(name: "tutti-accept") { [self] in acceptLoop(listener, dialect: .tutti) }
        startClockServer()
        if let snapcastListener {
            log.info("Snapcast clients on \(snapcastListener.endpoint)")
            startThread(name: "tutti-snap-accept") { [self] in acceptLoop(snapcastListener, dialect: .snapcast) }
        }
        if configuration.control != nil || configuration.web != nil {
            // The web app speaks the same JSON-RPC, so it needs the server even without its TCP port.
            let server = try ControlServer(leader: self, endpoint: configuration.control, log: log.with(label: "control"))
            server.start()
            controlServer = server
            if let web = configuration.web {
                do {
                    webSurface = try WebSurface(leader: self, control: server, options: web, log: log.with(label: "web"))
                } catch {
                    guard !web.required else { throw error }
                    log.warning("\(error); the web app is off (give --web HOST:PORT to choose another port)")
                }
            }
        }
        if configuration.snapcastControl != nil || configuration.snapcastHTTP != nil {
            do {
                let server = try SnapcastControl(leader: self, control: configuration.snapcastControl, http: configuration.snapcastHTTP, log: log.with(label: "snapcast"))
                server.start()
                snapcastControlServer = server
            } catch {
                guard configuration.snapcastStreamRequired else {
                    log.warning("\(error); Snapcast's control API is off (give --snapcast-control and --snapcast-http to choose other ports)")
                    return try startRest()
                }
                throw error
            }
        }
        try startRest()
    }

    private func startRest() throws {
        if let mpd = configuration.mpd {
            let server = try MPDServer(leader: self, endpoint: mpd, log: log.with(label: "mpd"))
            server.start()
            mpdServer = server
        }
        if configuration.announce { startAnnouncing() }
        if let library, let folder = configuration.musicDirectory {
            // The start-up scan runs beside playback; unchanged files are not re-read.
            startThread(name: "tutti-scan", stackSize: 1 << 20) { [log, self] in
                do {
                    _ = try library.scan(folder: folder) // the library logs its own summary
                    self.events.emit(.library)
                    self.dropMissingFilesFromQueue()
                } catch {
                    log.error("library scan of \(folder) failed: \(error)")
                }
            }
        }
        if let stateStore {
            events.subscribe { [weak self] event in
                guard let self, event == .player || event == .queue || event == .options || event == .groups || event == .mixer else { return }
                self.stateDirty.store(true, ordering: .releasing)
                self.stateWake.signal()
            }
            startThread(name: "tutti-state") { [self] in
                checkpointLoop(stateStore)
            }
        }
        // Track changes that no command caused (a track ended, the list ran out)
        // are announced when they are heard: the thread sleeps until the next
        // moment a player says what is heard will change, or until a command.
        events.subscribe { [heardWake] event in
            if event == .player || event == .groups || event == .queue { heardWake.signal() }
        }
        startThread(name: "tutti-heard") { [self] in
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
                for stream in streams.withLock({ Array($0.values) }) { watchHeard(stream) }
            }
        }
        for stream in streams.withLock({ Array($0.values) }) { stream.start() }
        log.info("groups: \(grouping.withLock { $0.groups.map(\.name) }.joined(separator: ", "))")
    }

    /// Announces what a stream's listeners hear change, and records finished plays.
    private func watchHeard(_ stream: LeaderStream) {
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

    /// Saves the player state at once after a change, and the position once
    /// a second while playing (so a power cut loses at most a second of it);
    /// a failure is logged and retried.
    private func checkpointLoop(_ store: PlayerStateStore) {
        var ticks = 0
        while running.load(ordering: .relaxed) {
            _ = stateWake.wait(timeout: .now() + .seconds(1))
            let dirty = stateDirty.exchange(false, ordering: .acquiringAndReleasing)
            ticks += 1
            if dirty || ticks % 5 == 0 {
                // A change that could not be saved is tried again at the next tick.
                if !save(to: store, onlyIfPlaying: !dirty), dirty { stateDirty.store(true, ordering: .releasing) }
            } else {
                savePositions(to: store)
            }
            if soundDirty.exchange(false, ordering: .acquiringAndReleasing) { saveSound(to: store) }
        }
    }

    /// Logs the first failure of a kind and the recovery, not every checkpoint.
    func recordSave(_ error: (any Error)?) {
        let line = saveHealth.withLock { h in error.map { h.failed("\($0)") } ?? h.succeeded() }
        guard let line else { return }
        if error == nil { log.info(line) } else { log.error(line) }
        events.emit(.player) // status carries the warning: clients hear it change
    }

    /// Saves every group's player state (with `onlyIfPlaying`, only those
    /// whose position moves); false when a save failed.
    @discardableResult
    private func save(to store: PlayerStateStore, onlyIfPlaying: Bool) -> Bool {
        var failure: (any Error)?
        for stream in streams.withLock({ Array($0.values) }) {
            let snapshot = stream.player.snapshot()
            guard !onlyIfPlaying || snapshot.wasPlaying else { continue }
            do {
                if stream.group == RoomGroups.mainID { try store.save(snapshot) } else { try store.save(snapshot, group: stream.group) }
            } catch {
                failure = error
            }
        }
        recordSave(failure)
        return failure == nil
    }

    /// The main group's position alone (two rows); other groups, whole, every 5 s.
    private func savePositions(to store: PlayerStateStore) {
        let now = mainStream.player.nowPlaying()
        guard now.state.isActive else { return }
        do {
            try store.savePosition(entryID: now.entryID, positionMilliseconds: Int64(now.positionSeconds * 1000))
            recordSave(nil)
        } catch {
            recordSave(error)
        }
    }

    /// Saves the player state now (on shutdown).
    public func checkpoint() {
        guard let stateStore else { return }
        save(to: stateStore, onlyIfPlaying: false)
        saveSound(to: stateStore)
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        checkpoint()
        stateWake.signal()
        heardWake.signal()
        snapcastAnnouncer?.stop()
        announcer?.stop() // withdrawn first: nobody should find a leader that is going
        listener.close()
        clockServer?.close()
        snapcastListener?.close()
        for stream in streams.withLock({ Array($0.values) }) { stream.player.stop() }
        webSurface?.stop()
        snapcastControlServer?.stop()
        controlServer?.stop()
        mpdServer?.stop()
        let all = sessions.withLock { Array($0.values) }
        for s in all { s.close(reason: "leader stopping") }
    }

    // MARK: Clock service

    /// UDP clock exchanges on the listener's port: a request is answered at
    /// once, stamped with the kernel's receive time (t2) and the time just
    /// before the reply is sent (t3). Stateless: anyone may ask the time;
    /// a request is as long as its answer, so nobody can amplify through it.
    /// Without the port (taken), v5 followers fall back to the TCP stream.
    private func startClockServer() {
        let socket: UDPSocket
        do { socket = try UDPSocket.bind(listener.endpoint) } catch {
            log.warning("clock exchanges over UDP are off (\(error)): followers use the TCP stream for them")
            return
        }
        clockServer = socket
        startThread(name: "tutti-clock") { [self] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)
            defer { buffer.deallocate() }
            while running.load(ordering: .relaxed) {
                let received: (count: Int, arrival: Int64, from: UDPSocket.Peer)
                do { received = try socket.receive(into: buffer) } catch {
                    if socket.closed || !running.load(ordering: .relaxed) { return }
                    continue
                }
                guard case .timeRequest(let id, let t1)? = ClockDatagram.decode(UnsafeRawBufferPointer(rebasing: buffer[0..<received.count])) else { continue }
                let t2 = LeaderTime(nanoseconds: received.arrival != 0 ? received.arrival : Monotonic.now())
                let reply = Message.timeResponse(id: id, t1: t1, t2: t2, t3: LeaderTime(nanoseconds: Monotonic.now())).encoded()
                try? socket.send(reply, to: received.from)
            }
        }
    }

    // MARK: Followers

    /// Speaker connections (Tutti and Snapcast) served at once; a home has a few dozen rooms at most.
    private let sessionBudget = ConnectionBudget(name: "speaker port", limit: 256)

    private func acceptLoop(_ listener: TCPListener, dialect: FollowerSession.Dialect) {
        while running.load(ordering: .relaxed) {
            let connection: TCPConnection
            do { connection = try listener.accept() } catch {
                if running.load(ordering: .relaxed) { log.error("accept failed: \(error)") }
                return
            }
            // Speakers and would-be speakers at once: a flood of connections gets the rest closed.
            guard sessionBudget.admit(log: log, now: Monotonic.now()) else { connection.close(); continue }
            let session = FollowerSession(connection: connection, leader: self, log: log, dialect: dialect)
            sessions.withLock { $0[ObjectIdentifier(session)] = session }
            session.start()
        }
    }

    func describe(_ stream: LeaderStream) -> StreamDescription {
        StreamDescription(streamID: stream.id, codec: configuration.codec, framesPerChunk: UInt32(configuration.framesPerChunk),
                          bufferNanoseconds: Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond)
    }

    /// The stream a room hears: its group's.
    func stream(forRoom room: String) -> LeaderStream {
        let group = grouping.withLock { $0.groupID(ofRoom: room) }
        return streams.withLock { $0[group] } ?? mainStream
    }

    /// Called by a session once its follower is welcomed to `stream`: it
    /// gets the chunks still ahead of now (the live position) then everything new.
    func join(_ session: FollowerSession, stream: LeaderStream) {
        if let name = session.name { seenRooms.withLock { _ = $0.insert(name) } }
        let now = LeaderTime(nanoseconds: Monotonic.now())
        stream.backlog.withLock { chunks in
            for chunk in chunks where chunk.pts > now { session.send(chunk.message, encoded: chunk.bytes) }
            session.streamID.store(stream.id, ordering: .releasing)
        }
        // The room may have been moved between its welcome and now.
        groupChanges.withLock { applyGrouping() }
        events.emit(.rooms)
    }

    /// Moves a joined session to `stream` a start latency from now: it gets
    /// `follow`, then the new stream's chunks from that point, then everything new.
    /// Under the new stream's backlog lock, so each of its chunks is queued exactly once;
    /// old-stream chunks queued after `follow` are ignored by the follower.
    func switchSession(_ session: FollowerSession, to stream: LeaderStream) {
        let from = LeaderTime(nanoseconds: Monotonic.now() + Int64(min(configuration.startLatencyMilliseconds, configuration.bufferMilliseconds)) * nanosecondsPerMillisecond)
        let chunk = StreamFormat.nanoseconds(frames: configuration.framesPerChunk)
        stream.backlog.withLock { chunks in
            let current = session.streamID.load(ordering: .acquiring)
            guard current != 0, current != stream.id else { return }
            let follow = Message.follow(stream: describe(stream), from: from)
            session.send(follow, encoded: follow.encoded())
            for c in chunks where c.pts + chunk > from { session.send(c.message, encoded: c.bytes) }
            session.streamID.store(stream.id, ordering: .releasing)
        }
    }

    /// Every joined session hears its room's group (after a group change).
    /// Call under `groupChanges`.
    func applyGrouping() {
        for session in sessions.withLock({ Array($0.values) }) {
            guard let name = session.name, session.streamID.load(ordering: .acquiring) != 0 else { continue }
            let target = stream(forRoom: name)
            if session.streamID.load(ordering: .acquiring) != target.id {
                log.info("room \(name) now plays group \(target.group)")
                switchSession(session, to: target)
            }
        }
    }

    func remove(_ session: FollowerSession) {
        let removed = sessions.withLock { $0.removeValue(forKey: ObjectIdentifier(session)) != nil }
        if removed { sessionBudget.release() } // once per session, however often it is called
        if let name = session.name {
            healthReports.withLock { _ = $0.removeValue(forKey: name) }
            syncReports.withLock { _ = $0.removeValue(forKey: name) }
        }
        events.emit(.rooms)
    }

    fileprivate func record(sync report: SyncReport, from name: String) {
        syncReports.withLock { $0[name] = report }
    }

    fileprivate func record(health: HealthReport, from name: String) {
        healthReports.withLock { $0[name] = health }
        // Pages show each room's sync: one announcement a second, whatever the number of rooms.
        let now = Monotonic.now()
        let last = lastHealthAnnounced.load(ordering: .relaxed)
        if now - last >= nanosecondsPerSecond, lastHealthAnnounced.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged {
            events.emit(.health)
        }
    }

    private func broadcast(_ message: Message, pts: LeaderTime, on stream: LeaderStream) {
        let bytes = message.encoded()
        let now = LeaderTime(nanoseconds: Monotonic.now())
        // Under the backlog lock so a joining follower sees each chunk exactly once.
        let targets: [FollowerSession] = stream.backlog.withLock { chunks in
            chunks.removeAll { $0.pts <= now }
            chunks.append((pts, message, bytes))
            return sessions.withLock { Array($0.values) }.filter { $0.streamID.load(ordering: .acquiring) == stream.id }
        }
        for session in targets { session.send(message, encoded: bytes) }
    }

    // MARK: Player

    /// Transport commands (pause, skip, seek …) on a group's stream (nil:
    /// the main group); see `StreamPlayer`.
    public func perform(_ command: PlayerCommand, group: String? = nil) throws(PlayerError) -> CommandOutcome {
        let stream = try self.stream(forGroup: group)
        let outcome = try stream.player.submit(command)
        guard stream.group == RoomGroups.mainID else { events.emit(.groups); return outcome }
        switch command {
        case .add, .remove, .move, .clear: events.emit(.queue); events.emit(.player)
        case .shuffle: events.emit(.options); events.emit(.queue)
        case .repeatMode, .single, .consume: events.emit(.options)
        case .removeEntry: events.emit(.queue); events.emit(.player)
        default: events.emit(.player)
        }
        return outcome
    }

    /// A group's stream, by group id or name (nil: the main group).
    func stream(forGroup group: String?) throws(PlayerError) -> LeaderStream {
        guard let group else { return mainStream }
        let found = grouping.withLock { $0.group(group) }.flatMap { g in streams.withLock { $0[g.id] } }
        guard let found else {
            throw .invalid(GroupError.unknownGroup(group, known: grouping.withLock { $0.groups.map(\.name) }).description)
        }
        return found
    }

    public var nowPlaying: NowPlaying { mainStream.player.nowPlaying() }

    public func nowPlaying(group: String?) throws(PlayerError) -> NowPlaying { try stream(forGroup: group).player.nowPlaying() }

    public func queue(group: String?) throws(PlayerError) -> PlayQueue { try stream(forGroup: group).player.queueSnapshot }

    /// Station and now-playing title of a network stream (ICY), if it sent any.
    public func metadata(ofStream uri: String) -> StreamMetadata? { streamMetadata.get(uri) }

    /// The stream's queue as of the last change.
    public var queue: PlayQueue { mainStream.player.queueSnapshot }

    /// After a scan: queue entries whose local file is gone leave the queue, with a log line.
    public func dropMissingFilesFromQueue() {
        let entries = queue.entries
        for (index, entry) in entries.enumerated().reversed() where entry.uri.hasPrefix("/") && !FileManager.default.fileExists(atPath: entry.uri)
            && Self.unavailableFolder(of: entry.uri, in: mediaFolders) == nil { // a folder that is gone for now keeps its entries
            log.info("\(entry.uri) no longer exists: removed from the queue")
            _ = try? perform(.remove(index: index))
        }
    }

    // MARK: Rooms

    /// Sets a room's volume, mute and latency trim; applied at once if it is connected.
    public func configure(room: String, _ settings: RoomSettings) {
        roomSettings.withLock { $0[room] = settings }
        soundDirty.store(true, ordering: .releasing)
        let targets = sessions.withLock { $0.values.filter { $0.name == room } }
        let message = Message.settings(settings)
        let bytes = message.encoded()
        for session in targets { session.send(message, encoded: bytes) }
        events.emit(.mixer)
    }

    /// The rooms' balance for a group volume change: the one kept since the
    /// group's volume was last moved, while its rooms are the same, else
    /// their volumes now.
    func balance(ofGroup group: String, rooms: [String]) -> [Double] {
        groupBalance.withLock { kept in
            if let b = kept[group], b.rooms == rooms { return b.balance }
            let volumes = rooms.map { settings(of: $0).volume }
            let b = GroupVolume.balance(of: volumes) ?? volumes.map { _ in 1 }
            kept[group] = (rooms, b)
            return b
        }
    }

    /// A room's own volume changed: its group's balance is what the rooms are at now.
    func forgetBalance(ofGroup group: String) { groupBalance.withLock { _ = $0.removeValue(forKey: group) } }

    /// Forgets a room that is gone (Snapcast's Server.DeleteClient): its settings, and its place in a group.
    func forget(room: String) {
        roomSettings.withLock { _ = $0.removeValue(forKey: room) }
        seenRooms.withLock { _ = $0.remove(room) }
        groupChanges.withLock { grouping.withLock { _ = try? $0.move(room: room, to: RoomGroups.mainID) } }
        events.emit(.rooms)
    }

    public func settings(of room: String) -> RoomSettings {
        roomSettings.withLock { $0[room] } ?? RoomSettings()
    }

    /// Records a room's settings without sending them (a joining room gets them after its welcome).
    func storeSettings(_ settings: RoomSettings, room: String) {
        roomSettings.withLock { $0[room] = settings }
        soundDirty.store(true, ordering: .releasing)
        events.emit(.mixer)
    }

    /// Whether a room has settings of its own yet (a room never seen has none).
    func hasSettings(_ room: String) -> Bool { roomSettings.withLock { $0[room] != nil } }

    /// Every room's settings, for saving.
    var allRoomSettings: [String: RoomSettings] { roomSettings.withLock { $0 } }

    /// The sessions of a room (usually one).
    func sessions(ofRoom room: String) -> [FollowerSession] { sessions.withLock { $0.values.filter { $0.name == room } } }
}

/// One connected follower, seen from the leader.
// Sendable because the queue and `closed` are touched only under `queue`, `name` and `version` are in a Mutex and an Atomic, and the rest is immutable.
final class FollowerSession: @unchecked Sendable {
    let connection: TCPConnection
    /// Strong: a session's threads may finish after the leader stopped; it is released when the session is removed.
    let leader: Leader
    let log: Logger
    private let queue = Condition()
    private var queued: [(bytes: [UInt8], at: Int64)] = []
    private var queuedBytes = 0
    private var closed = false
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

    /// What the peer speaks: Tutti's protocol, or Snapcast's (a stock snapclient).
    enum Dialect { case tutti, snapcast }
    let dialect: Dialect
    /// Snapcast only: the stream whose chunks go to this client (a
    /// snapclient knows no streams: chunks of the one it left are dropped here).
    let snapcastStream = Atomic<UInt32>(0)

    init(connection: TCPConnection, leader: Leader, log: Logger, dialect: Dialect = .tutti) {
        self.connection = connection
        self.leader = leader
        self.log = log
        self.dialect = dialect
    }

    func start() {
        startThread(name: "tutti-session-r") { [self] in
            switch dialect {
            case .tutti: readLoop()
            case .snapcast: snapcastReadLoop()
            }
        }
        startThread(name: "tutti-session-w", stackSize: 256 << 10) { [self] in writeLoop() }
    }

    /// Sends a message of the leader's (`encoded` is its Tutti form, shared by every session).
    func send(_ message: Message, encoded: [UInt8]) {
        switch dialect {
        case .tutti: enqueue(encoded)
        case .snapcast: if let bytes = snapcastForm(of: message) { enqueue(bytes) }
        }
    }

    /// Queues bytes for this follower without ever blocking the caller; a
    /// follower that falls too far behind is disconnected.
    private func enqueue(_ bytes: [UInt8]) {
        queue.lock()
        if closed { queue.unlock(); return }
        let now = Monotonic.now()
        let waited = queued.first.map { now - $0.at } ?? 0
        if queuedBytes + bytes.count > leader.configuration.maximumQueuedBytes
            || waited > Int64(leader.configuration.maximumQueueDelayMilliseconds) * nanosecondsPerMillisecond {
            let reason = "too slow: \(queuedBytes) bytes waiting to be sent, oldest for \(waited / nanosecondsPerMillisecond) ms"
            queue.unlock()
            close(reason: reason)
            return
        }
        queued.append((bytes, now))
        queuedBytes += bytes.count
        queue.signal()
        queue.unlock()
    }

    func close(reason: String) {
        queue.lock()
        let wasOpen = !closed
        closed = true
        queued.removeAll()
        queuedBytes = 0
        queue.broadcast()
        queue.unlock()
        guard wasOpen else { return }
        log.info("follower \(name ?? connection.peer) disconnected: \(reason)")
        leader.remove(self)
        // Saying goodbye may block on a peer that stopped reading: never on the caller's thread.
        let connection = self.connection
        let sayBye = dialect == .tutti // a snapclient knows no goodbye: its socket just closes
        startThread(name: "tutti-session-bye", stackSize: 128 << 10) {
            connection.setSendTimeout(milliseconds: 200)
            if sayBye { try? connection.send(Message.bye(reason: reason).encoded()) }
            connection.close()
        }
    }

    private func writeLoop() {
        connection.setSendTimeout(milliseconds: 2_000)
        // A bounded kernel buffer, so a stalled follower shows up in our queue.
        connection.setSendBuffer(bytes: 128 * 1024)
        while true {
            queue.lock()
            while queued.isEmpty && !closed { queue.wait() }
            if closed { queue.unlock(); return }
            let bytes = queued.removeFirst().bytes
            queuedBytes -= bytes.count
            queue.unlock()
            do { try connection.send(bytes) } catch {
                close(reason: "\(error)")
                return
            }
        }
    }

    /// The room-key exchange: our nonce, the speaker's proof, ours. False: refused (and closed).
    private func checkRoomKey(_ key: RoomKey, reader: MessageReader, room: String) throws -> Bool {
        let nonce = RoomKey.nonce()
        try connection.send(Message.authChallenge(nonce: nonce).encoded())
        switch try reader.next() {
        case .authResponse(let theirs, let proof)?:
            guard theirs != nonce, key.verify(proof, .follower, leaderNonce: nonce, followerNonce: theirs, room: room) else {
                try? connection.send(Message.reject(version: WireProtocol.version, reason: "wrong room key").encoded())
                close(reason: "refused '\(room)' from \(connection.peer): wrong room key")
                return false
            }
            try connection.send(Message.authProof(proof: key.proof(.leader, leaderNonce: nonce, followerNonce: theirs, room: room)).encoded())
            return true
        case .bye(let reason)?:
            close(reason: "refused '\(room)' from \(connection.peer): \(reason)")
            return false
        default:
            close(reason: "refused '\(room)' from \(connection.peer): it did not answer the room-key challenge")
            return false
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
            if let key = leader.configuration.roomKey {
                guard version >= WireProtocol.authVersion else {
                    let reason = "this leader needs a room key, and the speaker (protocol v\(version)) cannot prove one: update it and set its room-key"
                    try? connection.send(Message.reject(version: WireProtocol.version, reason: reason).encoded())
                    close(reason: "refused '\(peerName)': \(reason)")
                    return
                }
                guard try checkRoomKey(key, reader: reader, room: peerName) else { return }
            }
            name = peerName.isEmpty ? connection.peer : peerName
            self.version = version
            leader.admitDuringParty(name!)
            leader.applyKeptGroupSound(toJoining: name!)
            let stream = leader.stream(forRoom: name!)
            try connection.send(Message.welcome(version: WireProtocol.version, stream: leader.describe(stream)).encoded())
            log.info("follower \(name!) joined from \(connection.peer)")
            try connection.send(Message.settings(leader.settings(of: name!)).encoded())
            if version >= WireProtocol.equalizerVersion {
                // Always, flat too: a speaker keeps its last EQ across reconnects.
                try connection.send(Message.equalizer(leader.equalizer(of: name!).settings).encoded())
            } else if !leader.equalizer(of: name!).settings.isFlat {
                log.warning("room \(name!) speaks protocol v\(version): its EQ is kept but not heard until its tutti is updated")
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
                    let room = name!
                    // Off the reader thread: a command may wait for the player.
                    startThread(name: "tutti-room-cmd") { [leader] in leader.handle(command, room: room) }
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

/// One group's stream: its player, and its chunks still ahead for rooms that join.
// Sendable because `player` is set once before the stream is shared, `lastHeard` and `heard` belong to the heard-watcher thread, and the backlog is under a Mutex.
final class LeaderStream: @unchecked Sendable {
    let id: UInt32
    /// The group it belongs to.
    let group: String
    var player: StreamPlayer!
    /// Chunks whose PTS is still ahead, for followers that join mid-stream.
    let backlog = Mutex<[(pts: LeaderTime, message: Message, bytes: [UInt8])]>([])
    // Used by the leader's heard-watcher thread only.
    var lastHeard: (PlayerState, UInt32?)?
    var heard = PlayHistoryTracker()
    private let started = Atomic<Bool>(false)

    init(id: UInt32, group: String) { self.id = id; self.group = group }

    /// Starts the source thread (once).
    func start() {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // The decoders, the resampler, the time stretcher and the encoder run on it: a roomy stack.
        startThread(name: "tutti-source", stackSize: 2 << 20) { [player] in player!.run() }
    }
}

/// The latest ICY metadata of each stream URL (bounded: streams come and go).
final class StreamMetadataBoard: Sendable {
    private let values = Mutex<[String: StreamMetadata]>([:])
    func set(_ metadata: StreamMetadata, for uri: String) {
        values.withLock { v in
            if v.count > 256 { v.removeAll() }
            v[uri] = metadata
        }
    }
    func get(_ uri: String) -> StreamMetadata? { values.withLock { $0[uri] } }
}
