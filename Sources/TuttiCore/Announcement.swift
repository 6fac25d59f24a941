/// Announcements (docs/sound.md "Announcements"): a chime, a URL or a
/// sentence spoken by espeak-ng, mixed on the chosen rooms' speakers over
/// whatever plays, in step, with the music ducked. Pure: what is asked,
/// checked where it enters, and when each announcement starts.

/// Which rooms hear it.
public enum AnnouncementTarget: Equatable, Sendable {
    case rooms([String])
    /// A group, by id or name: every room in it.
    case group(String)
    /// Every room with a speaker connected.
    case all
}

/// What is said.
public enum AnnouncementSource: Equatable, Sendable {
    /// A file path on the leader or an http(s) URL: anything the leader decodes.
    case url(String)
    /// Text spoken by espeak-ng in `language` (an espeak-ng voice: en, ko, de, fr-fr, …).
    case text(String, language: String)
}

/// One announcement as asked (`announce` over JSON-RPC, `tutti announce`, the web app).
public struct AnnouncementRequest: Equatable, Sendable {
    public var target: AnnouncementTarget
    public var source: AnnouncementSource
    /// The announcement's own level, 0…1 (not the room's volume: a quiet or muted room still hears the doorbell).
    public var volume: Double
    /// How far the music goes down meanwhile, −60…0 dB.
    public var duckDecibels: Double

    public static let defaultVolume = 0.7
    public static let defaultDuckDecibels = -20.0
    public static let defaultLanguage = "en"
    /// The longest text spoken (about a minute of speech is cut at `maximumSeconds` anyway).
    public static let maximumTextBytes = 1_000
    /// The longest announcement: the speakers' overlay ring holds 21.8 s.
    public static let maximumSeconds = 20

    public init(target: AnnouncementTarget, source: AnnouncementSource, volume: Double = defaultVolume,
                duckDecibels: Double = defaultDuckDecibels) throws(AnnouncementError) {
        if case .rooms(let rooms) = target, rooms.isEmpty || rooms.contains(where: \.isEmpty) { throw .noRooms }
        switch source {
        case .url(let url):
            guard !url.isEmpty, url.utf8.count <= 4_096 else { throw .badURL(url) }
        case .text(let text, let language):
            guard !text.allSatisfy(\.isWhitespace) else { throw .emptyText }
            guard text.utf8.count <= Self.maximumTextBytes else { throw .textTooLong(bytes: text.utf8.count) }
            guard Self.isLanguage(language) else { throw .badLanguage(language) }
        }
        guard volume.isFinite, volume >= 0, volume <= 1 else { throw .badVolume(volume) }
        guard duckDecibels.isFinite, duckDecibels >= -60, duckDecibels <= 0 else { throw .badDuck(duckDecibels) }
        self.target = target
        self.source = source
        self.volume = volume
        self.duckDecibels = duckDecibels
    }

    /// An espeak-ng voice name as given on its command line: letters, digits
    /// and '-' (e.g. "en", "en-us", "ko", "zh-yue"), at most 32 bytes.
    public static func isLanguage(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 32 && name.first != "-"
            && name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-" }
    }

    /// The wire's gain (‰) and duck (cB).
    public var gainPerMille: UInt16 { UInt16((volume * 1_000).rounded()) }
    public var duckCentibels: UInt16 { UInt16((-duckDecibels * 100).rounded()) }
}

/// When announcements start: at once (the command lead from now), or, when
/// one is still playing, queued a short gap after its end. (Queued, not
/// replaced: a doorbell during "dinner is ready" is heard after it.)
public struct AnnouncementQueue: Equatable, Sendable {
    /// Leader time the last announcement ends.
    public private(set) var busyUntil: LeaderTime?
    public static let gapNanoseconds: Int64 = 250 * nanosecondsPerMillisecond

    public init() {}

    /// The start of an announcement of `frames` frames asked at `now`, `lead` ahead.
    public mutating func schedule(now: LeaderTime, lead: Int64, frames: Int) -> LeaderTime {
        var start = now + max(lead, 0)
        if let busy = busyUntil, busy + Self.gapNanoseconds > start { start = busy + Self.gapNanoseconds }
        busyUntil = start + StreamFormat.nanoseconds(frames: frames)
        return start
    }
}

