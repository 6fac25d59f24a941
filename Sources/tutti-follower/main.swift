import Glibc
import Synchronization
import TuttiCore
import TuttiFollower
import TuttiSystem

// A speaker on its own: `tuttid follower` without the leader's libraries
// (Foundation, SQLite, libcurl), so the process a speaker runs all day stays
// small. Same options as `tuttid follower`.

func fail(_ message: String, code: Int32) -> Never {
    StandardErrorLog.write("tutti-follower: \(message)\n")
    exit(code)
}

/// Blocks SIGINT and SIGTERM in every thread (set before any starts) and
/// waits for one.
func blockTerminationSignals() -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    sigaddset(&set, SIGINT)
    sigaddset(&set, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &set, nil)
    return set
}

// `tutti doctor` hands its work here: the speaker's own checks, with the speaker's libraries.
if CommandLine.arguments.dropFirst().first == "doctor" { runSpeakerDoctor(Array(CommandLine.arguments.dropFirst(2)), hostname: hostname()) }

signal(SIGPIPE, SIG_IGN)
let termination = blockTerminationSignals()
var arguments = Array(CommandLine.arguments.dropFirst())
// Also callable as `tutti-follower follower …`, the form `tuttid` hands on.
if arguments.first == "follower" { arguments.removeFirst() }
// `tutti-follower pair` (the tutti-speaker package's): pair by code, then exit.
if arguments.first == "pair" { arguments.removeFirst(); arguments.append("--pair") }
/// This machine's name: a speaker's room name unless the file or `--name` says otherwise.
func hostname() -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    guard gethostname(&buffer, buffer.count - 1) == 0 else { return "follower" }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

let invocation: FollowerInvocation?
do {
    let request = try ConfigRequest(arguments)
    if request.version { print("tutti-follower \(TuttiVersion.current)"); exit(0) }
    invocation = try FollowerConfiguration.parse(request.arguments, file: try loadConfigFile(request), hostname: hostname())
    if request.printConfig, let invocation {
        print(invocation.settings.render(file: invocation.configFile), terminator: "")
        exit(0)
    }
} catch { fail(error.message, code: 64) }
guard let invocation else {
    print(FollowerUsage.text)
    exit(0)
}
var configuration: FollowerConfiguration
do { configuration = try invocation.configuration.loadingRoomKey() } catch { fail(error.message, code: 64) }
configuration.releasesStartUpCode = !configuration.pairByCode // this process is the one speaker
if configuration.pairByCode {
    // Pairing plays nothing: the DAC stays with the running speaker service.
    configuration.output = .file(path: "/dev/null", ppm: 0, delayMilliseconds: 0)
    configuration.realtime = false
}
let level = invocation.level
StandardErrorLog.setLevel(level)
do {
    let follower = try Follower(configuration: configuration, log: StandardErrorLog.logger(configuration.name))
    // Buttons first: a bad mapping file stops the speaker before it joins.
    let buttons = try configuration.buttons.map { path in
        try ButtonController(configPath: path, log: StandardErrorLog.logger("buttons")) { command in follower.send(command) }
    }
    // Pairing ends by itself (paired, refused) or by SIGINT/SIGTERM, which
    // are blocked in every thread: a thread takes them; main waits for either.
    let ended = Condition()
    let over = Atomic<Bool>(false)
    let end: @Sendable () -> Void = { ended.withLock { over.store(true, ordering: .releasing); ended.broadcast() } }
    follower.start(whenEnded: end)
    if configuration.pairByCode {
        print("Pairing code: \(follower.pairingCode.map { "\($0.prefix(3)) \($0.dropFirst(3))" } ?? "")")
        print("Type it in the web app (Rooms), or run `tutti speakers pair CODE` where the leader runs. Waiting…")
        fflush(nil) // all streams: stdout is a file or a pipe under systemd and tests
        // Until paired, refused, or told to stop.
        startEssentialThread(name: "tutti-signals") { [termination] in
            var signals = termination
            var received: Int32 = 0
            while sigwait(&signals, &received) != 0 {}
            end()
        }
        ended.withLock { while !over.load(ordering: .acquiring) { ended.wait() } }
        follower.stop()
        if follower.paired {
            print("Paired: this speaker (key \(follower.keyFingerprint)) now plays for that leader only.")
            fflush(nil) // all streams: stdout is a file or a pipe under systemd and tests
            exit(0)
        }
        fail(follower.pairingFailure ?? follower.lastFailure ?? "not paired", code: 1)
    }
    var received: Int32 = 0
    var signals = termination
    sigwait(&signals, &received)
    buttons?.stop()
    follower.stop()
} catch {
    fail("\(error)", code: 1)
}
