import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// /etc/tutti/tutti.conf as both daemons read it: every key of both
/// sections, the command line over the file, and mistakes that name the
/// file and line.
@Suite struct ConfigFileTests {
    static let everySpeakerKey = """
    [speaker]
    name = kitchen
    output = file:/tmp/kitchen.raw,ppm=20
    mixer = Digital
    latency-ms = 12.5
    buttons = /etc/tutti/buttons.conf
    leader = pi.local
    leader-name = Tutti on pi
    realtime = no
    steer = no
    log-level = warning
    """

    static let everyLeaderKey = """
    [leader]
    listen = 127.0.0.1:5953
    control = off
    mpd = 0.0.0.0:6601
    web = 0.0.0.0:8081
    snapcast-stream = off
    snapcast-control = 127.0.0.1:1805
    snapcast-http = off
    web-root = /srv/web
    music = /srv/music
    db = /var/lib/tutti/library.db
    cache = /var/cache/tutti
    cache-mb = 512
    auto-cache = no
    net-timeout = 30
    local-streams = yes
    codec = pcm
    bitrate = 96
    frame-ms = 10
    buffer-ms = 1500
    start-ms = 150
    name = Living room
    announce = no
    airplay = yes
    buttons = /etc/tutti/leader-buttons.conf
    log-level = debug
    """

    func file(_ text: String) throws -> ConfigFile { try ConfigFile.parse(text, path: "/etc/tutti/tutti.conf") }

    @Test func everySpeakerKeyIsRead() throws {
        let (command, level) = try DaemonCommand.parse(["follower"], file: try file(Self.everySpeakerKey + "\n" + Self.everyLeaderKey), hostname: "pi")
        guard case .follower(let c) = command else { Issue.record("not a follower: \(command)"); return }
        #expect(c.name == "kitchen")
        #expect(c.output == .file(path: "/tmp/kitchen.raw", ppm: 20, delayMilliseconds: 0))
        #expect(c.mixer == "Digital" && c.latencyMilliseconds == 12.5 && c.buttons == "/etc/tutti/buttons.conf")
        #expect(c.leader == Endpoint(host: "pi.local", port: 4953) && c.leaderName == "Tutti on pi")
        #expect(!c.realtime && !c.steering && level == .warning)
    }

    @Test func everyLeaderKeyIsRead() throws {
        let (command, level) = try DaemonCommand.parse(["leader"], file: try file(Self.everySpeakerKey + "\n" + Self.everyLeaderKey), hostname: "pi")
        guard case .leader(let c) = command else { Issue.record("not a leader: \(command)"); return }
        #expect(c.listen == Endpoint(host: "127.0.0.1", port: 5953) && c.control == nil)
        #expect(c.mpd == Endpoint(host: "0.0.0.0", port: 6601))
        #expect(c.web?.endpoint == Endpoint(host: "0.0.0.0", port: 8081) && c.web?.root == "/srv/web")
        #expect(c.snapcastStream == nil && c.snapcastControl == Endpoint(host: "127.0.0.1", port: 1805) && c.snapcastHTTP == nil)
        #expect(c.musicDirectory == "/srv/music" && c.databasePath == "/var/lib/tutti/library.db")
        #expect(c.cacheDirectory == "/var/cache/tutti" && c.cacheCapacityMegabytes == 512 && !c.autoCache)
        #expect(c.network.connectTimeout == 30 && c.network.stallTimeout == 30 && c.network.destinations.allowsLocal)
        #expect(c.codec == .pcm && c.bitrateKbps == 96 && c.frameMilliseconds == 10)
        #expect(c.bufferMilliseconds == 1500 && c.startLatencyMilliseconds == 150)
        #expect(c.announceName == "Living room" && !c.announce && c.buttons == "/etc/tutti/leader-buttons.conf")
        #expect(c.airplay)
        #expect(level == .debug)
    }

