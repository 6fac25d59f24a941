import TuttiCore

// The JSON the leader writes on its control surfaces (JSON-RPC replies and
// notifications, Snapcast's API): `JSONValue`s, encoded as
// `JSONValue.encoded()` writes them (keys in byte order, whole numbers below
// 10^15 as integers), with a few parts encoded ahead (`EncodedJSON`).

/// JSON already written as bytes, put into a reply as it is: a whole-library
/// list encoded once per library version, a search's page of tracks written
/// without a dictionary per track (the JSON-RPC surface's `encodeTracks`), a
/// monotonic time in nanoseconds (more digits than a Double holds exactly).
public struct EncodedJSON: Sendable {
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    public init(_ value: JSONValue) { bytes = value.encoded() }

    /// An integer's exact digits.
    public static func integer(_ value: Int64) -> EncodedJSON {
        var out: [UInt8] = []
        JSONValue.appendInteger(value, to: &out)
        return EncodedJSON(bytes: out)
    }

    /// One object of `fields` and `encoded` together (see `RPCResult.object`).
    public init(object fields: [String: JSONValue], encoded: [String: EncodedJSON]) {
        let object = RPCResult.object(fields, encoded: encoded)
        bytes = []
        bytes.reserveCapacity(object.sizeHint)
        object.append(to: &bytes)
    }
}

/// What a method returns: a value, or JSON already encoded.
public enum RPCResult: Sendable {
    case value(JSONValue)
    case encoded(EncodedJSON)
    /// One object of `fields` and parts encoded ahead, written when the reply
    /// is (a search's page of tracks is copied once, into the reply), its
    /// keys in byte order as in every object the leader writes (a key in
    /// both: `encoded`'s).
    case object([String: JSONValue], encoded: [String: EncodedJSON])

    public func append(to out: inout [UInt8]) {
        switch self {
        case .value(let v): v.append(to: &out)
        case .encoded(let e): out.append(contentsOf: e.bytes)
        case .object(let fields, let encoded):
            var parts: [(key: String, value: RPCResult)] = encoded.map { ($0.key, .encoded($0.value)) }
            for (key, value) in fields where encoded[key] == nil { parts.append((key, .value(value))) }
            parts.sort { JSONValue.keyPrecedes($0.key, $1.key) }
            out.append(UInt8(ascii: "{"))
            for (i, part) in parts.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.appendString(part.key, to: &out)
                out.append(UInt8(ascii: ":"))
                part.value.append(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Room enough for the parts encoded ahead and some more, so that the
    /// buffer is not grown through every size up to theirs.
    public var sizeHint: Int {
        switch self {
        case .value: 256
        case .encoded(let e): 128 + e.bytes.count
        case .object(_, let encoded): 256 + encoded.values.reduce(0) { $0 + $1.bytes.count }
        }
    }
}

/// One JSON-RPC 2.0 reply, of the leader's API or of Snapcast's: to the
/// request with `id`, its result or an error.
public struct RPCReply: Sendable {
    public enum Outcome: Sendable {
        case result(RPCResult)
        case error(code: Int, message: String)
    }

    public var id: JSONValue
    public var outcome: Outcome

    public init(id: JSONValue, outcome: Outcome) { self.id = id; self.outcome = outcome }

    /// An error reply; `id` nil when the request's could not be read.
    public static func error(id: JSONValue?, code: Int, message: String) -> RPCReply {
        RPCReply(id: id ?? .null, outcome: .error(code: code, message: message))
    }

    public var errorCode: Int? {
        if case .error(let code, _) = outcome { code } else { nil }
    }

    /// `{"error":{"code":…,"message":…},"id":…,"jsonrpc":"2.0"}` or
    /// `{"id":…,"jsonrpc":"2.0","result":…}`: its keys in byte order.
    public func append(to out: inout [UInt8]) {
        switch outcome {
        case .error(let code, let message):
            out.append(contentsOf: #"{"error":{"code":"#.utf8)
            JSONValue.appendInteger(Int64(code), to: &out)
            out.append(contentsOf: #","message":"#.utf8)
            JSONValue.appendString(message, to: &out)
            out.append(contentsOf: #"},"id":"#.utf8)
            id.append(to: &out)
            out.append(contentsOf: #","jsonrpc":"2.0"}"#.utf8)
        case .result(let result):
            out.append(contentsOf: #"{"id":"#.utf8)
            id.append(to: &out)
            out.append(contentsOf: #","jsonrpc":"2.0","result":"#.utf8)
            result.append(to: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The reply as JSON, with room for the line end a TCP client gets.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        if case .result(let result) = outcome { out.reserveCapacity(result.sizeHint) } else { out.reserveCapacity(256) }
        append(to: &out)
        return out
    }
}

/// A JSON-RPC 2.0 notification: `{"jsonrpc":"2.0","method":…,"params":…}`.
public struct RPCNotification: Sendable {
    public var method: String
    public var params: JSONValue

    public init(method: String, params: JSONValue) { self.method = method; self.params = params }

    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(contentsOf: #"{"jsonrpc":"2.0","method":"#.utf8)
        JSONValue.appendString(method, to: &out)
        out.append(contentsOf: #","params":"#.utf8)
        params.append(to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }
}
