import TuttiCore

/// The leader's JSON-RPC server as another surface carries it (the web
/// app's WebSocket pages and `POST /api`): a client attached, each message
/// handed to it, the client detached. The web app depends on this, not on
/// the JSON-RPC module.
public protocol JSONRPCServing: AnyObject, Sendable {
    /// Registers a client; its messages go through `write`, which must give
    /// up after about the stall limit. `disconnect` ends its connection.
    func attach(peer: String, address: String, newlineFramed: Bool, write: @escaping ClientWriter.Write,
                writeIfFree: ClientWriter.WriteIfFree?, disconnect: @escaping @Sendable () -> Void) -> SurfaceClient
    /// One message from a client; the reply goes to its outbox. False: it was no JSON-RPC request at all.
    @discardableResult func receive(_ message: [UInt8], from client: SurfaceClient, onItsThread: Bool) -> Bool
    /// Forgets a client and closes its outbox.
    func detach(_ client: SurfaceClient, reason: String)
    /// Where a client from `address` ("HOST:PORT") starts.
    func initialLevel(address: String) -> ControlAccess.Level
    /// One stateless request (no client): its reply, nil for a notification.
    /// `bearer`: the token the request showed; `language`: its errors' language
    /// when the request names none (HTTP's `Accept-Language`).
    func handle(_ request: [UInt8], level: ControlAccess.Level, peer: String, bearer: String?, language: Language?) -> RPCReply?
}
