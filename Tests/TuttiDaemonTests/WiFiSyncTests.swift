import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// bench/sync/relay.py in front of a leader: TCP and UDP on one port each
/// (the leader's clock service is on UDP at its TCP port), seeded. Started
/// as a `BackgroundProgram`: under Foundation's `Process` it inherited the
/// test thread's blocked SIGTERM and the test hung in deinit.
final class ImpairmentRelay {
    let program: BackgroundProgram
    let ports: [UInt16]

    init(target: Endpoint, count: Int, arguments: [String]) throws {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        // The relay picks its ports (TCP and UDP free alike) and writes them down once it listens on all.
        let portsFile = makeTemporaryDirectory() + "/ports"
        program = try BackgroundProgram("/usr/bin/env", ["python3", repo.appendingPathComponent("bench/sync/relay.py").path] + arguments
            + ["--ports-file", portsFile] + (0..<count).map { _ in "0:127.0.0.1:\(target.port)" })
        // Python's start-up alone can take seconds on a loaded 2-core machine: 30 s, as LocalFileServer.
        let deadline = Monotonic.now() + 30 * nanosecondsPerSecond
        var found: [UInt16] = []
        while Monotonic.now() < deadline {
            let text = (try? String(contentsOfFile: portsFile, encoding: .utf8)) ?? ""
            found = text.split(separator: "\n").compactMap { UInt16($0) }
            if found.count == count { break }
            usleep(20_000)
        }
        guard found.count == count else {
            program.stop()
            throw CommandFailed(description: "bench/sync/relay.py did not listen within 30 s")
        }
        ports = found
    }

    func endpoint(_ i: Int) -> Endpoint { Endpoint(host: "127.0.0.1", port: ports[i]) }

    deinit { program.stop() }
}

/// Silent stretches (both channels below −42 dBFS for `frames` frames or more)
/// between two instants: (start, frames) each.
func silentStretches(_ path: String, ppm: Double, from: Int64, to: Int64, frames: Int = 480) -> [(Int64, Int)] {
    let samples = readRaw(path)
    let timing = readTiming(path)
    guard let first = timing.first(where: { $0.time >= from })?.frame else { return [] }
    var out: [(Int64, Int)] = []
    var run = 0
    var i = first
    while 2 * i + 1 < samples.count {
        guard let t = leaveTime(ofFrame: i, timing: timing, ppm: ppm), t <= to else { break }
        if abs(Int(samples[2 * i])) < 256 && abs(Int(samples[2 * i + 1])) < 256 { run += 1 } else {
            if run >= frames, let s = leaveTime(ofFrame: i - run, timing: timing, ppm: ppm) { out.append((s, run)) }
            run = 0
        }
        i += 1
    }
    if run >= frames, let s = leaveTime(ofFrame: i - run, timing: timing, ppm: ppm) { out.append((s, run)) }
    return out
}

