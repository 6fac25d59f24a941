import Glibc

/// The leader ↔ follower wire protocol (see docs/protocol.md).
///
/// Every message is framed as `u32 length | u8 type | body`, big-endian,
/// where `length` counts the type byte and the body. Lengths are bounded by
/// `WireProtocol.maxMessageBytes`; anything larger closes the connection.
public enum WireProtocol {
    public static let version: UInt16 = 10
    /// The oldest follower a leader still serves: a v2 follower plays, but
    /// is never sent `equalizer` (a message type it does not know).
    public static let oldestFollowerVersion: UInt16 = 2
    /// The first version that understands `equalizer`.
    public static let equalizerVersion: UInt16 = 3
    /// The first version that can prove it knows the room key (`authChallenge`).
    public static let authVersion: UInt16 = 4
    /// Bytes of each side's nonce and of an HMAC-SHA256 proof.
    public static let nonceBytes = 32
    public static let proofBytes = 32
    /// The first version with the clock channel: the leader answers
    /// `timeRequest` datagrams on UDP at its TCP port, and takes `syncReport`.
    public static let clockChannelVersion: UInt16 = 5
    /// The first version whose `syncReport` may carry how late the TCP
    /// stream's data arrives (`SyncReport.streamDelayMaximumNanoseconds`),
    /// from which the leader sizes the lead of its commands.
    public static let streamDelayVersion: UInt16 = 6
    /// The first version with the key handshake (`keyOffer`…), sealed
    /// frames after it, pairing, and authenticated clock datagrams.
    public static let handshakeVersion: UInt16 = 7
    /// The first version that understands `channels` (a room's channel map, stereo pairs).
    public static let channelMapVersion: UInt16 = 8
    /// The first version that mixes an announcement over what plays (`overlay`).
    public static let overlayVersion: UInt16 = 9
    /// The first version that understands `reverb` (a room's reverb, run after the EQ).
    public static let reverbVersion: UInt16 = 10
    /// A v7 clock request datagram is padded to a v7 response's size.
    public static let sealedClockDatagramBytes = 49
    /// A clock request datagram is padded to this (a response's size), so
    /// the leader never sends more than it was sent.
    public static let clockDatagramBytes = 33
    public static let maxMessageBytes = 64 * 1024
    public static let maxNameBytes = 64
    public static let maxReasonBytes = 512
    public static let maxChunkFrames = 4_800 // 100 ms at 48 kHz
    public static let headerBytes = 5

    /// A reverb preset on the wire: 1… in `ReverbPreset.allCases` order (0: custom values).
    public static func reverbPresetCode(_ preset: ReverbPreset) -> UInt8 {
        UInt8(ReverbPreset.allCases.firstIndex(of: preset)! + 1)
    }
}

/// How a stream's chunks are encoded on the wire.
public enum Codec: UInt8, Sendable, CustomStringConvertible, CaseIterable {
    /// Raw interleaved S16LE, 48 kHz stereo: bit-exact.
    case pcm = 0
    /// One Opus packet per chunk, 48 kHz stereo.
    case opus = 1

    public init?(name: String) {
        switch name.lowercased() {
        case "pcm": self = .pcm
        case "opus": self = .opus
        default: return nil
        }
    }
    public var description: String { self == .pcm ? "pcm" : "opus" }
}

public enum MessageType: UInt8, Sendable, CaseIterable {
    case hello = 1
    case welcome = 2
    case reject = 3
    case timeRequest = 4
    case timeResponse = 5
    case chunk = 6
    case flush = 7
    case streamEnd = 8
    case health = 9
    case bye = 10
    case settings = 11
    case roomCommand = 12
    case follow = 13
    case equalizer = 14
    case syncReport = 15
    case channels = 16
    case overlay = 17
    case reverb = 18
    // Room-key authentication (protocol v4); numbered apart, so other new messages can take 15 on.
    case authChallenge = 30
    case authResponse = 31
    case authProof = 32
    // The key handshake, pairing and authenticated clock datagrams (protocol v7).
    case keyOffer = 40
    case keyReply = 41
    case keyProof = 42
    case pairStatus = 43
    case pakeShare = 44
    case pakeConfirm = 45
    case clockRequest = 46
    case clockResponse = 47
}

/// How a follower's sync is doing, beyond `HealthReport` (v5 and later).
public struct SyncReport: Equatable, Sendable {
    /// Which channel the clock exchanges use.
    public enum ClockChannel: UInt8, Sendable { case stream = 0, datagram = 1 }
    /// The clock estimator's uncertainty (see `ClockEstimator.uncertainty`).
    public var clockUncertaintyNanoseconds: Int64
    public var clockSamples: UInt32
    public var clockChannel: ClockChannel
    /// The least lead a chunk had on arrival over the last 10 s (PTS minus
    /// leader time at arrival): how much of the buffer the worst arrival left.
    public var arrivalLeadMinimumNanoseconds: Int64
    /// Chunks that arrived after their PTS (too late to play), since connecting.
    public var lateChunks: UInt32
    /// v6: the longest a reply sent on the TCP stream took to arrive over
    /// the last 30 s (leader time at arrival minus its `t3`): what data the
    /// leader sends now may take to get there. nil: not measured (not sent).
    public var streamDelayMaximumNanoseconds: Int64?

