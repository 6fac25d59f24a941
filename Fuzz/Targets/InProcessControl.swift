import Synchronization
import TuttiControlKit
import TuttiCore
import TuttiJSONRPC
import TuttiLeader
import TuttiMPD
import TuttiNet
import TuttiSnapcastControl
import TuttiSystem

/// A leader's command surfaces (MPD, JSON-RPC, Snapcast's control API)
/// driven in process, without their listening sockets: each request runs
/// through the code a connection runs (MPD's line splitter, session state
/// machine and command table; the JSON-RPC and Snapcast dispatchers), as a
/// client on this machine with full access. For the command-execution fuzz
/// targets (`mpd-exec`, `jsonrpc-exec`, `snapcast-exec`), which send
/// thousands of sessions to one playing leader; the connection layers have
/// targets of their own.
///
/// It is the fuzz targets' composition: the leader is made with it as its
/// surfaces (`Leader(configuration:log:surfaces:)`), and it builds and
/// starts those three, so the targets link the engine and the surfaces
/// they test, not the web app. The configuration's `mpd` endpoint (loopback,
/// port 0 will do) is where MPD's server listens; the others may be nil.
///
/// Thread contract: any thread; calls are taken one at a time (one client).
public final class InProcessControl: LeaderSurfaces {
    private struct Started {
        var leader: Leader
        var mpd: MPDServer
        var mpdSession: MPDInProcessSession
        var control: ControlServer
        var snapcast: SnapcastControl
    }
    private let started = Mutex<Started?>(nil)
    private let serial = Mutex(())

    public enum SetupError: Error, CustomStringConvertible {
        case loopback(NetError)
        case thread(ThreadError)
        public var description: String {
            switch self {
            case .loopback(let error): "cannot make a loopback connection for MPD's client: \(error)"
            case .thread(let error): "cannot start the drain of MPD's replies: \(error)"
            }
        }
    }

    public init() {}

    public func start(serving leader: Leader, in services: ServiceGroup) throws {
        let c = leader.configuration
        let control = try ControlServer(leader: leader, endpoint: c.control, log: leader.log.with(label: "control"))
        try services.start(control)
        let mpd = try MPDServer(leader: leader, endpoint: c.mpd ?? Endpoint(host: "127.0.0.1", port: 0), log: leader.log.with(label: "mpd"))
        try services.start(mpd)
        let snapcast = try SnapcastControl(leader: leader, control: c.snapcastControl, http: c.snapcastHTTP, trustsEveryone: c.snapcastControlOpen,
                                           codecName: c.codec.description, log: leader.log.with(label: "snapcast"))
        try services.start(snapcast)
        let session: MPDInProcessSession
        do { session = try MPDInProcessSession(server: mpd) } catch let error as NetError {
            throw SetupError.loopback(error)
        } catch let error as ThreadError {
            throw SetupError.thread(error)
        } catch {
            throw SetupError.loopback(.closed)
        }
        started.withLock { $0 = Started(leader: leader, mpd: mpd, mpdSession: session, control: control, snapcast: snapcast) }
    }

    public var announcedPorts: (control: UInt16?, mpd: UInt16?) {
        started.withLock { ($0?.control.endpoint?.port, $0?.mpd.endpoint.port) }
    }

    /// The leader these surfaces serve (once it started).
    public var leader: Leader { surfaces.leader }

    private var surfaces: Started {
        guard let s = started.withLock({ $0 }) else { preconditionFailure("InProcessControl used before its leader started") }
        return s
    }

    /// One MPD session: the bytes a client sends (lines), the replies it
    /// gets, as `MPDServer` would answer them on a connection. `password`
    /// is not run (a wrong one sleeps, by design). Idle answers and long
    /// replies go to the drained connection, not into the result.
    public func mpd(_ bytes: [UInt8]) -> [UInt8] {
        serial.withLock { _ in surfaces.mpdSession.run(bytes) }
    }

    /// One JSON-RPC request line, as ControlServer answers it: the reply's
    /// JSON object, or nil for a notification.
    public func jsonrpc(_ line: [UInt8]) -> [UInt8]? {
        serial.withLock { _ in surfaces.control.handle(line, level: .full)?.bytes }
    }

    /// One Snapcast control request (or batch), as SnapcastControl answers
    /// it on 1705: the reply, or nil for notifications only.
    public func snapcast(_ line: [UInt8]) -> [UInt8]? {
        serial.withLock { _ in surfaces.snapcast.handle(line, level: .full)?.bytes }
    }
}