/// Behaviour on a Wi-Fi-like link, through the bench's relay (timing figures: bench/sync).
@Suite(.serialized) struct WiFiSyncTests {
    @Test
    func aJoinerBehindTwentyPlusMinusFifteenMillisecondsJitterPlaysInStep() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(toneWithClicks(seconds: 40, frequency: 440)))
        let leader = try startLeader(files: [dir + "/a.wav"], codec: .opus)
        defer { leader.stop() }
        let relay = try ImpairmentRelay(target: leader.endpoint, count: 2, arguments: ["--impair", "20,15", "--seed", "7"])
        let a = try startFollower(leader: relay.endpoint(0), name: "a", output: .file(path: dir + "/a.raw", ppm: -100, delayMilliseconds: 0)) { c in
            c.clockOffsetMilliseconds = 2_500; c.clockSkewPPM = 40
        }
        usleep(8_000_000)
        let joined = Monotonic.now()
        let b = try startFollower(leader: relay.endpoint(1), name: "b", output: .file(path: dir + "/b.raw", ppm: 120, delayMilliseconds: 0)) { c in
            c.clockOffsetMilliseconds = -4_000; c.clockSkewPPM = -30
        }
        // Ten seconds of the joiner playing, however long its clock took to be
        // sure (2–4 s here on a quiet machine, 6 s with the whole suite on two cores).
        let deadline = joined + 15 * nanosecondsPerSecond
        while !b.engine.statistics.playing && Monotonic.now() < deadline { usleep(50_000) }
        usleep(10_500_000)
        let health = leader.syncHealth
        a.stop(); b.stop()

        let ta = clickTimes(dir + "/a.raw", ppm: -100), tb = clickTimes(dir + "/b.raw", ppm: 120)
        // Every click the joiner played, its first included: it never plays out of step first.
        let all = pairedDifferences(tb, ta, from: joined).sorted()
        let first = tb.first { $0 >= joined }.map { ($0 - joined) / 1_000_000 }
        print("joiner behind 20±15 ms: first click \(first ?? -1) ms after start, |b − a| µs:", all.map { $0 / 1000 })
        print("joiner behind 20±15 ms: engine a \(a.engine.statistics), b \(b.engine.statistics); DAC underruns a \(a.engine.sink.underruns), b \(b.engine.sink.underruns)")
        print("joiner behind 20±15 ms: b's clicks, ms after it started:", tb.map { ($0 - joined) / 1_000_000 })
        #expect(all.count >= 9, "\(all.count) clicks compared")
        let worst = all.last ?? Int64.max
        // Behaviour, not the bench's figures (bench/sync/cases.sh jitter gives those: a median of 17–28 µs on a
        // quiet machine). Here the relay is Python sharing two cores with the whole suite: a full run once
        // left its path 100 ms late in bursts and the joiner 0.9 ms off. What must hold whatever the load:
        // it plays the same part of the stream as the other room, never a chunk (20 ms) or 5 ms off.
        #expect(worst < 5_000_000, "the joiner's worst click \(worst / 1000) µs from the other room's")
        let settled = pairedDifferences(tb, ta, from: joined + 2_000_000_000).sorted()
        #expect(settled.count >= 8)
        #expect(settled[settled.count / 2] < 2_000_000 && (settled.last ?? .max) < 5_000_000)
        #expect(b.engine.statistics.hardResyncs == 0, "\(b.engine.statistics.hardResyncs) hard resyncs")
        // The rooms say how their clocks are doing: over UDP, and how sure.
        #expect(health["b"]?.clockChannel == .datagram)
        #expect((health["b"]?.clockSamples ?? 0) > 1_000 && (health["b"]?.clockUncertaintyNanoseconds ?? 0) > 0, "\(String(describing: health["b"]))")
        // The arrival margin of the room that joined first (the joiner's window still holds its backlog, sent late by design).
        #expect((health["a"]?.arrivalLeadMinimumNanoseconds ?? 0) > 500_000_000, "\(String(describing: health["a"]))")
    }

    /// Issue 30: a link that queues in order (one FIFO per direction, as
    /// Wi-Fi sends), 20 ± 15 ms each way. The speaker used to open its DAC,
    /// starve it and try again 734 times over 35 s while its clock waited
    /// for a sample within 45 µs of the floor.
    @Test
    func onAQueuedLinkASpeakerIsHeardWithinThreeSecondsAndItsDACWaitsStopped() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
        let leader = try startLeader(files: [dir + "/a.wav"], codec: .opus)
        defer { leader.stop() }
        let relay = try ImpairmentRelay(target: leader.endpoint, count: 1, arguments: ["--impair", "20,15", "--order", "fifo", "--seed", "5"])
        let started = Monotonic.now()
        let a = try startFollower(leader: relay.endpoint(0), name: "a", output: .file(path: dir + "/a.raw", ppm: 90, delayMilliseconds: 0)) { c in
            c.clockOffsetMilliseconds = -2_000; c.clockSkewPPM = 45
        }
        #expect(waitUntil(timeout: 10) { a.engine.statistics.playing })
        let playing = Monotonic.now()
        usleep(6_000_000)
        let stats = a.engine.statistics, underruns = a.engine.sink.underruns
        let sync = a.syncReport(withStreamDelay: false)
        a.stop()
        let timing = readTiming(dir + "/a.raw"), samples = readRaw(dir + "/a.raw")
        let firstWrite = timing.first.map { Double($0.time - started) / 1e9 } ?? -1
        let firstSound = samples.indices.first { abs(Int(samples[$0])) >= 256 }
            .flatMap { leaveTime(ofFrame: $0 / 2, timing: timing, ppm: 90) }.map { Double($0 - started) / 1e9 } ?? -1
        print("queued 20±15 ms in order: playing after \(Double(playing - started) / 1e9) s, first write to the DAC at \(firstWrite) s, " +
              "first sound at \(firstSound) s; underruns \(underruns), hard resyncs \(stats.hardResyncs); clock uncertainty " +
              "\(sync.clockUncertaintyNanoseconds / 1000) µs over \(sync.clockSamples) samples")
        // Heard within 3 s (a loaded machine's Python relay adds its own: 4 s).
        #expect(firstSound > 0 && firstSound <= 4.0)
        // While its clock was not good enough the DAC was fed silence, never started and starved: no underrun, ever.
        #expect(underruns == 0)
        #expect(stats.hardResyncs == 0)
        // It says how sure its clock is: settling on this link (a measured 244 µs after 8 s; the floor shows
        // a few times a minute), and never the 0 of a speaker that has no clock.
        #expect(sync.clockUncertaintyNanoseconds > 0 && sync.clockUncertaintyNanoseconds <= 1_000_000)
    }

    @Test
    func withTwoPercentLossAndStallsNothingGoesSilent() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
        let leader = try startLeader(files: [dir + "/a.wav"], codec: .opus)
        defer { leader.stop() }
        // Packets 1–3 ms, a 100–300 ms stall every 3 s, 2 % loss (TCP: an RTO each).
        let burst = "burst:1,3,3000,100,300"
        let relay = try ImpairmentRelay(target: leader.endpoint, count: 2,
                                        arguments: ["--down", burst, "--up", burst, "--loss", "0.02", "--seed", "3"])
        let started = Monotonic.now()
        let a = try startFollower(leader: relay.endpoint(0), name: "a", output: .file(path: dir + "/a.raw", ppm: -150, delayMilliseconds: 0)) { c in
            c.clockOffsetMilliseconds = 1_000; c.clockSkewPPM = 50
        }
        let b = try startFollower(leader: relay.endpoint(1), name: "b", output: .file(path: dir + "/b.raw", ppm: 150, delayMilliseconds: 0)) { c in
            c.clockOffsetMilliseconds = -3_000; c.clockSkewPPM = -50
        }
        // The least lead of an arriving chunk (over the follower's 10 s window), each second: how close a stall came to a gap.
        var leads: [String] = []
        for _ in 0..<20 {
            usleep(1_000_000)
            let ra = a.syncReport(withStreamDelay: false), rb = b.syncReport(withStreamDelay: false)
            leads.append("\(ra.arrivalLeadMinimumNanoseconds / 1_000_000)/\(rb.arrivalLeadMinimumNanoseconds / 1_000_000)")
        }
        print("2 % loss and stalls: least arrival lead a/b ms, each second:", leads.joined(separator: " "))
        print("2 % loss and stalls: engine a \(a.engine.statistics), b \(b.engine.statistics); DAC underruns a \(a.engine.sink.underruns), b \(b.engine.sink.underruns)")
        a.stop(); b.stop()
        for (name, ppm) in [("a", -150.0), ("b", 150.0)] {
            // Gaps once the room was first heard (joining on this link, on a loaded machine, can take more than 3 s:
            // the silence before it is not a gap); heard at all within 8 s.
            let path = dir + "/\(name).raw", timing = readTiming(path), samples = readRaw(path)
            let heard = samples.indices.first { abs(Int(samples[$0])) >= 256 }.flatMap { leaveTime(ofFrame: $0 / 2, timing: timing, ppm: ppm) }
            #expect(heard.map { $0 - started <= 8_000_000_000 } == true, "room \(name) first heard at \(heard.map { ($0 - started) / 1_000_000 } ?? -1) ms")
            let gaps = silentStretches(path, ppm: ppm, from: max(started + 3_000_000_000, heard ?? 0), to: started + 19_000_000_000)
            print("2 % loss and stalls, room \(name): heard at \(heard.map { ($0 - started) / 1_000_000 } ?? -1) ms; silent stretches ≥ 10 ms:",
                  gaps.map { "\(($0.0 - started) / 1_000_000) ms: \($0.1 / 48) ms" })
            #expect(gaps.isEmpty, "room \(name): silent stretches \(gaps.map { "\(($0.0 - started) / 1_000_000) ms: \($0.1 / 48) ms" })")
        }
        #expect(a.engine.statistics.hardResyncs == 0 && b.engine.statistics.hardResyncs == 0,
                "hard resyncs a \(a.engine.statistics.hardResyncs), b \(b.engine.statistics.hardResyncs)")
        let ta = clickTimes(dir + "/a.raw", ppm: -150), tb = clickTimes(dir + "/b.raw", ppm: 150)
        let diffs = pairedDifferences(ta, tb, from: started + 5_000_000_000).sorted()
        print("2 % loss and stalls: |a − b| µs:", diffs.map { $0 / 1000 })
        // In step at the level of behaviour (the figures are bench/sync's, on a quiet machine).
        #expect(diffs.count >= 12 && diffs[diffs.count / 2] < 1_000_000 && diffs.last! < 5_000_000, "|a − b| µs: \(diffs.map { $0 / 1000 })")
    }

    /// v6: a room whose stream delivers 212 ms late makes commands take
    /// effect that much (+30 ms) ahead; once it leaves, 100 ms again. A real
    /// v6 speaker on loopback reports its (small) stream delay.
    @Test func aSlowRoomsStreamDelayLengthensTheCommandLead() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(toneWithClicks(seconds: 20, frequency: 440)))
        let leader = try startLeader(files: [dir + "/a.wav"], codec: .opus)
        defer { leader.stop() }
        let speaker = try startFollower(leader: leader.endpoint, name: "real", output: .file(path: dir + "/real.raw", ppm: 0, delayMilliseconds: 0))
        defer { speaker.stop() }
        #expect(waitUntil(timeout: 10) { leader.syncHealth["real"]?.streamDelayMaximumNanoseconds != nil })
        let measured = leader.syncHealth["real"]?.streamDelayMaximumNanoseconds ?? -1
        print("loopback stream delay reported: \(Double(measured) / 1e6) ms")
        #expect(measured >= 0)

        let lead = { (group: String?) throws -> Int64 in
            let o = try leader.perform(.pause, group: group)
            _ = try leader.perform(.play, group: group)
            return o.effectiveAt - o.acceptedAt
        }
        // Raw v6 room (plain, on an open leader): hello, welcome, then a report of a 212 ms stream delay.
        let slow = try TCPConnection.connect(to: leader.endpoint)
        try slow.send(Message.hello(version: WireProtocol.streamDelayVersion, name: "slow").encoded())
        let reader = MessageReader(connection: slow)
        guard case .welcome? = try reader.next() else { Issue.record("no welcome"); return }
        // It reads what it is sent, as a speaker does (one that does not is dropped).
        nonisolated(unsafe) let drained = reader
        Thread.detachNewThread { while (try? drained.next()) != nil {} }
        try slow.send(Message.syncReport(SyncReport(streamDelayMaximumNanoseconds: 212_000_000)).encoded())
        #expect(waitUntil(timeout: 5) { leader.syncHealth["slow"]?.streamDelayMaximumNanoseconds == 212_000_000 })
        let slowLead = try lead(nil)
        print("command lead with a 212 ms room: \(Double(slowLead) / 1e6) ms")
        // The PTS lands on the 48 kHz grid after now + lead (plus Opus' look-ahead moved back): within a chunk.
        #expect(slowLead >= 235_000_000 && slowLead <= 262_000_000)

        // Per group: the slow room in a group of its own slows that group's
        // commands, and no longer the main group's (the real speaker's).
        let den = try leader.createGroup(name: "Den", rooms: ["slow"])
        _ = try leader.perform(.add(uris: [dir + "/a.wav"], next: false), group: den.id)
        _ = try leader.perform(.play, group: den.id)
        #expect(waitUntil(timeout: 5) { (try? lead(nil)).map { $0 <= 122_000_000 } == true })
        let denLead = try lead(den.id), mainLead = try lead(nil)
        print("command lead: group Den (the 212 ms room) \(Double(denLead) / 1e6) ms, main \(Double(mainLead) / 1e6) ms")
        #expect(denLead >= 235_000_000 && denLead <= 262_000_000)
        #expect(mainLead >= 90_000_000 && mainLead <= 122_000_000)

        slow.close()
        #expect(waitUntil(timeout: 5) { !leader.followerNames.contains("slow") })
        #expect(waitUntil(timeout: 5) { (try? lead(den.id)).map { $0 <= 122_000_000 } == true })
        let normalLead = try lead(den.id)
        #expect(normalLead >= 90_000_000 && normalLead <= 122_000_000, "\(normalLead)")
        #expect(leader.followerNames == ["real"])
    }

    /// A speaker not yet updated (v3) keeps its clock exchanges on the TCP
    /// stream and plays in step with a v4 one.
    @Test func aVersionThreeFollowerStillPlaysInStep() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(toneWithClicks(seconds: 20, frequency: 440)))
        let leader = try startLeader(files: [dir + "/a.wav"])
        defer { leader.stop() }
        let started = Monotonic.now()
        let old = try startFollower(leader: leader.endpoint, name: "old", output: .file(path: dir + "/old.raw", ppm: 100, delayMilliseconds: 0)) { c in
            c.protocolVersion = 3; c.clockOffsetMilliseconds = 1_500; c.clockSkewPPM = 30
        }
        let new = try startFollower(leader: leader.endpoint, name: "new", output: .file(path: dir + "/new.raw", ppm: -100, delayMilliseconds: 0)) { c in
            c.clockOffsetMilliseconds = -1_500; c.clockSkewPPM = -30
        }
        #expect(waitUntilPlayed([dir + "/old.raw", dir + "/new.raw"], through: started + 14_000_000_000))
        let sync = leader.syncHealth
        old.stop(); new.stop()
        #expect(sync["old"] == nil, "a v3 follower sends no syncReport")
        #expect(sync["new"]?.clockChannel == .datagram)
        let inOrder = pairedDifferences(clickTimes(dir + "/old.raw", ppm: 100), clickTimes(dir + "/new.raw", ppm: -100), from: started + 3_000_000_000)
        print("v3 and v4 followers: |old − new| µs, click by click:", inOrder.map { $0 / 1000 },
              "underruns old/new:", old.engine.statistics.underruns, new.engine.statistics.underruns,
              "hard resyncs:", old.engine.statistics.hardResyncs, new.engine.statistics.hardResyncs)
        let diffs = inOrder.sorted()
        // In step as behaviour: most clicks within 100 µs, none a few ms out.
        // (A loaded CI run once starved a playout thread early on: its room
        // was 2.2 ms out, steered back over a few clicks.) Figures: bench/sync.
        #expect(diffs.count >= 6 && diffs[diffs.count / 2] < 100_000 && diffs.last! < 5_000_000)
    }
}

