import Testing
import TuttiCore

/// A machine the tests describe: everything right unless a fault is set.
struct FakeMachine: DoctorProbe {
    var pcm: DoctorProbeFailure? = nil
    var controls: [String] = ["Digital", "Analogue"]
    var realtime: DoctorProbeFailure? = nil
    var avahi: DoctorProbeFailure? = nil
    var leaders: [(name: String, address: String, controlPort: UInt16?)] = [("Tutti on pi", "192.168.1.2:4953", 4954)]
    var health = RoomHealthReport(connected: true, outputErrorMicroseconds: 12, bufferMilliseconds: 990, roundTripMicroseconds: 800)
    var mappingDevices: [String] = ["/dev/input/event0", "gpio:chip0"]
    var unreadable: [String: DoctorProbeFailure] = [:]
    var asked: [String] = []

    func openPlayback(_ device: String) -> Result<Void, DoctorProbeFailure> { pcm.map { .failure($0) } ?? .success(()) }
    func mixerControls(forDevice device: String) -> Result<[String], DoctorProbeFailure> { .success(controls) }
    func realtimeAllowed(priority: Int) -> Result<Void, DoctorProbeFailure> { realtime.map { .failure($0) } ?? .success(()) }
    func avahiRunning() -> Result<Void, DoctorProbeFailure> { avahi.map { .failure($0) } ?? .success(()) }
    func announcedLeaders() -> Result<[(name: String, address: String, controlPort: UInt16?)], DoctorProbeFailure> { .success(leaders) }
    func reachable(_ address: String) -> Result<Void, DoctorProbeFailure> {
        address == "192.168.1.2:4953" ? .success(()) : .failure(DoctorProbeFailure("Connection refused"))
    }
    func roomHealth(control: String, room: String) -> Result<RoomHealthReport, DoctorProbeFailure> {
        control == "192.168.1.2:4954" ? .success(health) : .failure(DoctorProbeFailure("Connection refused"))
    }
    func buttonDevices(mapping path: String) -> Result<[String], DoctorProbeFailure> { .success(mappingDevices) }
    func openDevice(_ path: String) -> Result<Void, DoctorProbeFailure> { unreadable[path].map { .failure($0) } ?? .success(()) }
}

@Suite struct DoctorTests {
    static let settings = DoctorSettings(alsaDevice: "hw:CARD=sndrpihifiberry,DEV=0", mixer: "Digital", realtime: true,
                                         leader: nil, leaderName: nil, room: "kitchen", buttons: "/etc/tutti/buttons.conf",
                                         configFile: "/etc/tutti/tutti.conf")

    func status(_ findings: [DoctorFinding]) -> [DoctorCheck: DoctorFinding.Status] {
        Dictionary(uniqueKeysWithValues: findings.map { ($0.check, $0.status) })
    }

    @Test func aRightMachinePassesEveryCheck() {
        let findings = Doctor.examine(Self.settings, FakeMachine())
        #expect(findings.map(\.check) == DoctorCheck.allCases)
        #expect(findings.allSatisfy { $0.status == .ok && $0.fix == nil }, "\(findings)")
        #expect(findings.first { $0.check == .clock }?.detail == "room 'kitchen' plays 12 µs from the leader's time, round trip 800 µs")
        #expect(Doctor.render(findings).hasSuffix("everything checked is right\n"))
    }

