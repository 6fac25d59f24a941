import Dispatch
import FoundationEssentials
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiStreams
import TuttiSystem
import TuttiControlKit

/// The leader's AirPlay receivers: one shairport-sync per group, each a
/// child process it owns (`ChildProcess`: restarted when it dies, stopped
/// with its group or the leader), announced over Avahi under the group's
/// name (`AirPlayReceiverPlan`). Its audio comes through a FIFO as a
/// `pipe:` source; its metadata pipe drives the group (`AirPlaySession`):
/// a phone that starts playing takes the group over (`PlayerCommand.cue`),
/// the end of its session gives it back paused (`uncue`), and now playing
/// shows the phone's title, artist, album and artwork.
///
/// A second kind of receiver (librespot for Spotify Connect) is the same
/// shape: a program that writes PCM to a pipe, a config, and an event hook
/// whose events become `AirPlaySession`-like take-over and release; see
/// docs/sources.md.
///
/// Thread contract: `update` from any thread (the work runs on its own
/// queue); `nowPlaying`/`artwork`/`remote` from any thread.
/// What the receivers need of the leader: its groups, to run one receiver
/// each, and its players, to let a phone take a group over and give it back.
public protocol AirPlayHost: AnyObject, Sendable {
    /// The groups now (which rooms play together, party mode).
    var groupTable: RoomGroups { get }
    var events: LeaderEventHub { get }
    @discardableResult func perform(_ command: PlayerCommand, group: String?) throws(PlayerError) -> CommandOutcome
}

public final class AirPlayReceivers: Sendable {
    /// One running receiver: its program, its pipes, its session.
    public final class Receiver: Sendable {
        let plan: Mutex<AirPlayReceiverPlan.Receiver>
        let directory: String
        let program: Mutex<ChildProcess?> = Mutex(nil)
        let session: Mutex<AirPlaySession>
        let running = Atomic<Bool>(true)
        init(plan: AirPlayReceiverPlan.Receiver, directory: String, releaseGrace: Int64) {
            self.plan = Mutex(plan)
            self.directory = directory
            session = Mutex(AirPlaySession(releaseGrace: releaseGrace))
        }
        var groupID: String { plan.withLock { $0.groupID } }
        var audioPipe: String { directory + "/audio.fifo" }
        var metadataPipe: String { directory + "/metadata.fifo" }
        /// The source the group plays while a phone holds it.
        var uri: String { "pipe:\(audioPipe)?rate=44100&format=s16le&channels=2&name=AirPlay" }
    }

    public let program: String
    public let directory: String
    let log: Logger
    /// How long a phone's last audio takes to be heard (the leader's buffer): a release waits that, and a second.
    private let releaseGrace: Int64
    private let queue = DispatchQueue(label: "tutti-airplay")
    private let state = Mutex<(plan: AirPlayReceiverPlan, receivers: [String: Receiver])>((AirPlayReceiverPlan(), [:]))
    /// The leader, to drive groups and read them (weak: receivers never keep a stopped leader).
    private let hostBox: WeakHost

    final class WeakHost: Sendable {
        // Sendable: the reference is set once, before any thread reads it, and only read afterwards.
        nonisolated(unsafe) weak var host: (any AirPlayHost)?
        init(_ host: any AirPlayHost) { self.host = host }
    }

    /// `bufferMilliseconds`: the leader's buffer, how long after it arrives a pipe's audio is heard.
    public init(host: any AirPlayHost, program: String, directory: String, bufferMilliseconds: Int, log: Logger) {
        hostBox = WeakHost(host)
        self.program = program
        self.directory = directory
        // The release waits a second (a second phone that interrupts the first begins within it) and a buffer:
        // the pipe's last audio is heard about a second after it arrives, and a release cuts what is not heard yet.
        releaseGrace = Int64(bufferMilliseconds + 1_000) * 1_000_000
        self.log = log
    }