/// What an announcement did: who hears it, when, for how long.
public struct AnnouncementResult: Equatable, Sendable {
    public var id: UInt32
    /// The rooms' speakers it was sent to.
    public var speakers: [String]
    /// Chosen rooms with no speaker connected (nobody hears it there).
    public var notConnected: [String]
    /// Speakers of the chosen rooms that cannot mix one, each with why
    /// ("study (protocol v8)", "phone (a browser or Sendspin player)"): skipped, so
    /// one old speaker or a phone playing here does not silence the doorbell everywhere.
    public var cannotMix: [String]
    /// Leader time its first frame plays.
    public var startsAt: LeaderTime
    public var seconds: Double
    /// How long it waits behind announcements already playing (0: none).
    public var queuedSeconds: Double

    public init(id: UInt32, speakers: [String], notConnected: [String], cannotMix: [String] = [], startsAt: LeaderTime, seconds: Double,
                queuedSeconds: Double) {
        self.id = id; self.speakers = speakers; self.notConnected = notConnected; self.cannotMix = cannotMix
        self.startsAt = startsAt; self.seconds = seconds; self.queuedSeconds = queuedSeconds
    }
}

/// Why an announcement was refused, with what to do instead.
public enum AnnouncementError: Error, Equatable, Sendable, CustomStringConvertible {
    case noRooms
    case unknownRoom(String, known: [String])
    case unknownGroup(String, known: [String])
    case badURL(String)
    case emptyText
    case textTooLong(bytes: Int)
    case badLanguage(String)
    case badVolume(Double)
    case badDuck(Double)
    /// None of the chosen rooms has a speaker connected.
    case nobodyListening(rooms: [String])
    /// Every connected speaker of the chosen rooms is too old to mix an announcement (room, protocol version), or not a Tutti speaker.
    case speakersCannotAnnounce([String])
    /// The audio could not be fetched or decoded.
    case undecodable(String)
    case tooLong(seconds: Double)
    /// espeak-ng is missing, failed or took too long.
    case speech(String)
    /// A minute of announcements is already waiting.
    case busy(seconds: Double)

    public var description: String { message.description }

    /// What a person is told, from the message catalogue (docs/translating.md).
    public var message: UserMessage {
        switch self {
        case .noRooms: UserMessage(.announceNoRooms)
        case .unknownRoom(let room, let known):
            known.isEmpty ? UserMessage(.roomUnknown, ["room": room]) : UserMessage(.roomUnknownOfKnown, ["room": room, "known": known.joined(separator: ", ")])
        case .unknownGroup(let group, let known): UserMessage(.groupUnknown, ["group": group, "known": known.joined(separator: ", ")])
        case .badURL(let url): UserMessage(.announceBadURL, ["url": String(url.prefix(80))])
        case .emptyText: UserMessage(.announceEmptyText)
        case .textTooLong(let n): UserMessage(.announceTextTooLong, ["bytes": "\(n)", "limit": "\(AnnouncementRequest.maximumTextBytes)"])
        case .badLanguage(let l): UserMessage(.announceBadVoice, ["voice": String(l.prefix(40))])
        case .badVolume(let v): UserMessage(.announceBadVolume, ["value": "\(v)"])
        case .badDuck(let d): UserMessage(.announceBadDuck, ["value": "\(d)"])
        case .nobodyListening(let rooms):
            rooms.isEmpty ? UserMessage(.announceNobodyListeningAnywhere) : UserMessage(.announceNobodyListening, ["rooms": rooms.joined(separator: ", ")])
        case .speakersCannotAnnounce(let list):
            UserMessage(.announceSpeakersCannotMix, ["speakers": list.joined(separator: ", "), "version": "\(WireProtocol.overlayVersion)"])
        case .undecodable(let reason): UserMessage(.announceUndecodable, ["reason": reason])
        case .tooLong(let s): UserMessage(.announceTooLong, ["seconds": "\(Int(s.rounded()))", "limit": "\(AnnouncementRequest.maximumSeconds)"])
        case .speech(let reason): UserMessage(.announceSpeech, ["reason": reason])
        case .busy(let s): UserMessage(.announceBusy, ["seconds": "\(Int(s.rounded()))"])
        }
    }
}
