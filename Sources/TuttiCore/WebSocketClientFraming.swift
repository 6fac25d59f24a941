/// A WebSocket client's side of RFC 6455, pure: the opening request, the
/// check of the server's answer, masked frames out and bounded frames in.
/// TuttiNet's `TCPConnection` carries the bytes (a Tutti speaker playing for
/// a Sendspin server); the server side of Tutti's WebSockets is civetweb's.

/// Why a WebSocket connection cannot go on.
public enum WebSocketError: Error, Equatable, CustomStringConvertible {
    /// The server did not switch protocols (its status line, or what was missing).
    case refused(String)
    /// A frame or message broke the protocol, or went over a bound.
    case malformed(String)

    public var description: String {
        switch self {
        case .refused(let why): "the server did not open a WebSocket: \(why)"
        case .malformed(let why): "a malformed WebSocket frame: \(why)"
        }
    }
}

public enum WebSocketOpening {
    /// The most a server's answer to the opening request may hold (status line and headers).
    public static let maximumResponseBytes = 8_192

    /// The opening request for `path` on `host:port`, with a 16-byte `key` (random).
    public static func request(host: String, port: UInt16, path: String, key: [UInt8]) -> [UInt8] {
        precondition(key.count == 16, "a WebSocket key is 16 bytes")
        return Array(("GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
                      "Sec-WebSocket-Key: \(Base64.encode(key))\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
    }

    /// RFC 6455's GUID, appended to the key before hashing.
    static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// The `Sec-WebSocket-Accept` a server must answer the 16-byte `key` with:
    /// base64 of SHA-1 of the key's base64 and the GUID. `sha1` is the digest (the shell's libcrypto).
    public static func accept(key: [UInt8], sha1: ([UInt8]) -> [UInt8]) -> String {
        Base64.encode(sha1(Array((Base64.encode(key) + acceptGUID).utf8)))
    }

    /// The server's answer, once `bytes` hold all of it: nil while its end
    /// (a blank line) has not come; the bytes after it (the first frames),
    /// or why it is not a switch to WebSocket. The status, the upgrade header
    /// and, when `expectedAccept` is given, `Sec-WebSocket-Accept` are checked
    /// (a proxy or a server that did not read our key answers otherwise);
    /// every frame after is checked as it comes.
    public static func response(_ bytes: [UInt8], expectedAccept: String? = nil) throws(WebSocketError) -> [UInt8]? {
        guard let end = headerEnd(bytes) else {
            if bytes.count > maximumResponseBytes { throw .refused("an answer of over \(maximumResponseBytes) bytes") }
            return nil
        }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let status = lines.first.map(String.init) ?? ""
        let parts = status.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1] == "101" else { throw .refused(String(status.prefix(120))) }
        let upgrade = lines.dropFirst().contains { line in
            let pair = line.split(separator: ":", maxSplits: 1)
            return pair.count == 2 && pair[0].lowercased() == "upgrade"
                && pair[1].trimmingSpaces.lowercased() == "websocket"
        }
        guard upgrade else { throw .refused("101 without Upgrade: websocket") }
        if let expectedAccept {
            let accepts = lines.dropFirst().compactMap { line -> Substring? in
                let pair = line.split(separator: ":", maxSplits: 1)
                return pair.count == 2 && pair[0].lowercased() == "sec-websocket-accept" ? pair[1].trimmingSpaces : nil
            }
            guard accepts.count == 1, accepts[0] == expectedAccept else {
                throw .refused(accepts.isEmpty ? "101 without Sec-WebSocket-Accept" : "a Sec-WebSocket-Accept that does not answer our key")
            }
        }
        return Array(bytes[(end + 4)...])
    }

    private static func headerEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var s = self
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }
}

/// One whole message, as the reader hands it over.
public enum WebSocketMessage: Equatable, Sendable {
    case text([UInt8])
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// The server closes: its code (1005 when none) and reason.
    case close(code: UInt16, reason: String)
}

/// Frames a client sends: always masked (RFC 6455 §5.3), never fragmented.
public enum WebSocketClientFrame {
    public static let text: UInt8 = 0x1, binary: UInt8 = 0x2, close: UInt8 = 0x8, ping: UInt8 = 0x9, pong: UInt8 = 0xA

