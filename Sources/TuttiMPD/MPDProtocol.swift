import TuttiControlKit
// The MPD protocol's text layer, with no I/O: splitting the byte stream
// into bounded lines, tokenizing a command line, grouping command lists,
// and formatting responses and ACK lines. See docs/mpd.md.

/// MPD's ACK error codes (`ACK [code@index] {command} message`).
public enum MPDAckCode: Int, Sendable {
    case notList = 1
    case argument = 2
    case password = 3
    case permission = 4
    case unknown = 5
    case noExist = 50
    case playlistMax = 51
    case system = 52
    case playlistLoad = 53
    case updateAlready = 54
    case playerSync = 55
    case exist = 56
}

/// A failed command. The dispatcher adds the command's name and its index
/// in a command list when it formats the ACK line.
public struct MPDError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: MPDAckCode
    public var message: String

    public init(_ code: MPDAckCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public static func argument(_ message: String) -> MPDError { MPDError(.argument, message) }
    public static func noExist(_ message: String) -> MPDError { MPDError(.noExist, message) }
    public static func system(_ message: String) -> MPDError { MPDError(.system, message) }

    public var description: String { "[\(code.rawValue)] \(message)" }

    /// `ACK [code@index] {command} message\n`.
    public func ackLine(index: Int, command: String) -> [UInt8] {
        let clean = message.replacingNewlines()
        return Array("ACK [\(code.rawValue)@\(index)] {\(command)} \(clean)\n".utf8)
    }
}

/// One parsed command: its name (lower-cased, as MPD matches it) and arguments.
public struct MPDCommand: Equatable, Sendable {
    public var name: String
    public var arguments: [String]

    public init(name: String, arguments: [String]) {
        self.name = name
        self.arguments = arguments
    }
}

/// Splits a command line into words as MPD does: the command name is a
/// bare word; arguments are bare words or double-quoted strings in which a
/// backslash escapes the next character. Pure.
public enum MPDTokenizer {
    /// At most this many arguments per command.
    public static let maxArguments = 4_096

    /// Throws `.argument` errors with MPD's messages; `name` is what could be
    /// parsed of the command name ("" when none), for the ACK line.
    public static func tokenize(_ line: [UInt8]) throws(MPDTokenizeError) -> MPDCommand {
        var i = 0
        let n = line.count
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        while i < n, isSpace(line[i]) { i += 1 }
        guard i < n else { throw MPDTokenizeError(name: "", error: MPDError(.unknown, "No command given")) }
        let nameStart = i
        while i < n, !isSpace(line[i]) { i += 1 }
        let nameBytes = Array(line[nameStart..<i])
        guard let rawName = String(validating: nameBytes, as: UTF8.self) else {
            throw MPDTokenizeError(name: "", error: MPDError(.argument, "Invalid UTF-8 in the command name"))
        }
        guard nameBytes.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x41 && $0 <= 0x5a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f }),
              nameBytes.first.map({ !($0 >= 0x30 && $0 <= 0x39) }) ?? false else {
            throw MPDTokenizeError(name: "", error: MPDError(.unknown, "unknown command \"\(rawName.prefix(64))\""))
        }
        let name = rawName.lowercased()
        var arguments: [String] = []
        while true {
            while i < n, isSpace(line[i]) { i += 1 }
            guard i < n else { break }
            var word: [UInt8] = []
            if line[i] == 0x22 { // "
                i += 1
                var closed = false
                while i < n {
                    let b = line[i]
                    if b == 0x5c { // backslash escapes the next byte
                        i += 1
                        guard i < n else { break }
                        word.append(line[i])
                    } else if b == 0x22 {
                        closed = true
                        break
                    } else {
                        word.append(b)
                    }
                    i += 1
                }
                guard closed else { throw MPDTokenizeError(name: name, error: .argument("Missing closing '\"'")) }
                i += 1
                if i < n, !isSpace(line[i]) { throw MPDTokenizeError(name: name, error: .argument("Space expected after closing '\"'")) }
            } else {
                while i < n, !isSpace(line[i]) {
                    if line[i] == 0x22 { throw MPDTokenizeError(name: name, error: .argument("Invalid unquoted character")) }
                    word.append(line[i])
                    i += 1
                }
            }
            guard let text = String(validating: word, as: UTF8.self) else {
                throw MPDTokenizeError(name: name, error: .argument("Invalid UTF-8 in an argument"))
            }
            guard arguments.count < maxArguments else { throw MPDTokenizeError(name: name, error: .argument("Too many arguments")) }
            arguments.append(text)
        }
        return MPDCommand(name: name, arguments: arguments)
    }

    /// Quotes an argument for sending (clients, tests): `"` and `\` are escaped.
    public static func quote(_ s: String) -> String {
        // By scalar, not Character: a quote followed by a combining mark is one
        // Character, unequal to "\"", and would go out unescaped.
        var out = String.UnicodeScalarView()
        out.append("\"")
        for c in s.unicodeScalars {
            if c == "\"" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        out.append("\"")
        return String(out)
    }
}

