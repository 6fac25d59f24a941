import Glibc
import TuttiCore

/// Where both daemons look for their settings unless `--config FILE` names another.
public let defaultConfigPath = "/etc/tutti/tutti.conf"

/// The options every daemon takes besides its own: which file, and what to
/// do instead of running (print the configuration, the version).
public struct ConfigRequest: Sendable, Equatable {
    /// The file to read, and whether the user named it (then it must exist).
    public var path = defaultConfigPath
    public var named = false
    public var printConfig = false
    public var version = false
    /// The command line without the options above.
    public var arguments: [String] = []

    /// Takes `--config FILE`, `--print-config` and `--version` out of a command line.
    public init(_ arguments: [String]) throws(UsageError) {
        var args = ArgumentReader(arguments)
        while !args.isEmpty {
            let word = args.take()
            switch word {
            case "--config":
                path = try args.value(word)
                named = true
            case "--print-config": printConfig = true
            case "--version": version = true
            default: self.arguments.append(word)
            }
        }
    }
}

/// Reads and parses the configuration file. A missing default file means
/// built-in defaults (nil); a file named with `--config` must exist.
/// Call at start-up, on any thread; no Foundation.
public func loadConfigFile(_ request: ConfigRequest) throws(UsageError) -> ConfigFile? {
    if !request.named && access(request.path, F_OK) != 0 && errno == ENOENT { return nil }
    if access(request.path, R_OK) != 0 && errno == EACCES {
        // The packages install it 0640 root:tutti: it may hold the control password or the room key.
        throw UsageError("\(request.path) is readable only by root and the tutti group (it may hold a password or a room key): run this with sudo")
    }
    let bytes: [UInt8]
    do { bytes = try readWholeFile(request.path, limit: 1 << 20) } catch {
        throw UsageError("\(error)\(request.named ? "" : " (or give --config FILE)")")
    }
    do { return try ConfigFile.parse(String(decoding: bytes, as: UTF8.self), path: request.path) } catch {
        throw UsageError(error.description)
    }
}

/// Applies a file's section, then the command line, through one daemon's
/// flag parser: a value in the file is checked exactly as the same flag
/// would be, and its error names the file and line.
public func applyConfiguration(
    _ file: ConfigFile?, _ settings: inout ConfigSettings, arguments: [String],
    apply: (String, inout ArgumentReader) throws(UsageError) -> Void
) throws(UsageError) {
    if let file {
        for entry in file.entries(in: settings.section) {
            var words: ArgumentReader
            do { words = ArgumentReader(try settings.flags(for: entry, in: file.path)) } catch { throw UsageError(error.description) }
            guard !words.isEmpty else { continue }
            let flag = words.take()
            do { try apply(flag, &words) } catch {
                throw UsageError("\(file.path):\(entry.line): \(entry.key) = \(entry.value): \(error.message.droppingFlagPrefix(flag))")
            }
        }
        // Sections nobody reads are typos ([speeker]) that would otherwise go unnoticed.
        for section in file.sections where !["speaker", "leader"].contains(section.name) {
            throw UsageError("\(file.path):\(section.line): unknown section [\(section.name)]; tutti.conf has [speaker] and [leader]")
        }
    }
    var args = ArgumentReader(arguments)
    while !args.isEmpty {
        let flag = args.take()
        settings.noteCommandLine(flag: flag, value: args.next)
        try apply(flag, &args)
    }
}

extension String {
    /// "--latency-ms 9000: expected …" reads as "expected …" after the file's `key = value`.
    func droppingFlagPrefix(_ flag: String) -> String {
        guard hasPrefix(flag) else { return self }
        var rest = self.dropFirst(flag.count)
        if rest.first == ":" { rest = rest.dropFirst() } else if rest.first == " ", let colon = rest.firstIndex(of: ":") { rest = rest[rest.index(after: colon)...] }
        while rest.first == " " { rest = rest.dropFirst() }
        return String(rest)
    }
}
