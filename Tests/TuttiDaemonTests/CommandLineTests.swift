import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
@testable import TuttiFollower
import TuttiNet
import TuttiTestSupport

@Suite struct CommandLineParsingTests {
    @Test func leaderOptions() throws {
        let (command, level) = try DaemonCommand.parse(["leader", "--listen", "127.0.0.1:5000", "--play", "a.mp3", "b.wav",
                                                        "--loop", "--codec", "pcm", "--frame-ms", "10", "--buffer-ms", "500", "--log-level", "debug"])
        guard case .leader(let c) = command else { Issue.record("not a leader: \(command)"); return }
        #expect(c.listen == Endpoint(host: "127.0.0.1", port: 5000))
        #expect(c.files == ["a.mp3", "b.wav"])
        #expect(c.loop && c.codec == .pcm && c.frameMilliseconds == 10 && c.bufferMilliseconds == 500)
        #expect(c.framesPerChunk == 480)
        #expect(level == .debug)
    }

    /// Local streams are off unless asked for (`--allow-local-streams`, `local-streams = yes`).
    @Test func localStreamsAreOffByDefault() throws {
        guard case .leader(let closed) = try DaemonCommand.parse(["leader", "--play", "a.mp3"]).0,
              case .leader(let open) = try DaemonCommand.parse(["leader", "--play", "a.mp3", "--allow-local-streams"]).0 else {
            Issue.record("not a leader"); return
        }
        #expect(!closed.network.destinations.allowsLocal && open.network.destinations.allowsLocal)
    }

    @Test func followerOptions() throws {
        let (command, _) = try DaemonCommand.parse(["follower", "--leader", "speaker.local", "--name", "kitchen",
                                                    "--output", "file:/tmp/k.raw,ppm=-150", "--latency-ms", "12.5",
                                                    "--clock-offset-ms", "-3000", "--clock-skew-ppm", "50", "--no-steer"])
        guard case .follower(let c) = command else { Issue.record("not a follower"); return }
        #expect(c.leader == Endpoint(host: "speaker.local", port: 4953))
        #expect(c.name == "kitchen")
        #expect(c.output == .file(path: "/tmp/k.raw", ppm: -150, delayMilliseconds: 0))
        #expect(c.latencyMilliseconds == 12.5 && c.clockOffsetMilliseconds == -3000 && c.clockSkewPPM == 50 && !c.steering)
    }

    @Test func announcingIsOnFromTheCommandLineOnly() throws {
        #expect(!LeaderConfiguration().announce, "leaders built in code stay off the network")
        guard case .leader(let c) = try DaemonCommand.parse(["leader", "--play", "a.wav"]).0 else { Issue.record("not a leader"); return }
        #expect(c.announce && c.announceName == nil)
        guard case .leader(let quiet) = try DaemonCommand.parse(["leader", "--play", "a.wav", "--no-announce"]).0,
              case .leader(let named) = try DaemonCommand.parse(["leader", "--play", "a.wav", "--name", "Living room"]).0 else {
            Issue.record("not a leader"); return
        }
        #expect(!quiet.announce)
        #expect(named.announce && named.announceName == "Living room")
    }

    @Test func followerFindsItsLeaderWithoutAnAddress() throws {
        guard case .follower(let c) = try DaemonCommand.parse(["follower", "--name", "den"]).0,
              case .follower(let named) = try DaemonCommand.parse(["follower", "--leader-name", "Tutti on pi"]).0 else {
            Issue.record("not a follower"); return
        }
        #expect(c.leader == nil && c.leaderName == nil)
        #expect(named.leader == nil && named.leaderName == "Tutti on pi")
        #expect(DaemonUsage.follower.contains("--leader-name") && DaemonUsage.leader.contains("--no-announce"))
    }