public struct MPDTokenizeError: Error, Equatable, Sendable {
    public var name: String
    public var error: MPDError
}

/// Cuts a byte stream into lines of at most `maxLineBytes` (without the
/// newline; a trailing `\r` is dropped). MPD closes a connection whose line
/// does not fit its buffer; so do we: `overflow` becomes true and stays so.
public struct MPDLineSplitter: Sendable {
    public let maxLineBytes: Int
    private var pending: [UInt8] = []
    public private(set) var overflow = false
    /// A line has begun and not ended.
    public var hasUnfinishedLine: Bool { !pending.isEmpty }

    public init(maxLineBytes: Int = 64 * 1024) { self.maxLineBytes = maxLineBytes }

    /// Appends `bytes` and returns the complete lines they finish.
    public mutating func feed<C: Collection<UInt8>>(_ bytes: C) -> [[UInt8]] {
        guard !overflow else { return [] }
        var lines: [[UInt8]] = []
        for b in bytes {
            if b == 0x0a {
                if pending.last == 0x0d { pending.removeLast() }
                lines.append(pending)
                pending.removeAll(keepingCapacity: true)
            } else {
                pending.append(b)
                if pending.count > maxLineBytes {
                    overflow = true
                    pending = []
                    return lines
                }
            }
        }
        return lines
    }
}

/// The per-connection command state machine: plain commands, command
/// lists and idle. It only decides; the server performs the actions.
public struct MPDSessionState: Sendable {
    public enum Action: Equatable, Sendable {
        /// Run these commands; `listOK` puts `list_OK` after each one's
        /// output; `isList` says whether they came as a command list.
        case run([MPDCommand], isList: Bool, listOK: Bool)
        /// Send these bytes (an ACK for a line that could not be parsed).
        case reply([UInt8])
        /// Start idling (the command is the `idle` with its arguments).
        case idle(MPDCommand)
        /// `noidle` while idling: finish the idle now.
        case noidle
        /// Close the connection (`close`, or a command list grown too long).
        case close(reply: [UInt8])
        /// Nothing to do yet (inside a command list).
        case none
    }

    public let maxListCommands: Int
    private var list: [MPDCommand]?
    private var listOK = false
    /// True while an `idle` is outstanding: only `noidle` is accepted.
    public var idling = false

    public init(maxListCommands: Int = 4_096) { self.maxListCommands = maxListCommands }

    public var inCommandList: Bool { list != nil }