    @Test func theCommandLineWinsOverTheFile() throws {
        let text = Self.everySpeakerKey + "\n" + Self.everyLeaderKey
        guard case .follower(let f) = try DaemonCommand.parse(["follower", "--name", "den", "--latency-ms", "3", "--leader", "auto"],
                                                              file: try file(text), hostname: "pi").0,
              case .leader(let l) = try DaemonCommand.parse(["leader", "--codec", "opus", "--buffer-ms", "800", "--control", "127.0.0.1:4954", "--no-airplay"],
                                                            file: try file(text), hostname: "pi").0 else {
            Issue.record("wrong commands"); return
        }
        #expect(f.name == "den" && f.latencyMilliseconds == 3 && f.leader == nil)
        #expect(f.mixer == "Digital", "what the command line leaves alone comes from the file")
        #expect(l.codec == .opus && l.bufferMilliseconds == 800 && l.control == Endpoint(host: "127.0.0.1", port: 4954))
        #expect(l.bitrateKbps == 96)
        #expect(!l.airplay, "--no-airplay turns off the file's airplay = yes")
        guard case .leader(let plain) = try DaemonCommand.parse(["leader", "--music", "/m"], file: nil, hostname: "pi").0,
              case .leader(let asked) = try DaemonCommand.parse(["leader", "--music", "/m", "--airplay"], file: nil, hostname: "pi").0 else {
            Issue.record("not leaders"); return
        }
        #expect(!plain.airplay && asked.airplay, "off unless the file or --airplay asks (the package's tutti.conf does)")

        let printed = try DaemonCommand.parse(["follower", "--latency-ms", "3"], file: try file(text), hostname: "pi", printConfig: true).0
        guard case .printConfig(let listing) = printed else { Issue.record("not printed"); return }
        #expect(listing.contains("latency-ms = 3") && listing.contains("# command line"))
        #expect(listing.split(separator: "\n").contains { $0.hasPrefix("mixer = Digital") && $0.hasSuffix("# /etc/tutti/tutti.conf:4") })
    }

    @Test func withoutAFileTheDefaultsHold() throws {
        guard case .follower(let f) = try DaemonCommand.parse(["follower"], file: nil, hostname: "bathroom").0 else { Issue.record("not a follower"); return }
        #expect(f.name == "bathroom", "a speaker is named after its host")
        #expect(f.output == .alsa(device: "default") && f.leader == nil && f.mixer == nil && f.realtime && f.steering)
        guard case .printConfig(let listing) = try DaemonCommand.parse(["leader"], file: nil, hostname: "pi", printConfig: true).0 else {
            Issue.record("not printed"); return
        }
        let defaults = LeaderConfiguration.options(hostname: "pi")
        #expect(listing.split(separator: "\n").filter { $0.hasSuffix("# default") }.count == defaults.count)
        #expect(listing.contains("name = Tutti on pi"))
    }

    @Test(arguments: [
        ("[speaker]\nname = den\n\nlatency-ms = 9000", "follower", "/etc/tutti/tutti.conf:4: latency-ms = 9000: expected a number in -1000.0…5000.0"),
        ("[speaker]\noutput = speaker", "follower", "/etc/tutti/tutti.conf:2: output = speaker:"),
        ("[speaker]\nrealtime = sometimes", "follower", "/etc/tutti/tutti.conf:2: realtime = sometimes: expected yes or no"),
        ("[speaker]\nouptut = alsa:hw:1", "follower", "/etc/tutti/tutti.conf:2: [speaker] has no option 'ouptut'"),
        ("[speeker]\nname = x", "follower", "/etc/tutti/tutti.conf:1: unknown section [speeker]"),
        ("[leader]\nmusic = /m\ncodec = flac", "leader", "/etc/tutti/tutti.conf:3: codec = flac: "),
        ("[leader]\nmusic = /m\nlisten = nowhere", "leader", "/etc/tutti/tutti.conf:3: listen = nowhere: "),
        ("[leader]\nmusic = /m\nbitrate = 5000", "leader", "/etc/tutti/tutti.conf:3: bitrate = 5000: expected a number in 6.0…510.0"),
    ])
    func aBadValueNamesTheFileAndLine(text: String, command: String, message: String) {
        #expect {
            _ = try DaemonCommand.parse([command], file: try file(text), hostname: "pi")
        } throws: { error in
            let said = (error as? UsageError)?.message ?? "\(error)"
            if !said.hasPrefix(message) { Issue.record("said: \(said)") }
            return said.hasPrefix(message)
        }
    }

    /// The daemons themselves: the default path, `--config`, a missing file, and exit code 64 with the line.
    @Test func theBinariesReadTheFile() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bin = URL(fileURLWithPath: DaemonBinaryTests.binary).deletingLastPathComponent().path
        let conf = dir + "/tutti.conf"
        try (Self.everySpeakerKey + "\n" + Self.everyLeaderKey).write(toFile: conf, atomically: true, encoding: .utf8)
        let printed = try runProgram(bin + "/tutti-follower", ["--config", conf, "--print-config", "--name", "den"])
        #expect(printed.status == 0)
        #expect(printed.out.contains("output = file:/tmp/kitchen.raw,ppm=20") && printed.out.contains("\(conf):3"))
        #expect(printed.out.split(separator: "\n").contains { $0.hasPrefix("name = den") && $0.hasSuffix("# command line") })
        let leader = try runProgram(bin + "/tuttid", ["leader", "--config", conf, "--print-config"])
        #expect(leader.status == 0 && leader.out.contains("codec = pcm") && leader.out.contains("\(conf):27"))

        try "[speaker]\nname = den\nlatency-ms = lots\n".write(toFile: conf, atomically: true, encoding: .utf8)
        for (program, args) in [("tutti-follower", [String]()), ("tuttid", ["follower"])] {
            let bad = try runProgram(bin + "/" + program, args + ["--config", conf])
            #expect(bad.status == 64)
            #expect(bad.err.contains("\(conf):3: latency-ms = lots: expected a number"), "\(program) said: \(bad.err)")
        }
        let missing = try runProgram(bin + "/tutti-follower", ["--config", dir + "/none.conf"])
        #expect(missing.status == 64 && missing.err.contains("cannot read \(dir)/none.conf"))
        let version = try runProgram(bin + "/tuttid", ["--version"])
        #expect(version.status == 0 && version.out == "tuttid \(TuttiVersion.current)\n")
    }
}

