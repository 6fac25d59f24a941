/// Sendspin (Music Assistant's multi-room protocol), the server's side, as
/// aiosendspin 10 speaks it: JSON text messages `{type, payload}` and binary
/// messages whose first byte is their type. Pure: what a message means and
/// what the server answers; the shell (TuttiSendspin) does the I/O. Every
/// string, count and number from the network is checked here, where it enters.

/// A problem with what a Sendspin client sent.
public enum SendspinError: Error, Equatable, CustomStringConvertible {
    case malformed(String)
    case unexpected(String)

    public var description: String {
        switch self {
        case .malformed(let what): "a malformed Sendspin message: \(what)"
        case .unexpected(let what): "an unexpected Sendspin message: \(what)"
        }
    }
}

/// How audio goes to a player.
public enum SendspinCodec: String, Sendable, CaseIterable {
    case pcm, flac, opus
}

public struct SendspinAudioFormat: Equatable, Sendable {
    public var codec: SendspinCodec
    public var sampleRate: Int
    public var channels: Int
    public var bitDepth: Int

    public init(codec: SendspinCodec, sampleRate: Int = 48_000, channels: Int = 2, bitDepth: Int = 16) {
        self.codec = codec; self.sampleRate = sampleRate; self.channels = channels; self.bitDepth = bitDepth
    }

    var json: JSONValue {
        ["codec": .string(codec.rawValue), "sample_rate": .int(sampleRate), "channels": .int(channels), "bit_depth": .int(bitDepth)]
    }
}

/// One artwork channel a client asked for (in `client/state`'s `artwork`,
/// or the deprecated hello `artwork@v1_support`); its index is its number.
public struct SendspinArtworkChannel: Equatable, Hashable, Sendable {
    public enum Source: String, Sendable, Hashable { case album, artist, none }
    public var source: Source
    /// `jpeg` or `png`; "" for a channel of source `none`.
    public var format: String
    public var width: Int
    public var height: Int

    public init(source: Source, format: String, width: Int, height: Int) {
        self.source = source; self.format = format; self.width = width; self.height = height
    }

    public static let off = SendspinArtworkChannel(source: .none, format: "", width: 0, height: 0)
}

/// What a client said about itself in `client/hello`.
public struct SendspinHello: Equatable, Sendable {
    public var clientID: String
    public var name: String
    /// Versioned roles it supports, preferred first (`player@v1`, `controller@v1`, …).
    public var roles: [String]
    /// Formats it can play, preferred first (player role).
    public var formats: [SendspinAudioFormat]
    /// Bytes of audio it can hold that are yet to play (player role).
    public var bufferCapacity: Int
    /// Player commands it accepts (`volume`, `mute`).
    public var playerCommands: [String]
    /// Artwork channels it declared in the hello (`artwork@v1_support`, before
    /// spec #195): such a client gets each image as one binary message.
    public var artworkChannels: [SendspinArtworkChannel]
    /// Whether it lets a server it has not paired with give it roles (`unpaired_access.enabled`).
    public var unpairedAccess = false
    /// The pairing-code method it offers that this server runs (`supported_pair_methods`), if any.
    public var codeMethod: SendspinTrust.PairMethod?

    public init(clientID: String, name: String, roles: [String], formats: [SendspinAudioFormat] = [], bufferCapacity: Int = 0,
                playerCommands: [String] = [], artworkChannels: [SendspinArtworkChannel] = []) {
        self.clientID = clientID; self.name = name; self.roles = roles; self.formats = formats
        self.bufferCapacity = bufferCapacity; self.playerCommands = playerCommands; self.artworkChannels = artworkChannels
    }

    /// The roles of version 1 this server serves, of those it supports.
    public var activeRoles: [String] { roles.filter { Sendspin.servedRoles.contains($0) } }

    public func has(_ role: String) -> Bool { activeRoles.contains(role + "@v1") }
}

