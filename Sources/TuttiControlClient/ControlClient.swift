import Foundation
import TuttiCore
import TuttiNet

/// A JSON-RPC 2.0 client for the leader's control socket (one JSON object
/// per line). Notifications that arrive while waiting for a reply are
/// handed to `onNotification`.
public final class ControlClient {
    public struct RemoteError: Error, CustomStringConvertible {
        public let code: Int
        public let message: String
        public var description: String { message }
    }

    private let connection: TCPConnection
    private var nextID = 1
    private var pending: [UInt8] = []
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 1)
    public var onNotification: ((String, [String: Any]) -> Void)?

    public init(endpoint: Endpoint, timeoutMilliseconds: Int = 5_000) throws(NetError) {
        connection = try TCPConnection.connect(to: endpoint, timeoutMilliseconds: timeoutMilliseconds)
        connection.setReceiveTimeout(milliseconds: timeoutMilliseconds)
    }

    deinit {
        buffer.deallocate()
        connection.close()
    }

    /// Calls `method` and returns its result; throws `RemoteError` for a JSON-RPC error.
    public func call(_ method: String, _ params: [String: Any] = [:]) throws -> Any {
        let id = nextID
        nextID += 1
        var request: [String: Any] = ["jsonrpc": "2.0", "id": id, "method": method]
        if !params.isEmpty { request["params"] = params }
        var data = try JSONSerialization.data(withJSONObject: request)
        data.append(UInt8(ascii: "\n"))
        try connection.send(Array(data))
        while true {
            let message = try readMessage()
            if let replyID = message["id"] as? Int, replyID == id {
                if let error = message["error"] as? [String: Any] {
                    throw RemoteError(code: error["code"] as? Int ?? 0, message: error["message"] as? String ?? "error")
                }
                return message["result"] ?? NSNull()
            }
            if let method = message["method"] as? String { onNotification?(method, message["params"] as? [String: Any] ?? [:]) }
        }
    }

    /// Blocks for the next notification (for `tutti watch`).
    public func nextNotification() throws -> (String, [String: Any]) {
        while true {
            let message = try readMessage()
            if let method = message["method"] as? String { return (method, message["params"] as? [String: Any] ?? [:]) }
        }
    }

    public func setReceiveTimeout(milliseconds: Int) { connection.setReceiveTimeout(milliseconds: milliseconds) }

    private func readMessage() throws -> [String: Any] {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                if let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any] { return object }
                continue
            }
            let (n, _) = try connection.receive(into: buffer)
            if n == 0 { throw NetError.closed }
            pending.append(contentsOf: buffer[0..<n])
            if pending.count > 16 << 20 { throw NetError.protocolViolation(.oversized(length: pending.count, limit: 16 << 20)) }
        }
    }
}