    /// The program to run: a path, or a name looked up in PATH (nil: not installed).
    public static func locate(_ program: String) -> String? {
        if program.contains("/") { return access(program, X_OK) == 0 ? program : nil }
        let path = (getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin") + ":/usr/sbin:/usr/bin"
        for dir in path.split(separator: ":") where access("\(dir)/\(program)", X_OK) == 0 { return "\(dir)/\(program)" }
        return nil
    }

    /// The receivers follow the groups (now, on the receivers' queue).
    public func update() {
        queue.async { [self] in apply() }
    }

    /// Waits until what `update` asked for is done (tests, stop).
    public func settle() { queue.sync {} }

    public func stop() {
        queue.sync {
            let all = state.withLock { s in
                defer { s.receivers.removeAll(); _ = s.plan.update(groups: [], partyGroup: nil, enabled: false) }
                return Array(s.receivers.values)
            }
            // A phone playing now gives its group back, so the saved queue holds no pipe that nobody writes.
            for r in all { withdraw(r, releasing: true) }
        }
    }

    /// What the phone playing to `groupID` plays, while it holds the group.
    public func nowPlaying(group groupID: String) -> AirPlayNowPlaying? {
        guard let r = state.withLock({ $0.receivers[groupID] }) else { return nil }
        return r.session.withLock { $0.holding ? $0.nowPlaying : nil }
    }

    /// The receiver whose pipe `uri` is (its group plays it).
    public func receiver(playing uri: String) -> Receiver? {
        state.withLock { s in s.receivers.values.first { $0.uri == uri } }
    }

    /// The receivers running: group id → (name, RTSP port, pid).
    public var running: [String: (name: String, port: Int, pid: Int32?)] {
        state.withLock { s in
            s.receivers.mapValues { r in
                let p = r.plan.withLock { $0 }
                return (p.name, p.port, r.program.withLock { $0?.processID })
            }
        }
    }

    /// A transport command for the phone holding `groupID`, sent back to it
    /// over DACP; false when no phone holds the group, or the group plays
    /// something else now (`playing`: what it plays): the command is Tutti's.
    public func forward(_ command: PlayerCommand, group groupID: String, playing: String) -> Bool {
        guard let path = DACPRemote.path(for: command), let r = state.withLock({ $0.receivers[groupID] }), r.uri == playing else { return false }
        let (holding, remote) = r.session.withLock { ($0.holding, $0.nowPlaying.remote) }
        guard holding else { return false }
        guard let remote else {
            // No way to ask the phone: the command is Tutti's, so the room can at least be paused or stopped here.
            log.info("\(command) for the AirPlay sender in \(r.plan.withLock { $0.name }): it gave no remote-control address; done here")
            return false
        }
        // Sent from a queue of its own: a phone that does not answer holds no control client for the
        // request's 3 s, and at most a few requests wait (a button held on an unreachable phone).
        guard remoteRequests.add(1, ordering: .relaxed).oldValue < 4 else {
            remoteRequests.subtract(1, ordering: .relaxed)
            log.warning("\(command) for the AirPlay sender dropped: it has not answered the ones before")
            return true
        }
        remoteQueue.async { [self] in
            defer { remoteRequests.subtract(1, ordering: .relaxed) }
            do { try DocumentFetch.remoteControl(remote, path: path) } catch {
                log.warning("remote control of the AirPlay sender (\(remote.address):\(remote.port)\(path)): \(error)")
            }
        }
        return true
    }

    private let remoteQueue = DispatchQueue(label: "tutti-dacp")
    private let remoteRequests = Atomic<Int>(0)

    // MARK: On the queue

    private func apply() {
        guard let leader = hostBox.host else { return }
        let table = leader.groupTable
        let groups = table.groups.map { (id: $0.id, name: $0.name) }
        let actions = state.withLock { $0.plan.update(groups: groups, partyGroup: table.partyActive ? table.partyGroup : nil, enabled: true) }
        for action in actions {
            switch action {
            case .start(let plan):
                let r = Receiver(plan: plan, directory: directory + "/\(plan.slot)", releaseGrace: releaseGrace)
                do {
                    try prepare(r)
                    try launch(r)
                    state.withLock { $0.receivers[plan.groupID] = r }
                    startMetadataReader(r)
                    log.info("AirPlay receiver \"\(plan.name)\" on port \(plan.port) for group \(plan.groupID)")
                } catch {
                    log.error("AirPlay receiver \"\(plan.name)\": \(error); tried again at the next change of groups")
                    state.withLock { $0.plan.forget(groupID: plan.groupID) }
                }
            case .restart(let plan):
                guard let r = state.withLock({ $0.receivers[plan.groupID] }) else { continue }
                r.program.withLock { $0 }?.stop()
                r.plan.withLock { $0 = plan }
                do {
                    try writeConfiguration(r)
                    try launch(r)
                    log.info("AirPlay receiver for group \(plan.groupID) now \"\(plan.name)\"")
                } catch {
                    log.error("AirPlay receiver \"\(plan.name)\": \(error)")
                }
            case .stop(let groupID):
                guard let r = state.withLock({ $0.receivers.removeValue(forKey: groupID) }) else { continue }
                withdraw(r, releasing: leader.groupTable.group(groupID) != nil)
                log.info("AirPlay receiver \"\(r.plan.withLock { $0.name })\" withdrawn")
            }
        }
    }

    private func withdraw(_ r: Receiver, releasing: Bool) {
        r.running.store(false, ordering: .releasing)
        r.program.withLock { $0 }?.stop()
        let actions = r.session.withLock { $0.receiverGone() }
        if releasing { perform(actions, for: r) }
    }

    private func prepare(_ r: Receiver) throws {
        try FileManager.default.createDirectory(atPath: r.directory, withIntermediateDirectories: true)
        for fifo in [r.audioPipe, r.metadataPipe] {
            var info = stat()
            if stat(fifo, &info) == 0, info.st_mode & S_IFMT == S_IFIFO { continue }
            unlink(fifo)
            guard mkfifo(fifo, 0o600) == 0 else { throw ChildProcessError.cannotStart(program: program, reason: "mkfifo \(fifo): \(String(cString: strerror(errno)))") }
        }
        try writeConfiguration(r)
    }

    private func writeConfiguration(_ r: Receiver) throws {
        let text = AirPlayReceiverPlan.configuration(for: r.plan.withLock { $0 }, audioPipe: r.audioPipe, metadataPipe: r.metadataPipe)
        guard FileManager.default.createFile(atPath: r.directory + "/shairport-sync.conf", contents: Data(text.utf8)) else {
            throw ChildProcessError.cannotStart(program: program, reason: "cannot write \(r.directory)/shairport-sync.conf")
        }
    }

    private func launch(_ r: Receiver) throws(ChildProcessError) {
        let name = r.plan.withLock { $0.name }
        // -u: its log to stderr (the file beside its config), not syslog.
        let child = ChildProcess(path: program, arguments: ["-c", r.directory + "/shairport-sync.conf", "-u"], outputPath: r.directory + "/shairport-sync.log",
                                 log: log, onExit: { [weak r, self] status in
                                     guard let r, r.running.load(ordering: .acquiring) else { return }
                                     // A phone was playing through it: that session is over.
                                     perform(r.session.withLock { $0.receiverGone() }, for: r)
                                     log.warning("AirPlay receiver \"\(name)\" stopped (\(status))")
                                 })
        try child.start()
        r.program.withLock { $0 = child }
    }

    /// Reads the receiver's metadata pipe until it is withdrawn; items go to its session.
    private func startMetadataReader(_ r: Receiver) {
        do {
            try startThread(name: "tutti-airplay-md") { [self] in readMetadata(r) }
        } catch {
            log.error("AirPlay receiver \"\(r.plan.withLock { $0.name })\": no metadata (\(error)): phones will not take the group over")
        }
    }

    private func readMetadata(_ r: Receiver) {
        // Read and write: opening never waits for shairport-sync, and its restarts are no end of file.
        let fd = open(r.metadataPipe, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            log.error("AirPlay metadata pipe \(r.metadataPipe): \(String(cString: strerror(errno)))")
            return
        }
        defer { close(fd) }
        var reader = AirPlayMetadataReader()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while r.running.load(ordering: .acquiring) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&p, 1, 100) // wakes to release on time and to see a withdrawal
            var items: [AirPlayMetadataItem] = []
            if ready > 0 {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 { items = reader.feed(buffer[0..<n]) }
            }
            let now = Monotonic.now()
            var actions: [AirPlaySession.Action] = []
            r.session.withLock { s in
                for item in items { actions += s.handle(item, now: now) }
                actions += s.tick(now: now)
            }
            if !actions.isEmpty { perform(actions, for: r) }
        }
    }

    private func perform(_ actions: [AirPlaySession.Action], for r: Receiver) {
        guard let leader = hostBox.host else { return }
        let group = r.groupID
        var announce = false
        for action in actions {
            switch action {
            case .takeOver:
                do {
                    _ = try leader.perform(.cue(uri: r.uri), group: group)
                    log.info("AirPlay: \(r.session.withLock { $0.nowPlaying.source }) takes over group \(group)")
                } catch {
                    log.error("AirPlay take-over of group \(group): \(error)")
                }
            case .release:
                do {
                    _ = try leader.perform(.uncue(uri: r.uri), group: group)
                    log.info("AirPlay session in group \(group) ended: back to what played before, paused")
                } catch {
                    log.error("AirPlay release of group \(group): \(error)")
                }
            case .nowPlaying:
                announce = true
            }
        }
        if announce { leader.events.emit(group == RoomGroups.mainID ? .player : .groups) }
    }
}

