import TuttiControlKit
import TuttiSystem

/// The control surfaces a leader serves (JSON-RPC, the web app, MPD,
/// Snapcast's control), as the composition root builds them (tuttid:
/// TuttiDaemon's `ControlSurfaces`). The engine knows them only as this,
/// so it imports no surface module and no web server; they know the engine
/// only as `LeaderControl`.
public protocol LeaderSurfaces: AnyObject, Sendable {
    /// Builds the surfaces `leader.configuration` names and starts each into
    /// `services`: after the speaker ports, before the announcements (so,
    /// stopping in reverse, nobody can command once the speakers hear
    /// goodbye). Runs once, on the thread that starts the leader; a surface
    /// that fails to start throws, and the leader stops what it started.
    func start(serving leader: Leader, in services: ServiceGroup) throws
    /// The JSON-RPC and MPD ports announced over mDNS (TXT), once started.
    var announcedPorts: (control: UInt16?, mpd: UInt16?) { get }
    /// Services of their own that surfaces announce beside the leader's,
    /// under its name (Sendspin's `_sendspin-server._tcp`), once started.
    var announcedServices: [AnnouncedService] { get }
}

/// One mDNS service a surface wants announced: its type, port and TXT.
public struct AnnouncedService: Sendable, Equatable {
    public var type: String
    public var port: UInt16
    public var txt: [String: String]
    public init(type: String, port: UInt16, txt: [String: String] = [:]) {
        self.type = type
        self.port = port
        self.txt = txt
    }
}

public extension LeaderSurfaces {
    var announcedServices: [AnnouncedService] { [] }
}
