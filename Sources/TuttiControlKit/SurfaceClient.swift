import Synchronization
import TuttiAuth
import TuttiCore

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

/// A JSON-RPC error a method answers with: its code, and what the client is told.
public struct RPCError: Error, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var description: String { message }
    public init(code: Int, message: String) { self.code = code; self.message = message }
}
