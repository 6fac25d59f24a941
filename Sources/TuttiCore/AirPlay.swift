/// AirPlay receivers managed by the leader (one shairport-sync per group),
/// the pure half: what shairport-sync's metadata pipe says
/// (`AirPlayMetadataReader`), what a session means for the group
/// (`AirPlaySession`), and which receivers run under which names and ports
/// (`AirPlayReceiverPlan`). No I/O; time is given.

/// One item of shairport-sync's metadata pipe: a four-letter type (`core`:
/// DAAP fields from the phone; `ssnc`: shairport-sync's own) and code
/// (`minm` title, `PICT` artwork, `pbeg` play begins, …), and its data.
public struct AirPlayMetadataItem: Equatable, Sendable {
    public var type: String
    public var code: String
    public var data: [UInt8]
    public init(type: String, code: String, data: [UInt8] = []) { self.type = type; self.code = code; self.data = data }
    public var text: String { String(decoding: data, as: UTF8.self) }
}

/// Reads the metadata pipe's items as bytes arrive, in any pieces:
///
///     <item><type>73736e63</type><code>70626567</code><length>0</length></item>
///     <item><type>636f7265</type><code>6d696e6d</code><length>5</length>
///     <data encoding="base64">
///     SGVsbG8=</data></item>
///
/// Bounded: an item whose data would exceed `maximumDataBytes`, or text that
/// is no item, is skipped up to the next `<item>`; what it holds never grows
/// past about the largest item's base64. Malformed input never traps.
public struct AirPlayMetadataReader: Sendable {
    /// Artwork is the largest item a phone sends (a few hundred KB of JPEG).
    public let maximumDataBytes: Int
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` already searched for the end of an item.
    private var scanned = 0
    /// Items skipped (malformed or too large), for the log.
    public private(set) var skipped = 0

    public init(maximumDataBytes: Int = 4 << 20) { self.maximumDataBytes = maximumDataBytes }

    private static let open = Array("<item>".utf8), close = Array("</item>".utf8)

    /// The whole items `bytes` completes, in order.
    public mutating func feed(_ bytes: some Collection<UInt8>) -> [AirPlayMetadataItem] {
        buffer.append(contentsOf: bytes)
        var items: [AirPlayMetadataItem] = []
        while true {
            // Drop what comes before the next "<item>" (keeping a partial tag).
            guard let start = Self.find(Self.open, in: buffer, from: 0) else {
                let keep = min(buffer.count, Self.open.count - 1)
                buffer.removeFirst(buffer.count - keep)
                scanned = 0
                return items
            }
            if start > 0 { buffer.removeFirst(start); scanned = max(0, scanned - start) }
            guard let end = Self.find(Self.close, in: buffer, from: max(Self.open.count, scanned)) else {
                scanned = max(0, buffer.count - Self.close.count)
                // An item past any allowed size: skip it (its end will be dropped as text before the next item).
                if buffer.count > maximumDataBytes / 3 * 4 + 4_096 {
                    skipped += 1
                    buffer.removeFirst(Self.open.count)
                    scanned = 0
                    continue
                }
                return items
            }
            let body = buffer[Self.open.count..<end]
            if let item = Self.parse(body, maximumDataBytes: maximumDataBytes) { items.append(item) } else { skipped += 1 }
            buffer.removeFirst(end + Self.close.count)
            scanned = 0
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard haystack.count >= needle.count, from <= haystack.count - needle.count else { return nil }
        var i = from
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] {
                var j = 1
                while j < needle.count && haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }

    /// The text between `<tag…>` and `</tag>` in `body`.
    static func element(_ tag: String, in body: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        let open = Array("<\(tag)".utf8), close = Array("</\(tag)>".utf8)
        let bytes = Array(body)
        guard let s = find(open, in: bytes, from: 0), let gt = bytes[(s + open.count)...].firstIndex(of: UInt8(ascii: ">")),
              let e = find(close, in: bytes, from: gt + 1) else { return nil }
        return bytes[(gt + 1)..<e]
    }

    static func parse(_ body: ArraySlice<UInt8>, maximumDataBytes: Int) -> AirPlayMetadataItem? {
        guard let type = element("type", in: body).flatMap(fourCC), let code = element("code", in: body).flatMap(fourCC),
              let lengthText = element("length", in: body), let length = Int(String(decoding: lengthText, as: UTF8.self)),
              length >= 0, length <= maximumDataBytes else { return nil }
        var data: [UInt8] = []
        if length > 0 {
            guard let encoded = element("data", in: body), let decoded = Base64.decode(encoded), decoded.count == length else { return nil }
            data = decoded
        }
        return AirPlayMetadataItem(type: type, code: code, data: data)
    }

    /// "73736e63" → "ssnc" (eight hex digits, four printable bytes).
    static func fourCC(_ hex: ArraySlice<UInt8>) -> String? {
        guard hex.count == 8, let v = UInt32(String(decoding: hex, as: UTF8.self), radix: 16) else { return nil }
        let bytes = [UInt8(v >> 24), UInt8(v >> 16 & 0xff), UInt8(v >> 8 & 0xff), UInt8(v & 0xff)]
        guard bytes.allSatisfy({ (0x20...0x7e).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Standard base64 (RFC 4648), whitespace ignored: shairport-sync breaks its lines.
public enum Base64 {
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var accumulator: UInt32 = 0, bits = 0, padding = 0
        for c in text {
            let v: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "/"): v = 63
            case UInt8(ascii: "="): padding += 1; continue
            case 9, 10, 13, 32: continue
            default: return nil
            }
            guard padding == 0 else { return nil } // data after the padding
            accumulator = accumulator << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(accumulator >> UInt32(bits) & 0xff))
            }
        }
        return padding <= 2 ? out : nil
    }

    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var it = Array(bytes)[...]
        while !it.isEmpty {
            let chunk = Array(it.prefix(3))
            it = it.dropFirst(3)
            let n = UInt32(chunk[0]) << 16 | UInt32(chunk.count > 1 ? chunk[1] : 0) << 8 | UInt32(chunk.count > 2 ? chunk[2] : 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(chunk.count > 1 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(chunk.count > 2 ? alphabet[Int(n & 63)] : UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// Where remote control goes back to the phone (DACP): `GET
/// http://address:port/ctrl-int/1/nextitem` with `Active-Remote: activeRemote`.
public struct DACPRemote: Equatable, Sendable {
    public var address: String
    public var port: Int
    public var activeRemote: String
    public init(address: String, port: Int, activeRemote: String) { self.address = address; self.port = port; self.activeRemote = activeRemote }