    /// Each fault alone: that check fails with a fix that names what to change, and the others stay right.
    @Test(arguments: [
        (DoctorCheck.output, "aplay -L"),
        (.mixer, "set `mixer = Digital` or leave it empty"),
        (.realtime, "LimitRTPRIO=20"),
        (.avahi, "systemctl enable --now avahi-daemon"),
        (.leader, "systemctl start tutti-leader"),
        (.clock, "systemctl restart tutti-speaker"),
        (.buttons, "sudo adduser tutti input"),
    ])
    func eachFaultSaysHowToFixIt(fault: DoctorCheck, advice: String) {
        var machine = FakeMachine()
        var settings = Self.settings
        switch fault {
        case .output: machine.pcm = DoctorProbeFailure("audio device hw:CARD=sndrpihifiberry,DEV=0: open failed: No such file or directory")
        case .mixer: settings.mixer = "Master"; machine.controls = ["Digital"]
        case .realtime: machine.realtime = DoctorProbeFailure("SCHED_FIFO 10 refused for this user (Operation not permitted; RLIMIT_RTPRIO is 0)", code: "EPERM")
        case .avahi: machine.avahi = DoctorProbeFailure("avahi-daemon is not running")
        case .leader: machine.leaders = []
        case .clock: machine.health.connected = false
        case .buttons: machine.unreadable = ["/dev/input/event0": DoctorProbeFailure("Permission denied", code: "EACCES")]
        }
        let findings = Doctor.examine(settings, machine)
        let failed = findings.filter { $0.status == .fault }
        #expect(failed.map(\.check) == [fault], "\(findings)")
        #expect(failed.first?.fix?.contains(advice) == true, "\(failed)")
        let rendered = Doctor.render(findings)
        #expect(rendered.contains("FAIL \(fault.rawValue): ") && rendered.contains("     fix: ") && rendered.hasSuffix("1 fault\n"))
        // What depends on the failed check is skipped, not failed twice.
        if fault == .avahi { #expect(status(findings)[.leader] == .skipped && status(findings)[.clock] == .skipped) }
        if fault == .leader { #expect(status(findings)[.clock] == .skipped) }
    }

    @Test func moreFaultsOfTheClockAndTheLeader() {
        var machine = FakeMachine()
        machine.health.outputErrorMicroseconds = -4_200
        #expect(Doctor.examine(Self.settings, machine).first { $0.check == .clock }?.detail == "room 'kitchen' is -4200 µs out of step")
        machine = FakeMachine()
        machine.health.bufferMilliseconds = 0
        #expect(Doctor.examine(Self.settings, machine).first { $0.check == .clock }?.fix?.contains("tutti play") == true)

        var pinned = Self.settings
        pinned.leader = "10.0.0.9"
        let refused = Doctor.examine(pinned, FakeMachine()).first { $0.check == .leader }
        #expect(refused?.status == .fault && refused?.detail == "10.0.0.9:4953: Connection refused")
        pinned.leader = "192.168.1.2:4953"
        var noAvahi = FakeMachine()
        noAvahi.avahi = DoctorProbeFailure("no daemon")
        let found = Doctor.examine(pinned, noAvahi)
        #expect(status(found)[.avahi] == .skipped && status(found)[.leader] == .ok && status(found)[.clock] == .ok,
                "with the leader's address given, mDNS is not needed")

        var named = Self.settings
        named.leaderName = "Tutti on den"
        #expect(Doctor.examine(named, FakeMachine()).first { $0.check == .leader }?.fix?.contains("leader-name") == true)

        var gpio = FakeMachine()
        gpio.unreadable = ["gpio:chip0": DoctorProbeFailure("Permission denied", code: "EACCES")]
        #expect(Doctor.examine(Self.settings, gpio).first { $0.check == .buttons }?.fix == "add the user to the gpio group (sudo adduser tutti gpio)")
    }

    @Test func aVirtualDACSkipsTheALSAChecks() {
        var s = Self.settings
        s.alsaDevice = nil
        s.buttons = nil
        s.realtime = false
        let findings = Doctor.examine(s, FakeMachine())
        #expect(findings.filter { $0.status == .skipped }.map(\.check) == [.output, .mixer, .realtime, .buttons])
    }

    @Test func theMixerOfAPCMName() {
        #expect(Doctor.mixerDevice(forPCM: "hw:CARD=sndrpihifiberry,DEV=0") == "hw:CARD=sndrpihifiberry")
        #expect(Doctor.mixerDevice(forPCM: "plughw:1,0") == "hw:1")
        #expect(Doctor.mixerDevice(forPCM: "hw:0") == "hw:0")
        #expect(Doctor.mixerDevice(forPCM: "default") == "default")
    }
}
