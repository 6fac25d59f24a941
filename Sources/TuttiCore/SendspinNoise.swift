/// Sendspin's Noise layer, as aiosendspin 10.2 speaks it (docs/sendspin.md,
/// "Transport security and pairing"):
///
/// 1. the client sends a text `client/init` {client_id, version 1, suite};
/// 2. the server answers a text `server/init` {server_id, version 1} and at
///    once a text `noise/handshake` carrying Noise message 1 (the server is
///    the Noise *initiator*), whose payload names the PSK it chose
///    (`psk_id`, `psk_category`); the prologue is the two init texts;
/// 3. the client answers `noise/handshake` with message 2 (payload `{}`);
/// 4. from then on every message is a binary WebSocket message holding one
///    Noise transport message: plaintext byte 0 is the type (0 JSON text,
///    1 a fragment, other values the roles' binary types).
///
/// A client that starts with a text `client/hello` instead is a legacy plain
/// client (no Noise), admitted only where the configuration allows it.

/// Base64url without padding (RFC 4648 section 5), as Sendspin writes keys and PSK ids.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i]), b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0, b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let v = b0 << 16 | b1 << 8 | b2
            let n = min(3, bytes.count - i) + 1
            for k in 0..<n { out.append(alphabet[Int(v >> UInt32(18 - 6 * k) & 63)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes, or nil for a character outside the alphabet or an impossible length.
    /// Padding is tolerated (as aiosendspin does); `canonical` is whether re-encoding gives the text back.
    public static func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var accumulator: UInt32 = 0, bits = 0, count = 0, padding = 0
        for c in text.utf8 {
            let v: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): v = 62
            case UInt8(ascii: "_"): v = 63
            case UInt8(ascii: "="): padding += 1; continue
            default: return nil
            }
            guard padding == 0 else { return nil }
            accumulator = accumulator << 6 | v
            bits += 6
            count += 1
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(accumulator >> UInt32(bits) & 0xff))
            }
        }
        guard count % 4 != 1, padding <= 2 else { return nil }
        return out
    }
}

/// What a PSK is to the handshake (aiosendspin's `PskCategory`), with its
/// two-letter wire code: equally long, so message 1's length does not tell.
public enum SendspinPSKCategory: String, Sendable, Equatable, CaseIterable {
    /// The per-client key a pairing established.
    case longTerm = "lt"
    /// A key handed out of band to admit one new client for pairing.
    case pairing = "pr"
    /// The published Sentinel key: authenticates nothing beyond the static keys
    /// (unpaired access, pairing by code).
    case sentinel = "sn"

    public var name: String {
        switch self {
        case .longTerm: "long_term"
        case .pairing: "pairing"
        case .sentinel: "sentinel"
        }
    }
}

/// A 32-byte PSK with its category and wire id.
public struct SendspinPSK: Sendable, Equatable {
    public let key: [UInt8]
    public let category: SendspinPSKCategory
    /// `base64url(SHA-256("sendspin-psk-id-v1" || key))`.
    public let id: String

    public init(key: [UInt8], category: SendspinPSKCategory, crypto: any NoiseCrypto) {
        precondition(key.count == 32, "a Sendspin PSK is 32 bytes")
        self.key = key
        self.category = category
        id = Self.id(of: key, crypto: crypto)
    }

    public static func id(of key: [UInt8], crypto: any NoiseCrypto) -> String {
        Base64URL.encode(crypto.sha256([Array("sendspin-psk-id-v1".utf8), key]))
    }

    /// The published Sentinel PSK: `SHA-256("sendspin-sentinel-psk-v1")`.
    public static func sentinel(crypto: any NoiseCrypto) -> SendspinPSK {
        SendspinPSK(key: crypto.sha256([Array("sendspin-sentinel-psk-v1".utf8)]), category: .sentinel, crypto: crypto)
    }
}

/// What the trust store knows of a client when it connects.
public struct SendspinCredentials: Sendable, Equatable {
    /// The PSK to reference in message 1 (a long-term record, else a staged
    /// pairing PSK); nil for the Sentinel.
    public var psk: SendspinPSK?
    /// Paired, staged or approved: proven able to connect encrypted, so never
    /// admitted on a plain connection (downgrade protection).
    public var known: Bool
    public init(psk: SendspinPSK?, known: Bool) { self.psk = psk; self.known = known }
    public static let stranger = SendspinCredentials(psk: nil, known: false)
}

/// The suites a client may pick in `client/init`.
public enum SendspinSuite {
    public static func name(_ cipher: NoiseCipher) -> String { "25519_\(cipher.rawValue)_SHA256" }
    public static func cipher(named name: String) -> NoiseCipher? { NoiseCipher.allCases.first { Self.name($0) == name } }
}