    /// The request path for a transport command, or nil when DACP has none.
    public static func path(for command: PlayerCommand) -> String? {
        switch command {
        case .next: "/ctrl-int/1/nextitem"
        case .previous: "/ctrl-int/1/previtem"
        case .toggle: "/ctrl-int/1/playpause"
        case .pause: "/ctrl-int/1/pause"
        case .play: "/ctrl-int/1/play"
        case .stop: "/ctrl-int/1/stop"
        default: nil
        }
    }
}

/// A phone's artwork as a cover id the web app asks `/art/ID` for, like a
/// library cover's: 24 hex digits (a library's are 64), from its bytes.
public enum AirPlayArtwork {
    public static func id(of bytes: [UInt8]) -> String { "a1a1a1a1" + FNV1a.hex(bytes) }
    public static func isID(_ s: String) -> Bool { s.utf8.count == 24 && s.hasPrefix("a1a1a1a1") }
}

/// What an AirPlay sender plays, as now playing shows it.
public struct AirPlayNowPlaying: Equatable, Sendable {
    /// The phone's name ("Anna's iPhone"): now playing shows "AirPlay from <sender>".
    public var sender: String?
    public var title: String?
    public var artist: String?
    public var album: String?
    public var artwork: [UInt8]? { didSet { artworkID = artwork.map(AirPlayArtwork.id(of:)) } }
    /// `artwork`'s cover id, worked out once when the picture arrives, not
    /// at every request that shows it (a picture can be 4 MB).
    public private(set) var artworkID: String?
    /// From `prgr` (RTP frames at 44.1 kHz): seconds played and the track's length when `progressAt` was read.
    public var positionSeconds: Double?
    public var durationSeconds: Double?
    /// Monotonic ns when `positionSeconds` was true.
    public var progressAt: Int64?
    public var remote: DACPRemote?
    /// Monotonic ns when the session's first audio reached the pipe (`ssnc pffr`): where the take-over's latency is counted from.
    public var firstAudioAt: Int64?
    /// The sender's address, for a sender that gives no name.
    public var address: String?
    public init() {}

