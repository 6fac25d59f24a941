import TuttiCore

/// `tutti`'s help text, and the lines of it about one command.
public enum CLIUsage {
    public static let text = """
    usage: tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--password P] [--json] COMMAND [ARGS]

    \(CLICommandTable.rows.flatMap(\.help).map(line).joined(separator: "\n"))

    Player and queue commands act on the main group, or on --group GROUP (id or name).

    A leader with a password (one reached from another machine) wants
    --password PASSWORD or TUTTI_PASSWORD.

    Which leader: --host/--port, else TUTTI_HOST (HOST or HOST:PORT), else a
    leader on this machine (127.0.0.1:4954) if one answers, else the leader found
    over mDNS within 1.5 s (--leader NAME picks one by its announced name, and
    skips the local check; default the first by name; its control port comes
    from its announcement), else 127.0.0.1:4954.
    Exit codes: 0 done, 1 the leader refused (message on stderr), 2 cannot reach the leader, 64 usage.
    """

    /// A command's help line: the usage in a column of 23, then the summary;
    /// a longer usage gets three spaces, a summary's further lines the column.
    static func line(_ help: (usage: String, summary: String)) -> String {
        let column = 23
        guard !help.summary.isEmpty else { return "  " + help.usage }
        let gap = help.usage.count < column ? String(repeating: " ", count: column - help.usage.count) : "   "
        let summary = help.summary.split(separator: "\n").joined(separator: "\n" + String(repeating: " ", count: column + 2))
        return "  " + help.usage + gap + summary
    }

    /// `tutti COMMAND --help`: the usage lines that start with COMMAND (nil: none do).
    public static func lines(for command: String) -> [String]? {
        let lines = text.split(separator: "\n").map(String.init).filter { $0.drop { $0 == " " }.hasPrefix(command) }
        return lines.isEmpty ? nil : lines
    }

    /// The first line of a command's help.
    public static let commandHeader = "usage: tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--json]"
}

/// What `tutti`'s command line asks for, before anything is looked up or
/// connected: the global options, the command and its operands. Pure.
public struct CLIOptions: Equatable, Sendable {
    public var host: String? = nil
    public var port: UInt16? = nil
    public var json = false
    /// `--leader NAME`: the announced leader to use.
    public var leaderName: String? = nil
    public var group: String? = nil
    /// `--password`, else `TUTTI_PASSWORD` (empty: none).
    public var password: String? = nil
    public var command: String
    public var operands: [String] = []

    public init(command: String) { self.command = command }
}

/// The outcome of reading `tutti`'s arguments.
public enum CLIRequest: Equatable, Sendable {
    /// Print this text and exit with this code (help, or no command).
    case print(String, exitCode: Int32)
    case version
    case run(CLIOptions)

    /// Global options anywhere on the line; everything else is the command
    /// and its operands, in order. `environment` supplies TUTTI_PASSWORD.
    public static func parse(_ arguments: [String], environment: [String: String] = [:]) throws(UsageError) -> CLIRequest {
        var args = ArgumentReader(arguments)
        var o = CLIOptions(command: "")
        o.password = environment["TUTTI_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        var rest: [String] = []
        /// The value after `flag`, or `message` as the error (a value may start with "--" here, as before).
        func value(_ message: String) throws(UsageError) -> String {
            guard !args.isEmpty else { throw UsageError(message) }
            return args.take()
        }
        while !args.isEmpty {
            let a = args.take()
            switch a {
            case "--host": o.host = try value("--host needs a value")
            case "--port":
                guard let p = args.next.flatMap({ UInt16($0) }) else { throw UsageError(UserMessage(.cliPortNeedsNumber)) }
                _ = args.take(); o.port = p
            case "--json": o.json = true
            case "--password": o.password = try value("--password needs a value")
            case "--group": o.group = try value("--group needs a group id or name")
            case "--leader": o.leaderName = try value("--leader needs a name")
            case "-h", "--help", "help":
                // `tutti COMMAND --help`: the usage lines of that command.
                if let command = rest.first, let lines = CLIUsage.lines(for: command) {
                    return .print(([CLIUsage.commandHeader] + lines).joined(separator: "\n"), exitCode: 0)
                }
                return .print(CLIUsage.text, exitCode: 0)
            default: rest.append(a)
            }
        }
        guard let command = rest.first else { return .print(CLIUsage.text, exitCode: 64) }
        if command == "--version" { return .version }
        o.command = command
        o.operands = Array(rest.dropFirst())
        return .run(o)
    }
}
