// Previews (issue 34): 30 seconds from the middle of a library track, cut
// and encoded on demand for one phone (GET /preview/ID on the web app), with
// no room, queue or history touched. The rules are here, pure: which frames,
// how long an encoded preview is kept and how many, how many a client may
// ask for, how many may wait at once, and the Opus-in-Ogg mapping of the
// file the browser decodes (its pages are libogg's). The shells (TuttiDecode's
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
    /// This address already waits for its share of previews (how many).
    case addressBusy(SourceAddress, share: Int)
    /// The leader is stopping.
    case stopping

    public var message: UserMessage {
        switch self {
        case .noLibrary: UserMessage(.previewNoLibrary)
        case .unknownTrack(let id): UserMessage(.previewUnknownTrack, ["id": String(id)])
        case .undecodable(let id, let reason): UserMessage(.previewUndecodable, ["id": String(id), "reason": reason])
        case .busy, .stopping: UserMessage(.previewBusy)
        case .addressBusy(let address, let share): UserMessage(.previewAddressBusy, ["address": address.description, "count": String(share)])
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

/// How many preview requests may wait at once, their preview being made or
/// queued: each holds one of the web server's 8 handler lanes until it is
/// answered. Counted per address first, as connections are
/// (`ConnectionShares`, the same accounting): one address holds at most 2,
/// a quarter of the lanes as a host's share of a port is a quarter, and all
/// addresses together at most 4, so half the lanes always serve the pages
/// and JSON-RPC. Two, not one: a person who presses a second preview while
/// the first is still being made has both waiting, and is not refused. An
/// address that floods still holds two places while another's preview waits
/// behind at most those two. A cache hit waits for nothing and holds no place.
/// No reserve for this machine: a preview is a phone's.
public enum PreviewWaiting {
    public static let limits = ConnectionShares.Limits(port: 4, perAddress: 2, loopbackReserve: 0)
    /// Seconds a refused request is told to wait (Retry-After): a preview takes about a second to make.
    public static let retryAfterSeconds = 2
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

/// Opus in Ogg (RFC 7845), the mapping only: the packets an Ogg Opus
/// stream carries, with their granule positions and flags, and where a page
/// must end. The container (pages, lacing, checksums) is libogg's, written
/// by TuttiDecode's `OggOpusWriter`; this says what to hand it. For 48 kHz
/// audio, mono or stereo (channel mapping family 0).
///
/// The identification header (`OpusHead`) and the comment header
/// (`OpusTags`) each end their page. An audio packet's granule position
/// counts every sample decoded up to its end, the pre-skip (the encoder's
/// look-ahead, which the decoder drops) included. The last packet ends the
/// stream and carries pre-skip + the audio's samples, so the decoder also
/// drops the padding of the last packet and the length comes out exact
/// (end trimming, RFC 7845 §4.4). Each packet is held until the next one
/// comes or the stream ends, since only then is it known whether it is the
/// last. Pure; not thread-safe.
public struct OpusOggMapping: Sendable {
    /// One packet for the Ogg stream, in order.
    public struct Packet: Sendable, Equatable {
        public var bytes: [UInt8]
        /// Samples (per channel, at 48 kHz) decoded up to this packet's end, the pre-skip included; 0 for the headers.
        public var granule: Int64
        /// The packet's number in the stream, from 0 (the identification header).
        public var number: Int64
        /// The stream's first packet (`b_o_s`).
        public var first: Bool
        /// The stream's last packet (`e_o_s`).
        public var last: Bool
        /// Its page must end after it (the headers).
        public var endsPage: Bool
    }

    public let preSkip: Int
    public let channels: Int
    private var held: Packet?
    private var heldSamples = 0
    private var decoded: Int64 = 0
    private var next: Int64 = 2

    /// `preSkip`: the encoder's look-ahead in samples at 48 kHz.
    public init(preSkip: Int, channels: Int = 2) {
        precondition((0...Int(UInt16.max)).contains(preSkip) && (1...2).contains(channels), "pre-skip 0...65535, mono or stereo")
        self.preSkip = preSkip
        self.channels = channels
    }

    /// The two header packets, each ending its page.
    public func headers(vendor: String = "Tutti") -> [Packet] {
        var head = Array("OpusHead".utf8)
        head.append(1) // version
        head.append(UInt8(channels))
        head += Self.le16(UInt16(preSkip))
        head += Self.le32(48_000) // the input's rate, for information
        head += Self.le16(0) // output gain
        head.append(0) // mapping family 0: mono or stereo
        var tags = Array("OpusTags".utf8)
        let v = Array(vendor.utf8)
        tags += Self.le32(UInt32(v.count)) + v + Self.le32(0) // no user comments
        return [Packet(bytes: head, granule: 0, number: 0, first: true, last: false, endsPage: true),
                Packet(bytes: tags, granule: 0, number: 1, first: false, last: false, endsPage: true)]
    }

    /// Takes one Opus packet of `samples` samples (per channel, at 48 kHz);
    /// gives back the one before it, now known not to be the last.
    public mutating func append(_ packet: [UInt8], samples: Int) -> Packet? {
        precondition(!packet.isEmpty && samples > 0, "an Opus packet is at least a byte and decodes to samples")
        decoded += Int64(samples)
        let before = held
        held = Packet(bytes: packet, granule: decoded, number: next, first: false, last: false, endsPage: false)
        heldSamples = samples
        next += 1
        return before
    }

    /// Ends the stream: `samples` is how many of the decoded samples after
    /// the pre-skip are the audio. Gives back the last packet, marked as the
    /// end and trimmed to pre-skip + `samples` (never beyond what was
    /// decoded, and never into the packets before it: trimming may drop only
    /// the last packet's samples); nil when no audio packet came.
    public mutating func finish(samples: Int) -> Packet? {
        guard var last = held else { return nil }
        held = nil
        last.last = true
        last.endsPage = true
        last.granule = max(decoded - Int64(heldSamples), min(Int64(preSkip + max(0, samples)), decoded))
        return last
    }

    static func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }
    static func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * UInt32($0))) } }
}
