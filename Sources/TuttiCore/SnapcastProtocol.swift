/// Snapcast's binary stream protocol (version 2, as snapserver 0.26 and
/// later speak it; see docs/snapcast.md), so a stock snapclient can be a
/// room of a Tutti leader. Little endian throughout. Every message is a
/// 26-byte base header followed by a typed body:
///
/// | field | type |
/// |---|---|
/// | type, id, refersTo | uint16 each |
/// | sent.sec, sent.usec, received.sec, received.usec | int32 each (the sender's and receiver's clocks) |
/// | size | uint32: bytes of the body |
///
/// Pure: bytes in, values out.
public enum SnapcastProtocol {
    public static let headerBytes = 26
    /// What a client may send us in one message (a Hello is a few hundred bytes).
    public static let maximumClientMessageBytes = 64 * 1024
}

public enum SnapcastMessageType: UInt16, Sendable {
    case codecHeader = 1, wireChunk = 2, serverSettings = 3, time = 4, hello = 5, clientInfo = 7, error = 8
}

/// A `struct timeval` on the wire: seconds and microseconds, normalised so
/// that 0 ≤ usec < 1,000,000 (a negative time has a negative `sec`), as
/// Snapcast's own `tv` arithmetic leaves it.
public struct SnapcastTime: Equatable, Sendable {
    public var sec: Int32
    public var usec: Int32

    public init(sec: Int32, usec: Int32) { self.sec = sec; self.usec = usec }

    public init(nanoseconds ns: Int64) {
        let us = ns >= 0 ? ns / 1_000 : -((-ns + 999) / 1_000) // floor to whole µs
        var s = us / 1_000_000
        var u = us % 1_000_000
        if u < 0 { u += 1_000_000; s -= 1 }
        self.init(sec: Int32(truncatingIfNeeded: s), usec: Int32(u))
    }

    public var nanoseconds: Int64 { (Int64(sec) * 1_000_000 + Int64(usec)) * 1_000 }
}

public struct SnapcastHeader: Equatable, Sendable {
    public var type: UInt16
    public var id: UInt16
    public var refersTo: UInt16
    public var sent: SnapcastTime
    public var received: SnapcastTime
    public var size: UInt32

    public init(type: UInt16, id: UInt16 = 0, refersTo: UInt16 = 0, sent: SnapcastTime = .init(sec: 0, usec: 0),
                received: SnapcastTime = .init(sec: 0, usec: 0), size: UInt32 = 0) {
        self.type = type; self.id = id; self.refersTo = refersTo; self.sent = sent; self.received = received; self.size = size
    }
}

public enum SnapcastMessage: Equatable, Sendable {
    /// Server → client: the codec's name ("opus", "pcm", "flac") and its header.
    case codecHeader(codec: String, payload: [UInt8])
    /// Server → client: one decodable chunk, to be heard at `timestamp` + the buffer (server time).
    case wireChunk(timestamp: SnapcastTime, payload: [UInt8])
    /// Server → client: `{"bufferMs","latency","muted","volume"}`.
    case serverSettings(json: String)
    /// Both ways: a clock exchange; the server's reply carries the client → server latency.
    case time(latency: SnapcastTime)
    /// Client → server: who it is, as JSON.
    case hello(json: String)
    /// Client → server: its volume and mute changed on its own (e.g. the client's mixer).
    case clientInfo(json: String)
    /// Server → client: a refusal (e.g. authentication).
    case error(code: UInt32, error: String, message: String)

    public var type: SnapcastMessageType {
        switch self {
        case .codecHeader: .codecHeader
        case .wireChunk: .wireChunk
        case .serverSettings: .serverSettings
        case .time: .time
        case .hello: .hello
        case .clientInfo: .clientInfo
        case .error: .error
        }
    }

    /// The whole message, header included. `sent` is stamped by the caller as late as it can.
    public func encoded(id: UInt16 = 0, refersTo: UInt16 = 0, sent: SnapcastTime, received: SnapcastTime = .init(sec: 0, usec: 0)) -> [UInt8] {
        var body: [UInt8] = []
        switch self {
        case .codecHeader(let codec, let payload):
            body.appendSnapcastString(codec)
            body.appendSnapcastBlob(payload)
        case .wireChunk(let timestamp, let payload):
            body.appendLittleEndian(UInt32(bitPattern: timestamp.sec))
            body.appendLittleEndian(UInt32(bitPattern: timestamp.usec))
            body.appendSnapcastBlob(payload)
        case .serverSettings(let json), .hello(let json), .clientInfo(let json):
            body.appendSnapcastString(json)
        case .time(let latency):
            body.appendLittleEndian(UInt32(bitPattern: latency.sec))
            body.appendLittleEndian(UInt32(bitPattern: latency.usec))
        case .error(let code, let error, let message):
            body.appendLittleEndian(code)
            body.appendSnapcastString(error)
            body.appendSnapcastString(message)
        }
        var out: [UInt8] = []
        out.reserveCapacity(SnapcastProtocol.headerBytes + body.count)
        out.appendLittleEndian(type.rawValue)
        out.appendLittleEndian(id)
        out.appendLittleEndian(refersTo)
        for t in [sent, received] {
            out.appendLittleEndian(UInt32(bitPattern: t.sec))
            out.appendLittleEndian(UInt32(bitPattern: t.usec))
        }
        out.appendLittleEndian(UInt32(body.count))
        return out + body
    }