    public init(clockUncertaintyNanoseconds: Int64 = 0, clockSamples: UInt32 = 0, clockChannel: ClockChannel = .stream,
                arrivalLeadMinimumNanoseconds: Int64 = 0, lateChunks: UInt32 = 0, streamDelayMaximumNanoseconds: Int64? = nil) {
        self.clockUncertaintyNanoseconds = clockUncertaintyNanoseconds
        self.clockSamples = clockSamples
        self.clockChannel = clockChannel
        self.arrivalLeadMinimumNanoseconds = arrivalLeadMinimumNanoseconds
        self.lateChunks = lateChunks
        self.streamDelayMaximumNanoseconds = streamDelayMaximumNanoseconds
    }
}

/// Per-room settings the leader pushes to a follower.
public struct RoomSettings: Equatable, Sendable {
    /// 0…100.
    public var volume: UInt8
    public var muted: Bool
    /// Speaker latency after the DAC to compensate, −1 s … 5 s.
    public var latencyTrimNanoseconds: Int64

    public init(volume: UInt8 = 100, muted: Bool = false, latencyTrimNanoseconds: Int64 = 0) {
        self.volume = volume; self.muted = muted; self.latencyTrimNanoseconds = latencyTrimNanoseconds
    }

    /// The level in dB for the volume: dB-linear, 100 → 0 dB, each step
    /// −0.5 dB (50 → −25 dB, 1 → −49.5 dB); 0 and mute are silence (nil).
    /// Hardware mixers get this same figure, so a room sounds alike either way.
    public var decibels: Double? {
        guard !muted, volume > 0 else { return nil }
        return (Double(min(volume, 100)) - 100) * Self.decibelsPerStep
    }

    public static let decibelsPerStep = 0.5

    /// The gain the follower applies (software volume).
    public var gain: Float {
        guard let db = decibels else { return 0 }
        return db == 0 ? 1 : Float(pow(10, db / 20))
    }
}

/// Sent by the leader once a follower is accepted: what the stream carries.
public struct StreamDescription: Equatable, Sendable {
    public var streamID: UInt32
    public var codec: Codec
    public var framesPerChunk: UInt32
    /// The leader's steady-state buffer latency in nanoseconds.
    public var bufferNanoseconds: Int64

    public init(streamID: UInt32, codec: Codec, framesPerChunk: UInt32, bufferNanoseconds: Int64) {
        self.streamID = streamID
        self.codec = codec
        self.framesPerChunk = framesPerChunk
        self.bufferNanoseconds = bufferNanoseconds
    }
}

/// One encoded block of audio with the leader time at which its first
/// frame must leave every DAC.
/// One encoded block of an announcement (v9): mixed on the speaker over
/// what plays, its first frame leaving the DAC at `pts`, the music ducked
/// by `duckCentibels` while it plays (see docs/protocol.md).
public struct OverlayChunk: Equatable, Sendable {
    /// Which announcement (a new one resets the speaker's overlay decoder).
    public var announcementID: UInt32
    public var codec: Codec
    public var pts: LeaderTime
    public var frames: UInt32
    /// The announcement's own gain, 0…1000 per mille.
    public var gainPerMille: UInt16
    /// How far the music goes down meanwhile, 0…6000 cB (0…60 dB).
    public var duckCentibels: UInt16
    public var payload: [UInt8]

    public static let maxGainPerMille: UInt16 = 1_000
    public static let maxDuckCentibels: UInt16 = 6_000

    public init(announcementID: UInt32, codec: Codec, pts: LeaderTime, frames: UInt32, gainPerMille: UInt16,
                duckCentibels: UInt16, payload: [UInt8]) {
        self.announcementID = announcementID
        self.codec = codec
        self.pts = pts
        self.frames = frames
        self.gainPerMille = min(gainPerMille, Self.maxGainPerMille)
        self.duckCentibels = min(duckCentibels, Self.maxDuckCentibels)
        self.payload = payload
    }

    /// The announcement's gain as a factor.
    public var gain: Float { Float(gainPerMille) / 1_000 }
    /// The music's gain while ducked, as a factor.
    public var duckGain: Float { Float(pow(10, -Double(duckCentibels) / 2_000)) }
}

public struct Chunk: Equatable, Sendable {
    public var streamID: UInt32
    public var sequence: UInt64
    public var pts: LeaderTime
    public var frames: UInt32
    public var payload: [UInt8]

    public init(streamID: UInt32, sequence: UInt64, pts: LeaderTime, frames: UInt32, payload: [UInt8]) {
        self.streamID = streamID
        self.sequence = sequence
        self.pts = pts
        self.frames = frames
        self.payload = payload
    }
}

/// What a follower reports about itself (sent about once a second).
public struct HealthReport: Equatable, Sendable {
    public var clockOffsetNanoseconds: Int64
    public var clockSkewPPB: Int64
    public var roundTripNanoseconds: Int64
    public var bufferedNanoseconds: Int64
    public var outputErrorNanoseconds: Int64
    public var resampleRatioPPB: Int64
    public var underruns: UInt32
    public var hardResyncs: UInt32
    public var concealedChunks: UInt32

    public init(clockOffsetNanoseconds: Int64 = 0, clockSkewPPB: Int64 = 0, roundTripNanoseconds: Int64 = 0,
                bufferedNanoseconds: Int64 = 0, outputErrorNanoseconds: Int64 = 0, resampleRatioPPB: Int64 = 0,
                underruns: UInt32 = 0, hardResyncs: UInt32 = 0, concealedChunks: UInt32 = 0) {
        self.clockOffsetNanoseconds = clockOffsetNanoseconds
        self.clockSkewPPB = clockSkewPPB
        self.roundTripNanoseconds = roundTripNanoseconds
        self.bufferedNanoseconds = bufferedNanoseconds
        self.outputErrorNanoseconds = outputErrorNanoseconds
        self.resampleRatioPPB = resampleRatioPPB
        self.underruns = underruns
        self.hardResyncs = hardResyncs
        self.concealedChunks = concealedChunks
    }
}

