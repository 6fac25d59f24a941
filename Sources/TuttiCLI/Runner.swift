import Glibc
import TuttiCore
import TuttiDiscovery
import TuttiControlClient
import TuttiNet

/// Why `tutti` stopped short: the message for stderr and the exit code
/// (1 the leader refused, 2 cannot reach the leader, 64 usage).
/// The message is the catalogue's when there is one (`catalogued`), put in
/// the person's language when it is written.
public struct CLIFailure: Error, Equatable, CustomStringConvertible {
    public let message: String
    public let exitCode: Int32
    public var catalogued: UserMessage? = nil
    public var description: String { message }

    public init(message: String, exitCode: Int32) { self.message = message; self.exitCode = exitCode }
    public init(_ message: UserMessage, exitCode: Int32) { self.message = message.description; self.exitCode = exitCode; catalogued = message }

    /// What stderr says, in `language`.
    public func text(in language: Language) -> String { catalogued?.text(in: language) ?? message }

    public static func usage(_ message: String) -> CLIFailure { CLIFailure(message: message, exitCode: 64) }
    public static func refused(_ message: String) -> CLIFailure { CLIFailure(message: message, exitCode: 1) }
    public static func unreachable(_ message: String) -> CLIFailure { CLIFailure(message: message, exitCode: 2) }
    public static func usage(_ message: UserMessage) -> CLIFailure { CLIFailure(message, exitCode: 64) }
    public static func refused(_ message: UserMessage) -> CLIFailure { CLIFailure(message, exitCode: 1) }
    public static func unreachable(_ message: UserMessage) -> CLIFailure { CLIFailure(message, exitCode: 2) }
}

/// The environment variables `tutti` reads (TUTTI_HOST, TUTTI_PASSWORD, and
/// the locale's LC_ALL, LC_MESSAGES, LANG, LANGUAGE for its language).
public func tuttiEnvironment() -> [String: String] {
    var environment: [String: String] = [:]
    for name in ["TUTTI_HOST", "TUTTI_PASSWORD", "LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"] {
        if let value = getenv(name) { environment[name] = String(cString: value) }
    }
    return environment
}

/// The directory tutti runs in, against which relative file names are made absolute.
public func currentDirectory() -> String {
    guard let path = getcwd(nil, 0) else { return "." }
    defer { free(path) }
    return String(cString: path)
}

/// `tutti`: reads the command line, finds the leader and runs the command.
/// Returns the exit code (0 done, 1 the leader refused, 2 cannot reach the
/// leader, 64 usage), having written why to stderr; `main` exits with it.
public func runTutti(_ arguments: [String], environment: [String: String] = tuttiEnvironment(),
                     workingDirectory: String = currentDirectory()) -> Int32 {
    let language = Language(localeEnvironment: environment)
    do throws(CLIFailure) {
        let options: CLIOptions
        let command: CLICommand
        do throws(UsageError) {
            switch try CLIRequest.parse(arguments, environment: environment, language: language) {
            case .print(let text, let code): print(text); return code
            case .version: print("tutti \(TuttiVersion.current)"); return 0
            case .run(let o): options = o
            }
            command = try CLICommand(options, workingDirectory: workingDirectory)
        } catch { throw error.catalogued.map { CLIFailure.usage($0) } ?? CLIFailure.usage(error.message) }
        try run(command, options, environment: environment, language: language)
        return 0
    } catch {
        writeError("tutti: \(error.text(in: language))\n")
        return error.exitCode
    }
}

