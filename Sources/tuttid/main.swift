import Glibc
import Synchronization
import TuttiCore
import TuttiDaemon
import TuttiSystem

/// SIGINT and SIGTERM are blocked in every thread (a thread inherits the
/// mask of the one that starts it, and this runs first) and taken by
/// `waitForTermination` with sigwait: no handler, no thread of its own.
func blockTermination() {
    var termination = sigset_t()
    sigemptyset(&termination)
    for sig in [SIGINT, SIGTERM] { sigaddset(&termination, sig) }
    pthread_sigmask(SIG_BLOCK, &termination, nil)
}

/// Blocks until SIGINT or SIGTERM.
func waitForTermination() {
    var termination = sigset_t()
    sigemptyset(&termination)
    for sig in [SIGINT, SIGTERM] { sigaddset(&termination, sig) }
    var received: Int32 = 0
    while sigwait(&termination, &received) != 0 {}
}

/// The language of what tuttid tells a person on stderr: POSIX's locale variables.
let logLanguage: Language = {
    var environment: [String: String] = [:]
    for name in ["LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"] { if let v = getenv(name) { environment[name] = String(cString: v) } }
    return Language(localeEnvironment: environment)
}()

/// Exits with `message` on stderr: a usage error (64) as it is, a failure to start in words from the catalogue.
func fail(_ message: String, code: Int32) -> Never {
    let line = code == 64 ? "tuttid: \(message)" : UserMessage(.daemonCannotStart, ["reason": message]).text(in: logLanguage)
    StandardErrorLog.write(line + "\n")
    exit(code)
}

/// `tuttid follower …` becomes `tutti-follower …` when that binary sits
/// beside this one: the same speaker, without Foundation, SQLite and
/// libcurl loaded (about half the resident memory). Returns if it is not there.
func runLeanFollowerIfInstalled() {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return }
    let own = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let slash = own.lastIndex(of: "/") else { return }
    let lean = String(own[...slash]) + "tutti-follower"
    guard access(lean, X_OK) == 0 else { return }
    let arguments = [lean] + CommandLine.arguments.dropFirst()
    let argv = arguments.map { strdup($0) } + [nil]
    execv(lean, argv)
    // execv returns only on failure: run the follower here instead.
    for p in argv { free(p) }
}

/// This machine's name: the default room and leader names.
func hostname() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

signal(SIGPIPE, SIG_IGN)
// Blocked whatever the parent left (a Swift program's worker threads
// block most signals, and children inherit the mask): `waitForTermination`
// takes them with sigwait, which works on blocked signals only.
blockTermination()
if CommandLine.arguments.dropFirst().first == "doctor" { runSpeakerDoctor(Array(CommandLine.arguments.dropFirst(2)), hostname: hostname()) }
let command: DaemonCommand
let level: Logger.Level
do {
    let request = try ConfigRequest(Array(CommandLine.arguments.dropFirst()))
    // Only the daemons read /etc/tutti/tutti.conf; the demo is self-contained.
    let daemon = ["leader", "follower"].contains(request.arguments.first ?? "")
    let file = daemon && !request.version ? try loadConfigFile(request) : nil
    (command, level) = try DaemonCommand.parse(request.version ? ["--version"] : request.arguments, file: file,
                                               hostname: hostname(), printConfig: request.printConfig)
} catch {
    fail(error.message, code: 64)
}
StandardErrorLog.setLevel(level)

switch command {
case .help(let text):
    print(text)
case .printConfig(let text):
    print(text, terminator: "")
case .version:
    print("tuttid \(TuttiVersion.current)")
case .leader(var config):
    // Two arenas, one per core of the boards it runs on (`limitMallocArenas`),
    // and big blocks in pages of their own, returned when freed (`mapAllocations`).
    limitMallocArenas(2)
    mapAllocations(above: 256 << 10)
    do {
        if let path = config.roomKeyFile { config.roomKey = try readRoomKey(path) }
        if let path = config.passwordFile {
            guard let bytes = try? readWholeFile(path, limit: 4_096), case let text = String(decoding: bytes, as: UTF8.self).trimmingSpaces, text.utf8.count >= 8 else {
                fail("--password-file \(path): cannot read a password of 8 or more characters from it", code: 64)
            }
            config.password = text
        }
        let config = config
        let leader = try Leader(configuration: config, log: StandardErrorLog.logger("leader"), surfaces: ControlSurfaces())
        try leader.start()
        let buttons = try config.buttons.map { path in
            try ButtonController(configPath: path, log: StandardErrorLog.logger("buttons")) { command in leader.handle(command, room: nil) }
        }
        // Playing files given on the command line (no library, no --loop), the
        // leader exits once they have played out; with a library it stays up.
        // Once a command-line list has played out in the rooms (the buffer
        // after the last chunk), the leader stops as if told to. The thread
        // sleeps until an event finds the list ended, or the process stops.
        let finished = Condition()
        let terminating = Atomic<Bool>(false)
        var finishWatch: JoinableThread?
        if !config.loop && config.musicDirectory == nil && config.databasePath == nil {
            _ = leader.events.subscribe { _ in if leader.finished { finished.withLock { finished.signal() } } }
            finishWatch = try JoinableThread(name: "tutti-finish") {
                finished.withLock { while !leader.finished && !terminating.load(ordering: .acquiring) { finished.wait() } }
                let heard = Condition.deadline(afterSeconds: Double(config.bufferMilliseconds) / 1000 + 0.2)
                finished.withLock {
                    while Condition.now() < heard && !terminating.load(ordering: .acquiring) { _ = finished.wait(untilNanoseconds: heard) }
                }
                if !terminating.load(ordering: .acquiring) { kill(getpid(), SIGTERM) }
            }
        }
        waitForTermination()
        let stopping = Condition.now()
        finished.withLock {
            terminating.store(true, ordering: .releasing)
            finished.signal()
        }
        finishWatch?.join()
        buttons?.stop()
        leader.stop()
        // Every service joined what it started: what runs besides this thread is a leak.
        // A joined thread can still be listed in /proc for a moment (the kernel wakes the
        // joiner before it reaps the task), so the count gets up to 100 ms to settle.
        let stopped = (Condition.now() - stopping) / 1_000_000
        var others = runningThreadCount() - 1
        let settle = Condition.deadline(afterSeconds: 0.1)
        while others > 0 && Condition.now() < settle {
            usleep(1_000)
            others = runningThreadCount() - 1
        }
        StandardErrorLog.logger("leader").info("stopped in \(stopped) ms, \(others) other threads left")
    } catch {
        fail("\(error)", code: 1)
    }
case .follower(let config):
    runLeanFollowerIfInstalled()
    do {
        var config = try config.loadingRoomKey()
        config.releasesStartUpCode = true // this process is the one speaker
        let follower = try Follower(configuration: config, log: StandardErrorLog.logger(config.name))
        // Buttons first: a bad mapping file stops the speaker before it joins.
        let buttons = try config.buttons.map { path in
            try ButtonController(configPath: path, log: StandardErrorLog.logger("buttons")) { command in follower.send(command) }
        }
        follower.start()
        waitForTermination()
        buttons?.stop()
        follower.stop()
    } catch {
        fail("\(error)", code: 1)
    }
case .demo(let config):
    do {
        if config.seconds == nil {
            startEssentialThread(name: "tutti-signals") { waitForTermination(); exit(0) }
        }
        try Demo.run(config, log: StandardErrorLog.logger("demo"))
    } catch {
        fail("\(error)", code: 1)
    }
}