    @Test func followerPlaysForASendspinServer() throws {
        guard case .follower(let c) = try DaemonCommand.parse(["follower", "--sendspin-server", "ws://ma.local:8927/sendspin", "--name", "den"]).0,
              case .follower(let short) = try DaemonCommand.parse(["follower", "--sendspin-server", "192.168.1.5:9000"]).0 else {
            Issue.record("not a follower"); return
        }
        #expect(c.sendspinServer == SendspinServerAddress(host: "ma.local", port: 8927, path: "/sendspin"))
        #expect(short.sendspinServer?.description == "ws://192.168.1.5:9000/sendspin")
        #expect(DaemonUsage.follower.contains("--sendspin-server"))
        #expect(throws: UsageError.self) { try DaemonCommand.parse(["follower", "--sendspin-server", "wss://ma.local"]) }
        #expect(c.sendspinFormats == nil && !c.sendspinDiscovery)
        // "mdns": found over Avahi; the codecs offered, in the order given.
        guard case .follower(let found) = try DaemonCommand.parse(["follower", "--sendspin-server", "mdns", "--sendspin-codecs", "opus, PCM,opus"]).0 else {
            Issue.record("not a follower"); return
        }
        #expect(found.sendspinServer == nil && found.sendspinDiscovery && found.playsForSendspin)
        #expect(found.sendspinFormats == [SendspinPlayerLink.opus, SendspinPlayerLink.pcm])
        guard case .follower(let deep) = try DaemonCommand.parse(["follower", "--sendspin-listen", "yes", "--sendspin-codecs", "flac24,pcm24,pcm"]).0 else {
            Issue.record("not a follower")
            return
        }
        #expect(deep.sendspinFormats == [SendspinPlayerLink.flac24, SendspinPlayerLink.pcm24, SendspinPlayerLink.pcm])
        #expect(deep.sendspinListen == SendspinListenAddress(host: "0.0.0.0", port: 8928, path: "/sendspin"))
        #expect(throws: UsageError.self) { try DaemonCommand.parse(["follower", "--sendspin-listen", "9000", "--sendspin-server", "mdns"]) }
        #expect(throws: UsageError.self) { try DaemonCommand.parse(["follower", "--sendspin-codecs", "mp3"]) }
        #expect(throws: UsageError.self) { try DaemonCommand.parse(["follower", "--sendspin-codecs", ""]) }
    }

    @Test(arguments: [
        ["leader", "--play", "a", "--name", ""],
        ["leader", "--play", "a", "--name", String(repeating: "n", count: 64)],
        ["leader", "--play", "a", "--name"],
        ["follower", "--leader-name"],
        ["follower", "--leader-name", String(repeating: "n", count: 64)],
        ["leader"],                                        // no files
        ["leader", "--play"],                              // still none
        ["leader", "--play", "a", "--codec", "flac"],
        ["leader", "--play", "a", "--bitrate", "9000"],
        ["leader", "--play", "a", "--frame-ms", "15"],
        ["leader", "--play", "a", "--buffer-ms", "nan"],
        ["leader", "--play", "a", "--listen", "host"],
        ["leader", "--play", "a", "--listen", "host:99999"],
        ["leader", "--play", "a", "--bogus"],
        ["follower", "--output", "speaker"],
        ["follower", "--name", String(repeating: "x", count: 65)],
        ["follower", "--clock-skew-ppm", "5000"],
        ["follower", "--latency-ms"],
        ["demo", "--seconds", "-1"],
        ["dance"],
    ])
    func badInputIsAUsageError(arguments: [String]) {
        #expect(throws: UsageError.self) { try DaemonCommand.parse(arguments) }
    }
}