/// `tutti doctor` on this machine, with the real probe: ALSA's null device,
/// a button file readable and one that is not, no mixer card, no avahi-daemon
/// on the bus it is pointed at, a pinned leader that is not there. Real-time
/// is as this process has it (root: allowed), so the fake probe in
/// TuttiCoreTests covers its fault.
@Suite struct DoctorBinaryTests {
    @Test func theRealProbeFindsRealFaults() throws {
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bin = URL(fileURLWithPath: DaemonBinaryTests.binary).deletingLastPathComponent().path + "/tutti"
        let event = dir + "/event-kbd"
        try "".write(toFile: event, atomically: true, encoding: .utf8)
        try "input \(event)\n".write(toFile: dir + "/buttons.conf", atomically: true, encoding: .utf8)
        let noBus = ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(dir)/no-bus"]
        let conf = dir + "/tutti.conf"

        // Right, as far as this machine can be: the device opens, the buttons are readable.
        try "[speaker]\nname = den\noutput = alsa:null\nbuttons = \(dir)/buttons.conf\nleader = 127.0.0.1:1\n".write(toFile: conf, atomically: true, encoding: .utf8)
        let right = try runProgram(bin, ["doctor", "--config", conf], environment: noBus)
        #expect(right.out.contains("ok   ALSA device: null opens at 48 kHz"), "\(right.out)")
        #expect(right.out.contains("ok   button devices: 1 device readable: \(event)"))
        #expect(right.out.contains("FAIL leader: 127.0.0.1:1:"), "nothing listens on port 1")
        #expect(right.out.contains("--   avahi-daemon:"), "a pinned leader needs no mDNS")
        #expect(right.status == 1)

        // Faults: a device that is not there, a mixer with no card, buttons that are gone, no avahi with mDNS wanted.
        try "[speaker]\nname = den\noutput = alsa:hw:CARD=nosuchcard,DEV=0\nmixer = Digital\nbuttons = \(dir)/buttons.conf\n".write(toFile: conf, atomically: true, encoding: .utf8)
        unlink(event)
        let faults = try runProgram(bin, ["doctor", "--config", conf], environment: noBus)
        #expect(faults.status == 1)
        for line in ["FAIL ALSA device: hw:CARD=nosuchcard,DEV=0:", "FAIL mixer control: cannot read", "FAIL avahi-daemon:",
                     "FAIL button devices: \(event): No such file or directory", "--   leader: cannot look without avahi-daemon"] {
            #expect(faults.out.contains(line), "\(line) in \(faults.out)")
        }
        #expect(faults.out.contains("fix: sudo apt install avahi-daemon"))
        #expect(faults.out.hasSuffix("4 faults\n"), "\(faults.out)")
    }
}
