import Synchronization
import TuttiAuth
import TuttiCore
import TuttiNet

/// One connected client of a JSON-RPC surface (the leader's API, the web
/// app's pages, Snapcast's control API), over whatever carries it: a TCP
/// line connection or a WebSocket. The surface that accepted it owns it.
public final class SurfaceClient: Sendable {
    public let writer: ClientWriter
    /// TCP clients read lines; a WebSocket frame is the message itself.
    public let newlineFramed: Bool
    /// What this client may do (`ControlAccess.Level`): raised by `auth.login`.
    private let levelValue: Atomic<Int>
    public var level: ControlAccess.Level {
        get { ControlAccess.Level(rawValue: levelValue.load(ordering: .acquiring)) ?? .none }
        set { levelValue.store(newValue.rawValue, ordering: .releasing) }
    }
    /// Where it connected from ("HOST:PORT"): failed logins are counted by its host.
    public let address: String
    /// The token it logged in with, if it did with one: `auth.logout` of that token ends its access.
    public let token = Mutex<String?>(nil)

    public init(writer: ClientWriter, newlineFramed: Bool, level: ControlAccess.Level, address: String = "") {
        self.writer = writer; self.newlineFramed = newlineFramed; levelValue = Atomic(level.rawValue); self.address = address
    }

    /// A page that may do nothing until it logs in holds a web worker for
    /// as long as it is open (it answers pings): 48 such would hold them
    /// all. Not logged in 10 s after it opened: `terminate` closes it.
    public func closeUnlessLoggedIn(watch: DeadlineWatch, terminate: @escaping @Sendable () -> Void) {
        guard level == .none else { return }
        let scheduled = watch.after(milliseconds: LineDiscipline.loginMilliseconds) { [weak self] in
            guard let self, self.level == .none else { return }
            terminate()
        }
        if !scheduled { terminate() }
    }
}

/// A JSON-RPC error a method answers with: its code, and what the client is
/// told (from the message catalogue when it is there, in the request's
/// language; else English text).
public struct RPCError: Error, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var catalogued: UserMessage?
    public var description: String { message }
    public init(code: Int, message: String) { self.code = code; self.message = message }
    public init(code: Int, _ message: UserMessage) { self.code = code; self.message = message.description; catalogued = message }

    /// The message in `language` (English when it is not in the catalogue).
    public func text(in language: Language) -> String { catalogued?.text(in: language) ?? message }
}

/// The clients of one JSON-RPC surface, however they came (a TCP line
/// connection, a web page's WebSocket), each with its bounded outbox while
/// it is connected; and the one way a TCP line client is served.
public final class SurfaceClients: Sendable {
    private let clients = Mutex<[ObjectIdentifier: SurfaceClient]>([:])
    private let limits: ClientOutbox.Limits
    private let log: Logger

    public init(limits: ClientOutbox.Limits, log: Logger) {
        self.limits = limits
        self.log = log
    }

    /// Registers a client; its messages go through `write`, which must give
    /// up after about the stall limit. `disconnect` ends its connection.
    public func attach(peer: String, address: String, level: ControlAccess.Level, newlineFramed: Bool, write: @escaping ClientWriter.Write,
                       writeIfFree: ClientWriter.WriteIfFree? = nil, disconnect: @escaping @Sendable () -> Void) -> SurfaceClient {
        let writer = ClientWriter(peer: peer, limits: limits, log: log, write: write, writeIfFree: writeIfFree, disconnect: disconnect)
        let client = SurfaceClient(writer: writer, newlineFramed: newlineFramed, level: level, address: address)
        clients.withLock { $0[ObjectIdentifier(client)] = client }
        return client
    }

    public func detach(_ client: SurfaceClient, reason: String = "connection closed") {
        clients.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(client)) }
        client.writer.close(reason: reason)
    }

    /// Every client connected now.
    public var all: [SurfaceClient] { clients.withLock { Array($0.values) } }
    public var count: Int { clients.withLock { $0.count } }

    /// Closes the clients `which` picks (all by default).
    public func close(reason: String, _ which: (SurfaceClient) -> Bool = { _ in true }) {
        for c in all where which(c) { c.writer.close(reason: reason) }
    }

    /// Serves `connection` as a line client (one JSON object per line) on
    /// the calling thread until it closes or breaks `LineDiscipline`;
    /// `receive` handles a line (false: it was no request at all),
    /// `lineTooLong` answers a line over `LineDiscipline.maxLineBytes`.
    /// `accepting` false once attached: the surface stopped meanwhile (after
    /// it closed the others), and the connection goes at once.
    public func serveLines(_ connection: TCPConnection, surface: String, level: ControlAccess.Level, stallMilliseconds stall: Int,
                           accepting: () -> Bool, receive: (_ line: [UInt8], _ client: SurfaceClient) -> Bool,
                           lineTooLong: (SurfaceClient) -> Void) {
        connection.setSendTimeout(milliseconds: stall)
        // A bounded kernel buffer, so a client that stopped reading shows up as a stalled write.
        connection.setSendBuffer(bytes: 64 * 1024)
        let client = attach(peer: "\(surface) \(connection.peer)", address: connection.peer, level: level, newlineFramed: true, write: { bytes in
            do { try connection.send(bytes) } catch NetError.timedOut {
                throw RPCError(code: 0, message: "did not read for \(stall / 1000) s")
            }
        }, writeIfFree: { bytes in try connection.sendIfFree(bytes) }, disconnect: { connection.close() })
        defer {
            detach(client)
            connection.close()
        }
        guard accepting() else { return }
        var malformed = 0
        let reason = LineDiscipline.readLines(from: connection, until: { client.writer.isClosed }, loggedIn: { client.level > .none }) { line in
            if let line { malformed = receive(line, client) ? 0 : malformed + 1 } else {
                lineTooLong(client)
                malformed += 1
            }
            return malformed < LineDiscipline.maxConsecutiveMalformed ? nil : "\(malformed) malformed requests in a row"
        }
        if let reason { log.info("\(surface) \(connection.peer) closed: \(reason)") }
    }
}