    /// One final frame of `opcode` carrying `payload`, masked with `mask` (4 random bytes).
    public static func frame(opcode: UInt8, payload: [UInt8], mask: (UInt8, UInt8, UInt8, UInt8)) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 14)
        out.append(0x80 | opcode)
        let n = payload.count
        if n < 126 {
            out.append(0x80 | UInt8(n))
        } else if n <= 0xFFFF {
            out += [0x80 | 126, UInt8(n >> 8), UInt8(n & 0xFF)]
        } else {
            out.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(n) >> UInt64(shift))) }
        }
        let m = [mask.0, mask.1, mask.2, mask.3]
        out += m
        for (i, b) in payload.enumerated() { out.append(b ^ m[i & 3]) }
        return out
    }

    /// A close frame with a code (and a short reason).
    public static func close(code: UInt16, reason: String, mask: (UInt8, UInt8, UInt8, UInt8)) -> [UInt8] {
        frame(opcode: close, payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(120)), mask: mask)
    }
}

/// Reads the peer's frames from a byte stream: whole messages, fragments
/// joined, every length checked before anything is kept. A server's frames
/// are never masked, a client's always are (`fromClient`: this side is the
/// server, and unmasks them); control frames are final and at most 125 bytes.
public struct WebSocketFrameReader: Sendable {
    /// The largest message (all its fragments) this reader keeps.
    public let maximumMessageBytes: Int
    /// The peer is a client: its frames must be masked (RFC 6455 §5.1).
    public let fromClient: Bool
    private var buffer: [UInt8] = []
    private var start = 0
    private var fragments: [UInt8] = []
    private var fragmentOpcode: UInt8?

    public init(maximumMessageBytes: Int, fromClient: Bool = false) {
        self.maximumMessageBytes = maximumMessageBytes
        self.fromClient = fromClient
    }

    /// Bytes held that are not yet a whole message.
    public var pendingBytes: Int { buffer.count - start + fragments.count }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }

    public mutating func append(_ bytes: [UInt8]) { bytes.withUnsafeBytes { append($0) } }

    /// The next whole message, nil until one has come.
    public mutating func next() throws(WebSocketError) -> WebSocketMessage? {
        while true {
            let available = buffer.count - start
            guard available >= 2 else { return nil }
            let b0 = buffer[start], b1 = buffer[start + 1]
            guard b0 & 0x70 == 0 else { throw .malformed("reserved bits set (no extension was agreed)") }
            let masked = b1 & 0x80 != 0
            guard masked == fromClient else { throw .malformed(fromClient ? "an unmasked frame from the client" : "a masked frame from the server") }
            let fin = b0 & 0x80 != 0
            let opcode = b0 & 0x0F
            var header = 2
            var length = Int(b1 & 0x7F)
            if length == 126 {
                guard available >= 4 else { return nil }
                length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
                header = 4
            } else if length == 127 {
                guard available >= 10 else { return nil }
                var n: UInt64 = 0
                for i in 0..<8 { n = n << 8 | UInt64(buffer[start + 2 + i]) }
                guard n <= UInt64(maximumMessageBytes) else { throw .malformed("a frame of \(n) bytes (at most \(maximumMessageBytes))") }
                length = Int(n)
                header = 10
            }
            let maskBytes = masked ? 4 : 0
            let control = opcode & 0x08 != 0
            if control {
                guard fin, length <= 125 else { throw .malformed("a control frame fragmented or over 125 bytes") }
            } else {
                guard fragments.count + length <= maximumMessageBytes else {
                    throw .malformed("a message of over \(maximumMessageBytes) bytes")
                }
            }
            guard available >= header + maskBytes + length else { return nil }
            var payload = Array(buffer[(start + header + maskBytes)..<(start + header + maskBytes + length)])
            if masked {
                let key = buffer[(start + header)..<(start + header + 4)].map { $0 }
                for i in payload.indices { payload[i] ^= key[i & 3] }
            }
            start += header + maskBytes + length
            if start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
            switch opcode {
            case 0x8:
                let code = payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : 1005
                return .close(code: code, reason: String(decoding: payload.dropFirst(2), as: UTF8.self))
            case 0x9: return .ping(payload)
            case 0xA: return .pong(payload)
            case 0x1, 0x2:
                guard fragmentOpcode == nil else { throw .malformed("a new message inside a fragmented one") }
                if fin { return opcode == 0x1 ? .text(payload) : .binary(payload) }
                fragmentOpcode = opcode
                fragments = payload
            case 0x0:
                guard let first = fragmentOpcode else { throw .malformed("a continuation with no message begun") }
                fragments += payload
                if fin {
                    let whole = fragments
                    fragments = []
                    fragmentOpcode = nil
                    return first == 0x1 ? .text(whole) : .binary(whole)
                }
            default:
                throw .malformed("opcode \(opcode)")
            }
        }
    }
}
