import TuttiCore
import TuttiLibrary
import TuttiStreams

// Types the leader's engine hands to its surfaces: what they show, and the
// podcast service's door (`PodcastControl`).

/// A room's equaliser at the leader, with the preset it was set from (nil: custom gains).
public struct RoomEqualizer: Equatable, Sendable {
    public var settings: EqualizerSettings
    public var preset: String?
    public init(settings: EqualizerSettings = .flat, preset: String? = "Flat") { self.settings = settings; self.preset = preset }
}

/// A paired speaker as control surfaces show it.
public struct PairedSpeakerInfo: Sendable, Equatable {
    public var name: String
    public var fingerprint: String
    public var pairedAt: Int64
    public var connected: Bool
    public init(name: String, fingerprint: String, pairedAt: Int64, connected: Bool) {
        self.name = name; self.fingerprint = fingerprint; self.pairedAt = pairedAt; self.connected = connected
    }
}

/// A pairing request as control surfaces show it.
public struct PairingRequestInfo: Sendable, Equatable {
    public var name: String
    public var address: String
    public var fingerprint: String
    public var byCode: Bool
    /// The protocol it came by: "tutti" (a Tutti speaker) or "sendspin" (a Sendspin player).
    public var via: String
    /// A Sendspin player's pairing-code method (`dynamic_pairing_code`: six digits it shows;
    /// `static_pairing_code`: eight printed on it), when it waits for a code.
    public var method: String?
    public init(name: String, address: String, fingerprint: String, byCode: Bool, via: String = "tutti", method: String? = nil) {
        self.name = name; self.address = address; self.fingerprint = fingerprint; self.byCode = byCode; self.via = via; self.method = method
    }
}

/// What `pair.code` did: paired the speaker named, or found nobody waiting, or the code was wrong.
public enum PairByCodeOutcome: Equatable, Sendable {
    case paired(String)
    case nobodyWaiting
    case wrongCode
}

/// Why a podcast could not be subscribed or refreshed.
public enum PodcastError: Error, CustomStringConvertible, Sendable {
    case fetch(url: String, StreamError)
    case feed(url: String, FeedError)
    case library(LibraryError)

    public var description: String {
        switch self {
        case .fetch(_, let e): "\(e)"
        case .feed(let url, let e): "\(url): \(e)"
        case .library(let e): "\(e)"
        }
    }

    /// What the person is told: the download's, the feed's or the library's failure in the catalogue's words.
    public var message: UserMessage {
        switch self {
        case .fetch(_, let e): e.message
        case .feed(let url, let e): UserMessage(.feedAt, ["url": url], messages: ["reason": e.message])
        case .library(let e): e.message
        }
    }
}

/// One show's refresh: the show as it is now, what the feed changed, and why it failed if it did.
public struct PodcastRefreshOutcome: Sendable {
    public var podcast: Podcast
    /// Nil: not modified (304).
    public var update: PodcastUpdate?
    public var error: String?
    public init(podcast: Podcast, update: PodcastUpdate?, error: String?) { self.podcast = podcast; self.update = update; self.error = error }
}

/// What a surface may ask of the leader's podcasts (`PodcastService`).
public protocol PodcastControl: AnyObject, Sendable {
    /// The library the shows and episodes are kept in.
    var library: Library { get }
    /// Fetches, parses and stores a feed; the new show.
    func subscribe(url: String) throws(PodcastError) -> Podcast
    /// Refreshes one show now (conditional on its validators).
    func refresh(_ podcast: Podcast) -> PodcastRefreshOutcome
    /// Refreshes every show now.
    func refreshAll() -> [PodcastRefreshOutcome]
    /// Drops a show and its episodes.
    func unsubscribe(_ id: PodcastID) throws(LibraryError)
    /// Whether `uri` is a known episode's enclosure.
    func isEpisode(_ uri: String) -> Bool
}
