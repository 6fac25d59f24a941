/// A mistake in a configuration file: which file, which line (1-based), and
/// what to change. Its description is `FILE:LINE: message`, the form editors
/// and `journalctl` readers know.
public struct ConfigFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    public var line: Int
    public var message: String

    public init(path: String, line: Int, message: String) {
        self.path = path
        self.line = line
        self.message = message
    }

    public var description: String { "\(path):\(line): \(message)" }
}

/// One `key = value` line of a configuration file, and where it was.
public struct ConfigEntry: Sendable, Equatable {
    public var section: String
    public var key: String
    public var value: String
    public var line: Int

    public init(section: String, key: String, value: String, line: Int) {
        self.section = section
        self.key = key
        self.value = value
        self.line = line
    }
}

/// `/etc/tutti/tutti.conf`: an INI file of `[section]` headers and
/// `key = value` lines. Syntax only; which keys a section knows and what
/// their values mean is for the daemon that reads the section
/// (`ConfigSettings`), so that one file serves both the leader and the
/// speaker and each rejects its own typos.
///
/// - `#` or `;` at the start of a line, or `#` after a space, starts a comment.
/// - A value may be put in double quotes to keep a leading space or a ` #`.
/// - A key may appear once per section; sections may not repeat either,
///   because a second one would silently win and hide the first.
public struct ConfigFile: Sendable, Equatable {
    public let path: String
    public private(set) var entries: [ConfigEntry] = []
    /// The sections in the order they appear, with the line of each header.
    public private(set) var sections: [(name: String, line: Int)] = []

    public static func == (a: ConfigFile, b: ConfigFile) -> Bool {
        a.path == b.path && a.entries == b.entries && a.sections.map(\.name) == b.sections.map(\.name)
    }

    public init(path: String) { self.path = path }

    /// Parses `text` read from `path` (named in every error). Never traps.
    public static func parse(_ text: String, path: String) throws(ConfigFileError) -> ConfigFile {
        var file = ConfigFile(path: path)
        var section: String? = nil
        var number = 0
        func fail(_ message: String) -> ConfigFileError { ConfigFileError(path: path, line: number, message: message) }
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            number += 1
            let line = raw.trimmingSpaces()
            if line.isEmpty || line.first == "#" || line.first == ";" { continue }
            if line.first == "[" {
                guard line.last == "]" else { throw fail("a section header is [name]; this line has no closing ]") }
                let name = String(line.dropFirst().dropLast()).trimmingSpaces()
                guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw fail("'\(line)' is not a section name (letters, digits, - and _)")
                }
                if let earlier = file.sections.first(where: { $0.name == name }) {
                    throw fail("[\(name)] appears again (first on line \(earlier.line)); merge the two")
                }
                file.sections.append((name, number))
                section = name
                continue
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw fail("expected 'key = value', a [section] or a # comment, found '\(line)'")
            }
            guard let section else { throw fail("'\(line)' comes before any [section]; put it under [speaker] or [leader]") }
            let key = String(line[..<equals]).trimmingSpaces()
            guard !key.isEmpty else { throw fail("'\(line)' has no key before '='") }
            let value = try unquote(String(line[line.index(after: equals)...]), fail)
            if let earlier = file.entries.first(where: { $0.section == section && $0.key == key }) {
                throw fail("\(key) is set twice in [\(section)] (first on line \(earlier.line)); keep one")
            }
            file.entries.append(ConfigEntry(section: section, key: key, value: value, line: number))
        }
        return file
    }

    public func entries(in section: String) -> [ConfigEntry] { entries.filter { $0.section == section } }

    /// A value without its comment and surrounding spaces; quotes removed.
    private static func unquote(_ text: String, _ fail: (String) -> ConfigFileError) throws(ConfigFileError) -> String {
        let trimmed = text.trimmingSpaces()
        if trimmed.first == "\"" {
            let body = trimmed.dropFirst()
            guard let close = body.firstIndex(of: "\"") else { throw fail("a quoted value needs its closing \"") }
            let after = body[body.index(after: close)...].trimmingSpaces()
            guard after.isEmpty || after.first == "#" || after.first == ";" else {
                throw fail("only a comment may follow a quoted value, found '\(after)'")
            }
            return String(body[..<close])
        }
        // A '#' starts a comment only after a space, so "file:/tmp/a#1" stays whole.
        var previous: Character = " "
        for i in trimmed.indices {
            if trimmed[i] == "#" && (previous == " " || previous == "\t") {
                return String(trimmed[..<i]).trimmingSpaces()
            }
            previous = trimmed[i]
        }
        return trimmed
    }
}

