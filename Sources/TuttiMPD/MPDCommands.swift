import FoundationEssentials
import Glibc
import TuttiCore
import TuttiSystem
import TuttiLibrary
import TuttiControlKit

/// One MPD command, defined once: its name, how many arguments it takes
/// and what it does. `MPDServer.commandTable` lists them all; a name not
/// there gets `ACK [5@0] {} unknown command "x"`, and a count outside
/// `arguments` MPD's "too few/many arguments" before the handler runs.
struct MPDCommandSpec: Sendable {
    typealias Handler = @Sendable (MPDServer, MPDInvocation, inout MPDResponse) throws(MPDError) -> Void

    let name: String
    let arguments: ClosedRange<Int>
    let run: Handler

    init(_ name: String, _ arguments: ClosedRange<Int>, _ run: @escaping Handler) {
        self.name = name
        self.arguments = arguments
        self.run = run
    }
}

/// A command as a handler sees it: what the client sent, and the client.
struct MPDInvocation {
    let command: MPDCommand
    let client: MPDClient
    var name: String { command.name }
    var args: [String] { command.arguments }
}

extension MPDServer {
    /// Every command the server answers (`idle`, `noidle`, `close` and the
    /// command lists are the session's, `MPDSessionState`).
    static let commandTable: [MPDCommandSpec] =
        statusCommands + playbackCommands + outputCommands + queueCommands + libraryCommands + storedPlaylistCommands

    static let commandsByName: [String: MPDCommandSpec] = {
        var byName: [String: MPDCommandSpec] = [:]
        for spec in commandTable {
            precondition(byName.updateValue(spec, forKey: spec.name) == nil, "MPD command \(spec.name) defined twice")
        }
        return byName
    }()

    /// For `commands`, with the ones the state machine handles itself.
    static let commandNames: [String] =
        (commandTable.map(\.name) + ["idle", "noidle", "close", "command_list_begin", "command_list_ok_begin", "command_list_end"]).sorted()

    func execute(_ command: MPDCommand, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
        guard let spec = Self.commandsByName[command.name] else {
            throw MPDError(.unknown, "unknown command \"\(command.name)\"")
        }
        let count = command.arguments.count
        guard spec.arguments.contains(count) else {
            throw .argument(count < spec.arguments.lowerBound ? "too few arguments for \"\(command.name)\"" : "too many arguments for \"\(command.name)\"")
        }
        try spec.run(self, MPDInvocation(command: command, client: client), &r)
    }

    /// A command that does nothing but accept its arguments.
    static func accepted(_ name: String, _ arguments: ClosedRange<Int>) -> MPDCommandSpec {
        MPDCommandSpec(name, arguments) { _, _, _ throws(MPDError) in }
    }
}