    public mutating func receive(line: [UInt8]) -> Action {
        let command: MPDCommand
        do {
            command = try MPDTokenizer.tokenize(line)
        } catch {
            if idling {
                // A client may only send noidle while idling; MPD drops the connection otherwise.
                return .close(reply: [])
            }
            if list != nil { list = nil } // an error inside a list discards the list
            return .reply(error.error.ackLine(index: 0, command: error.name))
        }
        if idling {
            if command.name == "noidle" { return .noidle }
            // MPD closes the connection of a client that sends anything else while idle.
            return .close(reply: [])
        }
        if var commands = list {
            switch command.name {
            case "command_list_end":
                list = nil
                return .run(commands, isList: true, listOK: listOK)
            case "command_list_begin", "command_list_ok_begin":
                list = nil
                return .reply(MPDError(.argument, "Command list already open").ackLine(index: commands.count, command: command.name))
            default:
                guard commands.count < maxListCommands else {
                    list = nil
                    return .close(reply: MPDError(.argument, "Command list too long (more than \(maxListCommands) commands)")
                        .ackLine(index: commands.count, command: command.name))
                }
                commands.append(command)
                list = commands
                return .none
            }
        }
        switch command.name {
        case "command_list_begin", "command_list_ok_begin":
            guard command.arguments.isEmpty else {
                return .reply(MPDError(.argument, "too many arguments for \"\(command.name)\"").ackLine(index: 0, command: command.name))
            }
            list = []
            listOK = command.name == "command_list_ok_begin"
            return .none
        case "command_list_end":
            return .reply(MPDError(.notList, "not in command list mode").ackLine(index: 0, command: command.name))
        case "close":
            return .close(reply: [])
        case "idle":
            idling = true
            return .idle(command)
        case "noidle":
            return .none // not idling: MPD ignores it without a reply
        default:
            return .run([command], isList: false, listOK: false)
        }
    }
}