/// A peer authenticated by a finished handshake.
public struct SendspinPeer: Sendable, Equatable {
    /// Its static public key in base64url (the Sendspin `client_id` or `server_id`).
    public var id: String
    public var cipher: NoiseCipher
    /// The PSK that keyed the session: long-term (a paired client), pairing, or the Sentinel.
    public var category: SendspinPSKCategory
    /// The Noise handshake hash, which binds pairing codes to this session.
    public var handshakeHash: [UInt8]
    /// The peer could not use the PSK message 1 referenced and answered under the
    /// Sentinel: it holds no record of this pairing any more (re-pair it).
    public var credentialMismatch: Bool
    public init(id: String, cipher: NoiseCipher, category: SendspinPSKCategory, handshakeHash: [UInt8], credentialMismatch: Bool) {
        self.id = id; self.cipher = cipher; self.category = category; self.handshakeHash = handshakeHash; self.credentialMismatch = credentialMismatch
    }
}

// MARK: Fragments

/// Sendspin's transport framing inside Noise: a message longer than one Noise
/// frame goes as type-1 fragments (`[1, flags, orig_type]` then
/// `[1, flags]`; flags 0x02 first, 0x01 last), reassembled with a hard bound.
public enum SendspinFragments {
    public static let typeJSON: UInt8 = 0
    public static let typeFragment: UInt8 = 1
    /// Legacy framing (before spec PR 172): 2 starts or continues, 3 ends. Read, never written.
    public static let typeLegacyMore: UInt8 = 2
    public static let typeLegacyEnd: UInt8 = 3
    static let flagLast: UInt8 = 0x01
    static let flagFirst: UInt8 = 0x02

    /// The plaintexts of the Noise frames that carry `message` (type byte first).
    public static func frames(_ message: [UInt8]) -> [[UInt8]] {
        precondition(!message.isEmpty, "a Sendspin message starts with its type byte")
        let limit = NoiseLimits.maxPlaintext
        if message.count <= limit { return [message] }
        var frames: [[UInt8]] = []
        var at = 1
        let firstCap = limit - 3, nextCap = limit - 2
        while at < message.count {
            let first = frames.isEmpty
            let end = min(message.count, at + (first ? firstCap : nextCap))
            let flags = (first ? flagFirst : 0) | (end == message.count ? flagLast : 0)
            frames.append((first ? [typeFragment, flags, message[0]] : [typeFragment, flags]) + message[at..<end])
            at = end
        }
        return frames
    }
}

/// Reassembles fragments; a message may not exceed `limit` bytes (type byte included).
public struct SendspinReassembler: Sendable {
    public enum Outcome: Equatable, Sendable {
        /// A whole message, type byte first.
        case message([UInt8])
        case needMore
        case refused(String)
    }

    public let limit: Int
    private var buffer: [UInt8]?
    private var legacy = false

    public init(limit: Int) { precondition(limit >= NoiseLimits.maxPlaintext); self.limit = limit }

    public var inFlight: Int { buffer?.count ?? 0 }

    private mutating func fail(_ why: String) -> Outcome { buffer = nil; return .refused(why) }

    private mutating func append(_ data: ArraySlice<UInt8>, last: Bool) -> Outcome {
        guard buffer!.count + data.count <= limit else { return fail("a fragmented message over \(limit) bytes") }
        buffer! += data
        guard last else { return .needMore }
        let whole = buffer!
        buffer = nil
        return .message(whole)
    }

    /// One decrypted Noise frame.
    public mutating func accept(_ p: [UInt8]) -> Outcome {
        guard let type = p.first else { return fail("an empty plaintext") }
        switch type {
        case SendspinFragments.typeFragment:
            guard p.count >= 2 else { return fail("a fragment without flags") }
            let flags = p[1]
            guard flags & 0xFC == 0 else { return fail("fragment flags with reserved bits") }
            if flags & SendspinFragments.flagFirst != 0 {
                guard buffer == nil else { return fail("a first fragment inside another message") }
                guard p.count >= 3, p[2] != SendspinFragments.typeFragment else { return fail("a first fragment without a message type") }
                buffer = [p[2]]
                legacy = false
                return append(p[3...], last: flags & SendspinFragments.flagLast != 0)
            }
            guard buffer != nil, !legacy else { return fail("a fragment with no message begun") }
            return append(p[2...], last: flags & SendspinFragments.flagLast != 0)
        case SendspinFragments.typeLegacyMore, SendspinFragments.typeLegacyEnd:
            let last = type == SendspinFragments.typeLegacyEnd
            if buffer == nil {
                guard !last, p.count >= 2, p[1] > SendspinFragments.typeLegacyEnd || p[1] == 0 else { return fail("a legacy fragment with no message begun") }
                buffer = [p[1]]
                legacy = true
                return append(p[2...], last: false)
            }
            guard legacy else { return fail("a legacy fragment inside a fragmented message") }
            return append(p[1...], last: last)
        default:
            guard buffer == nil else { return fail("a whole message inside a fragmented one") }
            guard p.count <= limit else { return fail("a message over \(limit) bytes") }
            return .message(p)
        }
    }
}

