import Glibc
import TuttiCore
import TuttiInput

/// Starts the button sources a mapping file names and hands every command
/// to `perform`. The sources run on their own threads until `stop`.
public final class ButtonController: @unchecked Sendable {
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
        let limit = 1 << 20
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UsageError("cannot read the button mapping \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw UsageError("cannot read the button mapping \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= limit else { throw UsageError("the button mapping \(path) is over 1 MiB: not a mapping file") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