/// A controller's command (`client/command` controller object).
public enum SendspinControllerCommand: Equatable, Sendable {
    case play, pause, stop, next, previous
    case volume(Int)
    case mute(Bool)
    case repeatMode(String) // off, one, all
    case shuffle(Bool)
    case seek(milliseconds: Int)
    case `switch`
}

/// What a client sends, read and checked.
public enum SendspinClientMessage: Equatable, Sendable {
    case hello(SendspinHello)
    case time(clientTransmitted: Int64)
    /// `client/state`: its state and, for a player, the volume and mute it has now (nil: unchanged).
    /// `requiredLead`: the player's `required_lead_time_ms`, in ns (nil: unchanged): how far
    /// ahead of a `stream/start` or `stream/clear` the first chunk after it must play.
    /// `artwork`: for an artwork client, the channels it wants now (nil: unchanged).
    case state(state: String?, volume: Int?, muted: Bool?, requiredLead: Int64? = nil, artwork: [SendspinArtworkChannel]? = nil)
    case command(SendspinControllerCommand)
    /// `stream/request-format` for the player.
    case requestFormat(SendspinAudioFormat)
    case goodbye(reason: String)
    /// `client/pair-init`: starts a pairing attempt admitted by the `pairingIndex`-th pairing
    /// `server/activate` since the handshake; `commitment`: its `commit_B` (32 bytes; dynamic pairing code only).
    case pairInit(pairingIndex: Int, commitment: [UInt8]?)
    /// `client/pair-finalize` of the Pairing PSK flow: the new long-term PSK (32 bytes), or nil when it carries none.
    case pairFinalize(longTermPSK: [UInt8]?)
    /// `client/pair-finalize` of a pairing-code flow: the long-term PSK sealed under the wrap key (48 bytes).
    case pairFinalizeWrapped(wrappedPSK: [UInt8])
    /// `pair/abort` from the client.
    case pairAbort(reason: String)
    /// `client/pair-pending`: the player waits for its owner's gesture before `client/pair-init`.
    case pairPending(pairingIndex: Int)
    /// `client/pair-auth`: the player's CPace share (32 bytes).
    case pairAuth(share: [UInt8])
    /// `client/pair-confirm`: its CPace tag (64 bytes) and, for the dynamic code, `nonce_B` sealed (48 bytes).
    case pairConfirm(clientKC: [UInt8], wrappedNonceB: [UInt8]?)
    /// `client/pair-retry`: the server's tag did not verify (the code typed was wrong); another round.
    case pairRetry
    /// A type this server does not act on (ignored, as the spec asks of unknown messages).
    case other(type: String)
}

public enum Sendspin {
    /// Text and binary messages from a client beyond this close the connection (a hello is a few KiB).
    public static let maximumClientMessageBytes = 64 * 1024
    /// The longest start-up lead a player gets (a larger ask is clamped to it, as aiosendspin's server does).
    public static let maximumRequiredLeadMilliseconds = 5_000

    public static let servedRoles: Set<String> = ["player@v1", "controller@v1", "metadata@v1", "artwork@v1"]
    static let maximumTextLength = 256
    static let maximumListCount = 32