public enum Message: Equatable, Sendable {
    /// Follower → leader, first message.
    case hello(version: UInt16, name: String)
    /// Leader → follower: accepted.
    case welcome(version: UInt16, stream: StreamDescription)
    /// Leader → follower: refused (e.g. version mismatch), then close.
    case reject(version: UInt16, reason: String)
    /// Follower → leader: `t1` on the follower's clock.
    case timeRequest(id: UInt32, t1: LocalTime)
    /// Leader → follower: echo of `t1`, and leader receive (`t2`) and send (`t3`) times.
    case timeResponse(id: UInt32, t1: LocalTime, t2: LeaderTime, t3: LeaderTime)
    case chunk(Chunk)
    /// Leader → follower: drop every buffered frame at or after `from`,
    /// fading the frames just before it when `fade` (a cut mid-audio).
    case flush(streamID: UInt32, from: LeaderTime, fade: Bool)
    /// Leader → follower: no chunk will follow for this stream after `at`.
    case streamEnd(streamID: UInt32, at: LeaderTime)
    case health(HealthReport)
    case bye(reason: String)
    case settings(RoomSettings)
    /// Follower → leader: a button on that room was used.
    case roomCommand(ButtonCommand)
    /// Leader → follower: the room moved to another group; from `from` on
    /// it plays `stream` (whose chunks follow) instead of the current one.
    /// Every stream of a leader is on one 48 kHz grid, so the follower's
    /// timeline carries on across the switch.
    case follow(stream: StreamDescription, from: LeaderTime)
    /// Leader → follower (v3 and later): the room's equaliser.
    case equalizer(EqualizerSettings)
    /// Leader → follower (v8 and later): which channels the room's speaker plays (a channel map, a side of a stereo pair).
    case channels(ChannelMap)
    /// Leader → follower (v10 and later): the room's reverb (mix, size, damping, and the preset they came from).
    case reverb(ReverbSettings)
    /// Leader → follower (v9 and later): a block of an announcement, mixed over what plays.
    case overlay(OverlayChunk)
    /// Leader → follower, after hello, when the leader has a room key: its nonce.
    case authChallenge(nonce: [UInt8])
    /// Follower → leader: its own nonce and its proof of the key over both nonces and its name.
    case authResponse(nonce: [UInt8], proof: [UInt8])
    /// Leader → follower, before welcome: the leader's proof, so a speaker never plays for a stranger.
    case authProof(proof: [UInt8])
    /// Follower → leader (v5 and later): clock confidence and arrival margin, once a second.
    case syncReport(SyncReport)
    /// Follower → leader (v7), right after hello: what it asks, whether it uses a room key, its ephemeral key and nonce.
    case keyOffer(intent: PairIntent, flags: UInt8, ephemeral: [UInt8], nonce: [UInt8])
    /// Leader → follower (v7): its flags, static key, ephemeral key, nonce and proof of its static key.
    case keyReply(flags: UInt8, leaderKey: [UInt8], ephemeral: [UInt8], nonce: [UInt8], confirm: [UInt8])
    /// Follower → leader (v7): its static key (sealed) and its confirmation. Every frame after it is sealed.
    case keyProof(sealedKey: [UInt8], confirm: [UInt8])
    /// Leader → follower (sealed): where its pairing request stands.
    case pairStatus(PairStatus, attemptsLeft: UInt8)
    /// Both ways (sealed): a CPace share.
    case pakeShare(point: [UInt8])
    /// Both ways (sealed): a CPace key confirmation.
    case pakeConfirm(tag: [UInt8])
    /// Follower → leader, as a datagram (v7): the session's tag, the request, a MAC under the session's clock key.
    case clockRequest(tag: UInt64, id: UInt32, t1: LocalTime, mac: [UInt8])
    /// Leader → follower, as a datagram (v7): the times, a MAC under the session's clock key.
    case clockResponse(id: UInt32, t1: LocalTime, t2: LeaderTime, t3: LeaderTime, mac: [UInt8])

    public var type: MessageType {
        switch self {
        case .hello: .hello
        case .welcome: .welcome
        case .reject: .reject
        case .timeRequest: .timeRequest
        case .timeResponse: .timeResponse
        case .chunk: .chunk
        case .flush: .flush
        case .streamEnd: .streamEnd
        case .health: .health
        case .bye: .bye
        case .settings: .settings
        case .roomCommand: .roomCommand
        case .follow: .follow
        case .equalizer: .equalizer
        case .channels: .channels
        case .overlay: .overlay
        case .reverb: .reverb
        case .authChallenge: .authChallenge
        case .authResponse: .authResponse
        case .authProof: .authProof
        case .syncReport: .syncReport
        case .keyOffer: .keyOffer
        case .keyReply: .keyReply
        case .keyProof: .keyProof
        case .pairStatus: .pairStatus
        case .pakeShare: .pakeShare
        case .pakeConfirm: .pakeConfirm
        case .clockRequest: .clockRequest
        case .clockResponse: .clockResponse
        }
    }
}

