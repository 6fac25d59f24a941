/// A WebSocket server's side of RFC 6455, pure, for one endpoint: the check
/// of a client's opening request, the answers to it, and unmasked frames
/// out (frames in: `WebSocketFrameReader(fromClient: true)`). A Tutti
/// speaker listening for a Sendspin server to dial in uses it over TuttiNet's
/// `TCPConnection`; it brings no HTTP server into the speaker.
public enum WebSocketUpgrade {
    /// The most an opening request may hold (request line and headers).
    public static let maximumRequestBytes = 8_192

    /// Why a request is not answered with a WebSocket: the HTTP status and a short reason.
    public struct Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        public let status: Int
        public let reason: String
        public init(status: Int, reason: String) { self.status = status; self.reason = reason }
        public var description: String { "\(status): \(reason)" }
    }

    /// The client's request, once `bytes` hold all of it: nil while its end
    /// (a blank line) has not come; else its 16-byte `Sec-WebSocket-Key` and
    /// the bytes after the request (the first frames), or why it is refused.
    /// Checked: `GET`, the path (the query ignored), `Upgrade: websocket`,
    /// `Connection: upgrade`, version 13, a key of 16 bytes.
    public static func request(_ bytes: [UInt8], path: String) throws(Refusal) -> (key: [UInt8], rest: [UInt8])? {
        guard let end = headerEnd(bytes) else {
            if bytes.count > maximumRequestBytes { throw Refusal(status: 431, reason: "a request of over \(maximumRequestBytes) bytes") }
            return nil
        }
        guard end <= maximumRequestBytes else { throw Refusal(status: 431, reason: "a request of over \(maximumRequestBytes) bytes") }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let parts = (lines.first ?? "").split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { throw Refusal(status: 400, reason: "not an HTTP/1 request") }
        guard parts[0] == "GET" else { throw Refusal(status: 405, reason: "\(parts[0].prefix(16)) (only GET opens a WebSocket)") }
        let target = parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard target == path else { throw Refusal(status: 404, reason: "\(target.prefix(64)) (the WebSocket is at \(path))") }
        var headers: [(String, Substring)] = []
        for line in lines.dropFirst() where !line.isEmpty {
            let pair = line.split(separator: ":", maxSplits: 1)
            guard pair.count == 2 else { throw Refusal(status: 400, reason: "a header line without a colon") }
            headers.append((pair[0].lowercased(), trimmed(pair[1])))
        }
        func values(_ name: String) -> [Substring] { headers.filter { $0.0 == name }.map(\.1) }
        guard values("upgrade").contains(where: { $0.lowercased() == "websocket" }) else { throw Refusal(status: 426, reason: "no Upgrade: websocket") }
        guard values("connection").contains(where: { $0.lowercased().split(separator: ",").contains { trimmed($0) == "upgrade" } }) else {
            throw Refusal(status: 400, reason: "no Connection: upgrade")
        }
        guard values("sec-websocket-version") == ["13"] else { throw Refusal(status: 426, reason: "not WebSocket version 13") }
        let keys = values("sec-websocket-key")
        guard keys.count == 1, keys[0].utf8.count == 24, let key = Base64.decode(Array(keys[0].utf8)), key.count == 16 else {
            throw Refusal(status: 400, reason: "no Sec-WebSocket-Key of 16 bytes")
        }
        return (key, Array(bytes[(end + 4)...]))
    }

    /// `101 Switching Protocols`, with `accept` (`WebSocketOpening.accept` of the client's key).
    public static func switching(accept: String) -> [UInt8] {
        Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n".utf8)
    }

    /// An HTTP answer that refuses, the connection closed after it.
    public static func refusal(_ refusal: Refusal) -> [UInt8] {
        let text = refusal.reason + "\n"
        let phrase = switch refusal.status {
        case 400: "Bad Request"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 426: "Upgrade Required"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        default: "Error"
        }
        return Array(("HTTP/1.1 \(refusal.status) \(phrase)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(text.utf8.count)\r\n" +
                      (refusal.status == 426 ? "Sec-WebSocket-Version: 13\r\n" : "") + "Connection: close\r\n\r\n" + text).utf8)
    }

    private static func trimmed(_ s: Substring) -> Substring {
        var s = s
        while s.first == " " || s.first == "\t" { s = s.dropFirst() }
        while s.last == " " || s.last == "\t" { s = s.dropLast() }
        return s
    }

    private static func headerEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }
}

/// Frames a server sends: never masked (RFC 6455 §5.1), never fragmented.
public enum WebSocketServerFrame {
    /// One final frame of `opcode` (`WebSocketClientFrame`'s constants) carrying `payload`.
    public static func frame(opcode: UInt8, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 10)
        out.append(0x80 | opcode)
        let n = payload.count
        if n < 126 {
            out.append(UInt8(n))
        } else if n <= 0xFFFF {
            out += [126, UInt8(n >> 8), UInt8(n & 0xFF)]
        } else {
            out.append(127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: UInt64(n) >> UInt64(shift))) }
        }
        out += payload
        return out
    }

    /// A close frame with a code (and a short reason).
    public static func close(code: UInt16, reason: String) -> [UInt8] {
        frame(opcode: WebSocketClientFrame.close, payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(120)))
    }
}