extension AirPlayReceivers {
    /// A folder of this user's own: under the service's RuntimeDirectory
    /// (/run/tutti), else XDG_RUNTIME_DIR or /tmp. The same each run, so a
    /// crashed run's pipes are found in the queues at the next start.
    public static func defaultDirectory() -> String {
        if let run = getenv("RUNTIME_DIRECTORY").map({ String(cString: $0) }), !run.isEmpty {
            return "\(run.split(separator: ":").first.map(String.init) ?? run)/airplay"
        }
        if getuid() == 0, access("/run", W_OK) == 0 { return "/run/tutti/airplay" }
        let base = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? "/tmp"
        return "\(base)/tutti-airplay-\(getuid())"
    }

    /// Makes `path` (mode 0700), or accepts it only if it is a real
    /// directory of this user's that nobody else can write: the receivers'
    /// config and pipes live there, and shairport-sync runs what its config
    /// says (a directory another user made first in /tmp would be theirs).
    public static func makePrivateDirectory(_ path: String) throws {
        let parent = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        if !parent.isEmpty { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
        if mkdir(path, 0o700) == 0 { return }
        let made = errno
        var info = stat()
        guard made == EEXIST, lstat(path, &info) == 0 else { throw AirPlayDirectoryError(path: path, reason: String(cString: strerror(made))) }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw AirPlayDirectoryError(path: path, reason: "it exists and is not a directory of this user's that only it can write")
        }
    }
}

public struct AirPlayDirectoryError: Error, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "\(path): \(reason)" }
}
