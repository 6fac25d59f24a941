/// Which Sendspin server a listening speaker plays for when several dial
/// in (the spec's "Multiple servers (server-initiated)", connection.md):
/// the speaker holds one admitted connection; a new one completes its
/// handshake and stays provisional until its first `server/activate`, whose
/// `activities` rank it (`playback` > `pairing` > none). Equal or higher
/// than the holder's: admitted, and the holder is told `client/goodbye`
/// `another_server`; lower: refused with `concurrent_attempt`. When neither
/// declares an activity, the incoming wins only if it is the server that
/// last played here (kept across restarts by the shell) and the holder is
/// not. A provisional connection may wait 30 s for its activation; at most
/// `maximumProvisional` wait at once (more are refused before their
/// handshake, as the spec allows, "as if they were lower priority").
///
/// Pure accounting: the shell names each connection by a token, performs the
/// goodbyes and closes, and persists `lastPlaybackServer` when told to.
///
/// Thread contract: a value; the shell keeps it under one lock.
public struct SendspinAdmission: Sendable, Equatable {
    /// What a connection declared in its latest `server/activate`.
    public struct Holder: Sendable, Equatable {
        public var token: Int
        public var serverID: String
        public var activities: [String]
        public init(token: Int, serverID: String, activities: [String]) {
            self.token = token; self.serverID = serverID; self.activities = activities
        }
    }

    public enum Decision: Sendable, Equatable {
        /// Admitted; the holder it displaces (send it `another_server`, close it), if any.
        case admit(displacing: Int?)
        /// Refused: send it `concurrent_attempt` and close it.
        case reject
    }

    /// How long a provisional connection may go without `server/activate`.
    public static let provisionalNanoseconds: Int64 = 30 * nanosecondsPerSecond
    /// Provisional connections held at once (handshakes and waits for activation):
    /// twice what one address may hold (`Follower.sendspinConnectionsPerAddress`),
    /// so that one host that dials and says nothing cannot keep the real server out.
    public static let maximumProvisional = 4

    public private(set) var admitted: Holder?
    public private(set) var provisional: Set<Int> = []
    /// The server that last held the admitted connection with `playback` declared.
    public private(set) var lastPlaybackServer: String?
    private var nextToken = 1

    public init(lastPlaybackServer: String? = nil) { self.lastPlaybackServer = lastPlaybackServer }

    /// `playback` 2, `pairing` 1, nothing 0: the highest declared activity.
    public static func rank(_ activities: [String]) -> Int {
        activities.contains("playback") ? 2 : activities.contains("pairing") ? 1 : 0
    }

    /// A connection arrived: its token, or nil when `maximumProvisional` already wait (refuse it).
    public mutating func arrived() -> Int? {
        guard provisional.count < Self.maximumProvisional else { return nil }
        let token = nextToken
        nextToken += 1
        provisional.insert(token)
        return token
    }

    /// A provisional connection's first `server/activate`. The second value
    /// is a server id to persist as the last-playback server (nil: unchanged).
    public mutating func activated(_ incoming: Holder) -> (Decision, persist: String?) {
        guard provisional.remove(incoming.token) != nil else { return (.reject, nil) }
        if let current = admitted, !Self.admits(incoming, over: current, lastPlaybackServer: lastPlaybackServer) {
            return (.reject, nil)
        }
        let displaced = admitted?.token
        admitted = incoming
        return (.admit(displacing: displaced), notePlayback(incoming))
    }

    /// A later `server/activate` on the admitted connection: its rank changes, no arbitration.
    public mutating func updated(token: Int, activities: [String]) -> String? {
        guard admitted?.token == token else { return nil }
        admitted?.activities = activities
        return admitted.flatMap { notePlayback($0) }
    }

    /// A connection ended (closed, refused, displaced, timed out).
    public mutating func left(token: Int) {
        provisional.remove(token)
        if admitted?.token == token { admitted = nil }
    }

    static func admits(_ incoming: Holder, over current: Holder, lastPlaybackServer: String?) -> Bool {
        let a = rank(incoming.activities), b = rank(current.activities)
        if a != b { return a > b }
        if a > 0 { return true }
        return incoming.serverID == lastPlaybackServer && current.serverID != lastPlaybackServer
    }

    private mutating func notePlayback(_ holder: Holder) -> String? {
        guard holder.activities.contains("playback"), holder.serverID != lastPlaybackServer else { return nil }
        lastPlaybackServer = holder.serverID
        return holder.serverID
    }
}
