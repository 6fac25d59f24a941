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
/// | 0x02 | start | UTF-8 room name (1…`maximumNameBytes`): audio as 16-bit PCM |
/// | 0x03 | stop | — |
/// | 0x04 | start, with formats | u8 formats the page decodes (bit 0: s16, bit 1: Opus), then the UTF-8 room name |
///
/// Leader → page:
///
/// | type | message | body |
/// |---|---|---|
/// | 0x81 | clock reply | f64 page time echoed, i64 leader receive (ns), i64 leader send (ns) |
/// | 0x82 | joined | UTF-8 room name as the leader gave it |
/// | 0x83 | audio | u32 stream, i64 PTS (leader ns), u32 frames, u8 format, then the audio: format 1 (s16le) frames × 2 channels of 48 kHz PCM; format 2 (Opus) one 48 kHz stereo packet that decodes to `frames` frames |
/// | 0x84 | cut | i64 leader ns: drop everything from there on |
/// | 0x85 | settings | u8 volume (0…100), u8 muted, i64 latency trim (ns) |
/// | 0x86 | stopped | UTF-8 reason (the room left; the page may start again) |
///
/// A page that asks for Opus (0x04 with bit 1: it has WebCodecs'
/// `AudioDecoder` for Opus, which browsers give only to secure origins) gets
/// format 2: the leader encodes the room's sound once per page and stamps
/// each packet with the PTS at which its decoded first frame plays, the
/// encoder's look-ahead taken off (`PlayHereRoom`). The page decodes the
/// packets in order, without an Opus header (so nothing is trimmed as
/// pre-skip), and schedules each decoded packet as it would the PCM.
/// A chunk of a length that is no Opus frame size comes as PCM all the same.
public enum PlayHere {
    public static let maximumNameBytes = 64
    public static let sampleRate = 48_000
    public static let channels = 2
    /// The only PCM layout sent: 16-bit little-endian, interleaved.
    public static let formatS16 = UInt8(1)
    /// One Opus packet (48 kHz stereo) per audio message.
    public static let formatOpus = UInt8(2)
    /// The Opus a page is sent: the stream (160 kb/s by default) decoded,
    /// played through the room's channel map and EQ, and coded again; at
    /// 128 kb/s the second coding stays transparent for music where 96 kb/s
    /// starts to smear cymbals after a first one, and it is still a twelfth
    /// of PCM's 1,536 kb/s on a phone's data plan.
    public static let opusBitrateKbps = 128
    /// Opus packets are at most this long (RFC 6716: 1275 bytes a frame, at most 3 frames of 20 ms here).
    public static let maximumOpusPacketBytes = 4_000

    /// How a page wants its audio.
    public enum AudioFormat: UInt8, Sendable, Equatable {
        case s16 = 1
        case opus = 2
    }
    /// At most one chunk of this many frames (100 ms) per message.
    public static let maximumFrames = 4_800

    public enum PageMessage: Equatable, Sendable {
        case clockPing(pageTime: Double)
        case start(name: String, format: AudioFormat)
        case stop
    }

    public enum WireError: Error, Equatable, CustomStringConvertible {
        case empty
        case unknownType(UInt8)
        case badLength(type: UInt8, expected: String, got: Int)
        case badName(String)
        case badFormats(UInt8)

        public var description: String {
            switch self {
            case .empty: "an empty Play here message"
            case .unknownType(let t): "a Play here message of unknown type \(t)"
            case .badLength(let t, let e, let g): "Play here message \(t): \(g) bytes where \(e) belong"
            case .badName(let why): "the room name \(why)"
            case .badFormats(let f): "Play here formats \(f): neither 16-bit PCM nor Opus, or unknown bits"
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
            return .start(name: try roomName(Array(bytes[1...])), format: .s16)
        case 0x04:
            guard body >= 2, body <= maximumNameBytes + 1 else { throw .badLength(type: type, expected: "2…\(maximumNameBytes + 1)", got: body) }
            let formats = bytes[1]
            guard formats & 0x03 != 0, formats & ~0x03 == 0 else { throw .badFormats(formats) }
            return .start(name: try roomName(Array(bytes[2...])), format: formats & 0x02 != 0 ? .opus : .s16)
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
        return audioMessage(streamID: streamID, pts: pts, frames: frames, format: formatS16, payload: pcm)
    }

    /// One Opus packet that decodes to `frames` frames, stamped with the PTS its decoded first frame plays at.
    public static func opusAudio(streamID: UInt32, pts: Int64, frames: UInt32, packet: [UInt8]) -> [UInt8] {
        precondition(!packet.isEmpty && packet.count <= maximumOpusPacketBytes, "an Opus packet of 1…\(maximumOpusPacketBytes) bytes")
        return audioMessage(streamID: streamID, pts: pts, frames: frames, format: formatOpus, payload: packet)
    }

    /// The audio message's 18-byte header (type, stream, PTS, frames, format), then the payload.
    private static func audioMessage(streamID: UInt32, pts: Int64, frames: UInt32, format: UInt8, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x83]
        out.reserveCapacity(audioHeaderBytes + payload.count)
        append(&out, streamID)
        append(&out, UInt64(bitPattern: pts))
        append(&out, frames)
        out.append(format)
        out += payload
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
/// the leader), makes it 16-bit PCM or Opus (the page's format), and
/// queues what to send on the page's bounded writer.
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
