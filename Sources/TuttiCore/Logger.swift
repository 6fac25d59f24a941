/// Where modules send log lines. Libraries accept one; only the
/// executables decide where lines go (stderr, a file, nowhere).
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        case debug = 0, info, warning, error
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["debug", "info", "warning", "error"][rawValue] }
    }

    public let label: String
    private let sink: @Sendable (Level, String, String) -> Void

    public init(label: String, sink: @escaping @Sendable (Level, String, String) -> Void) {
        self.label = label
        self.sink = sink
    }

    public func with(label: String) -> Logger { Logger(label: label, sink: sink) }

    public func debug(_ message: @autoclosure () -> String) { sink(.debug, label, message()) }
    public func info(_ message: @autoclosure () -> String) { sink(.info, label, message()) }
    public func warning(_ message: @autoclosure () -> String) { sink(.warning, label, message()) }
    public func error(_ message: @autoclosure () -> String) { sink(.error, label, message()) }

    /// Drops every line (tests that do not care).
    public static let silent = Logger(label: "") { _, _, _ in }
}
