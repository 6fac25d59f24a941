/// Who may do what on a control surface (JSON-RPC, the web app, MPD,
/// Snapcast's control API). A client on this machine (loopback) may do
/// everything, as may everyone when no password is set; any other client
/// must log in with the password (or a token a login handed out), and until
/// then may only look (guest access on) or nothing at all.
public struct ControlAccess: Sendable, Equatable {
    public enum Level: Int, Sendable, Comparable {
        /// May only log in.
        case none
        /// May read what plays, the rooms and the library; may change nothing.
        case guest
        /// May do everything.
        case full
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var name: String { switch self { case .none: "none"; case .guest: "guest"; case .full: "full" } }
    }

    /// nil: no password, every client has full access.
    public var password: String?
    /// Clients that have not logged in may look (read-only methods).
    public var guestReadOnly: Bool
    /// Clients on this machine need no login (false: a proxy on this machine forwards strangers).
    public var trustsLoopback: Bool

    public init(password: String? = nil, guestReadOnly: Bool = false, trustsLoopback: Bool = true) {
        self.password = password
        self.guestReadOnly = guestReadOnly
        self.trustsLoopback = trustsLoopback
    }

    /// Where a new client starts.
    public func initialLevel(peerIsLoopback: Bool) -> Level {
        if password == nil || (peerIsLoopback && trustsLoopback) { return .full }
        return guestReadOnly ? .guest : .none
    }

    /// JSON-RPC methods that change nothing: what a guest may call.
    public static let readOnlyMethods: Set<String> = [
        "player.status", "queue.list", "rooms.list", "groups.list", "party.status",
        "library.search", "library.artists", "library.albums", "library.genres", "library.albumTracks", "library.track", "library.stats",
        "playlists.list", "playlists.entries", "favourites.list", "history.list", "searches.recent",
        "eq.presets", "cache.list", "cache.size", "podcasts.list", "podcasts.episodes",
    ]

    /// MPD commands that change nothing: what a guest may send.
    public static let mpdReadOnlyCommands: Set<String> = [
        "status", "stats", "currentsong", "clearerror", "ping", "tagtypes", "commands", "notcommands", "urlhandlers", "decoders",
        "binarylimit", "replay_gain_status", "channels", "readmessages", "listmounts", "listneighbors", "outputs", "getvol",
        "playlist", "playlistinfo", "playlistid", "plchanges", "plchangesposid", "playlistfind", "playlistsearch",
        "find", "search", "count", "list", "listall", "listallinfo", "lsinfo", "listfiles", "albumart", "readpicture",
        "listplaylists", "listplaylist", "listplaylistinfo", "idle", "noidle",
    ]

    /// Whether an MPD client at `level` may send `command` (`password` always; `ping` too, which tells nothing).
    public static func permitsMPD(_ level: Level, command: String) -> Bool {
        if command == "password" || command == "ping" { return true }
        switch level {
        case .full: return true
        case .guest: return mpdReadOnlyCommands.contains(command)
        case .none: return false
        }
    }

    /// Whether a client at `level` may call `method` (logging in is always allowed).
    public static func permits(_ level: Level, method: String) -> Bool {
        if method.hasPrefix("auth.") { return true }
        switch level {
        case .full: return true
        case .guest: return readOnlyMethods.contains(method)
        case .none: return false
        }
    }

    /// Whether `host` (an address a peer connected from) is this machine.
    public static func isLoopback(_ host: String) -> Bool {
        host.hasPrefix("127.") || host == "::1" || host.hasPrefix("::ffff:127.") || host == "localhost"
    }
}
