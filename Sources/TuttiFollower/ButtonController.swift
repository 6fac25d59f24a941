import Glibc
import TuttiCore
import TuttiGestures
import TuttiInput
import TuttiSystem

/// Starts the button sources a mapping file names and hands every command
/// to `perform`. The sources run on their own threads until `stop`.
public final class ButtonController: Sendable {
    private let sources: [any ButtonSource]

    public init(configPath: String, log: Logger, perform: @escaping @Sendable (ButtonCommand) -> Void) throws {
        let text = try Self.readMapping(configPath)
        let mapping: ButtonMapping
        do { mapping = try ButtonMapping.parse(text) } catch { throw UsageError("\(configPath): \(error)") }
        sources = try ButtonSources.open(mapping, logger: log)
        for source in sources {
            source.start { event in
                switch event {
                case .command(let c): perform(c.command)
                case .finished(let error): if let error { log.warning("\(source.name): \(error)") }
                }
            }
        }
        log.info("buttons: \(sources.map(\.name).joined(separator: ", "))")
    }

    public func stop() { for s in sources { s.stop() } }

    /// A mapping is a few lines: anything over 1 MiB is not one.
    private static func readMapping(_ path: String) throws(UsageError) -> String {
        do { return String(decoding: try readWholeFile(path, limit: 1 << 20), as: UTF8.self) } catch {
            switch error {
            case .unreadable(_, let reason): throw UsageError("cannot read the button mapping \(path): \(reason)")
            case .tooLarge: throw UsageError("the button mapping \(path) is over 1 MiB: not a mapping file")
            }
        }
    }
}