/// Runs the built `tuttid` binary.
@Suite(.serialized) struct DaemonBinaryTests {
    static var binary: String {
        let dir = URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0]).deletingLastPathComponent()
        return dir.appendingPathComponent("tuttid").path
    }

    func run(_ arguments: [String], timeout: Double = 30) throws -> (status: Int32, out: String, err: String) {
        let r = try runProgram(Self.binary, arguments, timeout: timeout, stopAtTimeout: true)
        return (r.status, r.out, r.err)
    }

    @Test func demoPrintsSpeakerSeparation() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.binary), "\(Self.binary)")
        let dir = makeTemporaryDirectory()
        let (status, out, _) = try run(["demo", "--seconds", "5", "--dir", dir])
        #expect(status == 0)
        let lines = out.split(separator: "\n").filter { $0.contains("apart") && $0.hasPrefix("t=") }
        #expect(lines.count >= 3, "\(out)")
        // The last report: both speakers playing, within 1 ms of each other.
        let last = try #require(lines.last)
        let value = try #require(last.components(separatedBy: "speakers ").last?.split(separator: " ").first.flatMap { Double($0) })
        #expect(value < 1_000, "\(last)")
        #expect(out.contains("demo done"))
        // It recorded what each speaker played.
        #expect(((try? FileManager.default.attributesOfItem(atPath: dir + "/kitchen.raw")[.size] as? Int) ?? 0) > 48_000 * 4)
    }

    @Test func usageErrorsExitWith64() throws {
        let (status, _, err) = try run(["leader", "--codec", "flac", "--play", "x"])
        #expect(status == 64)
        #expect(err.contains("flac"))
        let (helpStatus, help, _) = try run(["follower", "--help"])
        #expect(helpStatus == 0 && help.contains("--output"))
    }

    @Test func leaderPlaysAFileToAFollowerProcessAndExits() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000)))
        let port = UInt16.random(in: 20_000...40_000)
        let leader = Process()
        leader.executableURL = URL(fileURLWithPath: Self.binary)
        leader.arguments = ["leader", "--listen", "127.0.0.1:\(port)", "--control", "off", "--mpd", "off",
                            "--play", dir + "/count.wav", "--codec", "pcm", "--start-ms", "1000"]
        leader.standardError = FileHandle.nullDevice
        try leader.run()
        let (status, _, err) = try run(["follower", "--leader", "127.0.0.1:\(port)", "--name", "proc", "--no-realtime",
                                        "--output", "file:\(dir)/proc.raw"], timeout: 4)
        leader.waitUntilExit()
        #expect(leader.terminationStatus == 0, "the leader exits once the play list has played")
        #expect(status == 128 + SIGTERM || status == 0, "follower stopped by SIGTERM: \(status)")
        #expect(err.contains("connected to leader"), "\(err)")
        let out = readRaw(dir + "/proc.raw")
        let start = try #require(firstSoundingFrame(out))
        #expect(counterIndex(out[2 * start], out[2 * start + 1]) == 0, "played from the first frame")
    }

    /// `tuttid follower` hands over to tutti-follower (built beside it): a
    /// speaker that never loads Foundation, and still plays.
    /// What each binary links (its ELF NEEDED entries): the client no
    /// audio library, the speaker none of the leader's.
    @Test(arguments: [
        ("tutti", ["libasound", "libopus", "libmpg123", "libFLAC", "libsoxr", "librubberband", "libsqlite3", "libcurl", "libogg"]),
        ("tutti-follower", ["libmpg123", "libFLAC", "libsoxr", "librubberband", "libsqlite3", "libcurl", "libFoundation", "libogg"]),
        // The leader: FoundationEssentials only, none of Foundation, its ICU or URLSession;
        // libcurl, librubberband, libFLAC, libcrypto and libogg (previews) are opened when first needed (dlopen).
        ("tuttid", ["libFoundation.so", "libFoundationInternationalization", "lib_FoundationICU", "libFoundationNetworking", "libFoundationXML",
                    "libcurl", "librubberband", "libcrypto", "libFLAC", "libogg"]),
    ])
    func binariesLinkOnlyWhatTheyUse(binary: String, absent: [String]) throws {
        let path = URL(fileURLWithPath: Self.binary).deletingLastPathComponent().path + "/" + binary
        let needed = try runProgram("/usr/bin/readelf", ["-d", path]).out.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(!needed.isEmpty, "readelf read \(path)")
        for library in absent {
            #expect(!needed.contains { $0.contains("[\(library)") }, "\(binary) links \(library)")
        }
    }

    @Test func aSpeakerRunsWithoutFoundation() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.sine(frequency: 440, seconds: 2, amplitude: 0.4)))
        let leader = try startLeader(files: [dir + "/tone.wav"], loop: true)
        defer { leader.stop() }
        let speaker = Process()
        speaker.executableURL = URL(fileURLWithPath: Self.binary)
        speaker.arguments = ["follower", "--leader", "127.0.0.1:\(leader.endpoint.port)", "--name", "lean", "--no-realtime",
                             "--log-level", "warning", "--output", "file:\(dir)/lean.raw"]
        try speaker.run()
        defer { if speaker.isRunning { kill(speaker.processIdentifier, SIGKILL); speaker.waitUntilExit() } }
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["lean"] }, "the speaker joined")
        let pid = speaker.processIdentifier
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")
        #expect(exe.hasSuffix("/tutti-follower"), "\(exe)")
        // cat: Foundation reads a /proc file only up to its first page.
        let maps = try runProgram("/bin/cat", ["/proc/\(pid)/maps"]).out
        #expect(maps.contains("libswiftCore") && maps.contains("libopus"), "the whole map was read")
        #expect(!maps.contains("libFoundation"), "no Foundation in a speaker")
        for library in ["libsqlite3", "libcurl", "libmpg123", "libFLAC", "libsoxr", "libogg"] {
            #expect(!maps.contains(library), "nor the leader's \(library)")
        }
        func loudFrames() -> Int { let x = readRaw(dir + "/lean.raw"); return stride(from: 0, to: x.count, by: 2).filter { abs(Int(x[$0])) > 3_000 }.count }
        #expect(waitUntil(timeout: 10) { loudFrames() > 24_000 }, "it plays the tone")
        kill(pid, SIGTERM)
        speaker.waitUntilExit()
        #expect(speaker.terminationReason == .exit && speaker.terminationStatus == 0, "SIGTERM ends it cleanly")
    }

    @Test func followerBinaryHelpAndUsageErrors() throws {
        let lean = URL(fileURLWithPath: Self.binary).deletingLastPathComponent().appendingPathComponent("tutti-follower").path
        let help = try runProgram(lean, ["--help"], timeout: 10)
        #expect(help.status == 0 && help.out.contains("--output"))
        let bad = try runProgram(lean, ["--clock-skew-ppm", "5000"], timeout: 10)
        #expect(bad.status == 64 && bad.err.contains("--clock-skew-ppm"), "\(bad)")
        let unknown = try runProgram(Self.binary, ["follower", "--bogus"], timeout: 10)
        #expect(unknown.status == 64 && unknown.err.contains("--bogus"), "\(unknown)")
    }

    /// A parent's worker thread may start tuttid with SIGTERM blocked (the
    /// mask is inherited): SIGTERM must still stop it, within seconds.
    @Test func sigtermStopsALeaderStartedWithItBlocked() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.sine(frequency: 440, seconds: 1, amplitude: 0.4)))
        /// Starts `arguments` from this thread with SIGTERM blocked, as a worker thread would.
        func startBlocked(_ path: String, _ arguments: [String], output: Pipe? = nil) throws -> Process {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: path)
            p.arguments = arguments
            p.standardError = FileHandle.nullDevice
            if let output { p.standardOutput = output }
            var blocked = sigset_t(), previous = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGTERM)
            pthread_sigmask(SIG_BLOCK, &blocked, &previous)
            let started = Result { try p.run() }
            pthread_sigmask(SIG_SETMASK, &previous, nil)
            try started.get()
            return p
        }
        func termBlocked(_ status: String) -> Bool {
            let line = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") } ?? ""
            let bits = UInt64(line.split(separator: "\t").last.map(String.init) ?? "", radix: 16) ?? 0
            return bits & (1 << UInt64(SIGTERM - 1)) != 0
        }
        // The precondition: a child started so inherits the blocked SIGTERM.
        let pipe = Pipe()
        let probe = try startBlocked("/bin/cat", ["/proc/self/status"], output: pipe)
        let probeStatus = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        #expect(termBlocked(probeStatus), "a child inherits its parent thread's blocked SIGTERM")

        let leader = try startBlocked(Self.binary, ["leader", "--listen", "127.0.0.1:0", "--control", "off", "--mpd", "off",
                                                    "--no-announce", "--play", dir + "/tone.wav", "--loop"])
        defer { if leader.isRunning { kill(leader.processIdentifier, SIGKILL); leader.waitUntilExit() } }
        // It starts blocked (inherited) and unblocks SIGTERM once running.
        var status = ""
        waitUntil(timeout: 10) {
            status = (try? runProgram("/bin/cat", ["/proc/\(leader.processIdentifier)/status"]).out) ?? ""
            return !termBlocked(status)
        }
        #expect(!termBlocked(status), "tuttid unblocks SIGTERM")
        kill(leader.processIdentifier, SIGTERM)
        #expect(waitUntil(timeout: 10) { !leader.isRunning }, "SIGTERM stopped the leader")
    }

    /// The bounded reader behind button mappings and playlists.
    @Test func wholeFilesAreReadWithinTheirLimit() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/ten", Array("0123456789".utf8))
        #expect(try readWholeFile(dir + "/ten", limit: 10) == Array("0123456789".utf8))
        #expect(throws: FileReadError.self) { try readWholeFile(dir + "/ten", limit: 9) }
        // st_size is 0 under /proc: read to the end, still bounded.
        let status = try readWholeFile("/proc/self/status", limit: 1 << 20)
        #expect(String(decoding: status, as: UTF8.self).contains("VmRSS"))
        #expect(throws: FileReadError.self) { try readWholeFile("/proc/self/status", limit: 100) }
        do { _ = try readWholeFile(dir + "/missing", limit: 10); Issue.record("a missing file was read") } catch {
            #expect("\(error)".contains("No such file"), "\(error)")
        }
    }
}