    /// Reads one text message from a client.
    public static func parse(_ text: [UInt8]) throws(SendspinError) -> SendspinClientMessage {
        guard text.count <= maximumClientMessageBytes else { throw .malformed("\(text.count) bytes") }
        guard !JSONNesting.exceeds(text), let root = JSONValue.parsing(text)?.object else { throw .malformed("not a JSON object") }
        guard let type = root["type"]?.string, type.utf8.count <= 64 else { throw .malformed("no type") }
        let payload = root["payload"]?.object ?? [:]
        switch type {
        case "client/hello":
            return .hello(try hello(payload))
        case "client/time":
            guard let t = payload["client_transmitted"]?.integer else { throw .malformed("client/time without client_transmitted") }
            return .time(clientTransmitted: Int64(t))
        case "client/state":
            let player = payload["player"]?.object
            let volume = try player?["volume"].map { v throws(SendspinError) in try bounded(v, "volume", 0...100) }
            // Clamped, not refused, past the most (as aiosendspin's server does).
            let lead = try player?["required_lead_time_ms"].map { v throws(SendspinError) in
                min(try bounded(v, "required_lead_time_ms", 0...Int(Int32.max)), maximumRequiredLeadMilliseconds)
            }
            let artwork = try payload["artwork"].map { v throws(SendspinError) in try artworkChannels(v) }
            return .state(state: try payload["state"].map { v throws(SendspinError) in try shortText(v, "state") },
                          volume: volume, muted: player?["muted"]?.bool, requiredLead: lead.map { Int64($0) * 1_000_000 },
                          artwork: artwork)
        case "client/command":
            guard let controller = payload["controller"]?.object, let command = controller["command"]?.string else {
                return .other(type: type)
            }
            return .command(try controllerCommand(command, controller))
        case "stream/request-format":
            guard let player = payload["player"]?.object else { return .other(type: type) }
            return .requestFormat(try format(player))
        case "client/goodbye":
            return .goodbye(reason: (try? shortText(payload["reason"] ?? "", "reason")) ?? "")
        case "client/pair-init":
            let index = try bounded(payload["pairing_index"], "pairing_index", 0...Int(Int32.max))
            let commitment = try payload["commit_B"].map { _ throws(SendspinError) in try field(payload, "commit_B", bytes: 32) }
            return .pairInit(pairingIndex: index, commitment: commitment)
        case "client/pair-finalize":
            if payload["wrapped_psk"] != nil, payload["long_term_psk"] == nil {
                return .pairFinalizeWrapped(wrappedPSK: try field(payload, "wrapped_psk", bytes: 48))
            }
            guard let text = payload["long_term_psk"] else { return .pairFinalize(longTermPSK: nil) }
            guard payload["wrapped_psk"] == nil else { throw .malformed("client/pair-finalize carries both long_term_psk and wrapped_psk") }
            guard let s = text.string, s.utf8.count <= 64, let psk = Base64URL.decode(s), psk.count == 32 else {
                throw .malformed("long_term_psk is not 32 bytes in base64url")
            }
            return .pairFinalize(longTermPSK: psk)
        case "pair/abort":
            return .pairAbort(reason: (try? shortText(payload["reason"] ?? "", "reason")) ?? "")
        case "client/pair-pending":
            return .pairPending(pairingIndex: try bounded(payload["pairing_index"], "pairing_index", 0...Int(Int32.max)))
        case "client/pair-auth":
            return .pairAuth(share: try field(payload, "pake_msg_2", bytes: 32))
        case "client/pair-confirm":
            let wrapped = try payload["wrapped_nonce_B"].map { _ throws(SendspinError) in try field(payload, "wrapped_nonce_B", bytes: 48) }
            return .pairConfirm(clientKC: try field(payload, "client_kc", bytes: 64), wrappedNonceB: wrapped)
        case "client/pair-retry":
            return .pairRetry
        default:
            return .other(type: type)
        }
    }