/// Why bytes from the network were refused. The connection that sent them
/// is closed; the daemon carries on.
public enum ProtocolError: Error, Equatable, CustomStringConvertible {
    case oversized(length: Int, limit: Int)
    case emptyMessage
    case unknownType(UInt8)
    case truncated(MessageType, needed: Int, had: Int)
    case trailingBytes(MessageType, count: Int)
    case invalidField(MessageType, String)

    public var description: String {
        switch self {
        case .oversized(let n, let limit): "message of \(n) bytes exceeds the \(limit)-byte limit"
        case .emptyMessage: "message with zero length"
        case .unknownType(let t): "unknown message type \(t)"
        case .truncated(let t, let needed, let had): "\(t) message truncated: needed \(needed) bytes, had \(had)"
        case .trailingBytes(let t, let n): "\(t) message has \(n) unexpected trailing bytes"
        case .invalidField(let t, let what): "\(t) message: \(what)"
        }
    }
}

// MARK: - Encoding

public extension Message {
    /// The framed bytes of this message, ready to write to a socket.
    func encoded() -> [UInt8] {
        var w = ByteWriter()
        w.u32(0) // length, patched below
        w.u8(type.rawValue)
        switch self {
        case .hello(let version, let name):
            w.u16(version); w.string(name, limit: WireProtocol.maxNameBytes)
        case .welcome(let version, let s):
            w.u16(version); w.stream(s)
        case .reject(let version, let reason):
            w.u16(version); w.string(reason, limit: WireProtocol.maxReasonBytes)
        case .timeRequest(let id, let t1):
            w.u32(id); w.i64(t1.nanoseconds)
        case .timeResponse(let id, let t1, let t2, let t3):
            w.u32(id); w.i64(t1.nanoseconds); w.i64(t2.nanoseconds); w.i64(t3.nanoseconds)
        case .chunk(let c):
            w.u32(c.streamID); w.u64(c.sequence); w.i64(c.pts.nanoseconds); w.u32(c.frames)
            w.bytes(c.payload)
        case .overlay(let c):
            w.u32(c.announcementID); w.u8(c.codec.rawValue); w.i64(c.pts.nanoseconds); w.u32(c.frames)
            w.u16(c.gainPerMille); w.u16(c.duckCentibels)
            w.bytes(c.payload)
        case .flush(let id, let from, let fade):
            w.u32(id); w.i64(from.nanoseconds); w.u8(fade ? 1 : 0)
        case .streamEnd(let id, let at):
            w.u32(id); w.i64(at.nanoseconds)
        case .health(let h):
            w.i64(h.clockOffsetNanoseconds); w.i64(h.clockSkewPPB); w.i64(h.roundTripNanoseconds)
            w.i64(h.bufferedNanoseconds); w.i64(h.outputErrorNanoseconds); w.i64(h.resampleRatioPPB)
            w.u32(h.underruns); w.u32(h.hardResyncs); w.u32(h.concealedChunks)
        case .bye(let reason):
            w.string(reason, limit: WireProtocol.maxReasonBytes)
        case .settings(let r):
            w.u8(r.volume); w.u8(r.muted ? 1 : 0); w.i64(r.latencyTrimNanoseconds)
        case .roomCommand(let c):
            w.string(c.rawValue, limit: 16)
        case .follow(let s, let from):
            w.stream(s); w.i64(from.nanoseconds)
        case .equalizer(let e):
            // Every gain in half-dB steps, one signed byte each.
            w.u8(UInt8(e.gains.count))
            for g in e.gains { w.halfDecibels(g) }
            w.halfDecibels(e.bass); w.halfDecibels(e.treble)
            switch e.preamp {
            case .auto: w.u8(0); w.u8(0)
            case .manual(let db): w.u8(1); w.halfDecibels(db)
            }
        case .channels(let map):
            w.u8(map.rawValue)
        case .reverb(let r):
            w.u8(UInt8(r.mix)); w.u8(r.preset.map { WireProtocol.reverbPresetCode($0) } ?? 0)
            w.u16(UInt16((r.size * 1000).rounded())); w.u16(UInt16((r.damping * 1000).rounded()))
        case .authChallenge(let nonce):
            w.bytes(nonce)
        case .authResponse(let nonce, let proof):
            w.bytes(nonce); w.bytes(proof)
        case .authProof(let proof):
            w.bytes(proof)
        case .syncReport(let r):
            w.i64(r.clockUncertaintyNanoseconds); w.u32(r.clockSamples); w.u8(r.clockChannel.rawValue)
            w.i64(r.arrivalLeadMinimumNanoseconds); w.u32(r.lateChunks)
            // Only to a v6 leader (the follower leaves it nil for older ones, which refuse trailing bytes).
            if let d = r.streamDelayMaximumNanoseconds { w.i64(d) }
        case .keyOffer(let intent, let flags, let e, let n):
            w.u8(intent.rawValue); w.u8(flags); w.bytes(e); w.bytes(n)
        case .keyReply(let flags, let key, let e, let n, let confirm):
            w.u8(flags); w.bytes(key); w.bytes(e); w.bytes(n); w.bytes(confirm)
        case .keyProof(let sealed, let confirm):
            w.bytes(sealed); w.bytes(confirm)
        case .pairStatus(let status, let left):
            w.u8(status.rawValue); w.u8(left)
        case .pakeShare(let p):
            w.bytes(p)
        case .pakeConfirm(let t):
            w.bytes(t)
        case .clockRequest(let tag, let id, let t1, let mac):
            w.u64(tag); w.u32(id); w.i64(t1.nanoseconds); w.bytes(mac)
        case .clockResponse(let id, let t1, let t2, let t3, let mac):
            w.u32(id); w.i64(t1.nanoseconds); w.i64(t2.nanoseconds); w.i64(t3.nanoseconds); w.bytes(mac)
        }
        let length = UInt32(w.bytes.count - 4)
        w.bytes[0] = UInt8(length >> 24); w.bytes[1] = UInt8((length >> 16) & 0xff)
        w.bytes[2] = UInt8((length >> 8) & 0xff); w.bytes[3] = UInt8(length & 0xff)
        return w.bytes
    }