    public var source: String { "AirPlay from \(sender ?? address ?? "a phone")" }

    /// Where the track is at monotonic `now` (it runs on while playing).
    public func position(at now: Int64) -> Double? {
        guard let p = positionSeconds, let at = progressAt else { return nil }
        let running = p + Double(max(0, now - at)) / 1e9
        return durationSeconds.map { min(running, $0) } ?? running
    }
}

/// One receiver's sessions, item by item: when the group must take the
/// phone's audio (`takeOver`), when it goes back (`release`, a grace after the
/// end, so a second phone interrupting the first is one take-over, not a
/// release and a take-over), and what now playing shows.
public struct AirPlaySession: Sendable {
    public enum Action: Equatable, Sendable {
        /// A phone began playing: switch the group to the receiver's pipe.
        case takeOver
        /// The session ended: back to what played before, paused.
        case release
        /// Now playing changed (title, artwork, progress, the sender).
        case nowPlaying
    }

    public private(set) var nowPlaying = AirPlayNowPlaying()
    /// A phone is playing (from `pbeg` to `pend`).
    public private(set) var active = false
    /// The group plays the receiver (taken over, not yet released).
    public private(set) var holding = false
    /// When the release falls due (monotonic ns), after an end with no new begin.
    public private(set) var releaseDue: Int64?
    /// From the end of one session to the release: a second phone that
    /// interrupts the first begins within it.
    public let releaseGrace: Int64
    private var clientAddress: String?
    private var dacpPort: Int?
    private var activeRemote: String?

    public init(releaseGrace: Int64 = 1_000_000_000) { self.releaseGrace = releaseGrace }