/// The speaker's doctor asks the leader about its room over JSON-RPC, without Foundation.
@Suite struct SpeakerDoctorTests {
    @Test func roomHealthReadsTheLeadersRoomsList() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.sine(frequency: 440, seconds: 2, amplitude: 0.4)))
        let leader = try startLeader(files: [dir + "/tone.wav"], loop: true) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        let control = try #require(leader.controlEndpoint)
        // Health comes with the room's first report, a few seconds after it joins.
        #expect(waitUntil(timeout: 15) { (try? roomHealth(control: "\(control.host):\(control.port)", room: "den"))?.bufferMilliseconds != nil })
        let health = try roomHealth(control: "\(control.host):\(control.port)", room: "den")
        #expect(health.connected && health.roundTripMicroseconds != nil, "\(health)")
        #expect(try roomHealth(control: "\(control.host):\(control.port)", room: "attic").connected == false)
        #expect(throws: DoctorProbeFailure.self) { try roomHealth(control: "127.0.0.1:1", room: "den") }
    }
}

/// `snapcast-unkeyed` and `snapcast-control-open` are two options (issue 26, finding 3).
@Suite struct SnapcastOptionTests {
    @Test func joiningWithoutAKeyAndOpenControlAreSeparateOptions() throws {
        guard case .leader(let unkeyed) = try DaemonCommand.parse(["leader", "--music", "/m", "--snapcast-unkeyed"]).0,
              case .leader(let open) = try DaemonCommand.parse(["leader", "--music", "/m", "--snapcast-control-open"]).0,
              case .leader(let neither) = try DaemonCommand.parse(["leader", "--music", "/m"]).0 else {
            Issue.record("not a leader"); return
        }
        #expect(unkeyed.snapcastWithoutKey && !unkeyed.snapcastControlOpen)
        #expect(open.snapcastControlOpen && !open.snapcastWithoutKey)
        #expect(!neither.snapcastWithoutKey && !neither.snapcastControlOpen)
        let file = try ConfigFile.parse("[leader]\nmusic = /m\nsnapcast-control-open = yes\n", path: "/etc/tutti/tutti.conf")
        guard case .leader(let fromFile) = try DaemonCommand.parse(["leader"], file: file, hostname: "pi").0 else { Issue.record("not a leader"); return }
        #expect(fromFile.snapcastControlOpen && !fromFile.snapcastWithoutKey)
    }
}
