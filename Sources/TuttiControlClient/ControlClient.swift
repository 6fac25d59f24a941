import TuttiCore
import TuttiNet

/// A JSON-RPC 2.0 client for the leader's control socket (one JSON object
/// per line), in `JSONValue`s: no Foundation, so `tutti` stays small.
/// Notifications that arrive while waiting for a reply are handed to
/// `onNotification`. One thread at a time (not Sendable).
public final class ControlClient {
    /// The leader's JSON-RPC error: its code and the message to show.
    public struct RemoteError: Error, CustomStringConvertible {
        public let code: Int
        public let message: String
        public var description: String { message }
    }

    /// A reply that is not JSON, or a message over `maxMessageBytes`.
    public static let maxMessageBytes = 16 << 20

    private let connection: TCPConnection
    private var nextID = 1
    private var pending: [UInt8] = []
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 1)
    /// A notification's method and its params (an empty object when it has none).
    public var onNotification: ((String, JSONValue) -> Void)?
    /// The language the leader's errors are wanted in: sent as each request's
    /// `"lang"` (nil: none sent, the leader answers in English).
    public var language: Language?

    public init(endpoint: Endpoint, timeoutMilliseconds: Int = 5_000) throws(NetError) {
        connection = try TCPConnection.connect(to: endpoint, timeoutMilliseconds: timeoutMilliseconds)
        connection.setReceiveTimeout(milliseconds: timeoutMilliseconds)
    }

    deinit {
        buffer.deallocate()
        connection.close()
    }

    /// Calls `method` and returns its result (`.null` when it has none).
    /// Throws `RemoteError` for a JSON-RPC error, `NetError` when the
    /// connection fails, times out or a message is too long, and
    /// `JSONValue.Malformed` for a line that is not JSON.
    public func call(_ method: String, _ params: [String: JSONValue] = [:]) throws -> JSONValue {
        let id = nextID
        nextID += 1
        var request: [String: JSONValue] = ["jsonrpc": "2.0", "id": JSONValue(id), "method": .string(method)]
        if !params.isEmpty { request["params"] = .object(params) }
        if let language { request["lang"] = .string(language.rawValue) }
        try connection.send(Array((JSONValue.object(request).serialized + "\n").utf8))
        while true {
            let message = try readMessage()
            if message["id"]?.integer == id {
                if let error = message["error"], error.object != nil {
                    throw RemoteError(code: error["code"]?.integer ?? 0, message: error["message"]?.string ?? "error")
                }
                return message["result"] ?? .null
            }
            if let method = message["method"]?.string { onNotification?(method, Self.params(of: message)) }
        }
    }

    /// Blocks for the next notification (for `tutti watch`).
    public func nextNotification() throws -> (String, JSONValue) {
        while true {
            let message = try readMessage()
            if let method = message["method"]?.string { return (method, Self.params(of: message)) }
        }
    }

    public func setReceiveTimeout(milliseconds: Int) { connection.setReceiveTimeout(milliseconds: milliseconds) }

    private static func params(of message: JSONValue) -> JSONValue {
        if let params = message["params"], params.object != nil { return params }
        return .object([:])
    }

    /// The next line that is a JSON object (other JSON values are skipped).
    private func readMessage() throws -> JSONValue {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                let message = try JSONValue.parse(line)
                if message.object != nil { return message }
                continue
            }
            let (n, _) = try connection.receive(into: buffer)
            if n == 0 { throw NetError.closed }
            pending.append(contentsOf: buffer[0..<n])
            if pending.count > Self.maxMessageBytes {
                throw NetError.protocolViolation(.oversized(length: pending.count, limit: Self.maxMessageBytes))
            }
        }
    }
}