    public mutating func handle(_ item: AirPlayMetadataItem, now: Int64) -> [Action] {
        switch (item.type, item.code) {
        case ("ssnc", "pbeg"), ("ssnc", "prsm"):
            active = true
            releaseDue = nil
            if item.code == "pbeg" { nowPlaying.firstAudioAt = nil }
            // Every begin takes over (again): a phone that starts after the group moved on gets it back.
            holding = true
            return [.takeOver, .nowPlaying]
        case ("ssnc", "pend"):
            active = false
            if holding { releaseDue = now + releaseGrace }
            return []
        case ("ssnc", "snam"):
            nowPlaying.sender = Self.bounded(item.text)
        case ("core", "minm"): nowPlaying.title = Self.bounded(item.text)
        case ("core", "asar"): nowPlaying.artist = Self.bounded(item.text)
        case ("core", "asal"): nowPlaying.album = Self.bounded(item.text)
        case ("ssnc", "PICT"): nowPlaying.artwork = item.data.isEmpty ? nil : item.data
        case ("ssnc", "prgr"):
            // "start/current/end" RTP times at 44.1 kHz (32-bit, they wrap).
            let parts = item.text.split(separator: "/").compactMap { UInt32($0) }
            guard parts.count == 3 else { return [] }
            // Current before start (a seek back, a late packet): 0, not the 27 hours the unsigned wrap says.
            nowPlaying.positionSeconds = max(0, Double(Int32(bitPattern: parts[1] &- parts[0]))) / 44_100
            nowPlaying.durationSeconds = Double(parts[2] &- parts[0]) / 44_100
            nowPlaying.progressAt = now
        case ("ssnc", "clip"):
            // An IP address only: it becomes a URL's host.
            let text = item.text
            clientAddress = !text.isEmpty && text.utf8.count <= 64 && text.unicodeScalars.allSatisfy({ $0.properties.isASCIIHexDigit || ".:%".unicodeScalars.contains($0) }) ? text : nil
            nowPlaying.address = clientAddress
            updateRemote()
            return []
        case ("ssnc", "dapo"): dacpPort = Int(item.text).flatMap { (1...65_535).contains($0) ? $0 : nil }; updateRemote(); return []
        case ("ssnc", "acre"):
            // Digits only: it becomes a request header.
            let text = item.text
            activeRemote = !text.isEmpty && text.utf8.count <= 20 && text.utf8.allSatisfy({ (48...57).contains($0) }) ? text : nil
            updateRemote()
            return []
        case ("ssnc", "pffr"):
            // shairport-sync writes the session's first audio to the pipe as it says so.
            if nowPlaying.firstAudioAt == nil { nowPlaying.firstAudioAt = now }
            return []
        case ("ssnc", "mdst"):
            // A new track's fields follow: none of the last one's stays.
            (nowPlaying.title, nowPlaying.artist, nowPlaying.album) = (nil, nil, nil)
            return []
        case ("ssnc", "pcst"):
            nowPlaying.artwork = nil
            return []
        case ("ssnc", "mden"), ("ssnc", "pcen"): return holding ? [.nowPlaying] : []
        default: return []
        }
        return holding ? [.nowPlaying] : []
    }

    /// Time passing: the release once it falls due.
    public mutating func tick(now: Int64) -> [Action] {
        guard let due = releaseDue, now >= due, !active else { return [] }
        releaseDue = nil
        endSession()
        return [.release]
    }

    /// The receiver stopped (it died, or was withdrawn): release at once.
    public mutating func receiverGone() -> [Action] {
        active = false
        releaseDue = nil
        let held = holding
        endSession()
        return held ? [.release] : []
    }

    /// Nothing of the session stays: the next phone's remote is its own,
    /// never this one's port or Active-Remote with its address.
    private mutating func endSession() {
        holding = false
        nowPlaying = AirPlayNowPlaying()
        (clientAddress, dacpPort, activeRemote) = (nil, nil, nil)
    }

    private mutating func updateRemote() {
        // Only a remote whose every part this session gave (a rejected part clears it).
        if let a = clientAddress, let p = dacpPort, let r = activeRemote {
            nowPlaying.remote = DACPRemote(address: a, port: p, activeRemote: r)
        } else {
            nowPlaying.remote = nil
        }
    }

    static func bounded(_ text: String) -> String { text.utf8.count <= 1_024 ? text : String(decoding: text.utf8.prefix(1_024), as: UTF8.self) }
}

/// Which receivers run: one per group, named after it ("Whole house" for
/// the party group while party mode is on; the others are withdrawn then),
/// each on ports of its own slot that stay its own while it lives.
public struct AirPlayReceiverPlan: Equatable, Sendable {
    public struct Receiver: Equatable, Sendable {
        public var groupID: String
        public var name: String
        public var slot: Int
        /// RTSP (TCP) port: 5100 + slot.
        public var port: Int { AirPlayReceiverPlan.basePort + slot }
        /// UDP ports: ten from 5200 + 10 × slot.
        public var udpPortBase: Int { AirPlayReceiverPlan.baseUDPPort + 10 * slot }
        public init(groupID: String, name: String, slot: Int) { self.groupID = groupID; self.name = name; self.slot = slot }
    }

