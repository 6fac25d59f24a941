/// A Tutti speaker playing for a Sendspin server (Music Assistant,
/// aiosendspin's server): what each message from the server means for the
/// speaker's own pipeline, as actions. Pure: the shell (TuttiFollower's
/// `Follower+Sendspin`) owns the WebSocket, the Noise channel and the clock
/// model, and performs the actions: the server's timestamps become leader
/// times (the server is this speaker's leader; µs × 1000), its chunks become
/// `Chunk`s of one Tutti stream per `stream/start`, and its time answers
/// become `ClockSample`s for the same `ClockEstimator` a Tutti leader's do.
/// So playout, steering and the DAC handling are the speaker's own.
///
/// Every number and length from the server is checked here, where it enters.
///
/// Thread contract: a value; the shell keeps it under one lock, taken by the
/// reading thread (messages) and the clock thread (`timeRequest`).
public struct SendspinPlayerLink: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// The name the server shows.
        public var name: String
        /// How far ahead of playing this speaker holds audio (the hello's `buffer_capacity`, as PCM).
        public var bufferNanoseconds: Int64
        /// How long before its play time the first chunk after a start or clear must come.
        public var requiredLeadMilliseconds: Int
        /// The formats offered, preferred first (the server takes the first it can send): some of `decodable`.
        public var formats: [SendspinAudioFormat]

        public init(name: String, bufferNanoseconds: Int64 = 2 * nanosecondsPerSecond, requiredLeadMilliseconds: Int = 200,
                    formats: [SendspinAudioFormat] = SendspinPlayerLink.playable) {
            self.name = name; self.bufferNanoseconds = bufferNanoseconds; self.requiredLeadMilliseconds = requiredLeadMilliseconds
            self.formats = formats.isEmpty ? SendspinPlayerLink.playable : formats
        }

        /// `buffer_capacity` in bytes: the buffer as 16-bit stereo PCM at 48 kHz.
        public var bufferCapacityBytes: Int { Int(StreamFormat.frames(nanoseconds: bufferNanoseconds).rounded(.down)) * 4 }
    }

    public enum Phase: Equatable, Sendable {
        /// The Noise session is up; `server/hello` comes first.
        case awaitingServerHello
        /// The hello is answered; `server/activate` says what this connection is for.
        case awaitingActivation
        /// Activated without the player role (a person has not allowed this speaker yet).
        case waitingForApproval
        /// The player role is active: time exchanges, streams, commands.
        case active
    }

    public enum Action: Equatable, Sendable {
        /// Send this JSON text message to the server.
        case send(String)
        /// The server gave this connection the player role (its name): clock exchanges may begin.
        case activated(server: String)
        /// The server gave no player role: it waits for a person to allow this speaker.
        case waitingForApproval(server: String)
        /// A new stream: a fresh intake, and a decoder for its format (FLAC's STREAMINFO in `header`, else empty).
        case begin(StreamDescription, format: SendspinAudioFormat, header: [UInt8])
        /// Audio for the current stream (its PTS on the server's clock).
        case chunk(Chunk)
        /// `stream/clear`: drop what has not played from `from` (the server's now), fading into it.
        case clear(streamID: UInt32, from: LeaderTime)
        /// `stream/end`: the stream ends after what was sent (`at`: the end of its last chunk).
        case end(streamID: UInt32, at: LeaderTime)
        /// The server's volume or mute for this speaker.
        case settings(RoomSettings)
        /// One time exchange, for the clock model.
        case clockSample(ClockSample)
        /// `group/update`: the group's playback state and name, as the server gave them.
        case group(state: String?, name: String?)
        /// The server broke the protocol (or asked for what this speaker cannot play): close.
        case close(String)
    }

    /// 16-bit stereo PCM at 48 kHz (`Codec.pcm` on Tutti's wire).
    public static let pcm = SendspinAudioFormat(codec: .pcm, sampleRate: 48_000, channels: 2, bitDepth: 16)
    /// FLAC, 16-bit stereo at 48 kHz: lossless at about half PCM's bytes (libFLAC decodes it).
    public static let flac = SendspinAudioFormat(codec: .flac, sampleRate: 48_000, channels: 2, bitDepth: 16)
    /// Opus, stereo at 48 kHz (libopus decodes it); lossy, for a thin link.
    public static let opus = SendspinAudioFormat(codec: .opus, sampleRate: 48_000, channels: 2, bitDepth: 16)
    /// FLAC and PCM at 24 bits: the speaker's pipeline is float, so they reach
    /// the DAC at its own depth (a 16-bit DAC rounds once, at the end).
    public static let flac24 = SendspinAudioFormat(codec: .flac, sampleRate: 48_000, channels: 2, bitDepth: 24)
    public static let pcm24 = SendspinAudioFormat(codec: .pcm, sampleRate: 48_000, channels: 2, bitDepth: 24)
    /// What this speaker offers by default, in that order: 16-bit, since its
    /// outputs (ALSA S16_LE, the file DAC) carry 16 bits (see `offered(outputBits:)`).
    public static let playable = [flac, pcm, opus]
    /// Every format this speaker decodes (`--sendspin-codecs` names them: flac, pcm, opus, flac24, pcm24).
    public static let decodable = [flac, pcm, opus, flac24, pcm24]

    /// What to offer by default for an output of `outputBits` per sample:
    /// 24-bit FLAC and PCM first when the output carries more than 16 bits
    /// (what the server sends then reaches it whole), else 16-bit only (24
    /// would cost half as many bytes again for nothing: the speaker rounds to
    /// the output's 16 bits after its volume).
    public static func offered(outputBits: Int) -> [SendspinAudioFormat] {
        outputBits > 16 ? [flac24, flac, pcm24, pcm, opus] : playable
    }

    /// A `--sendspin-codecs` name: `flac`, `pcm`, `opus`, `flac24`, `pcm24` (`flac16`, `pcm16` too).
    public static func format(named name: String) -> SendspinAudioFormat? {
        switch name {
        case "flac", "flac16": flac
        case "pcm", "pcm16": pcm
        case "opus": opus
        case "flac24": flac24
        case "pcm24": pcm24
        default: nil
        }
    }
    /// A FLAC `codec_header` (`fLaC` and its metadata blocks) beyond this closes the connection.
    public static let maximumCodecHeaderBytes = 8 * 1024
    /// A text message from the server beyond this closes the connection.
    public static let maximumTextBytes = 64 * 1024
    /// Time requests kept for matching (older ones are forgotten: a late answer is not a sample).
    public static let outstandingLimit = 64
    /// The audio chunk header: type, timestamp (µs, int64 BE), send-ahead (µs, uint32 BE).
    public static let chunkHeaderBytes = 13
    /// Timestamps whose nanoseconds fit an Int64 with room to add a chunk.
    static let maximumTimestampMicroseconds: Int64 = (Int64.max / 1_000) - 60_000_000

    public let configuration: Configuration
    public private(set) var phase = Phase.awaitingServerHello
    public private(set) var serverName = ""
    public private(set) var settings = RoomSettings()
    /// The stream being played (nil: none since the last `stream/end`).
    public private(set) var streamID: UInt32?
    /// Its format, as `stream/start` gave it.
    public private(set) var format: SendspinAudioFormat?
    /// The group's playback state and name from the last `group/update`.
    public private(set) var groupState: String?
    public private(set) var groupName: String?
    /// Chunks that came with no stream started, or malformed beyond closing.
    public private(set) var ignoredChunks = 0
    /// The `activities` of the latest `server/activate` (`playback`, `pairing`), and how many came:
    /// a listening speaker ranks a connection by them when several servers dial in (`SendspinAdmission`).
    public private(set) var activities: [String] = []
    public private(set) var activations = 0
    private var lastStreamID: UInt32 = 0
    private var sequence: UInt64 = 0
    /// Where the last chunk written ends (server time).
    private var lastEnd: LeaderTime?
    private var outstanding: [Int64] = []
    private var clockReady = false

    public init(configuration: Configuration) { self.configuration = configuration }

    // MARK: What this speaker sends

    /// `client/hello`, the answer to `server/hello`: a player of the configured formats (FLAC, PCM, Opus; 16 or 24 bits),
    /// volume and mute, unpaired access enabled (a stock player's default).
    public var hello: String {
        message("client/hello", [
            "name": .string(configuration.name),
            "supported_roles": ["player@v1"],
            "player@v1_support": ["supported_formats": .array(configuration.formats.map(\.json)), "buffer_capacity": .int(configuration.bufferCapacityBytes)],
            "unpaired_access": ["enabled": true],
        ])
    }

    /// `client/state`: available once the clock model is ready (the server sends no audio before), with volume and mute.
    public var state: String {
        message("client/state", [
            "available": .bool(clockReady),
            "player": ["volume": .int(Int(settings.volume)), "muted": .bool(settings.muted), "output_delay_ms": 0,
                       "required_lead_time_ms": .int(configuration.requiredLeadMilliseconds), "min_buffer_ms": 1_000,
                       "supported_commands": ["volume", "mute"]],
        ])
    }

    /// `client/goodbye`, the last message when the speaker stops (`shutdown`) or leaves for another server.
    public static func goodbye(reason: String = "shutdown") -> String {
        (["type": "client/goodbye", "payload": ["reason": .string(reason)]] as JSONValue).serialized
    }

    /// `client/time` sent at `t1` (whole µs of it: the answer names the request by them). Nil before playback is active.
    public mutating func timeRequest(at t1: LocalTime) -> String? {
        guard phase == .active else { return nil }
        let micros = t1.nanoseconds / 1_000
        outstanding.append(micros)
        if outstanding.count > Self.outstandingLimit { outstanding.removeFirst(outstanding.count - Self.outstandingLimit) }
        return message("client/time", ["client_transmitted": .int(micros)])
    }

    /// The clock model became ready: the server may now send audio (`available`).
    public mutating func clockBecameReady() -> [Action] {
        guard !clockReady else { return [] }
        clockReady = true
        return phase == .active ? [.send(state)] : []
    }

    /// How long to wait before the next time request, after `sent` of them this session:
    /// a burst while the model forms, then ten a second (cheap; more samples, better minima).
    public static func timeRequestInterval(sent: Int, ready: Bool) -> Int64 {
        sent < 40 || !ready ? 25 * nanosecondsPerMillisecond : 100 * nanosecondsPerMillisecond
    }

    // MARK: What the server sends

    /// A text message, come at `arrival` (the kernel's stamp, local clock; nil if it shared a read);
    /// `serverNow`: the server's time now, from the clock model (nil: no model yet).
    public mutating func received(text: [UInt8], arrival: LocalTime?, serverNow: LeaderTime?) -> [Action] {
        guard text.count <= Self.maximumTextBytes else { return [.close("a text message of \(text.count) bytes")] }
        guard !JSONNesting.exceeds(text), let root = JSONValue.parsing(text)?.object, let type = root["type"]?.string else {
            return [.close("a text message that is not a Sendspin message")]
        }
        let payload = root["payload"]?.object ?? [:]
        switch (type, phase) {
        case ("server/hello", .awaitingServerHello):
            serverName = (try? Sendspin.shortText(payload["name"] ?? "", "name")) ?? ""
            phase = .awaitingActivation
            return [.send(hello)]
        case ("server/hello", _):
            return [.close("a second server/hello")]
        case (_, .awaitingServerHello):
            return [.close("\(type.prefix(40)) before server/hello")]
        case ("server/activate", _):
            return activate(payload)
        case (_, .awaitingActivation):
            return [.close("\(type.prefix(40)) before server/activate")]
        case ("server/time", .active):
            return time(payload, arrival: arrival)
        case ("stream/start", .active):
            return streamStart(payload)
        case ("stream/clear", .active):
            guard forPlayer(payload), let id = streamID else { return [] }
            lastEnd = nil
            return [.clear(streamID: id, from: serverNow ?? LeaderTime(nanoseconds: 0))]
        case ("stream/end", .active):
            guard forPlayer(payload), let id = streamID else { return [] }
            streamID = nil
            let at = lastEnd ?? serverNow ?? LeaderTime(nanoseconds: 0)
            lastEnd = nil
            return [.end(streamID: id, at: at)]
        case ("server/command", .active):
            return command(payload["player"]?.object)
        case ("group/update", _):
            if let s = payload["playback_state"]?.string { groupState = String(s.prefix(32)) }
            if let n = payload["group_name"]?.string { groupName = String(n.prefix(64)) }
            return [.group(state: groupState, name: groupName)]
        default:
            return [] // what this speaker does not act on (server/state, artwork, pairing it did not ask for)
        }
    }

    /// A binary message: an audio chunk (type 4) of the current stream; PCM (16 or 24 bits, as
    /// it came) cut to Tutti's chunk size, a FLAC frame or Opus packet whole (its header says how long it lasts).
    public mutating func received(binary: [UInt8]) -> [Action] {
        guard let type = binary.first, type == Sendspin.audioChunkType, phase == .active else { return [] }
        guard binary.count > Self.chunkHeaderBytes else { return [.close("an audio chunk of \(binary.count) bytes")] }
        var micros: Int64 = 0
        for i in 1...8 { micros = micros << 8 | Int64(binary[i]) }
        guard (0...Self.maximumTimestampMicroseconds).contains(micros) else { return [.close("an audio chunk at \(micros) µs")] }
        let bytes = binary.count - Self.chunkHeaderBytes
        guard let id = streamID, let format else { ignoredChunks += 1; return [] }
        let start = LeaderTime(nanoseconds: micros * 1_000)
        if format.codec != .pcm {
            let packet = Array(binary[Self.chunkHeaderBytes...])
            let samples = format.codec == .flac ? CodecFrames.flacSamples(packet) : CodecFrames.opusSamples(packet)
            guard let samples, samples <= WireProtocol.maxChunkFrames else {
                return [.close("a \(format.codec.rawValue) chunk of \(bytes) bytes whose header gives no length up to \(WireProtocol.maxChunkFrames) frames")]
            }
            defer { sequence &+= 1 }
            lastEnd = start + Self.nanoseconds(frames: samples)
            return [.chunk(Chunk(streamID: id, sequence: sequence, pts: start, frames: UInt32(samples), payload: packet))]
        }
        let frameBytes = format.bitDepth / 8 * 2
        guard bytes % frameBytes == 0 else { return [.close("an audio chunk of \(bytes) bytes (not whole \(format.bitDepth)-bit stereo frames)")] }
        var actions: [Action] = []
        var offset = 0
        let frames = bytes / frameBytes
        while offset < frames {
            let n = min(frames - offset, WireProtocol.maxChunkFrames)
            let from = Self.chunkHeaderBytes + offset * frameBytes
            let pts = start + Self.nanoseconds(frames: offset)
            actions.append(.chunk(Chunk(streamID: id, sequence: sequence, pts: pts, frames: UInt32(n), payload: Array(binary[from..<(from + n * frameBytes)]))))
            sequence &+= 1
            offset += n
        }
        lastEnd = start + Self.nanoseconds(frames: frames)
        return actions
    }

    static func nanoseconds(frames: Int) -> Int64 { (Int64(frames) * 62_500 + 1) / 3 } // 1e9 / 48000 = 62500/3

    // MARK: Parts

    private func message(_ type: String, _ payload: JSONValue) -> String {
        (["type": .string(type), "payload": payload] as JSONValue).serialized
    }

    private func forPlayer(_ payload: [String: JSONValue]) -> Bool {
        guard let roles = payload["roles"]?.array else { return true } // none named: every role
        return roles.contains { $0.string == "player" }
    }

    private mutating func activate(_ payload: [String: JSONValue]) -> [Action] {
        activations += 1
        activities = (payload["activities"]?.array ?? []).prefix(4).compactMap { $0.string.map { String($0.prefix(16)) } }
        // The roles say what this connection may do; `activities` only whether the group plays
        // now (`playback`), which the stream messages say anyway. `active_roles` persists when omitted.
        let roles = payload["active_roles"]?.array?.compactMap(\.string)
        let playing = roles?.contains("player@v1") ?? (phase == .active)
        guard playing else {
            let was = phase
            phase = .waitingForApproval
            var out: [Action] = []
            if was == .active, let id = streamID {
                streamID = nil
                out.append(.clear(streamID: id, from: LeaderTime(nanoseconds: 0)))
            }
            return out + [.waitingForApproval(server: serverName)]
        }
        guard phase != .active else { return [] }
        phase = .active
        return [.activated(server: serverName), .send(state)]
    }

    private mutating func time(_ p: [String: JSONValue], arrival: LocalTime?) -> [Action] {
        guard let sent = p["client_transmitted"]?.integer, let received = p["server_received"]?.integer,
              let transmitted = p["server_transmitted"]?.integer else { return [.close("server/time without its three times")] }
        let range = 0...Self.maximumTimestampMicroseconds
        guard range.contains(Int64(received)), range.contains(Int64(transmitted)), transmitted >= received else {
            return [.close("server/time with times out of order or range")]
        }
        // Only the answer to a request this session sent, once.
        guard let i = outstanding.firstIndex(of: Int64(sent)) else { return [] }
        outstanding.remove(at: i)
        guard let arrival, arrival.nanoseconds >= Int64(sent) * 1_000 else { return [] }
        return [.clockSample(ClockSample(t1: LocalTime(nanoseconds: Int64(sent) * 1_000), t2: LeaderTime(nanoseconds: Int64(received) * 1_000),
                                         t3: LeaderTime(nanoseconds: Int64(transmitted) * 1_000), t4: arrival))]
    }

    private mutating func streamStart(_ payload: [String: JSONValue]) -> [Action] {
        guard let player = payload["player"]?.object else { return [] } // another role's stream
        var asked: SendspinAudioFormat
        do { asked = try Sendspin.format(player) } catch { return [.close("stream/start: \(error)")] }
        if asked.codec == .opus { asked.bitDepth = 16 } // Opus has none; the spec's examples say 16
        guard configuration.formats.contains(asked) else {
            return [.close("stream/start in \(asked.codec.rawValue) \(asked.sampleRate) Hz \(asked.channels) ch \(asked.bitDepth) bit (this speaker offered \(configuration.formats.map { "\($0.codec.rawValue) \($0.bitDepth) bit" }.joined(separator: ", ")), 48 kHz stereo)")]
        }
        var header: [UInt8] = []
        if asked.codec == .flac, let text = player["codec_header"]?.string {
            guard text.utf8.count <= Self.maximumCodecHeaderBytes * 4 / 3 + 4, let bytes = Base64.decode(Array(text.utf8)),
                  bytes.count >= 4, bytes.starts(with: Array("fLaC".utf8)) else {
                return [.close("stream/start: a FLAC codec_header that is not fLaC and its metadata")]
            }
            header = bytes
        }
        // The same format again while a stream plays: the stream goes on.
        guard streamID == nil || asked != format else { return [] }
        lastStreamID &+= 1
        streamID = lastStreamID
        format = asked
        lastEnd = nil
        return [.begin(StreamDescription(streamID: lastStreamID, codec: asked.codec == .opus ? .opus : .pcm, framesPerChunk: 960,
                                         bufferNanoseconds: configuration.bufferNanoseconds), format: asked, header: header)]
    }

    private mutating func command(_ player: [String: JSONValue]?) -> [Action] {
        guard let player, let name = player["command"]?.string else { return [] }
        switch name {
        case "volume":
            guard let v = player["volume"]?.integer, (0...100).contains(v) else { return [.close("server/command volume out of 0…100")] }
            settings.volume = UInt8(v)
        case "mute":
            guard let m = player["mute"]?.bool else { return [.close("server/command mute without mute")] }
            settings.muted = m
        default:
            return [] // a command this speaker did not declare
        }
        // The spec asks a player to report its state after a change.
        return [.settings(settings), .send(state)]
    }
}

