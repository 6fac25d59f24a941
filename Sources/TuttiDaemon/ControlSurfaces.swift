import Synchronization
import TuttiControlKit
import TuttiCore
import TuttiDiscovery
import TuttiJSONRPC
import TuttiLeader
import TuttiMPD
import TuttiNet
import TuttiSendspin
import TuttiSnapcastControl
import TuttiSystem
import TuttiWebApp

/// The control surfaces `tuttid leader` serves, built from the leader's
/// configuration: JSON-RPC (with the web app, which speaks it), MPD and
/// Snapcast's control. Each is a module of its own that knows the engine
/// only as `LeaderControl`; this is the one place that knows them all.
/// The leader starts them after its speaker ports and before its
/// announcements (`LeaderSurfaces`), and stops them in reverse.
///
/// Thread contract: `start` runs once, on the thread that starts the
/// leader; the accessors answer on any thread.
public final class ControlSurfaces: LeaderSurfaces {
    private struct Started {
        var control: ControlServer?
        var web: WebSurface?
        var mpd: MPDServer?
        var snapcast: SnapcastControl?
        var sendspin: SendspinServer?
    }
    private let started = Mutex(Started())

    public init() {}

    public var control: ControlServer? { started.withLock { $0.control } }
    public var web: WebSurface? { started.withLock { $0.web } }
    public var mpd: MPDServer? { started.withLock { $0.mpd } }
    public var snapcast: SnapcastControl? { started.withLock { $0.snapcast } }
    public var sendspin: SendspinServer? { started.withLock { $0.sendspin } }

    public var announcedPorts: (control: UInt16?, mpd: UInt16?) { (control?.endpoint?.port, mpd?.endpoint.port) }

    public var announcedServices: [AnnouncedService] {
        guard let port = sendspin?.endpoint?.port else { return [] }
        return [AnnouncedService(type: "_sendspin-server._tcp", port: port, txt: ["path": SendspinServer.path])]
    }

    public func start(serving leader: Leader, in services: ServiceGroup) throws {
        let configuration = leader.configuration
        let log = leader.log
        if configuration.control != nil || configuration.web != nil {
            // The web app speaks the same JSON-RPC, so it needs the server even without its TCP port.
            let server = try ControlServer(leader: leader, endpoint: configuration.control, log: log.with(label: "control"))
            try services.start(server)
            started.withLock { $0.control = server }
            if let web = configuration.web {
                do {
                    let surface = try WebSurface(leader: leader, control: server, options: web, log: log.with(label: "web"))
                    started.withLock { $0.web = surface }
                    try services.start(CallbackService("web app", stop: { surface.stop() }))
                } catch {
                    guard !web.required else { throw error }
                    log.warning("\(error); the web app is off (give --web HOST:PORT to choose another port)")
                }
            }
        }
        if let endpoint = configuration.mpd {
            let server = try MPDServer(leader: leader, endpoint: endpoint, log: log.with(label: "mpd"))
            try services.start(server)
            started.withLock { $0.mpd = server }
        }
        if let endpoint = configuration.sendspin {
            let id = "tutti-" + TuttiService.stableLeaderID(port: leader.endpoint.port)
            let server = SendspinServer(leader: leader, endpoint: endpoint, serverID: id,
                                        name: configuration.announceName ?? TuttiService.defaultName, log: log.with(label: "sendspin"))
            try services.start(server)
            started.withLock { $0.sendspin = server }
        }
        if configuration.snapcastControl != nil || configuration.snapcastHTTP != nil {
            do {
                let server = try SnapcastControl(leader: leader, control: configuration.snapcastControl, http: configuration.snapcastHTTP,
                                                 trustsEveryone: configuration.snapcastControlOpen, codecName: configuration.codec.description,
                                                 log: log.with(label: "snapcast"))
                try services.start(server)
                started.withLock { $0.snapcast = server }
            } catch {
                guard configuration.snapcastStreamRequired else {
                    log.warning("\(error); Snapcast's control API is off (give --snapcast-control and --snapcast-http to choose other ports)")
                    return
                }
                throw error
            }
        }
    }
}

extension Leader {
    /// The surfaces tuttid built, when it built them (`ControlSurfaces`).
    private var controlSurfaces: ControlSurfaces? { surfaces as? ControlSurfaces }

    /// The JSON-RPC endpoint, once started (the real port when 0 was asked for).
    public var controlEndpoint: Endpoint? { controlSurfaces?.control?.endpoint }

    /// Where the web app is served, once started (the real port when 0 was asked for).
    public var webEndpoint: Endpoint? { controlSurfaces?.web?.endpoint }

    /// Snapcast's control API endpoints, once started.
    public var snapcastControlEndpoint: Endpoint? { controlSurfaces?.snapcast?.controlEndpoint }
    public var snapcastHTTPEndpoint: Endpoint? { controlSurfaces?.snapcast?.httpEndpoint }

    /// Control clients connected over every JSON-RPC surface (TCP and the web app).
    public var controlClientCount: Int { controlSurfaces?.control?.clientCount ?? 0 }

    /// The MPD protocol endpoint, once started (the real port when 0 was asked for).
    public var mpdEndpoint: Endpoint? { controlSurfaces?.mpd?.endpoint }

    /// ACK lines the MPD server has sent (count, latest ones); nil without one.
    /// Where Sendspin clients connect, while the server runs.
    public var sendspinEndpoint: Endpoint? { controlSurfaces?.sendspin?.endpoint }

    public var mpdErrorsSent: (count: Int, recent: [String])? { controlSurfaces?.mpd?.errorsSent }
}
