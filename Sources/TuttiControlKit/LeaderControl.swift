import TuttiCore
import TuttiLibrary
import TuttiStreams

/// What a control surface (MPD, and in turn JSON-RPC, Snapcast's control,
/// the web app, Sendspin) may ask of the leader's engine: the one door
/// between them. A surface module depends on this and on nothing inside
/// the engine, so a change inside the engine cannot reach past it, and a
/// surface can be tested, fuzzed or written anew against it alone.
public protocol LeaderControl: AnyObject, Sendable {
    /// Every change, from any surface, as it happens.
    var events: LeaderEventHub { get }
    /// The settings a surface serves its clients by.
    var surfaceSettings: SurfaceSettings { get }
    /// The music library (nil: the leader plays files it was given, without one).
    var library: Library? { get }
    /// Who may do what from where (password, loopback, guests).
    var controlAccess: ControlAccess { get }
    /// Logins, counted per host.
    var login: ControlLogin { get }
    /// The thread that accepts on every TCP port: a surface's port joins it (`TCPService`).
    var acceptLoop: AcceptLoop { get }

    /// What the main group plays now.
    var nowPlaying: NowPlaying { get }
    /// The main group's queue.
    var queue: PlayQueue { get }
    /// Rooms known (connected, placed in a group, or configured), sorted.
    var knownRooms: [String] { get }
    /// Rooms connected now, sorted.
    var followerNames: [String] { get }
    /// How long the main group has played since the leader started, ns.
    var playedNanoseconds: Int64 { get }
    /// Every group with a player: its rooms and what it plays.
    var groups: [GroupStatus] { get }
    /// What a radio stream says it plays (nil: not a stream, or it said nothing).
    func metadata(ofStream uri: String) -> StreamMetadata?

    /// Does `command` on a group's player (nil: the main group).
    @discardableResult func perform(_ command: PlayerCommand, group: String?) throws(PlayerError) -> CommandOutcome
    func group(ofRoom room: String) -> RoomGroups.Group
    func settings(of room: String) -> RoomSettings
    /// Sets a room's volume, mute and latency trim; applied at once if it is connected.
    func configure(room: String, _ settings: RoomSettings)
    /// Forgets a room that is gone: its settings and its place in a group.
    func forget(room: String)
    func volume(ofGroup id: String) -> UInt8?
    /// Sets a group's volume; the rooms whose volume changed.
    @discardableResult func setVolume(group id: String, _ volume: UInt8) -> [String]
    /// The rooms' balance for a group volume change (kept while the group's rooms are the same).
    func balance(ofGroup group: String, rooms: [String]) -> [Double]
    /// A room's own volume changed: its group's balance is what the rooms are at now.
    func forgetBalance(ofGroup group: String)
    @discardableResult func moveRooms(_ rooms: [String], to idOrName: String) throws(GroupError) -> GroupStatus
    @discardableResult func separate(room: String) throws(GroupError) -> GroupStatus
    /// Renames a group (by id or name).
    @discardableResult func renameGroup(_ idOrName: String, to name: String) throws(GroupError) -> GroupStatus
    /// What a phone plays into a group over AirPlay, while one does.
    func airPlayNowPlaying(group: String?) -> AirPlayNowPlaying?
    /// A file URI a client named, checked against the folders it may name (see `MediaFolders`).
    func confine(_ uri: String) throws(PathConfinementError) -> String
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

    public init(outboxLimits: ClientOutbox.Limits, clientStallMilliseconds: Int, musicDirectory: String?) {
        self.outboxLimits = outboxLimits
        self.clientStallMilliseconds = clientStallMilliseconds
        self.musicDirectory = musicDirectory
    }
}