    /// Parses one message body (type byte first, without the length prefix).
    static func decode(body: ArraySlice<UInt8>) throws(ProtocolError) -> Message {
        guard let first = body.first else { throw .emptyMessage }
        guard let type = MessageType(rawValue: first) else { throw .unknownType(first) }
        var r = ByteReader(bytes: body.dropFirst(), type: type)
        let message: Message
        switch type {
        case .hello:
            message = .hello(version: try r.u16(), name: try r.string(limit: WireProtocol.maxNameBytes))
        case .welcome:
            let version = try r.u16()
            message = .welcome(version: version, stream: try r.stream())
        case .reject:
            message = .reject(version: try r.u16(), reason: try r.string(limit: WireProtocol.maxReasonBytes))
        case .timeRequest:
            message = .timeRequest(id: try r.u32(), t1: LocalTime(nanoseconds: try r.i64()))
        case .timeResponse:
            message = .timeResponse(id: try r.u32(), t1: LocalTime(nanoseconds: try r.i64()),
                                    t2: LeaderTime(nanoseconds: try r.i64()), t3: LeaderTime(nanoseconds: try r.i64()))
        case .chunk:
            let id = try r.u32(); let seq = try r.u64(); let pts = try r.i64(); let frames = try r.u32()
            guard frames > 0, frames <= WireProtocol.maxChunkFrames else {
                throw .invalidField(type, "chunk of \(frames) frames outside 1…\(WireProtocol.maxChunkFrames)")
            }
            message = .chunk(Chunk(streamID: id, sequence: seq, pts: LeaderTime(nanoseconds: pts), frames: frames, payload: r.rest()))
        case .flush:
            let id = try r.u32(), from = try r.i64(), fade = try r.u8()
            guard fade <= 1 else { throw .invalidField(type, "fade flag \(fade) is not 0 or 1") }
            message = .flush(streamID: id, from: LeaderTime(nanoseconds: from), fade: fade == 1)
        case .streamEnd:
            message = .streamEnd(streamID: try r.u32(), at: LeaderTime(nanoseconds: try r.i64()))
        case .health:
            var h = HealthReport()
            h.clockOffsetNanoseconds = try r.i64(); h.clockSkewPPB = try r.i64(); h.roundTripNanoseconds = try r.i64()
            h.bufferedNanoseconds = try r.i64(); h.outputErrorNanoseconds = try r.i64(); h.resampleRatioPPB = try r.i64()
            h.underruns = try r.u32(); h.hardResyncs = try r.u32(); h.concealedChunks = try r.u32()
            message = .health(h)
        case .bye:
            message = .bye(reason: try r.string(limit: WireProtocol.maxReasonBytes))
        case .settings:
            let volume = try r.u8()
            guard volume <= 100 else { throw .invalidField(type, "volume \(volume) above 100") }
            let muted = try r.u8()
            guard muted <= 1 else { throw .invalidField(type, "muted flag \(muted) is not 0 or 1") }
            let trim = try r.i64()
            guard trim >= -nanosecondsPerSecond, trim <= 5 * nanosecondsPerSecond else {
                throw .invalidField(type, "latency trim \(trim) ns outside −1…5 s")
            }
            message = .settings(RoomSettings(volume: volume, muted: muted == 1, latencyTrimNanoseconds: trim))
        case .roomCommand:
            let name = try r.string(limit: 16)
            guard let command = ButtonCommand(rawValue: name) else { throw .invalidField(type, "unknown room command '\(name)'") }
            message = .roomCommand(command)
        case .follow:
            let stream = try r.stream()
            message = .follow(stream: stream, from: LeaderTime(nanoseconds: try r.i64()))
        case .equalizer:
            let n = Int(try r.u8())
            guard n == EqualizerSettings.bandCount else { throw .invalidField(type, "\(n) bands, expected \(EqualizerSettings.bandCount)") }
            var gains: [Double] = []
            for _ in 0..<n { gains.append(try r.halfDecibels()) }
            let bass = try r.halfDecibels(), treble = try r.halfDecibels()
            let mode = try r.u8(), preamp = try r.halfDecibels()
            guard mode <= 1 else { throw .invalidField(type, "preamp mode \(mode) is not 0 (auto) or 1 (manual)") }
            guard mode == 1 || preamp == 0 else { throw .invalidField(type, "an automatic preamp carries 0, not \(preamp) dB") }
            do {
                message = .equalizer(try EqualizerSettings(gains: gains, bass: bass, treble: treble, preamp: mode == 0 ? .auto : .manual(decibels: preamp)))
            } catch { throw .invalidField(type, error.description) }
        case .overlay:
            let id = try r.u32(), rawCodec = try r.u8(), pts = try r.i64(), frames = try r.u32()
            let gain = try r.u16(), duck = try r.u16()
            guard let codec = Codec(rawValue: rawCodec) else { throw .invalidField(type, "codec \(rawCodec) unknown") }
            guard frames > 0, frames <= WireProtocol.maxChunkFrames else {
                throw .invalidField(type, "overlay chunk of \(frames) frames outside 1…\(WireProtocol.maxChunkFrames)")
            }
            guard gain <= OverlayChunk.maxGainPerMille else { throw .invalidField(type, "gain \(gain)‰ above \(OverlayChunk.maxGainPerMille)") }
            guard duck <= OverlayChunk.maxDuckCentibels else { throw .invalidField(type, "duck \(duck) cB above \(OverlayChunk.maxDuckCentibels)") }
            message = .overlay(OverlayChunk(announcementID: id, codec: codec, pts: LeaderTime(nanoseconds: pts), frames: frames,
                                            gainPerMille: gain, duckCentibels: duck, payload: r.rest()))
        case .channels:
            let raw = try r.u8()
            guard let map = ChannelMap(rawValue: raw) else { throw .invalidField(type, "channel map \(raw) is not 0…\(ChannelMap.allCases.count - 1)") }
            message = .channels(map)
        case .reverb:
            let mix = try r.u8(), code = try r.u8(), size = try r.u16(), damping = try r.u16()
            guard mix <= 100 else { throw .invalidField(type, "mix \(mix) % above 100") }
            guard size <= 1000, damping <= 1000 else { throw .invalidField(type, "size \(size)‰ or damping \(damping)‰ above 1000") }
            guard code <= ReverbPreset.allCases.count else { throw .invalidField(type, "preset \(code) is not 0…\(ReverbPreset.allCases.count)") }
            // A preset carries its own size and damping (one encoding per message), which the follower uses exactly.
            let preset = code > 0 ? ReverbPreset.allCases[Int(code) - 1] : nil
            if let preset {
                let own = (UInt16((preset.size * 1000).rounded()), UInt16((preset.damping * 1000).rounded()))
                guard (size, damping) == own else {
                    throw .invalidField(type, "preset \(code) carries size \(own.0)‰ and damping \(own.1)‰, not \(size)‰ and \(damping)‰")
                }
            }
            do {
                if let preset {
                    message = .reverb(try ReverbSettings(preset: preset, mix: Double(mix)))
                } else {
                    message = .reverb(try ReverbSettings(mix: Double(mix), size: Double(size) / 1000, damping: Double(damping) / 1000))
                }
            } catch { throw .invalidField(type, error.description) }
        case .authChallenge:
            message = .authChallenge(nonce: Array(try r.bytes(WireProtocol.nonceBytes)))
        case .authResponse:
            let nonce = Array(try r.bytes(WireProtocol.nonceBytes))
            message = .authResponse(nonce: nonce, proof: Array(try r.bytes(WireProtocol.proofBytes)))
        case .authProof:
            message = .authProof(proof: Array(try r.bytes(WireProtocol.proofBytes)))
        case .syncReport:
            let u = try r.i64(), n = try r.u32(), c = try r.u8()
            guard let channel = SyncReport.ClockChannel(rawValue: c) else { throw .invalidField(type, "clock channel \(c) is not 0 or 1") }
            let lead = try r.i64(), late = try r.u32()
            // v6 appends the stream delay; a v5 report ends here.
            let delay: Int64? = r.atEnd ? nil : try r.i64()
            message = .syncReport(SyncReport(clockUncertaintyNanoseconds: u, clockSamples: n, clockChannel: channel,
                                             arrivalLeadMinimumNanoseconds: lead, lateChunks: late, streamDelayMaximumNanoseconds: delay))
        case .keyOffer:
            let i = try r.u8()
            guard let intent = PairIntent(rawValue: i) else { throw .invalidField(type, "intent \(i) is not 0, 1 or 2") }
            let flags = try r.u8()
            guard flags <= 1 else { throw .invalidField(type, "flags \(flags) not known") }
            message = .keyOffer(intent: intent, flags: flags, ephemeral: Array(try r.bytes(32)), nonce: Array(try r.bytes(HandshakeLimits.nonceBytes)))
        case .keyReply:
            let flags = try r.u8()
            guard flags <= 3 else { throw .invalidField(type, "flags \(flags) not known") }
            message = .keyReply(flags: flags, leaderKey: Array(try r.bytes(32)), ephemeral: Array(try r.bytes(32)),
                                nonce: Array(try r.bytes(HandshakeLimits.nonceBytes)), confirm: Array(try r.bytes(HandshakeLimits.confirmBytes)))
        case .keyProof:
            message = .keyProof(sealedKey: Array(try r.bytes(HandshakeLimits.sealedKeyBytes)), confirm: Array(try r.bytes(HandshakeLimits.confirmBytes)))
        case .pairStatus:
            let s = try r.u8()
            guard let status = PairStatus(rawValue: s) else { throw .invalidField(type, "pairing status \(s) not known") }
            message = .pairStatus(status, attemptsLeft: try r.u8())
        case .pakeShare:
            message = .pakeShare(point: Array(try r.bytes(32)))
        case .pakeConfirm:
            message = .pakeConfirm(tag: Array(try r.bytes(HandshakeLimits.confirmBytes)))
        case .clockRequest:
            message = .clockRequest(tag: try r.u64(), id: try r.u32(), t1: LocalTime(nanoseconds: try r.i64()), mac: Array(try r.bytes(ClockAuth.macBytes)))
        case .clockResponse:
            message = .clockResponse(id: try r.u32(), t1: LocalTime(nanoseconds: try r.i64()), t2: LeaderTime(nanoseconds: try r.i64()),
                                     t3: LeaderTime(nanoseconds: try r.i64()), mac: Array(try r.bytes(ClockAuth.macBytes)))
        }
        try r.finish()
        return message
    }
}

