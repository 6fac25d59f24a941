import Foundation
import Glibc
import Testing
import Synchronization
import TuttiAudio
import TuttiCore
@testable import TuttiDaemon
@testable import TuttiLeader
import TuttiDiscovery
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// The built executables, beside the test bundle.
func binary(_ name: String) -> String {
    URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path
}

/// A WAV whose frames encode their own index (left: i % 30000, right: i / 30000, both + 1000).
func counterWAV(frames: Int) -> Data {
    var samples: [Int16] = []
    samples.reserveCapacity(frames * 2)
    for i in 0..<frames { samples.append(Int16(1000 + i % 30_000)); samples.append(Int16(1000 + i / 30_000)) }
    var bytes = wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 16, dataBytes: samples.count * 2)
    for s in samples { let v = UInt16(bitPattern: s); bytes.append(UInt8(v & 0xff)); bytes.append(UInt8(v >> 8)) }
    return Data(bytes)
}

/// The longest run of consecutive counter frames in an S16LE stereo capture.
func playedCounterFrames(_ path: String) -> (played: Int, distinct: Int) {
    guard let data = FileManager.default.contents(atPath: path) else { return (0, 0) }
    let s: [Int16] = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    var played = 0
    var seen = Set<Int>()
    for k in 0..<(s.count / 2) {
        let (l, r) = (s[2 * k], s[2 * k + 1])
        guard l >= 1000, r >= 1000 else { continue }
        played += 1
        seen.insert(Int(r - 1000) * 30_000 + Int(l - 1000))
    }
    return (played, seen.count)
}

/// End to end: a leader announcing itself, found by a follower process and by the `tutti` client.
@Suite(.serialized) struct LeaderDiscoveryTests {
    /// With `--sendspin`, the leader is also announced as a Sendspin server
    /// (`_sendspin-server._tcp`, TXT `path=/sendspin`), under its own name and
    /// the Sendspin port, as Music Assistant's players look for one.
    @Test func aSendspinServerIsAnnouncedWithItsPortAndPath() throws {
        let daemon = try AvahiTestDaemon()
        try daemon.start()
        let dir = daemon.directory
        _ = FileManager.default.createFile(atPath: dir + "/count.wav", contents: counterWAV(frames: 48_000 * 3))
        let name = uniqueName("sendspin")
        var c = LeaderConfiguration()
        c.listen = Endpoint(host: "127.0.0.1", port: 0)
        c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
        c.files = [dir + "/count.wav"]
        c.loop = true
        c.announce = true
        c.announceName = name
        let leader = try Leader(configuration: c, log: .silent, surfaces: ControlSurfaces())
        try leader.start()
        defer { leader.stop() }
        let port = try #require(leader.sendspinEndpoint).port
        let browser = try ServiceBrowser(type: "_sendspin-server._tcp")
        defer { browser.stop() }
        #expect(waitUntil(timeout: 10) { browser.leaders.contains { $0.name == name } }, "\(browser.leaders)")
        let found = try #require(browser.leaders.first { $0.name == name })
        #expect(found.port == port && found.txt["path"] == "/sendspin", "\(found)")
        // Withdrawn with the leader.
        leader.stop()
        #expect(waitUntil(timeout: 10) { !browser.leaders.contains { $0.name == name } }, "still listed after the leader stopped")
    }