/// Where a Sendspin server listens: `ws://HOST:PORT/PATH`, or `HOST:PORT`,
/// or `HOST` (port 8927 and path `/sendspin`, Sendspin's defaults).
public struct SendspinServerAddress: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    public var path: String

    public static let defaultPort: UInt16 = 8927
    public static let defaultPath = "/sendspin"

    public init(host: String, port: UInt16 = defaultPort, path: String = defaultPath) {
        self.host = host; self.port = port; self.path = path
    }

    /// Nil when the text is not such an address (`wss://` included: no TLS here).
    public init?(parsing text: String) {
        var rest = Substring(text)
        if rest.hasPrefix("ws://") { rest = rest.dropFirst(5) } else if rest.contains("://") { return nil }
        var path = Self.defaultPath
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[slash...])
            rest = rest[..<slash]
        }
        guard path.utf8.count <= 256, !path.contains(where: { $0 == " " || $0.isNewline }) else { return nil }
        var port = Self.defaultPort
        if let colon = rest.lastIndex(of: ":") {
            guard let p = UInt16(rest[rest.index(after: colon)...]), p > 0 else { return nil }
            port = p
            rest = rest[..<colon]
        }
        guard !rest.isEmpty, rest.utf8.count <= 253, !rest.contains(where: { $0 == " " || $0 == "@" || $0.isNewline }) else { return nil }
        self.init(host: String(rest), port: port, path: path)
    }

    public var description: String { "ws://\(host):\(port)\(path)" }
}

