/// A command line that cannot be run; the message says what to fix. Exit 64.
/// (`catalogued`: the message catalogue's, when it has this one; `message`
/// is its English text. Two are equal when their English is.)
public struct UsageError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public var catalogued: UserMessage? = nil
    public init(_ message: String) { self.message = message }
    public init(_ message: UserMessage) { self.message = message.description; catalogued = message }
    public var description: String { message }
    public static func == (a: UsageError, b: UsageError) -> Bool { a.message == b.message }
}

/// Reads flags and their values off a command line, front to back: the one
/// reader of `tuttid`, `tutti-follower` and their settings files (pure).
public struct ArgumentReader {
    public private(set) var remaining: [String]
    public init(_ arguments: [String]) { remaining = arguments }

    public var isEmpty: Bool { remaining.isEmpty }
    public var next: String? { remaining.first }
    public mutating func take() -> String { remaining.removeFirst() }

    /// The value after `flag`; a missing value or another flag is an error.
    public mutating func value(_ flag: String) throws(UsageError) -> String {
        guard let first = remaining.first, !first.hasPrefix("--") else { throw UsageError("\(flag) needs a value") }
        return remaining.removeFirst()
    }

    /// A finite number within `range`.
    public mutating func number(_ flag: String, _ range: ClosedRange<Double>) throws(UsageError) -> Double {
        let text = try value(flag)
        guard let v = Double(text), v.isFinite, range.contains(v) else {
            throw UsageError("\(flag) \(text): expected a number in \(range.lowerBound)…\(range.upperBound)")
        }
        return v
    }

    /// A path (empty: none).
    public mutating func optionalPath(_ flag: String) throws(UsageError) -> String? {
        let path = try value(flag)
        return path.isEmpty ? nil : path
    }

    public mutating func logLevel(_ flag: String) throws(UsageError) -> Logger.Level {
        let text = try value(flag)
        switch text {
        case "debug": return .debug
        case "info": return .info
        case "warning": return .warning
        case "error": return .error
        default: throw UsageError("\(flag) \(text): expected debug, info, warning or error")
        }
    }
}
