/// `tutti doctor`: what a newcomer gets wrong on a speaker, checked in the
/// order sound flows, each fault with the step that fixes it.
///
/// Pure: every look at the machine goes through `DoctorProbe`, so the rules
/// and their advice are tested with a probe that reports each fault, and
/// the real probe (`SystemDoctorProbe`, TuttiFollower) is the only I/O.
public enum DoctorCheck: String, Sendable, CaseIterable {
    case output = "ALSA device"
    case mixer = "mixer control"
    case realtime = "real-time priority"
    case avahi = "avahi-daemon"
    case leader = "leader"
    case clock = "clock model"
    case buttons = "button devices"
}

public struct DoctorFinding: Sendable, Equatable {
    public enum Status: String, Sendable { case ok, fault, skipped }
    public var check: DoctorCheck
    public var status: Status
    /// What was found, in a line.
    public var detail: String
    /// For a fault: what to do about it.
    public var fix: String?

    public init(_ check: DoctorCheck, _ status: Status, _ detail: String, fix: String? = nil) {
        self.check = check
        self.status = status
        self.detail = detail
        self.fix = fix
    }
}

/// What the doctor checks, as the speaker's settings say.
public struct DoctorSettings: Sendable, Equatable {
    /// The ALSA device of `output = alsa:DEVICE` (nil: a virtual DAC, `file:`).
    public var alsaDevice: String?
    public var mixer: String?
    public var realtime: Bool
    /// `leader = HOST[:PORT]` (nil: found over mDNS).
    public var leader: String?
    public var leaderName: String?
    public var room: String
    /// The button mapping file and the devices it reads (nil: no buttons).
    public var buttons: String?
    public var configFile: String

    public init(alsaDevice: String?, mixer: String?, realtime: Bool, leader: String?, leaderName: String?,
                room: String, buttons: String?, configFile: String) {
        self.alsaDevice = alsaDevice; self.mixer = mixer; self.realtime = realtime; self.leader = leader
        self.leaderName = leaderName; self.room = room; self.buttons = buttons; self.configFile = configFile
    }
}

/// A room's health as its leader reports it (`rooms.list`).
public struct RoomHealthReport: Sendable, Equatable {
    public var connected: Bool
    public var outputErrorMicroseconds: Double?
    public var bufferMilliseconds: Double?
    public var roundTripMicroseconds: Double?
    public init(connected: Bool, outputErrorMicroseconds: Double?, bufferMilliseconds: Double?, roundTripMicroseconds: Double?) {
        self.connected = connected; self.outputErrorMicroseconds = outputErrorMicroseconds
        self.bufferMilliseconds = bufferMilliseconds; self.roundTripMicroseconds = roundTripMicroseconds
    }
}

/// The doctor's view of the machine. Each method answers one question and
/// returns a reason in words when the answer is no.
public protocol DoctorProbe {
    /// Opens `device` for playback at 48 kHz stereo and closes it again.
    func openPlayback(_ device: String) -> Result<Void, DoctorProbeFailure>
    /// The playback controls of the card behind `device`.
    func mixerControls(forDevice device: String) -> Result<[String], DoctorProbeFailure>
    /// Whether this process may take SCHED_FIFO at `priority` (the soft RLIMIT_RTPRIO, or privilege).
    func realtimeAllowed(priority: Int) -> Result<Void, DoctorProbeFailure>
    func avahiRunning() -> Result<Void, DoctorProbeFailure>
    /// Leaders announced over mDNS, by name, with the address to reach each at.
    func announcedLeaders() -> Result<[(name: String, address: String, controlPort: UInt16?)], DoctorProbeFailure>
    /// Whether the leader's follower port at `address` (HOST:PORT) accepts a connection.
    func reachable(_ address: String) -> Result<Void, DoctorProbeFailure>
    /// The room's health from the leader's control API at HOST:PORT.
    func roomHealth(control: String, room: String) -> Result<RoomHealthReport, DoctorProbeFailure>
    /// The input devices and GPIO chips a mapping file reads, or why it cannot be parsed.
    func buttonDevices(mapping path: String) -> Result<[String], DoctorProbeFailure>
    /// Opens a device read-only (input) or read-write (GPIO chip) and closes it.
    func openDevice(_ path: String) -> Result<Void, DoctorProbeFailure>
}

public struct DoctorProbeFailure: Error, Sendable, Equatable {
    public var reason: String
    /// errno's name when there is one (EACCES, ENOENT, EBUSY), to choose the advice.
    public var code: String?
    public init(_ reason: String, code: String? = nil) { self.reason = reason; self.code = code }
}

public enum Doctor {
    /// The playout thread's priority (PlayoutEngine).
    public static let realtimePriority = 10
    /// A speaker further than this from where the leader's clock says it should be is out of step.
    public static let healthyOutputErrorMicroseconds = 1_000.0