/// Runs one parsed command: the two that need no leader, else at the leader.
/// `language`: what it prints is in it, and the leader is asked for its errors in it (each request's `lang`).
func run(_ command: CLICommand, _ options: CLIOptions, environment: [String: String], language: Language = .english) throws(CLIFailure) {
    switch command {
    case .doctor(let arguments): throw runDoctor(arguments)
    case .leaders(let seconds):
        // Needs no leader, only Avahi.
        let leaders: [DiscoveredLeader]
        do { leaders = try discoverLeaders(timeout: seconds) } catch { throw .unreachable("\(error)") }
        if options.json { print(jsonText(.array(leaders.map(describeLeader)))) } else { print(describeLeaders(leaders, language: language)) }
    default:
        let (endpoint, how) = try controlEndpoint(options, environment: environment, language: language)
        let client: ControlClient
        do { client = try ControlClient(endpoint: endpoint) } catch {
            throw .unreachable(UserMessage(.cliUnreachable, ["endpoint": "\(endpoint)", "how": how, "reason": "\(error)"]))
        }
        client.language = language
        // From another machine a leader with a password wants a login first.
        if let password = options.password {
            do { _ = try client.call("auth.login", ["password": .string(password)]) } catch let e as ControlClient.RemoteError {
                throw .refused(UserMessage(.cliLoginFailed, ["endpoint": "\(endpoint)", "reason": e.message]))
            } catch { throw .unreachable("\(error)") }
        }
        try LeaderSession(client: client, json: options.json, group: options.group, language: language).run(command)
    }
}

/// Where the control socket is: flags, then TUTTI_HOST, then a leader on
/// this machine, then mDNS, then the default.
func controlEndpoint(_ options: CLIOptions, environment: [String: String], language: Language = .english) throws(CLIFailure) -> (Endpoint, how: String) {
    let host = options.host, port = options.port, leaderName = options.leaderName
    if let host, port == nil, host.contains(":") {
        // --host HOST:PORT, as TUTTI_HOST takes it.
        guard let e = try? Endpoint(parsing: host, defaultPort: 4954) else { throw .usage(UserMessage(.cliBadHost, ["setting": "--host \(host)"])) }
        return (e, "")
    }
    if host != nil || port != nil { return (Endpoint(host: host ?? "127.0.0.1", port: port ?? 4954), "") }
    if let env = environment["TUTTI_HOST"], !env.isEmpty {
        guard let e = try? Endpoint(parsing: env, defaultPort: 4954) else { throw .usage(UserMessage(.cliBadHost, ["setting": "TUTTI_HOST=\(env)"])) }
        return (e, " (TUTTI_HOST)")
    }
    // A leader on this machine answers at once; browsing takes about a second.
    if leaderName == nil, let local = try? TCPConnection.connect(to: Endpoint(host: "127.0.0.1", port: 4954)) {
        local.close()
        return (Endpoint(host: "127.0.0.1", port: 4954), "")
    }
    // Without Avahi (or with no leader announced) the default is the local leader.
    if let leaders = try? discoverLeaders(timeout: 1.5, named: leaderName) {
        if let chosen = DiscoveredLeader.choose(from: leaders, named: leaderName), let control = chosen.controlPort {
            // A leader on this machine usually binds its control socket to loopback only.
            return (Endpoint(host: chosen.isLocal ? "127.0.0.1" : chosen.address, port: control), language.text(.cliOptionFoundOverMDNS, ["name": chosen.name]))
        }
    }
    if let leaderName { throw .unreachable(UserMessage(.cliNoLeaderNamed, ["name": leaderName])) }
    return (Endpoint(host: "127.0.0.1", port: 4954), "")
}

/// `tutti doctor` is `tutti-follower doctor` (the speaker's binary: it
/// opens the ALSA device and mixer), or `tuttid doctor` where no speaker is
/// installed; each beside this binary, else on PATH. `tutti` itself links
/// no audio library, so it starts in a few milliseconds. Returns only when
/// neither could be run.
func runDoctor(_ arguments: [String]) -> CLIFailure {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let own = n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
    let folder = own.lastIndex(of: "/").map { String(own[...$0]) } ?? ""
    for program in ["tutti-follower", "tuttid"] {
        let argv = ([program, "doctor"] + arguments).map { strdup($0) } + [nil]
        if !folder.isEmpty, access(folder + program, X_OK) == 0 { execv(folder + program, argv) }
        execvp(program, argv)
    }
    return .unreachable(UserMessage(.cliDoctorMissing, ["reason": String(cString: strerror(errno))]))
}

/// Writes to stderr at once (stdout, buffered, is flushed at exit).
func writeError(_ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let n = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }
        bytes = bytes.dropFirst(n)
    }
}
