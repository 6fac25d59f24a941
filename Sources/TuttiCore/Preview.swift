// Previews (issue 34): 30 seconds from the middle of a library track, cut
// and encoded on demand for one phone (GET /preview/ID on the web app), with
// no room, queue or history touched. The rules are here, pure: which frames,
// how long an encoded preview is kept and how many, how many a client may
// ask for, and the Ogg Opus file the browser decodes. The shells (TuttiDecode's
// `PreviewEncoder`, TuttiLeader's `PreviewService`, the web surface) perform them.

/// Which frames of a track a preview plays: the middle `seconds`, or the
/// whole track when it is shorter.
public enum PreviewWindow {
    /// How long a preview plays.
    public static let seconds = 30

    /// (first frame, frame count) at the track's own `rate`, for a track of
    /// `total` frames (0 or less: unknown, then the first `seconds`).
    public static func frames(total: Int, rate: Int, seconds: Int = PreviewWindow.seconds) -> (start: Int, count: Int) {
        let wanted = max(1, rate) * max(1, seconds)
        guard total > 0 else { return (0, wanted) }
        guard total > wanted else { return (0, total) }
        return ((total - wanted) / 2, wanted)
    }
}

/// Why a preview cannot be given, with what the person is told.
public enum PreviewError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The leader keeps no library.
    case noLibrary
    /// No track has this id.
    case unknownTrack(Int64)
    /// The file could not be opened or decoded.
    case undecodable(Int64, reason: String)
    /// The preview worker's queue is full.
    case busy
    /// The leader is stopping.
    case stopping

    public var message: UserMessage {
        switch self {
        case .noLibrary: UserMessage(.previewNoLibrary)
        case .unknownTrack(let id): UserMessage(.previewUnknownTrack, ["id": String(id)])
        case .undecodable(let id, let reason): UserMessage(.previewUndecodable, ["id": String(id), "reason": reason])
        case .busy, .stopping: UserMessage(.previewBusy)
        }
    }

    public var description: String { message.description }
}

/// An encoded preview: an Ogg Opus file, and whether it came from the cache.
public struct TrackPreview: Sendable, Equatable {
    public var bytes: [UInt8]
    public var cached: Bool
    /// How long its encode took (ms; that of the encode that filled the cache, for a hit).
    public var encodeMilliseconds: Int64
    public init(bytes: [UInt8], cached: Bool, encodeMilliseconds: Int64) {
        self.bytes = bytes; self.cached = cached; self.encodeMilliseconds = encodeMilliseconds
    }
}

/// The encoded previews kept for a while, so a second press (or a second
/// phone) does not decode again: at most `entries` and `bytes`, each for
/// `lifetime`. Expired ones go first, then the oldest. Pure: time is passed
/// in (monotonic ns). Not thread-safe; the owner keeps it under a lock.
public struct PreviewCache: Sendable {
    public struct Limits: Sendable, Equatable {
        public var entries: Int
        public var bytes: Int
        public var lifetimeNanoseconds: Int64
        /// 16 previews of about 250 KB (30 s at 64 kbps), 8 MiB at most, each kept a minute.
        public init(entries: Int = 16, bytes: Int = 8 << 20, lifetimeNanoseconds: Int64 = 60 * nanosecondsPerSecond) {
            precondition(entries >= 1 && bytes >= 1 && lifetimeNanoseconds > 0)
            self.entries = entries; self.bytes = bytes; self.lifetimeNanoseconds = lifetimeNanoseconds
        }
    }

    struct Entry: Sendable {
        var preview: TrackPreview
        var storedAt: Int64
    }

    public let limits: Limits
    private var entries: [Int64: Entry] = [:]
    /// Bytes held now.
    public private(set) var bytes = 0

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Previews held now.
    public var count: Int { entries.count }

    /// The preview of `track` if one was stored less than the lifetime ago (marked `cached`).
    public mutating func lookup(_ track: Int64, now: Int64) -> TrackPreview? {
        guard let e = entries[track] else { return nil }
        guard now - e.storedAt < limits.lifetimeNanoseconds else {
            remove(track)
            return nil
        }
        var p = e.preview
        p.cached = true
        return p
    }

    /// Keeps `preview` for the lifetime; false when it alone is over the byte limit (not kept).
    @discardableResult
    public mutating func store(_ track: Int64, _ preview: TrackPreview, now: Int64) -> Bool {
        guard preview.bytes.count <= limits.bytes else { return false }
        remove(track)
        for (id, e) in entries where now - e.storedAt >= limits.lifetimeNanoseconds { remove(id) }
        while !entries.isEmpty && (entries.count + 1 > limits.entries || bytes + preview.bytes.count > limits.bytes) {
            let oldest = entries.min { $0.value.storedAt < $1.value.storedAt || ($0.value.storedAt == $1.value.storedAt && $0.key < $1.key) }!.key
            remove(oldest)
        }
        entries[track] = Entry(preview: preview, storedAt: now)
        bytes += preview.bytes.count
        return true
    }

    private mutating func remove(_ track: Int64) {
        if let e = entries.removeValue(forKey: track) { bytes -= e.preview.bytes.count }
    }
}