    /// The codec header a stock client needs for Tutti's codecs (48 kHz, 16-bit, stereo).
    public static func codecHeader(for codec: Codec) -> SnapcastMessage {
        switch codec {
        case .opus:
            // Snapcast's Opus "header": the id 0x4F505553 ("OPUS"), rate, bits, channels.
            var p: [UInt8] = []
            p.appendLittleEndian(UInt32(0x4F50_5553))
            p.appendLittleEndian(UInt32(48_000))
            p.appendLittleEndian(UInt16(16))
            p.appendLittleEndian(UInt16(2))
            return .codecHeader(codec: "opus", payload: p)
        case .pcm:
            return .codecHeader(codec: "pcm", payload: wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 16, dataBytes: 0))
        }
    }
}

public enum SnapcastProtocolError: Error, Equatable, CustomStringConvertible {
    case tooLarge(type: UInt16, size: UInt32, limit: Int)
    case malformed(type: UInt16, reason: String)
    public var description: String {
        switch self {
        case .tooLarge(let t, let s, let l): "Snapcast message of type \(t) is \(s) bytes, over the limit of \(l)"
        case .malformed(let t, let r): "malformed Snapcast message of type \(t): \(r)"
        }
    }
}

/// Splits a byte stream from a client into messages; bounded, so a peer
/// cannot make it buffer more than one message of the limit.
public struct SnapcastFramer: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    public let limit: Int

    public init(limit: Int = SnapcastProtocol.maximumClientMessageBytes) { self.limit = limit }

    public mutating func append(_ bytes: some Sequence<UInt8>) { buffer.append(contentsOf: bytes) }

    public var pendingBytes: Int { buffer.count - start }

    /// The next whole message, nil until one has arrived. Message types a
    /// server does not expect are returned as nil body (skipped by the caller).
    public mutating func next() throws(SnapcastProtocolError) -> (header: SnapcastHeader, message: SnapcastMessage?)? {
        guard pendingBytes >= SnapcastProtocol.headerBytes else { compact(); return nil }
        var r = SnapcastBytes(buffer, from: start)
        let type = r.u16(), id = r.u16(), refersTo = r.u16()
        let sent = SnapcastTime(sec: Int32(bitPattern: r.u32()), usec: Int32(bitPattern: r.u32()))
        let received = SnapcastTime(sec: Int32(bitPattern: r.u32()), usec: Int32(bitPattern: r.u32()))
        let size = r.u32()
        guard Int(size) <= limit else { throw .tooLarge(type: type, size: size, limit: limit) }
        guard pendingBytes >= SnapcastProtocol.headerBytes + Int(size) else { compact(); return nil }
        let bodyStart = start + SnapcastProtocol.headerBytes
        let body = Array(buffer[bodyStart..<(bodyStart + Int(size))])
        start = bodyStart + Int(size)
        let header = SnapcastHeader(type: type, id: id, refersTo: refersTo, sent: sent, received: received, size: size)
        return (header, try Self.decodeBody(type: type, body))
    }

    private mutating func compact() {
        if start > 0 { buffer.removeFirst(start); start = 0 }
    }

    static func decodeBody(type: UInt16, _ body: [UInt8]) throws(SnapcastProtocolError) -> SnapcastMessage? {
        var r = SnapcastBytes(body, from: 0)
        func string() throws(SnapcastProtocolError) -> String {
            guard r.remaining >= 4 else { throw .malformed(type: type, reason: "no length") }
            let n = Int(r.u32())
            guard n <= r.remaining else { throw .malformed(type: type, reason: "a string of \(n) bytes in \(r.remaining)") }
            return String(decoding: r.bytes(n), as: UTF8.self)
        }
        func blob() throws(SnapcastProtocolError) -> [UInt8] {
            guard r.remaining >= 4 else { throw .malformed(type: type, reason: "no length") }
            let n = Int(r.u32())
            guard n <= r.remaining else { throw .malformed(type: type, reason: "a payload of \(n) bytes in \(r.remaining)") }
            return r.bytes(n)
        }
        switch SnapcastMessageType(rawValue: type) {
        case .hello: return .hello(json: try string())
        case .clientInfo: return .clientInfo(json: try string())
        case .serverSettings: return .serverSettings(json: try string())
        case .time:
            guard r.remaining >= 8 else { throw .malformed(type: type, reason: "a time needs 8 bytes") }
            return .time(latency: SnapcastTime(sec: Int32(bitPattern: r.u32()), usec: Int32(bitPattern: r.u32())))
        case .codecHeader: return .codecHeader(codec: try string(), payload: try blob())
        case .wireChunk:
            guard r.remaining >= 8 else { throw .malformed(type: type, reason: "a chunk needs a timestamp") }
            let t = SnapcastTime(sec: Int32(bitPattern: r.u32()), usec: Int32(bitPattern: r.u32()))
            return .wireChunk(timestamp: t, payload: try blob())
        case .error:
            guard r.remaining >= 4 else { throw .malformed(type: type, reason: "no code") }
            let code = r.u32()
            return .error(code: code, error: try string(), message: try string())
        case nil:
            return nil
        }
    }
}

private struct SnapcastBytes {
    let bytes: [UInt8]
    var at: Int
    init(_ bytes: [UInt8], from: Int) { self.bytes = bytes; at = from }
    var remaining: Int { bytes.count - at }
    mutating func u16() -> UInt16 { defer { at += 2 }; return UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    mutating func u32() -> UInt32 {
        defer { at += 4 }
        return UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }
    mutating func bytes(_ n: Int) -> [UInt8] { defer { at += n }; return Array(bytes[at..<(at + n)]) }
}

extension Array where Element == UInt8 {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ v: T) {
        Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) }
    }
    mutating func appendSnapcastString(_ s: String) {
        appendLittleEndian(UInt32(s.utf8.count))
        append(contentsOf: s.utf8)
    }
    mutating func appendSnapcastBlob(_ b: [UInt8]) {
        appendLittleEndian(UInt32(b.count))
        append(contentsOf: b)
    }
}
