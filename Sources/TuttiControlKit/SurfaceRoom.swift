import TuttiCore

/// A room that a surface serves over a protocol of its own (a Sendspin
/// player, a web page that plays here): the leader treats it as it treats a speaker (it is listed,
/// grouped, moved, its volume and mute are the room's) and hands it the
/// messages a speaker of its group gets: `follow` (its stream, on joining
/// and on a change of group), `chunk` (audio encoded once for every room,
/// in `LeaderControl.streamCodec`), `flush`, `streamEnd`, `settings`.
///
/// Thread contract: `deliver` is called on the group's source thread or a
/// control thread, under the stream's backlog lock: it must queue and
/// return, never block or call back into the leader. `close` may come from
/// any thread, once or more.
public protocol SurfaceRoom: AnyObject, Sendable {
    func deliver(_ message: Message)
    /// The leader ends the room's part (it is stopping, or the room was detached).
    func close(reason: String)
    /// True: the room plays its channel map and EQ (it is sent `channels`
    /// and `equalizer` as a Tutti speaker is, on joining and on a change);
    /// false (the default): it plays what it is sent, and a channel map is
    /// refused for it.
    var playsRoomSound: Bool { get }
    /// What the room is, for the errors that say why it cannot do something (a reverb).
    var kind: SurfaceRoomKind { get }
}

/// The kinds of surface room.
public enum SurfaceRoomKind: Sendable {
    /// A Sendspin player (a stock one, or a Home Assistant speaker).
    case sendspinPlayer
    /// A browser playing here (the web app's Play here).
    case browser
}

extension SurfaceRoom {
    public var playsRoomSound: Bool { false }
}
