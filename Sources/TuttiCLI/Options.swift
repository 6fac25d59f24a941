import TuttiCore

/// `tutti`'s help text, and the lines of it about one command: the
/// command syntax as typed, the words around it from the catalogue.
public enum CLIUsage {
    /// The help in English.
    public static let text = text(in: .english)

    public static func text(in language: Language) -> String {
        let synopsis = "tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--password P] [--json] COMMAND [ARGS]"
        return [
            language.text(.cliHelpUsage, ["synopsis": synopsis]),
            "",
            CLICommandTable.rows.flatMap(\.help).map { line($0, language) }.joined(separator: "\n"),
            "",
            language.text(.cliHelpGroups),
            "",
            language.text(.cliHelpPassword),
            "",
            language.text(.cliHelpWhichLeader),
            language.text(.cliHelpExitCodes),
        ].joined(separator: "\n")
    }

    /// A command's help line: the usage in a column of 23, then the summary;
    /// a longer usage gets three spaces, a summary's further lines the column.
    static func line(_ help: (usage: String, summary: MessageKey?), _ language: Language) -> String {
        let column = 23
        guard let summary = help.summary else { return "  " + help.usage }
        let gap = help.usage.count < column ? String(repeating: " ", count: column - help.usage.count) : "   "
        let lines = language.text(summary).split(separator: "\n").joined(separator: "\n" + String(repeating: " ", count: column + 2))
        return "  " + help.usage + gap + lines
    }

    /// `tutti COMMAND --help`: the usage lines that start with COMMAND (nil: none do).
    public static func lines(for command: String, language: Language = .english) -> [String]? {
        let lines = text(in: language).split(separator: "\n").map(String.init).filter { $0.drop { $0 == " " }.hasPrefix(command) }
        return lines.isEmpty ? nil : lines
    }

    /// The first line of a command's help.
    public static let commandHeader = commandHeader(in: .english)

    public static func commandHeader(in language: Language) -> String {
        language.text(.cliHelpUsage, ["synopsis": "tutti [--host HOST] [--port PORT] [--leader NAME] [--group GROUP] [--json]"])
    }
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
    /// and its operands, in order. `environment` supplies TUTTI_PASSWORD;
    /// the help is in `language`.
    public static func parse(_ arguments: [String], environment: [String: String] = [:], language: Language = .english) throws(UsageError) -> CLIRequest {
        var args = ArgumentReader(arguments)
        var o = CLIOptions(command: "")
        o.password = environment["TUTTI_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 }
        var rest: [String] = []
        /// The value after `flag`, or `message` as the error (a value may start with "--" here, as before).
        func value(_ message: UserMessage) throws(UsageError) -> String {
            guard !args.isEmpty else { throw UsageError(message) }
            return args.take()
        }
        while !args.isEmpty {
            let a = args.take()
            switch a {
            case "--host": o.host = try value(UserMessage(.cliOptionNeedsValue, ["flag": "--host"]))
            case "--port":
                guard let p = args.next.flatMap({ UInt16($0) }) else { throw UsageError(UserMessage(.cliPortNeedsNumber)) }
                _ = args.take(); o.port = p
            case "--json": o.json = true
            case "--password": o.password = try value(UserMessage(.cliOptionNeedsValue, ["flag": "--password"]))
            case "--group": o.group = try value(UserMessage(.cliOptionGroupNeeds))
            case "--leader": o.leaderName = try value(UserMessage(.cliOptionLeaderNeeds))
            case "-h", "--help", "help":
                // `tutti COMMAND --help`: the usage lines of that command.
                if let command = rest.first, let lines = CLIUsage.lines(for: command, language: language) {
                    return .print(([CLIUsage.commandHeader(in: language)] + lines).joined(separator: "\n"), exitCode: 0)
                }
                return .print(CLIUsage.text(in: language), exitCode: 0)
            default: rest.append(a)
            }
        }
        guard let command = rest.first else { return .print(CLIUsage.text(in: language), exitCode: 64) }
        if command == "--version" { return .version }
        o.command = command
        o.operands = Array(rest.dropFirst())
        return .run(o)
    }
}