/// Clock exchanges as UDP datagrams (v5): one framed message per datagram,
/// a request padded with zeros to `WireProtocol.clockDatagramBytes`.
public enum ClockDatagram {
    /// A request datagram.
    public static func request(id: UInt32, t1: LocalTime) -> [UInt8] {
        var bytes = Message.timeRequest(id: id, t1: t1).encoded()
        bytes.append(contentsOf: repeatElement(0, count: max(0, WireProtocol.clockDatagramBytes - bytes.count)))
        return bytes
    }

    /// The message a datagram frames (bytes after the frame are padding and
    /// ignored); nil for anything that is not a well-formed time request or
    /// response, or a request shorter than a response (an amplifier's bait).
    public static func decode(_ datagram: UnsafeRawBufferPointer) -> Message? {
        guard datagram.count >= WireProtocol.headerBytes else { return nil }
        let length = Int(datagram[0]) << 24 | Int(datagram[1]) << 16 | Int(datagram[2]) << 8 | Int(datagram[3])
        guard length > 0, length <= datagram.count - 4 else { return nil }
        let body = Array(datagram[4..<(4 + length)])
        guard let message = try? Message.decode(body: body[...]) else { return nil }
        switch message {
        case .timeRequest: return datagram.count >= WireProtocol.clockDatagramBytes ? message : nil
        case .timeResponse: return message
        case .clockRequest: return datagram.count >= WireProtocol.sealedClockDatagramBytes ? message : nil
        case .clockResponse: return message
        default: return nil
        }
    }
}

