import TuttiAuth
import TuttiCore
import TuttiLibrary
import TuttiStreams

/// What a control surface (MPD, and in turn JSON-RPC, Snapcast's control,
/// the web app, Sendspin) may ask of the leader's engine: the one door
/// between them. A surface module depends on this and on nothing inside
/// the engine, so a change inside the engine cannot reach past it, and a
/// surface can be tested, fuzzed or written anew against it alone.
public protocol LeaderControl: AnyObject, Sendable {
    // MARK: Serving clients

    /// Every change, from any surface, as it happens.
    var events: LeaderEventHub { get }
    /// The settings a surface serves its clients by.
    var surfaceSettings: SurfaceSettings { get }
    /// Who may do what from where (password, loopback, guests).
    var controlAccess: ControlAccess { get }
    /// Logins, counted per host.
    var login: ControlLogin { get }
    /// The thread that accepts on every TCP port: a surface's port joins it (`TCPService`).
    var acceptLoop: AcceptLoop { get }

    // MARK: Players and queues

    /// What the main group plays now.
    var nowPlaying: NowPlaying { get }
    /// The main group's queue.
    var queue: PlayQueue { get }
    /// What a group plays now (nil: the main group).
    func nowPlaying(group: String?) throws(PlayerError) -> NowPlaying
    /// A group's queue (nil: the main group).
    func queue(group: String?) throws(PlayerError) -> PlayQueue
    /// Does `command` on a group's player (nil: the main group).
    @discardableResult func perform(_ command: PlayerCommand, group: String?) throws(PlayerError) -> CommandOutcome
    /// How long the main group has played since the leader started, ns.
    var playedNanoseconds: Int64 { get }
    /// Why the player state is not being saved, while it is not.
    var saveFailure: String? { get }
    /// Drops from every queue the local files that are gone.
    func dropMissingFilesFromQueue()
    /// A file URI a client named, checked against the folders it may name (see `MediaFolders`).
    func confine(_ uri: String) throws(PathConfinementError) -> String
    /// What a radio stream says it plays (nil: not a stream, or it said nothing).
    func metadata(ofStream uri: String) -> StreamMetadata?
    /// What a phone plays into a group over AirPlay, while one does.
    func airPlayNowPlaying(group: String?) -> AirPlayNowPlaying?
    /// The cover art a phone sent over AirPlay, by the id `AirPlayNowPlaying` gives.
    func airPlayArtwork(id: String) -> [UInt8]?

    // MARK: Rooms

    /// Rooms known (connected, placed in a group, or configured), sorted; a stereo pair once, by its name.
    var knownRooms: [String] { get }
    /// Rooms connected now, sorted; a stereo pair by its name, while either speaker is.
    var followerNames: [String] { get }
    /// Speakers connected now, by the names they joined with (a stereo pair's two apart), sorted.
    var speakerNames: [String] { get }
    /// Each connected room's last health report, by name.
    var health: [String: HealthReport] { get }
    /// Each connected room's last sync report (v5 speakers), by name.
    var syncHealth: [String: SyncReport] { get }
    /// A room's volume, mute and latency trim (a pair's name: its left speaker's; a speaker's name: its own).
    func settings(of room: String) -> RoomSettings
    /// Sets a room's volume, mute and latency trim; applied at once if it is connected.
    func configure(room: String, _ settings: RoomSettings)
    /// Forgets a room that is gone: its settings and its place in a group.
    func forget(room: String)
    /// The codec of the audio chunks rooms are sent (48 kHz stereo).
    var streamCodec: Codec { get }
    /// A room a surface serves joins: from now on it hears its group (see `SurfaceRoom`).
    func attach(room name: String, _ room: any SurfaceRoom)
    /// It left: it is no longer sent anything, and no longer listed as connected.
    func detach(_ room: any SurfaceRoom)

    // MARK: Sound

