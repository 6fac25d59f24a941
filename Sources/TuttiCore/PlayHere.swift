/// "Play here": a web page that plays its group's audio itself, as a room
/// (docs/web.md, "Play here"). Its messages travel as binary WebSocket
/// messages on the app's own socket (the JSON-RPC is text), each starting
/// with a type byte; numbers are big-endian.
///
/// Page → leader:
///
/// | type | message | body |
/// |---|---|---|
/// | 0x01 | clock ping | f64 page time (ms, `performance.now()`) |
/// | 0x02 | start | UTF-8 room name (1…`maximumNameBytes`) |
/// | 0x03 | stop | — |
///
/// Leader → page:
///
/// | type | message | body |
/// |---|---|---|
/// | 0x81 | clock reply | f64 page time echoed, i64 leader receive (ns), i64 leader send (ns) |
/// | 0x82 | joined | UTF-8 room name as the leader gave it |
/// | 0x83 | audio | u32 stream, i64 PTS (leader ns), u32 frames, u8 format (1 = s16le), then frames × 2 channels of 48 kHz PCM |
/// | 0x84 | cut | i64 leader ns: drop everything from there on |
/// | 0x85 | settings | u8 volume (0…100), u8 muted, i64 latency trim (ns) |
/// | 0x86 | stopped | UTF-8 reason (the room left; the page may start again) |
public enum PlayHere {
    public static let maximumNameBytes = 64
    public static let sampleRate = 48_000
    public static let channels = 2
    /// The only PCM layout sent: 16-bit little-endian, interleaved.
    public static let formatS16 = UInt8(1)
    /// At most one chunk of this many frames (100 ms) per message.
    public static let maximumFrames = 4_800

    public enum PageMessage: Equatable, Sendable {
        case clockPing(pageTime: Double)
        case start(name: String)
        case stop
    }

    public enum WireError: Error, Equatable, CustomStringConvertible {
        case empty
        case unknownType(UInt8)
        case badLength(type: UInt8, expected: String, got: Int)
        case badName(String)

        public var description: String {
            switch self {
            case .empty: "an empty Play here message"
            case .unknownType(let t): "a Play here message of unknown type \(t)"
            case .badLength(let t, let e, let g): "Play here message \(t): \(g) bytes where \(e) belong"
            case .badName(let why): "the room name \(why)"
            }
        }
    }

    /// Reads one message from a page, checking every length.
    public static func parse(_ bytes: [UInt8]) throws(WireError) -> PageMessage {
        guard let type = bytes.first else { throw .empty }
        let body = bytes.count - 1
        switch type {
        case 0x01:
            guard body == 8 else { throw .badLength(type: type, expected: "8", got: body) }
            let time = Double(bitPattern: readU64(bytes, 1))
            guard time.isFinite else { throw .badLength(type: type, expected: "a finite time", got: body) }
            return .clockPing(pageTime: time)
        case 0x02:
            guard body >= 1, body <= maximumNameBytes else { throw .badLength(type: type, expected: "1…\(maximumNameBytes)", got: body) }
            return .start(name: try roomName(Array(bytes[1...])))
        case 0x03:
            guard body == 0 else { throw .badLength(type: type, expected: "0", got: body) }
            return .stop
        default:
            throw .unknownType(type)
        }
    }

