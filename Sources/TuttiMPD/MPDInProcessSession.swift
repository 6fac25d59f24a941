import TuttiControlKit
import TuttiCore
import TuttiNet
import TuttiSystem

/// One MPD session driven in process, without the listening socket: each
/// request runs through the code a connection runs (the line splitter,
/// the session state machine and the command table), as a client on this
/// machine with full access. For the command-execution fuzz target
/// (`mpd-exec`, through `InProcessControl`).
///
/// Thread contract: one caller at a time.
// Sendable because the client is used by one caller at a time (InProcessControl serialises), and the rest is immutable.
public final class MPDInProcessSession: @unchecked Sendable {
    private let server: MPDServer
    /// MPD's client object writes idle answers and long replies to a
    /// connection: one end of a loopback pair, whose other end a thread
    /// reads and drops.
    private let client: MPDClient
    private let farEnd: TCPConnection

    public init(server: MPDServer) throws {
        self.server = server
        let listener = try TCPListener(endpoint: Endpoint(host: "127.0.0.1", port: 0))
        defer { listener.close() }
        farEnd = try TCPConnection.connect(to: listener.endpoint)
        let near = try listener.accept()
        client = MPDClient(connection: near, settings: server.leader.surfaceSettings, access: server.leader.controlAccess, log: server.log)
        try startThread(name: "tutti-inproc-drain") { [farEnd] in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
            defer { buffer.deallocate() }
            while let (n, _) = try? farEnd.receive(into: buffer), n > 0 {}
        }
    }

    deinit {
        client.finish()
        client.connection.close()
        farEnd.close()
    }

    /// The bytes a client sends (lines), the replies it gets, as
    /// `MPDServer` would answer them on a connection. `password` is not
    /// run. Idle answers and long replies go to the drained connection,
    /// not into the result.
    public func run(_ bytes: [UInt8]) -> [UInt8] {
        client.binaryLimit = 8_192
        client.tagTypes = Set(MPDTags.all)
        defer { client.endIdle() }
        var splitter = MPDLineSplitter(maxLineBytes: MPDServer.maxLineBytes)
        var state = MPDSessionState(maxListCommands: MPDServer.maxListCommands)
        var out: [UInt8] = []
        for line in splitter.feed(bytes) {
            if state.idling && !client.isWaiting { state.idling = false }
            switch state.receive(line: line) {
            case .none:
                break
            case .reply(let reply):
                out += reply
            case .close(let reply):
                return out + reply
            case .idle(let command):
                if let error = client.beginIdle(command.arguments) { state.idling = false; out += error }
            case .noidle:
                client.endIdle()
                state.idling = false
            case .run(let commands, let isList, let listOK):
                let runnable = commands.filter { $0.name != "password" }
                out += server.run(runnable, isList: isList, listOK: listOK, client: client)
            }
        }
        return out
    }
}