    /// A group's volume: the loudest of its rooms (nil: no room).
    func volume(ofGroup id: String) -> UInt8?
    /// Sets a group's volume; the rooms whose volume changed.
    @discardableResult func setVolume(group id: String, _ volume: UInt8) -> [String]
    /// Whether every room of a group is muted.
    func muted(group id: String) -> Bool
    /// Mutes or unmutes a group; the rooms whose mute changed.
    @discardableResult func setMuted(group id: String, _ muted: Bool) -> [String]
    /// The rooms' balance for a group volume change (kept while the group's rooms are the same).
    func balance(ofGroup group: String, rooms: [String]) -> [Double]
    /// A room's own volume changed: its group's balance is what the rooms are at now.
    func forgetBalance(ofGroup group: String)
    /// A room's equaliser.
    func equalizer(of room: String) -> RoomEqualizer
    /// Sets a room's equaliser.
    func setEqualizer(room: String, _ eq: RoomEqualizer)
    /// Sets a room's equaliser from a preset; what it is now.
    @discardableResult func setPreset(room: String, _ name: String) throws(EqualizerError) -> RoomEqualizer
    /// The built-in presets, then the saved ones.
    var presets: [EqualizerPreset] { get }
    /// Saves a custom preset.
    @discardableResult func savePreset(_ name: String, gains: [Double]) throws(EqualizerError) -> EqualizerPreset
    /// Deletes a custom preset.
    func deletePreset(_ name: String) throws(EqualizerError)
    /// A room's own channel map (a stereo pair's speakers play their sides instead).
    func channels(of room: String) -> ChannelMap
    /// Sets a room's channel map; refused (typed) for an unknown room, a pair's speaker, or a speaker that cannot play one.
    func setChannels(room: String, _ map: ChannelMap) throws(ChannelMapError)
    /// A room's reverb (a stereo pair's, by its name or either speaker's; off unless set).
    func reverb(of room: String) -> ReverbSettings
    /// Sets a room's reverb (a pair's on both speakers); refused (typed) for an unknown room or a speaker that cannot play one.
    func setReverb(room: String, _ settings: ReverbSettings) throws(ReverbRefusal)

    // MARK: Announcements

    /// Mixes an announcement over what the chosen rooms play, in step, the music ducked; no queue changes.
    func announce(_ request: AnnouncementRequest) throws(AnnouncementError) -> AnnouncementResult

    // MARK: Stereo pairs

    /// The stereo pairs: each is one room in `knownRooms` and `groups` (by its name), two speakers on the wire.
    var stereoPairList: [StereoPair] { get }
    /// Makes two rooms one: `left` plays the left channel, `right` the right; volume, mute, EQ and group shared.
    @discardableResult func pair(left: String, right: String, name: String?) throws(ChannelMapError) -> StereoPair
    /// Ends a pair (by its name or either speaker's).
    @discardableResult func unpair(_ name: String) throws(ChannelMapError) -> StereoPair
    /// Swaps a pair's sides (by its name or either speaker's).
    @discardableResult func swapPair(_ name: String) throws(ChannelMapError) -> StereoPair

    // MARK: Groups

    /// Every group with a player: its rooms and what it plays.
    var groups: [GroupStatus] { get }
    /// The group a room is in (the main group if it was never placed).
    func group(ofRoom room: String) -> RoomGroups.Group
    /// Makes a group of `rooms` (moved out of theirs).
    @discardableResult func createGroup(name: String, rooms: [String]) throws(GroupError) -> GroupStatus
    /// Deletes a group; the rooms moved back to the main group.
    @discardableResult func deleteGroup(_ idOrName: String) throws(GroupError) -> [String]
    /// Moves rooms into a group (by id or name).
    @discardableResult func moveRooms(_ rooms: [String], to idOrName: String) throws(GroupError) -> GroupStatus
    /// Takes a room out of its group into one of its own.
    @discardableResult func separate(room: String) throws(GroupError) -> GroupStatus
    /// Renames a group (by id or name).
    @discardableResult func renameGroup(_ idOrName: String, to name: String) throws(GroupError) -> GroupStatus
    /// Every room into one group (nil: the main group).
    @discardableResult func partyOn(group idOrName: String?) throws(GroupError) -> GroupStatus
    /// Ends party mode; the rooms moved back.
    @discardableResult func partyOff() -> [String]
    /// Whether party mode is on.
    var partyActive: Bool { get }