/// Issue 30: the clock's datagrams ask Wi-Fi's WMM for a queue of their
/// own (DSCP EF), from both ends: what a receiver on loopback reads in each
/// datagram's TOS byte (Python, IP_RECVTOS).
@Suite struct ClockDatagramMarkingTests {
    @Test func bothEndsMarkTheirClockDatagramsExpeditedForwarding() throws {
        let receiver = Process()
        receiver.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        receiver.arguments = ["python3", "-u", "-c", """
            import socket
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
            s.bind(("127.0.0.1", 0))
            s.settimeout(20)
            print(s.getsockname()[1])
            for _ in range(2):
                data, ancillary, _, _ = s.recvmsg(64, socket.CMSG_SPACE(4))
                tos = [c[2][0] for c in ancillary if c[0] == socket.IPPROTO_IP and c[1] == socket.IP_TOS]
                print(data.decode(), tos[0] if tos else -1)
            """]
        let out = Pipe()
        receiver.standardOutput = out
        try receiver.run()
        // SIGKILL: the child may have inherited a blocked SIGTERM from the test thread.
        defer { if receiver.isRunning { kill(receiver.processIdentifier, SIGKILL) }; receiver.waitUntilExit() }
        var text = ""
        func line(_ n: Int) -> Bool {
            let lines = text.split(separator: "\n")
            if lines.count >= n { return true }
            let chunk = out.fileHandleForReading.availableData
            text += String(decoding: chunk, as: UTF8.self)
            return chunk.isEmpty ? text.split(separator: "\n").count >= n : false
        }
        _ = waitUntil(timeout: 20) { line(1) }
        let port = try #require(text.split(separator: "\n").first.flatMap { UInt16($0) })

        // A speaker's socket (connected) and a leader's (bound, answering whoever asked).
        let speaker = try UDPSocket.connect(to: Endpoint(host: "127.0.0.1", port: port))
        try speaker.send(Array("speaker".utf8))
        let leader = try UDPSocket.bind(Endpoint(host: "127.0.0.1", port: 0))
        try leader.send(Array("leader".utf8), to: UDPSocket.Peer(address: UInt32(0x7f00_0001).bigEndian, port: port.bigEndian))
        _ = waitUntil(timeout: 20) { line(3) }
        let marks = Dictionary(uniqueKeysWithValues: text.split(separator: "\n").dropFirst().compactMap { l -> (String, Int)? in
            let f = l.split(separator: " "); return f.count == 2 ? (String(f[0]), Int(f[1]) ?? -1) : nil
        })
        #expect(marks == ["speaker": 0xB8, "leader": 0xB8], "TOS bytes seen: \(marks)")
    }
}