/// How many previews one client address may ask for: `requests` in a
/// window of `window` that starts at its first request; the next is
/// refused until the window ends (HTTP 429 with Retry-After). At most
/// `capacity` addresses are remembered: when full, those whose window is
/// over go first, then the one whose window started longest ago. Pure,
/// on injected time; not thread-safe.
public struct PreviewRateLimit: Sendable {
    public struct Policy: Sendable, Equatable {
        public var requests: Int
        public var windowNanoseconds: Int64
        public var capacity: Int
        /// 30 a minute: a person tapping through a page of results, not a script pulling the library.
        public init(requests: Int = 30, windowNanoseconds: Int64 = 60 * nanosecondsPerSecond, capacity: Int = 1_024) {
            precondition(requests >= 1 && windowNanoseconds > 0 && capacity >= 1)
            self.requests = requests; self.windowNanoseconds = windowNanoseconds; self.capacity = capacity
        }
    }

    struct Window: Sendable { var start: Int64; var count: Int }

    public let policy: Policy
    private var windows: [SourceAddress: Window] = [:]

    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Addresses remembered now.
    public var count: Int { windows.count }

    /// nil: admitted (and counted); else whole seconds until the address may ask again (at least 1).
    public mutating func admit(_ address: SourceAddress, now: Int64) -> Int64? {
        if var w = windows[address], now - w.start < policy.windowNanoseconds {
            guard w.count < policy.requests else {
                let wait = w.start + policy.windowNanoseconds - now
                return max(1, (wait + nanosecondsPerSecond - 1) / nanosecondsPerSecond)
            }
            w.count += 1
            windows[address] = w
            return nil
        }
        if windows[address] == nil && windows.count >= policy.capacity {
            for (a, w) in windows where now - w.start >= policy.windowNanoseconds { windows[a] = nil }
            if windows.count >= policy.capacity, let oldest = windows.min(by: { $0.value.start < $1.value.start })?.key { windows[oldest] = nil }
        }
        windows[address] = Window(start: now, count: 1)
        return nil
    }
}

/// An Ogg Opus file (RFC 7845) written from Opus packets of 48 kHz stereo:
/// the identification header and comment header each on a page of its own,
/// then the audio packets, a page a second. A page's granule position counts
/// every sample decoded up to its last packet, the pre-skip (the encoder's
/// look-ahead, which the decoder drops) included; the last page is marked
/// as the end and carries pre-skip + samples, so the decoder also drops the
/// padding of the last packet and the length comes out exact.
public struct OggOpusWriter: Sendable {
    public let serial: UInt32
    public let preSkip: Int
    private(set) public var bytes: [UInt8] = []
    private var sequence: UInt32 = 0
    private var pending: [[UInt8]] = []
    private var pendingSamples = 0
    private var granule: Int64
    /// Packets per page: 50 of 20 ms, a second.
    public static let packetsPerPage = 50

    public init(serial: UInt32, preSkip: Int, channels: UInt8 = 2, vendor: String = "Tutti") {
        self.serial = serial
        self.preSkip = preSkip
        granule = 0
        var head = Array("OpusHead".utf8)
        head.append(1) // version
        head.append(channels)
        head += Self.le16(UInt16(clamping: preSkip))
        head += Self.le32(48_000) // the input's rate, for information
        head += Self.le16(0) // output gain
        head.append(0) // mapping family 0: mono or stereo
        writePage([head], granule: 0, flags: 0x02)
        var tags = Array("OpusTags".utf8)
        let v = Array(vendor.utf8)
        tags += Self.le32(UInt32(v.count)) + v + Self.le32(0)
        writePage([tags], granule: 0, flags: 0)
    }

    /// Adds one Opus packet holding `samples` samples (per channel, at 48 kHz).
    public mutating func append(packet: [UInt8], samples: Int) {
        precondition(!packet.isEmpty && packet.count < 255 * 255, "an Opus packet is 1 to 65024 bytes")
        pending.append(packet)
        pendingSamples += samples
        if pending.count >= Self.packetsPerPage { flush(last: false, endGranule: nil) }
    }

    /// Ends the stream: `samples` is how many of the decoded samples after the pre-skip are the audio.
    public mutating func finish(samples: Int) -> [UInt8] {
        flush(last: true, endGranule: Int64(preSkip + samples))
        return bytes
    }

    private mutating func flush(last: Bool, endGranule: Int64?) {
        granule += Int64(pendingSamples)
        let g = endGranule.map { min($0, granule) } ?? granule
        if !pending.isEmpty || last { writePage(pending, granule: g, flags: last ? 0x04 : 0) }
        pending = []
        pendingSamples = 0
    }

    private mutating func writePage(_ packets: [[UInt8]], granule: Int64, flags: UInt8) {
        var lacing: [UInt8] = []
        for p in packets {
            lacing += [UInt8](repeating: 255, count: p.count / 255)
            lacing.append(UInt8(p.count % 255))
        }
        precondition(lacing.count <= 255, "a page holds at most 255 lacing values")
        let start = bytes.count
        bytes += Array("OggS".utf8)
        bytes.append(0) // version
        bytes.append(flags)
        bytes += Self.le64(UInt64(bitPattern: granule))
        bytes += Self.le32(serial)
        bytes += Self.le32(sequence)
        bytes += [0, 0, 0, 0] // the checksum, filled in below
        bytes.append(UInt8(lacing.count))
        bytes += lacing
        for p in packets { bytes += p }
        let crc = Self.crc32(bytes[start...])
        for i in 0..<4 { bytes[start + 22 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        sequence += 1
    }

    /// Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, initial 0, no final XOR.
    public static func crc32<C: Collection>(_ data: C) -> UInt32 where C.Element == UInt8 {
        var crc: UInt32 = 0
        for byte in data {
            crc ^= UInt32(byte) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
    static func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) } }
}