    // MARK: Speakers (pairing)

    /// Which speakers may join.
    var speakersMode: SpeakerAdmission { get }
    /// The leader's key, as a speaker shows it when pairing.
    var speakerKeyFingerprint: String { get }
    /// The speakers paired with this leader.
    var pairedSpeakers: [PairedSpeakerInfo] { get }
    /// Speakers waiting to be paired.
    var pairingRequests: [PairingRequestInfo] { get }
    /// Sendspin clients' trust, with `--sendspin` (the Sendspin surface's channels and approvals).
    var sendspinTrust: SendspinTrustStore? { get }
    /// Allows or refuses a waiting speaker; false if none had that name.
    @discardableResult func decidePairing(name: String, allow: Bool) -> Bool
    /// Pairs the speaker that shows `code`.
    func pairByCode(_ code: String) -> PairByCodeOutcome
    /// Forgets a paired speaker and closes its connections; false if none had that name.
    @discardableResult func forgetSpeaker(_ name: String) -> Bool

    // MARK: Calibration (Leader+Calibration.swift)

    /// Plays a calibration plan in `rooms`, one sweep a slot, and puts everything back after; returns the plan.
    func playCalibration(rooms: [String], slotNanoseconds: Int64) throws(CalibrationPlayError) -> CalibrationPlan
    /// Whether a calibration plan is playing.
    var calibrationRunning: Bool { get }

    // MARK: Library, podcasts, cache

    /// The music library (nil: the leader plays files it was given, without one).
    var library: Library? { get }
    /// Where playlists are imported from and exported to (nil: nowhere).
    var playlistFolder: String? { get }
    /// The podcasts (nil: no library to keep them in).
    var podcastControl: (any PodcastControl)? { get }
    /// The offline cache for network tracks (nil: no place for it).
    var cache: StreamCache? { get }

    // MARK: Previews

    /// 30 s from the middle of a library track as Ogg Opus, for one phone
    /// (no player, queue or history touched): from the cache, or made on
    /// the leader's preview worker while the caller waits, within the share
    /// of waiting previews of the client's `address` (`PreviewWaiting`).
    func preview(of track: TrackID, for address: SourceAddress) throws(PreviewError) -> TrackPreview
}

extension LeaderControl {
    /// On the main group.
    @discardableResult public func perform(_ command: PlayerCommand) throws(PlayerError) -> CommandOutcome { try perform(command, group: nil) }
}

/// The leader's settings that shape how a surface serves its clients.
public struct SurfaceSettings: Sendable {
    /// Each client's outbox (`ClientOutbox`), its stall limit included.
    public var outboxLimits: ClientOutbox.Limits
    /// How long a write to a client may make no progress before it is dropped.
    public var clientStallMilliseconds: Int
    /// The music folder, for surfaces that show files (MPD's `lsinfo`).
    public var musicDirectory: String?
    /// Frames in each chunk the group's source sends (a Sendspin player's smallest buffer is two chunks).
    public var framesPerChunk: Int
    /// How far ahead of its time the source sends each chunk: the most audio a room is ever sent ahead.
    public var bufferAheadNanoseconds: Int64

    public init(outboxLimits: ClientOutbox.Limits, clientStallMilliseconds: Int, musicDirectory: String?,
                framesPerChunk: Int = 960, bufferAheadNanoseconds: Int64 = 1_000_000_000) {
        self.outboxLimits = outboxLimits
        self.clientStallMilliseconds = clientStallMilliseconds
        self.musicDirectory = musicDirectory
        self.framesPerChunk = framesPerChunk
        self.bufferAheadNanoseconds = bufferAheadNanoseconds
    }
}

/// Which speakers may join a leader (`--speakers`), as the surfaces name it.
public enum SpeakerAdmission: String, Sendable {
    /// Any speaker, unencrypted too (a closed network, tests).
    case open
    /// Speakers that know the room key.
    case roomKey = "room-key"
    /// Paired speakers only: a person approves each new one.
    case paired
}
