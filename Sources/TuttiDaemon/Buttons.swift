import Foundation
import TuttiCore
import TuttiInput
import TuttiLibrary

/// Starts the button sources a mapping file names and hands every command
/// to `perform`. The sources run on their own threads until `stop`.
public final class ButtonController: @unchecked Sendable {
    private let sources: [any ButtonSource]

    public init(configPath: String, log: Logger, perform: @escaping @Sendable (ButtonCommand) -> Void) throws {
        let text: String
        do { text = try String(contentsOfFile: configPath, encoding: .utf8) } catch {
            throw UsageError("cannot read the button mapping \(configPath): \(error.localizedDescription)")
        }
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
}

extension Leader {
    /// What a button does, on the leader's own buttons (`room` nil: every
    /// room) or on a follower's (that room).
    public func handle(_ command: ButtonCommand, room: String?) {
        let rooms = room.map { [$0] } ?? followerNames
        do {
            switch command {
            case .play: _ = try perform(.play)
            case .pause: _ = try perform(.pause)
            case .toggle: _ = try perform(.toggle)
            case .stop: _ = try perform(.stop)
            case .next: _ = try perform(.next)
            case .prev: _ = try perform(.previous)
            case .shuffle: _ = try perform(.shuffle(!nowPlaying.shuffle))
            case .repeat: _ = try perform(.repeatMode(nowPlaying.repeatMode.next))
            case .volumeUp, .volumeDown:
                for name in rooms {
                    var s = settings(of: name)
                    let step = command == .volumeUp ? 5 : -5
                    s.volume = UInt8(max(0, min(100, Int(s.volume) + step)))
                    s.muted = false
                    configure(room: name, s)
                }
            case .mute:
                for name in rooms {
                    var s = settings(of: name)
                    s.muted.toggle()
                    configure(room: name, s)
                }
            case .like:
                guard let library, let track = try library.track(atPath: nowPlaying.path) else { return }
                try library.like(track.id)
            case .party:
                // One group holding every room is all there is until grouping lands.
                log.info("party: every room already plays the one stream")
            }
        } catch {
            log.warning("button \(command)\(room.map { " in \($0)" } ?? ""): \(error)")
        }
    }
}