    @Test func followerWithoutAddressFindsTheLeaderAndPlays_andTuttiFindsItsControlPort() throws {
        let daemon = try AvahiTestDaemon()
        try daemon.start()
        let dir = daemon.directory
        _ = FileManager.default.createFile(atPath: dir + "/count.wav", contents: counterWAV(frames: 48_000 * 3))
        let name = uniqueName("leader")
        var c = LeaderConfiguration()
        c.listen = Endpoint(host: "127.0.0.1", port: 0)
        c.control = Endpoint(host: "127.0.0.1", port: 0)
        c.files = [dir + "/count.wav"]
        c.loop = true
        c.codec = .pcm
        c.announce = true
        c.announceName = name
        let leader = try Leader(configuration: c, log: .silent, surfaces: ControlSurfaces())
        try leader.start()
        defer { leader.stop() }
        let announcer = try #require(leader.announcer)
        #expect(announcer.waitUntilEstablished(timeout: 10) == name, "\(announcer.status)")
        #expect(announcer.port == leader.endpoint.port)
        #expect(announcer.txt["control"] == String(try #require(leader.controlEndpoint).port))

        // A decoy announced under a name that sorts first: --leader-name must skip it.
        let decoy = try ServicePublisher(name: "AAA decoy \(name)", port: 9, txt: ["v": "1"], log: .silent)
        defer { decoy.stop() }
        _ = decoy.waitUntilEstablished(timeout: 10)

        // The follower process, with no --leader.
        let follower = Process()
        follower.executableURL = URL(fileURLWithPath: binary("tuttid"))
        follower.arguments = ["follower", "--leader-name", name, "--name", "den", "--output", "file:\(dir)/den.raw"]
        let err = Pipe()
        follower.standardError = err
        let started = ContinuousClock.now
        try follower.run()
        var connectedAfter: Double?
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if leader.followerNames.contains("den") { connectedAfter = secondsSince(started); break }
            usleep(20_000)
        }
        let connected = try #require(connectedAfter, "the follower never connected")
        print("follower found the leader over mDNS and connected in \(String(format: "%.2f", connected)) s")
        usleep(3_000_000)
        // `tutti leaders --json` lists it with its ports.
        let (status, out) = try runProcess(binary("tutti"), ["leaders", "--json"])
        #expect(status == 0, "\(out)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(out.utf8)) as? [[String: Any]], "\(out)")
        let entry = try #require(list.first { $0["name"] as? String == name }, "\(out)")
        #expect(entry["port"] as? Int == Int(leader.endpoint.port))
        #expect(entry["control"] as? Int == Int(try #require(leader.controlEndpoint).port))
        #expect(entry["address"] as? String == "127.0.0.1")
        #expect(entry["version"] as? Int == Int(WireProtocol.version))
        #expect(entry["id"] as? String == TuttiService.stableLeaderID(port: leader.endpoint.port))
        let (textStatus, text) = try runProcess(binary("tutti"), ["leaders"])
        #expect(textStatus == 0 && text.contains("\(name)\t127.0.0.1:\(leader.endpoint.port)"), "\(text)")

        // `tutti status` with no --host/--port: the control port comes from the announcement
        // (an ephemeral port, not the default 4954).
        let (statusCode, statusJSON) = try runProcess(binary("tutti"), ["--leader", name, "--json", "status"],
                                                               environment: ["TUTTI_HOST": ""])
        #expect(statusCode == 0, "\(statusJSON)")
        let player = (try? JSONSerialization.jsonObject(with: Data(statusJSON.utf8)) as? [String: Any])?["player"] as? [String: Any]
        #expect(player?["state"] as? String == "playing", "\(statusJSON)")