/// v7 clock datagrams: a request names its session by tag and carries a MAC
/// under the session's clock key; the leader answers only a tag it knows
/// whose MAC verifies, and MACs its reply, which the follower checks and
/// matches against a request it sent (id and t1).
public enum ClockAuth {
    public static let macBytes = 16

    /// The MAC over a framed message's bytes before its trailing MAC.
    static func mac(_ framed: [UInt8], key: [UInt8], crypto: some HandshakeCrypto) -> [UInt8] {
        Array(crypto.hash([Array(framed[0..<(framed.count - macBytes)])], key: key).prefix(macBytes))
    }

    /// `message` (a clockRequest or clockResponse with any MAC) framed with its MAC, a request padded.
    public static func sealed(_ message: Message, key: [UInt8], crypto: some HandshakeCrypto) -> [UInt8] {
        var bytes = message.encoded()
        let m = mac(bytes, key: key, crypto: crypto)
        bytes.replaceSubrange((bytes.count - macBytes)..<bytes.count, with: m)
        if case .clockRequest = message {
            bytes.append(contentsOf: repeatElement(0, count: max(0, WireProtocol.sealedClockDatagramBytes - bytes.count)))
        }
        return bytes
    }

    /// Whether a datagram's framed message carries the right MAC under `key`.
    public static func verify(_ datagram: UnsafeRawBufferPointer, key: [UInt8], crypto: some HandshakeCrypto) -> Bool {
        guard datagram.count >= WireProtocol.headerBytes else { return false }
        let length = Int(datagram[0]) << 24 | Int(datagram[1]) << 16 | Int(datagram[2]) << 8 | Int(datagram[3])
        guard length > macBytes, length <= datagram.count - 4 else { return false }
        let framed = Array(datagram[0..<(4 + length)])
        return crypto.same(mac(framed, key: key, crypto: crypto), Array(framed[(framed.count - macBytes)...]))
    }
}

/// The clock requests a follower sent and has not yet seen answered: a
/// reply counts only if it echoes one of them (id and t1), once.
///
/// Ids are consecutive, so request `id` keeps slot `id % capacity`: the last
/// `capacity` requests are remembered and a reply is found at once. The
/// capacity covers a round trip of half a second at the join pace (one a
/// millisecond). It used to be the last 16: on a link that queues 50 ms
/// each way, every reply came back more than 16 requests later and was
/// refused, and the speaker never had a clock (issue 30).
public struct OutstandingClockRequests: Sendable {
    public static let capacity = 512
    private var slots: [(id: UInt32, t1: Int64)?] = Array(repeating: nil, count: OutstandingClockRequests.capacity)
    public init() {}
    public mutating func sent(id: UInt32, t1: LocalTime) {
        slots[Int(id % UInt32(Self.capacity))] = (id, t1.nanoseconds)
    }
    /// True (and forgotten) if `id` and `t1` are a request still outstanding.
    public mutating func match(id: UInt32, t1: LocalTime) -> Bool {
        let i = Int(id % UInt32(Self.capacity))
        guard let s = slots[i], s.id == id, s.t1 == t1.nanoseconds else { return false }
        slots[i] = nil
        return true
    }
    public mutating func reset() { for i in slots.indices { slots[i] = nil } }
}