    static func shortText(_ value: JSONValue, _ what: String) throws(SendspinError) -> String {
        guard let s = value.string, s.utf8.count <= maximumTextLength else { throw .malformed("\(what) is not a short string") }
        // A name shows in lists and logs: no control characters.
        return String(s.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7f }.map(Character.init))
    }

    static func bounded(_ value: JSONValue?, _ what: String, _ range: ClosedRange<Int>) throws(SendspinError) -> Int {
        guard let n = value?.integer, range.contains(n) else { throw .malformed("\(what) is not a whole number in \(range)") }
        return n
    }

    static func format(_ f: [String: JSONValue]) throws(SendspinError) -> SendspinAudioFormat {
        guard let name = f["codec"]?.string, let codec = SendspinCodec(rawValue: name) else {
            throw .malformed("codec \(f["codec"]?.string ?? "?")")
        }
        return SendspinAudioFormat(codec: codec, sampleRate: try bounded(f["sample_rate"], "sample_rate", 1...768_000),
                                   channels: try bounded(f["channels"], "channels", 1...32),
                                   bitDepth: codec == .opus ? (f["bit_depth"]?.integer ?? 16) : try bounded(f["bit_depth"], "bit_depth", 1...64))
    }

    static func hello(_ p: [String: JSONValue]) throws(SendspinError) -> SendspinHello {
        // An encrypted client sends none: its id is its static key, proven by the handshake (the caller fills it in).
        let id = try p["client_id"].map { v throws(SendspinError) in try shortText(v, "client_id") } ?? ""
        if let version = p["version"], version.integer != 1 { throw .malformed("core version \(version.serialized) (only 1 is known)") }
        let name = (try? shortText(p["name"] ?? .null, "name")).map { String($0.prefix(64)) } ?? id
        guard let roles = p["supported_roles"]?.strings, roles.count <= maximumListCount else { throw .malformed("supported_roles") }
        var hello = SendspinHello(clientID: id, name: name.isEmpty ? (id.isEmpty ? "Sendspin player" : id) : name, roles: roles)
        hello.unpairedAccess = p["unpaired_access"]?["enabled"]?.bool ?? false
        hello.codeMethod = SendspinCodePairing.offeredMethod(p["supported_pair_methods"])
        if roles.contains("player@v1") {
            // The unversioned key is what clients before spec #287 sent.
            guard let support = (p["player@v1_support"] ?? p["player_support"])?.object else { throw .malformed("player@v1 without its support object") }
            guard let formats = support["supported_formats"]?.array, !formats.isEmpty, formats.count <= maximumListCount else {
                throw .malformed("supported_formats")
            }
            for f in formats {
                guard let o = f.object else { throw .malformed("a format that is not an object") }
                // A codec this server does not know is skipped, not refused: the client may offer more.
                if let name = o["codec"]?.string, SendspinCodec(rawValue: name) == nil { continue }
                hello.formats.append(try format(o))
            }
            hello.bufferCapacity = try bounded(support["buffer_capacity"], "buffer_capacity", 1...(1 << 30))
            hello.playerCommands = (support["supported_commands"]?.strings ?? ["volume", "mute"]).filter { $0 == "volume" || $0 == "mute" }
        }
        if roles.contains("artwork@v1"), let support = p["artwork@v1_support"] ?? p["artwork_support"] {
            hello.artworkChannels = try artworkChannels(support)
        }
        return hello
    }

    /// Artwork channels are 1…4; a picture's sides 1…this.
    public static let artworkChannelRange = 1...4
    public static let maximumArtworkSide = 4096

    /// An artwork object `{channels: [{source, format, width, height}]}`:
    /// 1…4 channels, sides 1…4096 (`media_width`/`media_height` as before
    /// spec #168). A format other than JPEG or PNG (`bmp`, gone from the
    /// spec) turns its channel off rather than the client away.
    static func artworkChannels(_ value: JSONValue) throws(SendspinError) -> [SendspinArtworkChannel] {
        guard let channels = value["channels"]?.array, artworkChannelRange.contains(channels.count) else {
            throw .malformed("artwork channels (1…4 of them)")
        }
        var out: [SendspinArtworkChannel] = []
        for c in channels {
            guard let o = c.object, let name = o["source"]?.string else { throw .malformed("an artwork channel without a source") }
            guard let source = SendspinArtworkChannel.Source(rawValue: name) else { throw .malformed("artwork source \(name.prefix(16))") }
            if source == .none {
                out.append(.off)
                continue
            }
            let side = 1...maximumArtworkSide
            let width = try bounded(o["width"] ?? o["media_width"], "artwork width", side)
            let height = try bounded(o["height"] ?? o["media_height"], "artwork height", side)
            let format = try shortText(o["format"] ?? .null, "artwork format")
            out.append(format == "jpeg" || format == "png" ? SendspinArtworkChannel(source: source, format: format, width: width, height: height) : .off)
        }
        return out
    }

    static func controllerCommand(_ name: String, _ c: [String: JSONValue]) throws(SendspinError) -> SendspinControllerCommand {
        switch name {
        case "play": return .play
        case "pause": return .pause
        case "stop": return .stop
        case "next": return .next
        case "previous": return .previous
        case "volume": return .volume(try bounded(c["volume"], "volume", 0...100))
        case "mute":
            guard let m = c["mute"]?.bool else { throw .malformed("mute without mute") }
            return .mute(m)
        case "repeat_off": return .repeatMode("off")
        case "repeat_one": return .repeatMode("one")
        case "repeat_all": return .repeatMode("all")
        case "shuffle": return .shuffle(true)
        case "unshuffle": return .shuffle(false)
        case "switch": return .switch
        case "seek": return .seek(milliseconds: try bounded(c["position"] ?? c["position_ms"], "position", 0...(1 << 40)))
        default: throw .unexpected("controller command \(String(name.prefix(32)))")
        }
    }

    // MARK: What the server sends

    static func message(_ type: String, _ payload: JSONValue) -> String {
        (["type": .string(type), "payload": payload] as JSONValue).serialized
    }

    /// `server/hello` as a client that began with a plain `client/hello` expects it (aiosendspin's transition path).
    /// The host of a peer written `host:port` or `[v6]:port`, for per-address limits.
    public static func host(ofPeer peer: String) -> String {
        if peer.hasPrefix("["), let end = peer.firstIndex(of: "]") { return String(peer[peer.index(after: peer.startIndex)..<end]) }
        guard let colon = peer.lastIndex(of: ":"), peer.firstIndex(of: ":") == colon else { return peer }
        return String(peer[..<colon])
    }

    /// The encrypted path's `server/hello`, sent first, right after the handshake (the id is the handshake's).
    public static func serverHello(name: String) -> String {
        message("server/hello", ["name": .string(name)])
    }

    /// `server/activate`: what the connection is for now, and the roles it plays (none: it waits for a person).
    public static func serverActivate(playback: Bool, activeRoles: [String]) -> String {
        message("server/activate", ["activities": .strings(playback ? ["playback"] : []), "active_roles": .strings(activeRoles)])
    }

    /// The `server/activate` that admits a pairing attempt: the pairing activity alone, no roles.
    public static func serverActivatePairing(method: SendspinTrust.PairMethod, format: String? = nil) -> String {
        var pairing: [String: JSONValue] = ["method": .string(method.rawValue)]
        if let format { pairing["format"] = .string(format) }
        return message("server/activate", ["activities": .strings(["pairing"]), "active_roles": .strings([]), "pairing": .object(pairing)])
    }

    /// The acknowledgement that the client's long-term PSK is stored.
    public static func serverPairFinalize() -> String { message("server/pair-finalize", [:]) }

    /// Ends a pairing attempt (`attempt_timeout`, `concurrent_attempt`, `method_not_supported`, `user_cancelled`).
    public static func pairAbort(reason: String) -> String { message("pair/abort", ["reason": .string(reason)]) }

    /// The legacy (plain) path's `server/hello`, the answer to the client's.
    public static func serverHello(serverID: String, name: String, activeRoles: [String]) -> String {
        message("server/hello", ["server_id": .string(serverID), "name": .string(name), "version": 1,
                                 "active_roles": .strings(activeRoles), "connection_reason": "playback"])
    }

    /// The answer to `client/time`: when it came and when this goes, µs on the server's clock.
    public static func serverTime(clientTransmitted: Int64, received: Int64, transmitted: Int64) -> String {
        message("server/time", ["client_transmitted": .int(clientTransmitted), "server_received": .int(received),
                                "server_transmitted": .int(transmitted)])
    }

    public static func streamStart(player format: SendspinAudioFormat, codecHeader: [UInt8]?) -> String {
        var player = format.json
        if let codecHeader, case .object(var o) = player {
            o["codec_header"] = .string(Base64.encode(codecHeader))
            player = .object(o)
        }
        return message("stream/start", ["player": player])
    }

    /// `stream/start` for the artwork role: the channels as the client asked
    /// for them, up to the last one streamed (`none` ones as just their source).
    public static func streamStart(artwork channels: [SendspinArtworkChannel]) -> String {
        let last = channels.lastIndex { $0.source != .none }.map { $0 + 1 } ?? 0
        return message("stream/start", ["artwork": ["channels": .array(channels.prefix(last).map { c -> JSONValue in
            c.source == .none ? ["source": "none"]
                : ["source": .string(c.source.rawValue), "format": .string(c.format), "width": .int(c.width), "height": .int(c.height)]
        })]])
    }

    public static func streamClear(roles: [String]) -> String { message("stream/clear", ["roles": .strings(roles)]) }
    public static func streamEnd(roles: [String]) -> String { message("stream/end", ["roles": .strings(roles)]) }

    public static func groupUpdate(state: PlayerState, groupID: String, groupName: String) -> String {
        message("group/update", ["playback_state": state == .playing ? "playing" : state == .paused ? "paused" : "stopped",
                                 "group_id": .string(groupID), "group_name": .string(groupName)])
    }

    public static func playerCommand(volume: Int) -> String { message("server/command", ["player": ["command": "volume", "volume": .int(volume)]]) }
    public static func playerCommand(muted: Bool) -> String { message("server/command", ["player": ["command": "mute", "mute": .bool(muted)]]) }

    /// What the controllers may ask, as `server/state` lists it.
    public static let controllerCommands = ["play", "pause", "stop", "next", "previous", "volume", "mute",
                                            "repeat_off", "repeat_one", "repeat_all", "shuffle", "unshuffle"]

    public static func controllerState(volume: Int, muted: Bool) -> JSONValue {
        ["supported_commands": .strings(controllerCommands), "volume": .int(volume), "muted": .bool(muted)]
    }

    /// What a metadata client shows: the track, and where it is at `timestamp` (server µs).
    public struct Metadata: Equatable, Sendable {
        public var title: String?
        public var artist: String?
        public var album: String?
        public var albumArtist: String?
        public var year: Int?
        public var track: Int?
        public var positionMilliseconds: Int
        public var durationMilliseconds: Int
        public var playing: Bool
        public var speed: Double
        public var repeatMode: String
        public var shuffle: Bool

        public init(title: String?, artist: String?, album: String?, albumArtist: String? = nil, year: Int? = nil, track: Int? = nil,
                    positionMilliseconds: Int, durationMilliseconds: Int, playing: Bool, speed: Double = 1, repeatMode: String = "off", shuffle: Bool = false) {
            self.title = title; self.artist = artist; self.album = album; self.albumArtist = albumArtist; self.year = year; self.track = track
            self.positionMilliseconds = positionMilliseconds; self.durationMilliseconds = durationMilliseconds
            self.playing = playing; self.speed = speed; self.repeatMode = repeatMode; self.shuffle = shuffle
        }

        public func json(timestamp: Int64) -> JSONValue {
            func orNull(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
            return ["timestamp": .int(timestamp), "title": orNull(title), "artist": orNull(artist), "album": orNull(album),
                    "album_artist": orNull(albumArtist), "year": year.map { .int($0) } ?? .null, "track": track.map { .int($0) } ?? .null,
                    "progress": ["track_progress": .int(max(0, positionMilliseconds)), "track_duration": .int(max(0, durationMilliseconds)),
                                 "playback_speed": .int(playing ? Int((speed * 1000).rounded()) : 0)],
                    "repeat": .string(repeatMode), "shuffle": .bool(shuffle)]
        }
    }

    public static func serverState(metadata: JSONValue?, controller: JSONValue?) -> String {
        var payload: [String: JSONValue] = [:]
        if let metadata { payload["metadata"] = metadata }
        if let controller { payload["controller"] = controller }
        return message("server/state", .object(payload))
    }

    // MARK: Binary messages

    public static let audioChunkType: UInt8 = 4
    public static let artworkChannel0Type: UInt8 = 8

    /// The header of a binary message: its type, the server time (µs) at
    /// which it applies, big-endian, and for an audio chunk to a client of
    /// spec #177 on (every encrypted one), `send_ahead`: µs from sending to
    /// that time, saturated to 0…2³²−1. A plain (legacy) client gets the 9-byte form.
    public static func binaryHeader(type: UInt8, timestamp: Int64, sendAhead: Int64?) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(13)
        out.append(type)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: timestamp >> Int64(shift))) }
        if let sendAhead {
            let s = UInt32(max(0, min(sendAhead, Int64(UInt32.max))))
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: s >> UInt32(shift))) }
        }
        return out
    }

    /// Artwork binary flags (byte 1 of a message of type 8…11, spec #188 on).
    public static let artworkAnnounceFlag: UInt8 = 0x02
    /// The largest artwork message: one Noise transport message, unfragmented.
    public static let maximumArtworkMessageBytes = 65_519

    /// The binary messages that carry `image` (empty: the channel is cleared)
    /// on artwork `channel` (0…3), to be shown at `timestamp` (server µs).
    /// A client that declared its channels in `client/state` gets a transfer:
    /// a 14-byte announce `[8+channel, 0x02, timestamp (int64), size (uint32)]`,
    /// then parts `[8+channel, 0x00, data…]` of at most 65,519 bytes. One that
    /// declared them in the hello (`singleMessage`) gets `[8+channel, timestamp] + image`.
    public static func artworkMessages(channel: Int, timestamp: Int64, image: [UInt8], singleMessage: Bool) -> [[UInt8]] {
        precondition((0...3).contains(channel), "artwork channel \(channel)")
        let type = artworkChannel0Type + UInt8(channel)
        if singleMessage { return [binaryHeader(type: type, timestamp: timestamp, sendAhead: nil) + image] }
        var announce: [UInt8] = [type, artworkAnnounceFlag]
        for shift in stride(from: 56, through: 0, by: -8) { announce.append(UInt8(truncatingIfNeeded: timestamp >> Int64(shift))) }
        let size = UInt32(image.count)
        for shift in stride(from: 24, through: 0, by: -8) { announce.append(UInt8(truncatingIfNeeded: size >> UInt32(shift))) }
        var out = [announce]
        let part = maximumArtworkMessageBytes - 2
        var offset = 0
        while offset < image.count {
            let end = min(image.count, offset + part)
            out.append([type, 0] + image[offset..<end])
            offset = end
        }
        return out
    }

    /// The format a player gets: the first it offers that Tutti can make
    /// from its 48 kHz stereo stream (PCM of 16 or 24 bits, FLAC, Opus where
    /// the leader encodes Opus anyway), at 48 kHz stereo; nil if none.
    public static func chooseFormat(offered: [SendspinAudioFormat], opusAvailable: Bool) -> SendspinAudioFormat? {
        offered.first { f in
            guard f.sampleRate == 48_000 && f.channels == 2 else { return false }
            switch f.codec {
            case .pcm, .flac: return f.bitDepth == 16 || f.bitDepth == 24
            case .opus: return opusAvailable
            }
        }
    }

    /// The room a client is: its name, made a short line of text.
    public static func roomName(_ hello: SendspinHello) -> String {
        var name = Substring(hello.name)
        while name.first == " " { name = name.dropFirst() }
        while name.last == " " { name = name.dropLast() }
        return String((name.isEmpty ? Substring(hello.clientID) : name).prefix(64))
    }
}