        // The leader moves (restarted on another port, same name): the follower finds it again.
        leader.stop()
        c.listen = Endpoint(host: "127.0.0.1", port: 0)
        let moved = try Leader(configuration: c, log: .silent, surfaces: ControlSurfaces())
        try moved.start()
        defer { moved.stop() }
        #expect(moved.endpoint.port != leader.endpoint.port)
        let movedAt = ContinuousClock.now
        let movedDeadline = ContinuousClock.now + .seconds(20)
        while !moved.followerNames.contains("den") && ContinuousClock.now < movedDeadline { usleep(20_000) }
        #expect(moved.followerNames.contains("den"), "the follower did not follow the leader to its new port")
        print("follower reconnected to the moved leader \(String(format: "%.2f", secondsSince(movedAt))) s after the move")
        stopProcess(follower)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("found leader '\(name)' at 127.0.0.1:\(leader.endpoint.port) over mDNS"), "\(log)")
        #expect(log.contains("connected to leader 127.0.0.1:\(leader.endpoint.port)"), "\(log)")
        // It played the track: at least 1.5 s of its frames (a loaded CI
        // machine may interrupt the run, so this counts frames rather than the longest run).
        let (played, distinct) = playedCounterFrames(dir + "/den.raw")
        #expect(distinct >= 72_000, "\(played) track frames played, \(distinct) distinct")
        #expect(log.contains("found leader '\(name)' at 127.0.0.1:\(moved.endpoint.port) over mDNS"), "\(log)")

        // Stopped, the leader is withdrawn.
        moved.stop()
        let gone = ContinuousClock.now + .seconds(10)
        var names: [String] = [name]
        while names.contains(name) && ContinuousClock.now < gone { names = try discoverLeaders(timeout: 2).map(\.name) }
        #expect(!names.contains(name))
    }

    @Test func withoutAvahiTheLeaderRunsAndTuttiSaysWhy() throws {
        let daemon = try AvahiTestDaemon() // lock held, no daemon
        _ = daemon
        var c = LeaderConfiguration()
        c.listen = Endpoint(host: "127.0.0.1", port: 0)
        c.files = ["/nonexistent.wav"]
        c.announce = true
        c.announceName = uniqueName("no-avahi")
        let leader = try Leader(configuration: c, log: .silent, surfaces: ControlSurfaces())
        try leader.start() // announcing never fails the leader
        defer { leader.stop() }
        #expect(leader.announcer?.status == .waitingForDaemon)

        let (status, out) = try runProcess(binary("tutti"), ["leaders"])
        #expect(status == 2)
        #expect(out.contains("avahi-daemon is not running"), "\(out)")
        // Without a bus at all, a clear message too.
        let (busStatus, busOut) = try runProcess(binary("tutti"), ["leaders"],
                                                          environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(daemon.directory)/no-bus"])
        #expect(busStatus == 2)
        #expect(busOut.contains("avahi-daemon") && !busOut.isEmpty, "\(busOut)")
        print("no bus: \(busOut)")
    }

    /// A paired speaker found over mDNS connects to its own leader: a rogue
    /// announced under a name that sorts first (`!x`), even one that copied
    /// the real leader's key fingerprint into its TXT record, gets a goodbye
    /// and never a proof, and the speaker then plays for its leader.
    @Test func aPairedSpeakerIgnoresARogueAnnouncementAndGivesItNoProof() throws {
        let daemon = try AvahiTestDaemon()
        try daemon.start()
        let dir = daemon.directory
        _ = FileManager.default.createFile(atPath: dir + "/count.wav", contents: counterWAV(frames: 48_000 * 3))
        var c = LeaderConfiguration()
        c.listen = Endpoint(host: "127.0.0.1", port: 0)
        c.files = [dir + "/count.wav"]
        c.loop = true
        c.codec = .pcm
        c.announce = true
        c.announceName = uniqueName("real")
        c.pairedSpeakersOnly = true
        c.stateDirectory = dir + "/leader-state"
        let real = try Leader(configuration: c, log: .silent, surfaces: ControlSurfaces())
        try real.start()
        defer { real.stop() }
        #expect(real.announcer?.waitUntilEstablished(timeout: 10) != nil)

        // Paired once, by approval, at a known address.
        let state = dir + "/speaker-state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        var fc = FollowerConfiguration()
        fc.leader = real.endpoint
        fc.name = "den"
        fc.output = .file(path: "/dev/null", ppm: 0, delayMilliseconds: 0)
        fc.stateDirectory = state
        fc.realtime = false
        let pairing = try Follower(configuration: fc, log: .silent)
        pairing.start()
        let deadline = ContinuousClock.now + .seconds(10)
        while real.pairingRequests.isEmpty && ContinuousClock.now < deadline { usleep(20_000) }
        #expect(real.decidePairing(name: "den", allow: true))
        while !pairing.connected && ContinuousClock.now < deadline { usleep(20_000) }
        pairing.stop()
        #expect(real.pairedSpeakers.map(\.name) == ["den"])

        // The rogue: open, its own key, announced as "!x …" with the real leader's fingerprint copied.
        let rogueLog = CapturingLog()
        var r = LeaderConfiguration()
        r.listen = Endpoint(host: "127.0.0.1", port: 0)
        r.files = [dir + "/count.wav"]
        r.loop = true
        let rogue = try Leader(configuration: r, log: rogueLog.logger, surfaces: ControlSurfaces())
        try rogue.start()
        defer { rogue.stop() }
        let fake = try ServicePublisher(name: "!x \(uniqueName("rogue"))", port: rogue.endpoint.port,
                                        txt: TuttiService.txt(controlPort: nil, mpdPort: nil, id: "0", keyFingerprint: real.speakerKeyFingerprint), log: .silent)
        defer { fake.stop() }
        #expect(fake.waitUntilEstablished(timeout: 10) != nil)

        // The speaker process, with no --leader: it finds both.
        let follower = Process()
        follower.executableURL = URL(fileURLWithPath: binary("tuttid"))
        follower.arguments = ["follower", "--name", "den", "--output", "file:\(dir)/den.raw", "--state", state, "--no-realtime"]
        let err = Pipe()
        follower.standardError = err
        try follower.run()
        let joinBy = ContinuousClock.now + .seconds(30)
        while !real.followerNames.contains("den") && ContinuousClock.now < joinBy { usleep(50_000) }
        #expect(real.followerNames.contains("den"), "the paired speaker did not reach its leader")
        usleep(1_000_000)
        stopProcess(follower)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(rogue.followerNames.isEmpty)
        let rogueLines = rogueLog.lines.filter { $0.contains("den") }
        // Whatever the rogue saw from den ended at the proof step with den's goodbye.
        for line in rogueLines where line.contains("disconnected") {
            #expect(line.contains("is not the one this speaker is paired with"), "\(line)")
        }
        print("rogue saw: \(rogueLines)")
        #expect(log.contains("connected to leader 127.0.0.1:\(real.endpoint.port)"), "\(log)")
    }
}

/// Keeps every log line (as TuttiDaemonTests' CapturingLog).
final class CapturingLog: Sendable {
    private let captured = Mutex<[String]>([])
    var lines: [String] { captured.withLock { $0 } }
    var logger: Logger { Logger(label: "test") { [self] level, label, message in record("\(level) \(label): \(message)") } }
    private func record(_ line: String) { captured.withLock { $0.append(line) } }
}
