import Dispatch
import Synchronization
import TuttiCore
import TuttiNet
import TuttiSystem
import TuttiControlKit
import TuttiLeader
import TuttiJSONRPC
import TuttiMPD
import TuttiSnapcastControl

/// A running leader's command surfaces (MPD, JSON-RPC, Snapcast's control
/// API) driven in process, without their listening sockets: each request
/// runs through the code a connection runs (MPD's line splitter, session
/// state machine and command table; the JSON-RPC and Snapcast
/// dispatchers), as a client on this machine with full access. For the
/// command-execution fuzz targets (Fuzz/Targets: `mpd-exec`,
/// `jsonrpc-exec`, `snapcast-exec`), which send thousands of sessions to
/// one playing leader; the connection layers have targets of their own.
///
/// The leader must have been started with `mpd`, `control` and
/// `snapcastControl` endpoints (loopback, port 0 will do).
///
/// Thread contract: any thread; calls are taken one at a time (one client).
public final class InProcessControl: Sendable {
    public let leader: Leader
    private let mpdSession: MPDInProcessSession
    private let controlServer: ControlServer
    private let snapcastServer: SnapcastControl
    private let serial = Mutex(())

    public enum SetupError: Error, CustomStringConvertible {
        case surfaceMissing(String)
        case loopback(NetError)
        case thread(ThreadError)
        public var description: String {
            switch self {
            case .surfaceMissing(let which): "the leader serves no \(which): start it with that endpoint set"
            case .loopback(let error): "cannot make a loopback connection for MPD's client: \(error)"
            case .thread(let error): "cannot start the drain of MPD's replies: \(error)"
            }
        }
    }

    public init(leader: Leader) throws(SetupError) {
        let surfaces = leader.surfaces as? ControlSurfaces
        guard let mpd = surfaces?.mpd else { throw .surfaceMissing("MPD port (configuration.mpd)") }
        guard let control = surfaces?.control else { throw .surfaceMissing("JSON-RPC port (configuration.control)") }
        guard let snapcast = surfaces?.snapcast else { throw .surfaceMissing("Snapcast control (configuration.snapcastControl)") }
        self.leader = leader
        controlServer = control
        snapcastServer = snapcast
        do { mpdSession = try MPDInProcessSession(server: mpd) } catch let error as NetError {
            throw .loopback(error)
        } catch let error as ThreadError {
            throw .thread(error)
        } catch {
            throw .loopback(.closed)
        }
    }

    /// One MPD session: the bytes a client sends (lines), the replies it
    /// gets, as `MPDServer` would answer them on a connection. `password`
    /// is not run (a wrong one sleeps, by design). Idle answers and long
    /// replies go to the drained connection, not into the result.
    public func mpd(_ bytes: [UInt8]) -> [UInt8] {
        serial.withLock { _ in mpdSession.run(bytes) }
    }

    /// One JSON-RPC request line, as ControlServer answers it: the reply's
    /// JSON object, or nil for a notification.
    public func jsonrpc(_ line: [UInt8]) -> [UInt8]? {
        serial.withLock { _ in controlServer.handle(line, level: .full)?.bytes }
    }

    /// One Snapcast control request (or batch), as SnapcastControl answers
    /// it on 1705: the reply, or nil for notifications only.
    public func snapcast(_ line: [UInt8]) -> [UInt8]? {
        serial.withLock { _ in snapcastServer.handle(line, level: .full)?.bytes }
    }
}