// MARK: The encrypted session both sides share

/// A finished handshake's transport as Sendspin frames it.
struct SendspinSecureSession: Sendable {
    var transport: NoiseTransport
    var reassembler: SendspinReassembler

    mutating func received(binary: Bool, bytes: [UInt8]) -> [SendspinChannelEvent] {
        // Text after the handshake is refused, as aiosendspin does.
        guard binary else { return [SendspinClose.protocolError("a text message after the Noise handshake")] }
        let plaintext: [UInt8]
        do { plaintext = try transport.open(bytes) } catch { return [SendspinClose.policy("a transport message did not authenticate")] }
        switch reassembler.accept(plaintext) {
        case .needMore: return []
        case .refused(let why): return [SendspinClose.tooBig(why)]
        case .message(let m):
            if m[0] == SendspinFragments.typeJSON {
                guard let text = String(validating: m[1...], as: UTF8.self) else { return [SendspinClose.protocolError("a JSON message that is not UTF-8")] }
                return [.message(text: text)]
            }
            return [.binary(m)]
        }
    }

    mutating func seal(_ message: [UInt8]) -> [SendspinChannelEvent] {
        var out: [SendspinChannelEvent] = []
        for frame in SendspinFragments.frames(message) {
            do { out.append(.sendRaw(binary: true, bytes: try transport.seal(frame))) } catch { return [SendspinClose.policy("the Noise session ran out of nonces")] }
        }
        return out
    }

    mutating func sealText(_ text: String) -> [SendspinChannelEvent] { seal([SendspinFragments.typeJSON] + Array(text.utf8)) }

    mutating func sealBinary(_ bytes: [UInt8]) -> [SendspinChannelEvent] {
        precondition(!bytes.isEmpty && bytes[0] > SendspinFragments.typeLegacyEnd, "binary types 0-3 belong to the transport")
        return seal(bytes)
    }
}

/// WebSocket close codes (RFC 6455) for a Sendspin channel.
public enum SendspinClose {
    /// 1008: refused (authentication, policy).
    public static func policy(_ reason: String) -> SendspinChannelEvent { .close(code: 1008, reason: reason) }
    /// 1002: the peer broke the protocol.
    public static func protocolError(_ reason: String) -> SendspinChannelEvent { .close(code: 1002, reason: reason) }
    /// 1009: a message over the bound.
    public static func tooBig(_ reason: String) -> SendspinChannelEvent { .close(code: 1009, reason: reason) }
}

/// The cleartext messages of the handshake, written exactly as they go on the
/// wire (the init texts are the prologue, so they are never re-encoded).
enum SendspinHandshakeText {
    static func serverInit(serverID: String) -> String { #"{"type":"server/init","payload":{"server_id":"\#(serverID)","version":1}}"# }
    static func clientInit(clientID: String, cipher: NoiseCipher) -> String {
        #"{"type":"client/init","payload":{"client_id":"\#(clientID)","version":1,"suite":"\#(SendspinSuite.name(cipher))"}}"#
    }
    static func serverError(_ reason: String) -> String { #"{"type":"server/error","payload":{"reason":"\#(reason)"}}"# }
    static func handshake(_ noise: [UInt8]) -> String { #"{"type":"noise/handshake","payload":{"data":"\#(Base64URL.encode(noise))"}}"# }
    static func message1Payload(_ psk: SendspinPSK) -> [UInt8] { Array(#"{"psk_id":"\#(psk.id)","psk_category":"\#(psk.category.rawValue)"}"#.utf8) }

    /// The longest handshake text read: the messages are under 300 bytes.
    static let maxText = 4096

    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        guard bytes.count <= maxText else { return nil }
        return JSONValue.parsing(bytes)
    }

    /// The Noise bytes of a `noise/handshake` text.
    static func noiseBytes(_ bytes: [UInt8]) -> [UInt8]? {
        guard let v = parse(bytes), v["type"]?.string == "noise/handshake", let data = v["payload"]?["data"]?.string else { return nil }
        return Base64URL.decode(data)
    }

    /// A 43-character base64url X25519 key.
    static func key(_ id: String) -> [UInt8]? {
        guard id.utf8.count == 43, let k = Base64URL.decode(id), k.count == 32 else { return nil }
        return k
    }
}
