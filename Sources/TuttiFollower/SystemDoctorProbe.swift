import Glibc
import TuttiAudio
import TuttiCore
import TuttiGestures
import TuttiDiscovery
import TuttiInput
import TuttiNet
import TuttiSystem

extension DoctorSettings {
    /// What to check, from a speaker's effective settings.
    public init(_ c: FollowerConfiguration, configFile: String) {
        var device: String? = nil
        if case .alsa(let d) = c.output { device = d }
        self.init(alsaDevice: device, mixer: c.mixer, realtime: c.realtime,
                  leader: c.leader.map { "\($0.host):\($0.port)" }, leaderName: c.leaderName,
                  room: c.name, buttons: c.buttons, configFile: configFile)
    }
}

/// The doctor's look at this machine: ALSA, the scheduler's limits,
/// avahi-daemon, the leader's port, the button devices. The leader's
/// control API is JSON over TCP and is asked by the caller (`roomHealth`),
/// so this module stays free of Foundation. Call from one thread.
public struct SystemDoctorProbe: DoctorProbe {
    let health: (String, String) -> Result<RoomHealthReport, DoctorProbeFailure>

    public init(roomHealth: @escaping (String, String) -> Result<RoomHealthReport, DoctorProbeFailure>) {
        health = roomHealth
    }

    public func openPlayback(_ device: String) -> Result<Void, DoctorProbeFailure> {
        do {
            let sink = try ALSASink(device: device)
            sink.close()
            return .success(())
        } catch {
            let busy = "\(error)".contains("busy")
            return .failure(DoctorProbeFailure("\(error)", code: busy ? "EBUSY" : nil))
        }
    }

    public func mixerControls(forDevice device: String) -> Result<[String], DoctorProbeFailure> {
        do { return .success(try ALSAMixer(card: Doctor.mixerDevice(forPCM: device)).playbackControls) } catch {
            return .failure(DoctorProbeFailure("\(error)"))
        }
    }

    public func realtimeAllowed(priority: Int) -> Result<Void, DoctorProbeFailure> {
        // Try it on this thread, and put the old policy back.
        var old = sched_param()
        let oldPolicy = sched_getscheduler(0)
        sched_getparam(0, &old)
        var wanted = sched_param(sched_priority: Int32(priority))
        if sched_setscheduler(0, SCHED_FIFO, &wanted) == 0 {
            sched_setscheduler(0, oldPolicy, &old)
            return .success(())
        }
        let code = errno
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(__RLIMIT_RTPRIO.rawValue), &limit) // RLIMIT_RTPRIO is a macro Swift does not import
        let soft = limit.rlim_cur == rlim_t.max ? "unlimited" : "\(limit.rlim_cur)"
        return .failure(DoctorProbeFailure("SCHED_FIFO \(priority) refused for this user (\(String(cString: strerror(code))); RLIMIT_RTPRIO is \(soft))",
                                           code: code == EPERM ? "EPERM" : nil))
    }

    public func avahiRunning() -> Result<Void, DoctorProbeFailure> {
        do {
            let browser = try ServiceBrowser()
            browser.stop()
            return .success(())
        } catch { return .failure(DoctorProbeFailure("\(error)")) }
    }

    public func announcedLeaders() -> Result<[(name: String, address: String, controlPort: UInt16?)], DoctorProbeFailure> {
        do {
            return .success(try discoverLeaders(timeout: 2).map { leader in
                // Our own announcement: its control socket is usually on loopback only.
                (leader.name, "\(leader.isLocal ? "127.0.0.1" : leader.address):\(leader.port)", leader.controlPort)
            })
        } catch { return .failure(DoctorProbeFailure("\(error)")) }
    }

    public func reachable(_ address: String) -> Result<Void, DoctorProbeFailure> {
        do {
            let connection = try TCPConnection.connect(to: try Endpoint(parsing: address, defaultPort: 4953), timeoutMilliseconds: 2_000)
            connection.close()
            return .success(())
        } catch { return .failure(DoctorProbeFailure("\(error)")) }
    }

    public func roomHealth(control: String, room: String) -> Result<RoomHealthReport, DoctorProbeFailure> { health(control, room) }

    public func buttonDevices(mapping path: String) -> Result<[String], DoctorProbeFailure> {
        let mapping: ButtonMapping
        do {
            let bytes = try readWholeFile(path, limit: 1 << 20)
            mapping = try ButtonMapping.parse(String(decoding: bytes, as: UTF8.self))
        } catch { return .failure(DoctorProbeFailure("\(error)")) }
        var devices = mapping.inputs.map(\.path)
        for b in mapping.buttons { if case .gpio(let chip, _, _) = b.input { devices.append("gpio:" + chip) } }
        for e in mapping.encoders { if case .gpio(let chip, _, _, _) = e.input { devices.append("gpio:" + chip) } }
        var seen = Set<String>()
        return .success(devices.filter { seen.insert($0).inserted })
    }

    public func openDevice(_ path: String) -> Result<Void, DoctorProbeFailure> {
        if path.hasPrefix("gpio:") {
            do { try checkGPIOChip(String(path.dropFirst(5))) } catch {
                if case .gpioChip(_, let code) = error { return .failure(DoctorProbeFailure("\(error)", code: code == EACCES ? "EACCES" : nil)) }
                return .failure(DoctorProbeFailure("\(error)"))
            }
            return .success(())
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            return .failure(DoctorProbeFailure(String(cString: strerror(code)), code: code == EACCES ? "EACCES" : code == ENOENT ? "ENOENT" : nil))
        }
        close(fd)
        return .success(())
    }
}