/// A response under construction: `key: value` lines and binary blocks.
public struct MPDResponse: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Where the bytes of a long answer go before it is complete; nil keeps
    /// the answer whole (tests, command lists that must be rolled back).
    public var stream: (@Sendable ([UInt8]) -> Void)?
    /// How much is collected before it is handed to `stream`.
    public static let streamChunkBytes = 64 * 1024
    /// Where `compose` writes a block before it is appended whole.
    private var scratch: [UInt8] = []
    /// The last date `compose` wrote, for the next song's.
    private var dates = LineComposer.DateMemo()

    public init(stream: (@Sendable ([UInt8]) -> Void)? = nil) { self.stream = stream }

    /// Hands what is collected to `stream` once it is a chunk's worth:
    /// call between songs, so a 6 MB answer is never held whole.
    public mutating func streamIfLarge() {
        guard let stream, bytes.count >= Self.streamChunkBytes else { return }
        stream(bytes)
        bytes.removeAll(keepingCapacity: true)
    }

    /// Appends the lines `body` writes, at most `capacity` bytes, in one
    /// copy: a song block of a long answer is a dozen lines, and an
    /// `Array.append` per key, value and newline was most of its cost.
    public mutating func compose(capacity: Int, _ body: (inout LineComposer) -> Void) {
        if scratch.count < capacity { scratch = [UInt8](repeating: 0, count: max(capacity, 4096)) }
        scratch.withUnsafeMutableBufferPointer { buffer in
            var lines = LineComposer(buffer, dates: dates)
            body(&lines)
            dates = lines.dates
            bytes.append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress, count: lines.count))
        }
    }

    /// Appends what a `LineComposer` writes into a small buffer on the stack.
    private static func append(to out: inout [UInt8], capacity: Int, _ body: (inout LineComposer) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            var lines = LineComposer(buffer)
            body(&lines)
            out.append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress, count: lines.count))
        }
    }

    /// `key: `, the start of every line.
    @inline(__always)
    private mutating func appendKey(_ key: String) {
        bytes.append(contentsOf: key.utf8)
        bytes.append(0x3A) // ": "
        bytes.append(0x20)
    }

    public mutating func add(_ key: String, _ value: String) {
        appendKey(key)
        let start = bytes.count
        bytes.append(contentsOf: value.utf8)
        // Values are one line each: a newline inside one becomes a space (bytes, not Characters: this runs per tag).
        for i in start..<bytes.count where bytes[i] == 0x0A || bytes[i] == 0x0D { bytes[i] = 0x20 }
        bytes.append(0x0a)
    }

    public mutating func add(_ key: String, _ value: Int) {
        appendKey(key)
        Self.appendDecimal(value, to: &bytes)
        bytes.append(0x0a)
    }

    /// A number's digits.
    static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        append(to: &out, capacity: LineComposer.numberBytes) { $0.decimal(value) }
    }

    /// `value` with three decimals, as MPD prints elapsed and duration
    /// (written as digits: a search answer has one per song).
    public mutating func add(_ key: String, seconds value: Double) {
        appendKey(key)
        Self.appendThreeDecimals(value, to: &bytes)
        bytes.append(0x0a)
    }

    static func appendThreeDecimals(_ value: Double, to out: inout [UInt8]) {
        append(to: &out, capacity: LineComposer.numberBytes) { $0.threeDecimals(value) }
    }

    /// `key: 2024-05-01T12:00:00Z`, from seconds since 1970.
    public mutating func add(_ key: String, date seconds: Int64) {
        appendKey(key)
        Self.appendISO8601(seconds, to: &bytes)
        bytes.append(0x0a)
    }

    static func appendISO8601(_ seconds: Int64, to out: inout [UInt8]) {
        append(to: &out, capacity: LineComposer.numberBytes) { $0.iso8601(seconds) }
    }

    /// `binary: N\n` + bytes + `\n`.
    public mutating func addBinary(_ data: ArraySlice<UInt8>) {
        add("binary", data.count)
        bytes.append(contentsOf: data)
        bytes.append(0x0a)
    }

    public mutating func append(raw: [UInt8]) { bytes.append(contentsOf: raw) }

    public static func threeDecimals(_ value: Double) -> String {
        var out: [UInt8] = []
        appendThreeDecimals(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

/// Writes `key: value` lines into a buffer it does not own, by pointer
/// (`MPDResponse.compose`). The caller sizes the buffer: a line takes its
/// key, its value and `lineBytes`; a number or date at most `numberBytes`.
/// Each line checks once that it fits (a precondition: a bug, not input);
/// its bytes are then written unchecked, short values without a call to
/// memmove (a song block is a dozen lines of a few bytes each).
public struct LineComposer {
    private let start: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    public private(set) var count = 0
    var dates: DateMemo

    /// ": " and the newline.
    public static let lineBytes = 3
    /// The longest number, duration or date written (20 digits and a sign, or `YYYY-MM-DDTHH:MM:SSZ`).
    public static let numberBytes = 24

    init(_ buffer: UnsafeMutableBufferPointer<UInt8>, dates: DateMemo = DateMemo()) {
        start = buffer.baseAddress!
        capacity = buffer.count
        self.dates = dates
    }

    @inline(__always)
    private mutating func reserve(_ bytes: Int) {
        precondition(capacity - count >= bytes, "LineComposer: the block is larger than its buffer")
    }

    @inline(__always)
    private mutating func put(_ byte: UInt8) {
        start[count] = byte
        count += 1
    }

    @inline(__always)
    private mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        _ = Self.copy(base, bytes.count, to: start + count, findingBreaks: false)
        count += bytes.count
    }

    /// Copies `n` bytes eight at a time (unaligned words, the last one
    /// overlapping the one before: no loop over single bytes above 7), and
    /// when asked tells whether any was a line break (a zero byte in the
    /// word XOR "\n\n…" or "\r\r…"). A song block is a dozen values of a
    /// few to 60 bytes: a loop per byte to copy and another to test was
    /// most of its composing.
    @inline(__always)
    private static func copy(_ source: UnsafePointer<UInt8>, _ n: Int, to target: UnsafeMutablePointer<UInt8>, findingBreaks: Bool) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let from = UnsafeRawPointer(source), to = UnsafeMutableRawPointer(target)
        @inline(__always) func word(_ offset: Int) -> UInt64 {
            let w = from.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            to.storeBytes(of: w, toByteOffset: offset, as: UInt64.self)
            guard findingBreaks else { return 0 }
            let lf = w ^ (0x0A &* ones), cr = w ^ (0x0D &* ones)
            return ((lf &- ones) & ~lf & highs) | ((cr &- ones) & ~cr & highs)
        }
        if n < 8 {
            var found: UInt8 = 0
            for i in 0..<n {
                let c = source[i]
                target[i] = c
                found |= (c == 0x0A ? 1 : 0) | (c == 0x0D ? 1 : 0)
            }
            return findingBreaks && found != 0
        }
        var found: UInt64 = 0
        var i = 0
        while i + 8 <= n {
            found |= word(i)
            i += 8
        }
        if i < n { found |= word(n - 8) }
        return found != 0
    }

    /// `key: ` (`key` is ASCII); the line's room is reserved already.
    @inline(__always)
    private mutating func key(_ key: StaticString) {
        put(UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        put(0x3A)
        put(0x20)
    }

    /// `key: value` with the value's bytes as they are; a line break inside it becomes a space.
    public mutating func line(_ key: StaticString, _ value: UnsafeBufferPointer<UInt8>) {
        reserve(key.utf8CodeUnitCount + value.count + Self.lineBytes)
        self.key(key)
        let first = count
        // Values are one line each; almost none has a line break, found while copying.
        if let base = value.baseAddress, Self.copy(base, value.count, to: start + count, findingBreaks: true) {
            for i in first..<first + value.count where start[i] == 0x0A || start[i] == 0x0D { start[i] = 0x20 }
        }
        count += value.count
        put(0x0A)
    }

    public mutating func line(_ key: StaticString, _ value: Int) { numberLine(key) { $0.decimal(value) } }

    public mutating func line(_ key: StaticString, seconds value: Double) { numberLine(key) { $0.threeDecimals(value) } }

    public mutating func line(_ key: StaticString, date seconds: Int64) { numberLine(key) { $0.iso8601(seconds) } }

    /// `key: ` then a value of at most numberBytes that `write` puts, then the line's end.
    @inline(__always)
    private mutating func numberLine(_ key: StaticString, _ write: (inout Self) -> Void) {
        reserve(key.utf8CodeUnitCount + Self.numberBytes + Self.lineBytes)
        self.key(key)
        write(&self)
        put(0x0A)
    }

    /// A number's digits, a minus sign first when it is negative (at most numberBytes).
    mutating func decimal(_ value: Int) {
        reserve(Self.numberBytes)
        if value < 0 { put(0x2D) }
        var v = value.magnitude
        // Tracks, discs, years and lengths: a few comparisons, no division, for the count.
        var digits = v < 10 ? 1 : v < 100 ? 2 : v < 1_000 ? 3 : v < 10_000 ? 4 : 5
        if digits == 5 {
            var rest = v / 10_000
            while rest >= 10 { rest /= 10; digits += 1 }
        }
        // Written from the last digit back: divisions by the constant 10 only.
        for i in stride(from: digits - 1, through: 0, by: -1) {
            start[count + i] = UInt8(48 + v % 10)
            v /= 10
        }
        count += digits
    }

    /// Three decimals, as MPD prints elapsed and duration.
    mutating func threeDecimals(_ value: Double) {
        let millis = Int(((value.isFinite ? min(max(0, value), 1e15) : 0) * 1000).rounded())
        decimal(millis / 1000)
        let frac = millis % 1000
        reserve(4)
        put(0x2E)
        put(UInt8(48 + frac / 100))
        put(UInt8(48 + frac / 10 % 10))
        put(UInt8(48 + frac % 10))
    }

    /// `2024-05-01T12:00:00Z`, by arithmetic (civil date from days,
    /// H. Hinnant's algorithm), without a formatter or a String.
    mutating func iso8601(_ seconds: Int64) {
        reserve(20)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondsOfDay = seconds - days * 86_400
        let raw = UnsafeMutableRawPointer(start + count)
        if days == dates.day {
            // The songs of an answer were mostly written on a few days: `YYYY-MM-DDT` as last time.
            raw.storeBytes(of: dates.head, as: UInt64.self)
            raw.storeBytes(of: dates.tail, toByteOffset: 8, as: UInt16.self)
            raw.storeBytes(of: 0x54, toByteOffset: 10, as: UInt8.self) // T
            count += 11
        } else {
            let z = days + 719_468
            let era = (z >= 0 ? z : z - 146_096) / 146_097
            let dayOfEra = z - era * 146_097
            let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
            let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
            let mp = (5 * dayOfYear + 2) / 153
            let day = dayOfYear - (153 * mp + 2) / 5 + 1
            let month = mp < 10 ? mp + 3 : mp - 9
            let year = min(max(yearOfEra + era * 400 + (month <= 2 ? 1 : 0), 0), 9999)
            two(year / 100)
            two(year % 100)
            put(0x2D) // -
            two(month)
            put(0x2D)
            two(day)
            put(0x54) // T
            dates = DateMemo(day: days, head: raw.loadUnaligned(as: UInt64.self), tail: raw.loadUnaligned(fromByteOffset: 8, as: UInt16.self))
        }
        two(secondsOfDay / 3600)
        put(0x3A) // :
        two(secondsOfDay / 60 % 60)
        put(0x3A)
        two(secondsOfDay % 60)
        put(0x5A) // Z
    }

    /// The date part of the last `iso8601`, kept from one song block to the next (`MPDResponse.compose`).
    struct DateMemo {
        var day = Int64.min
        var head: UInt64 = 0
        var tail: UInt16 = 0
    }

    @inline(__always)
    private mutating func two(_ v: Int64) {
        put(UInt8(48 + v / 10))
        put(UInt8(48 + v % 10))
    }
}

extension String {
    /// Values are one line each in MPD responses.
    func replacingNewlines() -> String {
        guard utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) else { return self }
        return String(map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}

/// MPD's idle subsystems.
public enum MPDSubsystem: String, CaseIterable, Sendable {
    case database, update, stored_playlist, playlist, player, mixer, output, options, partition, sticker, subscription, message, neighbor, mount

    /// Which subsystems a leader event touches.
    static func of(_ event: LeaderEvent) -> [MPDSubsystem] {
        switch event {
        case .player: [.player]
        case .queue: [.playlist]
        case .options: [.options]
        case .mixer: [.mixer, .output] // volume and mute (an output's enable state)
        case .rooms: [.output, .mixer]
        case .groups: [.output] // an output is enabled while its room is in the main group
        case .library: [.database, .update]
        case .playlists: [.stored_playlist]
        case .health, .speakers: []
        }
    }
}

/// Parses MPD ranges `START:END`, `START:` and single positions `N`.
enum MPDArguments {
    static func int(_ s: String, _ what: String = "number") throws(MPDError) -> Int {
        guard let v = Int(s) else { throw .argument("Integer expected: \(s)") }
        return v
    }

    static func unsigned(_ s: String) throws(MPDError) -> Int {
        guard let v = Int(s), v >= 0 else { throw .argument("Number expected: \(s)") }
        return v
    }

    static func bool(_ s: String) throws(MPDError) -> Bool {
        switch s {
        case "1": return true
        case "0": return false
        default: throw .argument("Boolean (0/1) expected: \(s)")
        }
    }

    static func seconds(_ s: String) throws(MPDError) -> Double {
        guard let v = Double(s), v.isFinite else { throw .argument("Float expected: \(s)") }
        return v
    }

    /// A range: `N` is `N..<N+1`; `START:` runs to `count`.
    static func range(_ s: String, count: Int) throws(MPDError) -> Range<Int> {
        if let colon = s.firstIndex(of: ":") {
            let a = String(s[..<colon]), b = String(s[s.index(after: colon)...])
            guard let start = Int(a), start >= 0 else { throw .argument("Number expected: \(a)") }
            let end: Int
            if b.isEmpty { end = max(count, start) } else {
                guard let e = Int(b), e >= start else { throw .argument("Bad range end: \(b)") }
                end = e
            }
            return start..<end
        }
        let v = try unsigned(s)
        guard v < Int.max else { throw .argument("Number too large: \(s)") }
        return v..<(v + 1)
    }
}