    /// A room name a page asked for: valid UTF-8, trimmed, no control characters.
    public static func roomName(_ bytes: [UInt8]) throws(WireError) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .badName("is not UTF-8") }
        let trimmed = text.trimmingSpaces
        guard !trimmed.isEmpty else { throw .badName("is empty") }
        guard !trimmed.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else { throw .badName("has control characters") }
        return trimmed
    }

    /// `wanted`, or "wanted 2", "wanted 3"… where a room of that name is there already (a speaker, or another page).
    public static func uniqueName(_ wanted: String, taken: Set<String>) -> String {
        guard taken.contains(wanted) else { return wanted }
        var n = 2
        while taken.contains("\(wanted) \(n)") { n += 1 }
        return "\(wanted) \(n)"
    }

    // MARK: Leader → page

    public static func clockReply(pageTime: Double, received: Int64, sent: Int64) -> [UInt8] {
        var out: [UInt8] = [0x81]
        out.reserveCapacity(25)
        append(&out, pageTime.bitPattern)
        append(&out, UInt64(bitPattern: received))
        append(&out, UInt64(bitPattern: sent))
        return out
    }

    public static func joined(name: String) -> [UInt8] { [0x82] + Array(name.utf8) }

    /// One chunk of 16-bit PCM (`pcm`: frames × 2 × 2 bytes).
    public static func audio(streamID: UInt32, pts: Int64, frames: UInt32, pcm: [UInt8]) -> [UInt8] {
        precondition(pcm.count == Int(frames) * channels * 2, "PCM of \(frames) stereo 16-bit frames")
        var out: [UInt8] = [0x83]
        out.reserveCapacity(18 + pcm.count)
        append(&out, streamID)
        append(&out, UInt64(bitPattern: pts))
        append(&out, frames)
        out.append(formatS16)
        out += pcm
        return out
    }

    public static let audioHeaderBytes = 18

    public static func cut(from: Int64) -> [UInt8] {
        var out: [UInt8] = [0x84]
        append(&out, UInt64(bitPattern: from))
        return out
    }

    public static func settings(_ s: RoomSettings) -> [UInt8] {
        var out: [UInt8] = [0x85, s.volume, s.muted ? 1 : 0]
        append(&out, UInt64(bitPattern: s.latencyTrimNanoseconds))
        return out
    }

    public static func stopped(reason: String) -> [UInt8] { [0x86] + Array(reason.utf8.prefix(200)) }

    static func append(_ out: inout [UInt8], _ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    static func append(_ out: inout [UInt8], _ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    static func readU64(_ b: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(b[at + $1]) }
    }
}

/// What the leader sends one Play here page, as rules: the messages a
/// speaker of its group gets (`Message`) become the page's. Pure; its
/// owner (TuttiWebApp's `PlayHereRoom`) holds it under a lock and performs
/// the actions: decodes audio, plays the room's channel map and EQ on it
/// (`PlayHereSound`: the page plays what it is sent, so they are made at
/// the leader), makes it 16-bit PCM, and queues what to send on the page's
/// bounded writer.
public struct PlayHereSession: Sendable {
    public enum Action: Equatable, Sendable {
        /// Decode this chunk (in the leader's wire codec) and send it as `PlayHere.audio`.
        case sendAudio(Chunk)
        case send([UInt8])
        /// The room's channel map or EQ changed: the audio made from now on plays it (`PlayHereSound`).
        case setChannels(ChannelMap)
        case setEqualizer(EqualizerSettings)
    }

    /// The stream the room follows (0: none yet).
    public private(set) var streamID: UInt32 = 0
    public private(set) var settings: RoomSettings?
    public private(set) var closed = false
    /// Chunks refused because they were not of the room's stream (a switch in flight).
    public private(set) var foreignChunks = 0

    public init() {}

    public mutating func handle(_ message: Message) -> [Action] {
        guard !closed else { return [] }
        switch message {
        case .follow(let stream, let from):
            let switched = streamID != 0 && streamID != stream.streamID
            streamID = stream.streamID
            // A new group: what the page holds of the old stream from `from` on must not play.
            return switched ? [.send(PlayHere.cut(from: from.nanoseconds))] : []
        case .chunk(let chunk):
            guard chunk.streamID == streamID, streamID != 0 else {
                foreignChunks += 1
                return []
            }
            guard chunk.frames > 0, chunk.frames <= UInt32(PlayHere.maximumFrames) else { return [] }
            return [.sendAudio(chunk)]
        case .flush(let stream, let from, _):
            guard stream == streamID else { return [] }
            return [.send(PlayHere.cut(from: from.nanoseconds))]
        case .settings(let s):
            guard s != settings else { return [] }
            settings = s
            return [.send(PlayHere.settings(s))]
        case .channels(let map):
            return [.setChannels(map)]
        case .equalizer(let eq):
            return [.setEqualizer(eq)]
        default:
            return []
        }
    }

    /// The room ends (the page said stop, or the leader closed it): nothing more is sent but `stopped`.
    public mutating func close(reason: String) -> [Action] {
        guard !closed else { return [] }
        closed = true
        return [.send(PlayHere.stopped(reason: reason))]
    }
}