    public enum Action: Equatable, Sendable {
        case start(Receiver)
        /// The name changed: shairport-sync announces its name only at start.
        case restart(Receiver)
        case stop(groupID: String)
    }

    public static let basePort = 5100, baseUDPPort = 5200
    public static let partyName = "Whole house"
    /// Receivers at most (the groups' own limit is lower; ports stay below 6000).
    public static let maximumReceivers = 64

    public private(set) var receivers: [Receiver] = []
    public init() {}

    /// The receivers for `groups` (id, name); `partyGroup` while party mode is on; none when off.
    public mutating func update(groups: [(id: String, name: String)], partyGroup: String?, enabled: Bool) -> [Action] {
        var wanted: [(id: String, name: String)] = []
        if enabled {
            if let party = partyGroup, groups.contains(where: { $0.id == party }) {
                wanted = [(party, Self.partyName)]
            } else {
                wanted = Array(groups.prefix(Self.maximumReceivers))
            }
        }
        var actions: [Action] = []
        var next: [Receiver] = []
        for old in receivers where !wanted.contains(where: { $0.id == old.groupID }) { actions.append(.stop(groupID: old.groupID)) }
        var used = Set(receivers.filter { r in wanted.contains { $0.id == r.groupID } }.map(\.slot))
        for w in wanted {
            if var r = receivers.first(where: { $0.groupID == w.id }) {
                if r.name != w.name { r.name = w.name; actions.append(.restart(r)) }
                next.append(r)
            } else {
                var slot = 0
                while used.contains(slot) { slot += 1 }
                used.insert(slot)
                let r = Receiver(groupID: w.id, name: w.name, slot: slot)
                actions.append(.start(r))
                next.append(r)
            }
        }
        receivers = next
        return actions
    }

    /// A receiver that could not be started is forgotten, so that the next
    /// `update` starts it again rather than counting it as running.
    public mutating func forget(groupID: String) {
        receivers.removeAll { $0.groupID == groupID }
    }

    /// shairport-sync's configuration for a receiver (libconfig syntax).
    public static func configuration(for r: Receiver, audioPipe: String, metadataPipe: String) -> String {
        """
        general = {
          name = "\(escape(r.name))";
          output_backend = "pipe";
          mdns_backend = "avahi";
          port = \(r.port);
          udp_port_base = \(r.udpPortBase);
          udp_port_range = 10;
          ignore_volume_control = "yes";
        };
        sessioncontrol = {
          allow_session_interruption = "yes";
          session_timeout = 20;
        };
        metadata = {
          enabled = "yes";
          include_cover_art = "yes";
          pipe_name = "\(escape(metadataPipe))";
          pipe_timeout = 5000;
        };
        pipe = {
          name = "\(escape(audioPipe))";
        };

        """
    }

    /// A string inside libconfig's double quotes.
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s.unicodeScalars {
            switch c {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n", "\r", "\t": out += " "
            default: if c.value >= 0x20 { out.unicodeScalars.append(c) }
            }
        }
        return out
    }
}

/// When a child program that died is started again: at once the first
/// time, then doubling up to a ceiling while it keeps dying young; a run
/// that lasted `stableAfter` starts the count afresh.
public struct RestartBackoff: Sendable, Equatable {
    public let first: Int64, ceiling: Int64, stableAfter: Int64
    public private(set) var failures = 0

    public init(first: Int64 = 250_000_000, ceiling: Int64 = 30_000_000_000, stableAfter: Int64 = 60_000_000_000) {
        self.first = first; self.ceiling = ceiling; self.stableAfter = stableAfter
    }

    /// It exited after running `ranFor` ns: how long to wait before starting it again.
    public mutating func delay(afterRunning ranFor: Int64) -> Int64 {
        if ranFor >= stableAfter { failures = 0 }
        defer { failures += 1 }
        guard failures > 0 else { return first }
        let shift = min(failures, 16)
        return min(ceiling, first << Int64(shift))
    }
}
