import TuttiCore
import TuttiControlKit

/// One JSON-RPC 2.0 request as it arrives (a TCP line or a WebSocket
/// message), checked before anything acts on it. Pure, so the fuzz target
/// (Fuzz/) runs exactly the parsing a client reaches.
public struct JSONRPCRequest {
    /// The request's id (a number, a string or null); nil for a notification, which gets no reply.
    public var id: JSONValue?
    public var method: String
    public var params: [String: JSONValue]

    /// A request, or the error to send back (JSON-RPC's code and message).
    public enum Parsed {
        case request(JSONRPCRequest)
        case invalid(id: JSONValue?, code: Int, message: String)
    }

    public static func parse(_ line: [UInt8]) -> Parsed {
        if JSONNesting.exceeds(line) {
            return .invalid(id: nil, code: -32600, message: "nested deeper than \(JSONNesting.limit) levels")
        }
        guard let json = JSONValue.parsing(line) else {
            return .invalid(id: nil, code: -32700, message: "not valid JSON")
        }
        guard let request = json.object else {
            return .invalid(id: nil, code: -32600, message: "a request must be a JSON object")
        }
        let id = request["id"]
        switch id {
        case nil, .number?, .string?, .null?: break
        default:
            return .invalid(id: nil, code: -32600, message: "id must be a number, a string or null")
        }
        guard request["jsonrpc"]?.string == "2.0", let method = request["method"]?.string else {
            return .invalid(id: id, code: -32600, message: "a request needs \"jsonrpc\": \"2.0\" and a \"method\" string")
        }
        switch request["params"] {
        case nil, .null?: return .request(JSONRPCRequest(id: id, method: method, params: [:]))
        case .object(let object)?: return .request(JSONRPCRequest(id: id, method: method, params: object))
        default: return .invalid(id: id, code: -32602, message: "params must be an object")
        }
    }
}