/// Where a speaker waits for Sendspin servers to dial in (`--sendspin-listen`):
/// `[HOST][:PORT][/PATH]`, every part optional (all interfaces, port 8928,
/// path `/sendspin`: the spec's recommendations for a client), or `PORT` alone.
public struct SendspinListenAddress: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    public var path: String

    public static let defaultPort: UInt16 = 8928

    public init(host: String = "0.0.0.0", port: UInt16 = defaultPort, path: String = SendspinServerAddress.defaultPath) {
        self.host = host; self.port = port; self.path = path
    }

    /// Nil when the text is not such an address. `yes` and the empty text are the defaults.
    public init?(parsing text: String) {
        var rest = Substring(text)
        var path = SendspinServerAddress.defaultPath
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[slash...])
            rest = rest[..<slash]
        }
        guard path.utf8.count <= 256, !path.contains(where: { $0 == " " || $0 == "?" || $0 == "#" || $0.isNewline }) else { return nil }
        var host = "0.0.0.0", port = Self.defaultPort
        if rest == "yes" { rest = "" }
        if !rest.isEmpty, rest.allSatisfy({ $0.isASCII && $0.isNumber }) {
            guard let p = UInt16(rest) else { return nil }
            port = p
        } else if let colon = rest.lastIndex(of: ":") {
            guard let p = UInt16(rest[rest.index(after: colon)...]) else { return nil }
            port = p
            if colon > rest.startIndex { host = String(rest[..<colon]) }
        } else if !rest.isEmpty {
            host = String(rest)
        }
        guard host.utf8.count <= 253, !host.contains(where: { $0 == " " || $0 == "@" || $0 == ":" || $0.isNewline }) else { return nil }
        self.init(host: host, port: port, path: path)
    }

    public var description: String { "ws://\(host):\(port)\(path)" }
}
