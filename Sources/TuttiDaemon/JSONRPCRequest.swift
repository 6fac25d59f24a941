import Foundation
import TuttiCore

/// One JSON-RPC 2.0 request as it arrives (a TCP line or a WebSocket
/// message), checked before anything acts on it. Pure, so the fuzz target
/// (Fuzz/) runs exactly the parsing a client reaches.
public struct JSONRPCRequest {
    /// The request's id (a number, a string or null); nil for a notification, which gets no reply.
    public var id: Any?
    public var method: String
    public var params: [String: Any]

    /// A request, or the error to send back (JSON-RPC's code and message).
    public enum Parsed {
        case request(JSONRPCRequest)
        case invalid(id: Any?, code: Int, message: String)
    }

    public static func parse(_ line: [UInt8]) -> Parsed {
        if JSONNesting.exceeds(line) {
            return .invalid(id: nil, code: -32600, message: "nested deeper than \(JSONNesting.limit) levels")
        }
        guard let json = try? JSONSerialization.jsonObject(with: Data(line), options: [.fragmentsAllowed]) else {
            return .invalid(id: nil, code: -32700, message: "not valid JSON")
        }
        guard let request = json as? [String: Any] else {
            return .invalid(id: nil, code: -32600, message: "a request must be a JSON object")
        }
        let id = request["id"]
        if let idValue = id, !(idValue is NSNumber || idValue is String || idValue is NSNull) {
            return .invalid(id: nil, code: -32600, message: "id must be a number, a string or null")
        }
        guard request["jsonrpc"] as? String == "2.0", let method = request["method"] as? String else {
            return .invalid(id: id, code: -32600, message: "a request needs \"jsonrpc\": \"2.0\" and a \"method\" string")
        }
        switch request["params"] {
        case nil, is NSNull: return .request(JSONRPCRequest(id: id, method: method, params: [:]))
        case let object as [String: Any]: return .request(JSONRPCRequest(id: id, method: method, params: object))
        default: return .invalid(id: id, code: -32602, message: "params must be an object")
        }
    }
}