/// Where an effective setting came from, for `--print-config`.
public enum ConfigSource: Sendable, Equatable, CustomStringConvertible {
    case builtIn
    case file(path: String, line: Int)
    case commandLine

    public var description: String {
        switch self {
        case .builtIn: "default"
        case .file(let path, let line): "\(path):\(line)"
        case .commandLine: "command line"
        }
    }
}

/// One option a section knows: its key in the file, its default as text,
/// and the command-line flag it stands for. The file is the command line
/// written down, so one parser checks both and a value means the same in each.
public struct ConfigOption: Sendable, Equatable {
    public enum Form: Sendable, Equatable {
        /// `key = text` is `--flag text`.
        case value(flag: String)
        /// `key = yes|no`; `no` is `--flag` (a `--no-…` switch), `yes` is nothing.
        case disabledBy(flag: String)
        /// `key = yes|no`; `yes` is `--flag`, `no` is nothing.
        case enabledBy(flag: String)
    }

    public var key: String
    public var defaultText: String
    public var form: Form

    public init(_ key: String, _ defaultText: String, _ form: Form) {
        self.key = key
        self.defaultText = defaultText
        self.form = form
    }

    public var flag: String {
        switch form {
        case .value(let flag), .disabledBy(let flag), .enabledBy(let flag): flag
        }
    }
}

/// An effective value and where it came from.
public struct ConfigSetting: Sendable, Equatable {
    public var key: String
    public var text: String
    public var source: ConfigSource
}

/// Turns one section of a file and a command line into the flags a daemon's
/// parser applies, in order: the file's lines first, then the command line,
/// so a flag given on the command line wins. Pure; records each setting's
/// source for `--print-config`.
public struct ConfigSettings: Sendable {
    public let section: String
    public let options: [ConfigOption]
    private var chosen: [String: ConfigSetting] = [:]

    public init(section: String, options: [ConfigOption]) {
        self.section = section
        self.options = options
    }

    /// The flags one file line stands for; throws naming the file and line
    /// for an unknown key or a switch that is not yes or no.
    public mutating func flags(for entry: ConfigEntry, in path: String) throws(ConfigFileError) -> [String] {
        func fail(_ message: String) -> ConfigFileError { ConfigFileError(path: path, line: entry.line, message: message) }
        guard let option = options.first(where: { $0.key == entry.key }) else {
            throw fail("[\(section)] has no option '\(entry.key)'; it knows \(options.map(\.key).joined(separator: ", "))")
        }
        chosen[option.key] = ConfigSetting(key: option.key, text: entry.value, source: .file(path: path, line: entry.line))
        switch option.form {
        case .value(let flag):
            return [flag, entry.value]
        case .disabledBy(let flag), .enabledBy(let flag):
            guard let on = Self.boolean(entry.value) else { throw fail("\(entry.key) = \(entry.value): expected yes or no") }
            if case .disabledBy = option.form { return on ? [] : [flag] }
            return on ? [flag] : []
        }
    }

    /// Records a flag taken from the command line (with its value, if it has one).
    public mutating func noteCommandLine(flag: String, value: String?) {
        guard let option = options.first(where: { $0.flag == flag }) else { return }
        let text: String
        switch option.form {
        case .value: text = value ?? ""
        case .disabledBy: text = "no"
        case .enabledBy: text = "yes"
        }
        chosen[option.key] = ConfigSetting(key: option.key, text: text, source: .commandLine)
    }

    /// Every option in declaration order with its effective text and source.
    public var effective: [ConfigSetting] {
        options.map { chosen[$0.key] ?? ConfigSetting(key: $0.key, text: $0.defaultText, source: .builtIn) }
    }

    /// The effective settings as a file that could be read back, each line
    /// followed by where its value came from.
    public func render(file: String?) -> String {
        let rows = effective
        let width = rows.map { $0.key.utf8.count + 3 + $0.text.utf8.count }.max() ?? 0
        var out = "# effective configuration; file: \(file ?? "none")\n[\(section)]\n"
        for row in rows {
            let text = row.text.isEmpty || row.text.first == " " || row.text.last == " " || row.text.contains(" #") ? "\"\(row.text)\"" : row.text
            let body = "\(row.key) = \(text)"
            out += body + String(repeating: " ", count: max(1, width + 3 - body.utf8.count)) + "# \(row.source)\n"
        }
        return out
    }

    public static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "yes", "true", "on", "1": true
        case "no", "false", "off", "0": false
        default: nil
        }
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