    public static func examine(_ s: DoctorSettings, _ probe: any DoctorProbe) -> [DoctorFinding] {
        var findings: [DoctorFinding] = []
        let file = s.configFile

        // The DAC.
        if let device = s.alsaDevice {
            switch probe.openPlayback(device) {
            case .success: findings.append(.init(.output, .ok, "\(device) opens at 48 kHz, 16-bit stereo"))
            case .failure(let f):
                let fix = f.code == "EBUSY"
                    ? "another program holds \(device): stop it (fuser -v /dev/snd/*), or use a dmix device"
                    : "enable the DAC's overlay in /boot/firmware/config.txt and reboot; `aplay -L` lists the devices: "
                        + "set `output = alsa:DEVICE` under [speaker] in \(file) (docs/pi.md has each HAT's name)"
                findings.append(.init(.output, .fault, "\(device): \(f.reason)", fix: fix))
            }
        } else {
            findings.append(.init(.output, .skipped, "the output is a virtual DAC (file:), not ALSA"))
        }

        // Its hardware volume.
        if let mixer = s.mixer, let device = s.alsaDevice {
            switch probe.mixerControls(forDevice: device) {
            case .success(let controls) where controls.contains(mixer):
                findings.append(.init(.mixer, .ok, "'\(mixer)' is on the card; the speaker sets it to 0 dB at start"))
            case .success(let controls):
                let offer = controls.isEmpty ? "the card has no playback controls: leave `mixer =` empty"
                    : "the card has \(controls.map { "'\($0)'" }.joined(separator: ", ")): set `mixer = \(controls[0])` or leave it empty"
                findings.append(.init(.mixer, .fault, "no control '\(mixer)' on \(device)'s card", fix: offer + " in \(file)"))
            case .failure(let f):
                findings.append(.init(.mixer, .fault, "cannot read \(device)'s mixer: \(f.reason)",
                                      fix: "fix the ALSA device first, or leave `mixer =` empty in \(file)"))
            }
        } else if s.mixer != nil {
            findings.append(.init(.mixer, .skipped, "a virtual DAC has no mixer"))
        } else {
            findings.append(.init(.mixer, .skipped, "no `mixer` set: the DAC's own volume is left as it is"))
        }

        // Real time.
        if s.realtime {
            switch probe.realtimeAllowed(priority: realtimePriority) {
            case .success: findings.append(.init(.realtime, .ok, "SCHED_FIFO priority \(realtimePriority) is allowed"))
            case .failure(let f):
                findings.append(.init(.realtime, .fault, f.reason, fix:
                    "the service has LimitRTPRIO=20 (tutti-speaker.service); run by hand, add "
                        + "`@audio - rtprio 20` to /etc/security/limits.d/tutti.conf and log in again. "
                        + "Without it the speaker still plays, but sync suffers under load"))
            }
        } else {
            findings.append(.init(.realtime, .skipped, "`realtime = no` in \(file)"))
        }

        // Discovery, and the leader.
        let avahi = probe.avahiRunning()
        switch avahi {
        case .success: findings.append(.init(.avahi, .ok, "avahi-daemon answers on the system bus"))
        case .failure(let f):
            findings.append(.init(.avahi, s.leader == nil ? .fault : .skipped, f.reason, fix: s.leader == nil
                ? "sudo apt install avahi-daemon && sudo systemctl enable --now avahi-daemon (or set `leader = HOST` in \(file))" : nil))
        }
        var control: String? = nil
        if let leader = s.leader {
            let address = leader.contains(":") ? leader : leader + ":4953"
            switch probe.reachable(address) {
            case .success:
                findings.append(.init(.leader, .ok, "\(address) accepts speakers"))
                control = String(address[..<address.lastIndex(of: ":")!]) + ":4954"
            case .failure(let f):
                findings.append(.init(.leader, .fault, "\(address): \(f.reason)", fix:
                    "start the leader there (sudo systemctl start tutti-leader) and check `listen =` under its [leader]; "
                        + "or set `leader = auto` in \(file) to find it over mDNS"))
            }
        } else if case .success = avahi {
            switch probe.announcedLeaders() {
            case .success(let leaders):
                let chosen = s.leaderName.map { name in leaders.filter { $0.name == name } } ?? leaders
                if let leader = chosen.first {
                    findings.append(.init(.leader, .ok, "'\(leader.name)' at \(leader.address)"))
                    let host = String(leader.address[..<(leader.address.lastIndex(of: ":") ?? leader.address.endIndex)])
                    control = leader.controlPort.map { "\(host):\($0)" }
                } else if let name = s.leaderName, !leaders.isEmpty {
                    findings.append(.init(.leader, .fault, "no leader called '\(name)'; announced: \(leaders.map(\.name).joined(separator: ", "))",
                                          fix: "set `leader-name =` to one of those in \(file), or empty it"))
                } else {
                    findings.append(.init(.leader, .fault, "no leader is announced on this network", fix:
                        "start one (sudo systemctl start tutti-leader on the box with the music; `announce = yes`), "
                            + "check both are on the same network (mDNS does not cross routers), or set `leader = HOST` in \(file)"))
                }
            case .failure(let f):
                findings.append(.init(.leader, .fault, f.reason, fix: "set `leader = HOST` in \(file)"))
            }
        } else {
            findings.append(.init(.leader, .skipped, "cannot look without avahi-daemon"))
        }

        // The clock, as the leader sees this room.
        if let control {
            switch probe.roomHealth(control: control, room: s.room) {
            case .success(let h) where !h.connected:
                findings.append(.init(.clock, .fault, "room '\(s.room)' is not connected to the leader", fix:
                    "start the speaker (sudo systemctl restart tutti-speaker) and read `journalctl -u tutti-speaker`"))
            case .success(let h):
                if let error = h.outputErrorMicroseconds, abs(error) <= healthyOutputErrorMicroseconds, (h.bufferMilliseconds ?? 0) > 0 {
                    findings.append(.init(.clock, .ok, "room '\(s.room)' plays \(Int(error.rounded())) µs from the leader's time"
                                          + (h.roundTripMicroseconds.map { ", round trip \(Int($0.rounded())) µs" } ?? "")))
                } else if let error = h.outputErrorMicroseconds, abs(error) > healthyOutputErrorMicroseconds {
                    findings.append(.init(.clock, .fault, "room '\(s.room)' is \(Int(error.rounded())) µs out of step", fix:
                        "a busy Wi-Fi or CPU: check `tutti rooms` for its round trip, give it more buffer (`buffer-ms`), allow real-time priority"))
                } else {
                    findings.append(.init(.clock, .fault, "room '\(s.room)' has no audio buffered", fix:
                        "play something (`tutti play`); if it is playing, the network drops the stream: check `tutti rooms`"))
                }
            case .failure(let f):
                findings.append(.init(.clock, .skipped, "the leader's control API (\(control)): \(f.reason); "
                                      + "open it to the network with `control = 0.0.0.0:4954` under its [leader] to check from here"))
            }
        } else {
            findings.append(.init(.clock, .skipped, "no leader to ask"))
        }

        // Buttons.
        if let mapping = s.buttons {
            switch probe.buttonDevices(mapping: mapping) {
            case .failure(let f):
                findings.append(.init(.buttons, .fault, "\(mapping): \(f.reason)", fix: "fix the mapping file (hardware/buttons.md), or empty `buttons =` in \(file)"))
            case .success(let devices):
                var faults: [String] = [], advice: [String] = []
                for device in devices {
                    guard case .failure(let f) = probe.openDevice(device) else { continue }
                    faults.append("\(device): \(f.reason)")
                    if f.code == "EACCES" {
                        advice.append(device.hasPrefix("gpio:") ? "add the user to the gpio group (sudo adduser tutti gpio)"
                                                                  : "add the user to the input group (sudo adduser tutti input)")
                    } else {
                        advice.append(device.hasPrefix("gpio:") ? "`gpiodetect` lists the chips"
                                                                  : "check the overlay and `ls /dev/input/by-path/` for \(device)")
                    }
                }
                if faults.isEmpty {
                    findings.append(.init(.buttons, .ok, devices.isEmpty ? "\(mapping) reads no devices"
                                          : "\(devices.count) device\(devices.count == 1 ? "" : "s") readable: \(devices.joined(separator: ", "))"))
                } else {
                    findings.append(.init(.buttons, .fault, faults.joined(separator: "; "), fix: Array(Set(advice)).sorted().joined(separator: "; ")))
                }
            }
        } else {
            findings.append(.init(.buttons, .skipped, "no `buttons` file set"))
        }
        return findings
    }

    /// The report as `tutti doctor` prints it.
    public static func render(_ findings: [DoctorFinding]) -> String {
        var out = ""
        for f in findings {
            let mark = switch f.status { case .ok: "ok  "; case .fault: "FAIL"; case .skipped: "--  " }
            out += "\(mark) \(f.check.rawValue): \(f.detail)\n"
            if let fix = f.fix { out += "     fix: \(fix)\n" }
        }
        let faults = findings.filter { $0.status == .fault }.count
        out += faults == 0 ? "everything checked is right\n" : "\(faults) fault\(faults == 1 ? "" : "s")\n"
        return out
    }

    /// The card's control device for a PCM name: `hw:CARD=x,DEV=0` and
    /// `plughw:1,0` → `hw:CARD=x`, `hw:1`; other names (default, a plugin) as they are.
    public static func mixerDevice(forPCM device: String) -> String {
        for prefix in ["hw:", "plughw:"] where device.hasPrefix(prefix) {
            let rest = device.dropFirst(prefix.count)
            let card = rest.split(separator: ",", maxSplits: 1).first.map(String.init) ?? String(rest)
            return "hw:" + card
        }
        return device
    }
}
