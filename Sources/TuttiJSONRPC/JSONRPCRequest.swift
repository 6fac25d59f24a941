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
    /// The language its errors are wanted in: the request's own `"lang"`
    /// member (beside `"method"`, a BCP 47 tag such as "ko" or "ko-KR"); nil
    /// when it has none or the catalogue lacks it (docs/api.md, "Languages").
    public var language: Language?

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
        let language = request["lang"]?.string.flatMap { $0.utf8.count <= 35 ? Language(tag: $0) : nil }
        switch request["params"] {
        case nil, .null?: return .request(JSONRPCRequest(id: id, method: method, params: [:], language: language))
        case .object(let object)?: return .request(JSONRPCRequest(id: id, method: method, params: object, language: language))
        default: return .invalid(id: id, code: -32602, message: "params must be an object")
        }
    }
}