/// Splits a byte stream into messages. Feed it whatever the socket gave;
/// it never holds more than one maximum-size message plus one read.
public struct MessageFramer: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0
    public let limit: Int

    public init(limit: Int = WireProtocol.maxMessageBytes) {
        self.limit = limit
        buffer.reserveCapacity(limit + 4)
    }

    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        dropParsed()
        buffer.append(contentsOf: bytes)
    }

    /// What a socket read gave. Not generic: called from another module, the
    /// generic `append` ran unspecialised (the runtime looked up metadata
    /// and hashed for every read).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        dropParsed()
        buffer.append(contentsOf: UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count))
    }

    private mutating func dropParsed() {
        if start > 0 && start == buffer.count { buffer.removeAll(keepingCapacity: true); start = 0 }
    }

    /// The next complete message, nil if more bytes are needed.
    /// Throws on a bad length or a malformed body; the stream is then unusable.
    public mutating func next() throws(ProtocolError) -> Message? {
        let available = buffer.count - start
        guard available >= 4 else { compact(); return nil }
        let length = Int(buffer[start]) << 24 | Int(buffer[start + 1]) << 16 | Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
        guard length > 0 else { throw .emptyMessage }
        guard length <= limit else { throw .oversized(length: length, limit: limit) }
        guard available >= 4 + length else { compact(); return nil }
        let body = buffer[(start + 4)..<(start + 4 + length)]
        start += 4 + length
        return try Message.decode(body: body)
    }

    /// Bytes received but not yet parsed.
    public var pendingBytes: Int { buffer.count - start }

    /// Removes and returns the bytes not yet parsed (the start of a sealed
    /// stream that came in the same read as the handshake's last message).
    public mutating func takePending() -> [UInt8] {
        let rest = Array(buffer[start...])
        buffer.removeAll(keepingCapacity: true)
        start = 0
        return rest
    }

    private mutating func compact() {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }
}

struct ByteWriter {
    var bytes: [UInt8] = []
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes.append(UInt8(v >> 8)); bytes.append(UInt8(v & 0xff)) }
    mutating func u32(_ v: UInt32) { for s in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((v >> UInt32(s)) & 0xff)) } }
    mutating func u64(_ v: UInt64) { for s in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((v >> UInt64(s)) & 0xff)) } }
    mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    mutating func bytes(_ b: [UInt8]) { bytes.append(contentsOf: b) }
    /// u16 length + UTF-8, cut at a character boundary to fit `limit` bytes.
    mutating func string(_ s: String, limit: Int) {
        var utf8 = Array(s.utf8)
        if utf8.count > limit {
            var cut = limit
            while cut > 0 && (utf8[cut] & 0xC0) == 0x80 { cut -= 1 }
            utf8 = Array(utf8[0..<cut])
        }
        u16(UInt16(utf8.count)); bytes(utf8)
    }
    mutating func halfDecibels(_ db: Double) { u8(UInt8(bitPattern: Int8(clamping: Int((db * 2).rounded())))) }
    mutating func stream(_ s: StreamDescription) {
        u32(s.streamID); u8(s.codec.rawValue); u32(s.framesPerChunk); i64(s.bufferNanoseconds)
    }
}

struct ByteReader {
    let bytes: ArraySlice<UInt8>
    var index: Int
    let type: MessageType

    init(bytes: ArraySlice<UInt8>, type: MessageType) {
        self.bytes = bytes; self.index = bytes.startIndex; self.type = type
    }

    private mutating func take(_ n: Int) throws(ProtocolError) -> ArraySlice<UInt8> {
        guard bytes.endIndex - index >= n else {
            throw .truncated(type, needed: index - bytes.startIndex + n, had: bytes.count)
        }
        defer { index += n }
        return bytes[index..<(index + n)]
    }
    mutating func u8() throws(ProtocolError) -> UInt8 { try take(1).first! }
    mutating func bytes(_ n: Int) throws(ProtocolError) -> ArraySlice<UInt8> { try take(n) }
    mutating func u16() throws(ProtocolError) -> UInt16 { try take(2).reduce(0) { $0 << 8 | UInt16($1) } }
    mutating func u32() throws(ProtocolError) -> UInt32 { try take(4).reduce(0) { $0 << 8 | UInt32($1) } }
    mutating func u64() throws(ProtocolError) -> UInt64 { try take(8).reduce(0) { $0 << 8 | UInt64($1) } }
    mutating func i64() throws(ProtocolError) -> Int64 { Int64(bitPattern: try u64()) }
    mutating func string(limit: Int) throws(ProtocolError) -> String {
        let n = Int(try u16())
        guard n <= limit else { throw .invalidField(type, "string of \(n) bytes exceeds \(limit)") }
        let raw = try take(n)
        guard let s = String(validating: raw, as: UTF8.self) else { throw .invalidField(type, "string is not valid UTF-8") }
        return s
    }
    mutating func halfDecibels() throws(ProtocolError) -> Double { Double(Int8(bitPattern: try u8())) / 2 }
    mutating func stream() throws(ProtocolError) -> StreamDescription {
        let id = try u32()
        let codecByte = try u8()
        guard let codec = Codec(rawValue: codecByte) else { throw .invalidField(type, "unknown codec \(codecByte)") }
        let frames = try u32()
        guard frames > 0, frames <= WireProtocol.maxChunkFrames else {
            throw .invalidField(type, "frames per chunk \(frames) outside 1…\(WireProtocol.maxChunkFrames)")
        }
        let buffer = try i64()
        guard buffer >= 0, buffer <= 60 * nanosecondsPerSecond else { throw .invalidField(type, "buffer \(buffer) ns out of range") }
        return StreamDescription(streamID: id, codec: codec, framesPerChunk: frames, bufferNanoseconds: buffer)
    }
    mutating func rest() -> [UInt8] { defer { index = bytes.endIndex }; return Array(bytes[index...]) }
    var atEnd: Bool { index == bytes.endIndex }
    func finish() throws(ProtocolError) {
        if index != bytes.endIndex { throw .trailingBytes(type, count: bytes.endIndex - index) }
    }
}
