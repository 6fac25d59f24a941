import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiDiscovery
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// aiosendspin's own server (Tests/Sendspin/sendspin_server.py), run in the
/// `SendspinPython` venv, on a port of its own; commands on its stdin.
final class AiosendspinServerRun {
    let process = Process()
    let input = Pipe()
    let prefix: String
    let port: UInt16

    /// `dial`: URLs of listening players the server dials (`connect_to_client`).
    init(wav: String, players: Int, prefix: String, dial: [String] = []) throws {
        self.prefix = prefix
        // A free port, as the kernel picks it (aiohttp is given a number).
        let probe = try TCPListener(endpoint: Endpoint(host: "127.0.0.1", port: 0))
        port = probe.endpoint.port
        probe.close()
        let script = URL(fileURLWithPath: SendspinVenv.script).deletingLastPathComponent().appendingPathComponent("sendspin_server.py").path
        process.executableURL = URL(fileURLWithPath: try SendspinVenv.ready())
        process.arguments = [script, "--port", String(port), "--wav", wav, "--players", String(players)] + dial.flatMap { ["--dial", $0] }
        process.standardInput = input
        _ = FileManager.default.createFile(atPath: prefix + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: prefix + ".stderr", contents: nil)
        process.standardOutput = FileHandle(forWritingAtPath: prefix + ".out")
        process.standardError = FileHandle(forWritingAtPath: prefix + ".stderr")
        try process.run()
    }

    var address: SendspinServerAddress { SendspinServerAddress(host: "127.0.0.1", port: port) }

    /// What it said: one JSON object a line.
    var events: [[String: JSONValue]] {
        let text = (try? String(contentsOfFile: prefix + ".out", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { JSONValue.parsing(String($0))?.object }
    }
    func said(_ event: String) -> Bool { events.contains { $0["event"]?.string == event } }
    var errors: String { (try? String(contentsOfFile: prefix + ".stderr", encoding: .utf8)) ?? "" }

    /// A command line (`clear`, `volume NAME N`, `mute NAME 0|1`), and wait until it is done.
    func command(_ line: String) -> Bool {
        let done = events.count { $0["event"]?.string == "done" }
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
        return waitUntil(timeout: 5) { self.events.count { $0["event"]?.string == "done" } > done }
    }

    func stop() {
        // SIGKILL: a test process may have SIGTERM blocked, and its children inherit the mask.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// A Tutti speaker joins aiosendspin's server as a Sendspin player
/// (`--sendspin-server`), beside aiosendspin's own client, whose reference
/// time filter says when a correct player plays each chunk.
@Suite(.serialized) struct SendspinPlayerTests {
    static let reference = URL(fileURLWithPath: SendspinVenv.script).deletingLastPathComponent().appendingPathComponent("sendspin_reference_player.py").path

    /// The reference client (aiosendspin's `SendspinClient`, encrypted) for `seconds`.
    func startReference(_ server: AiosendspinServerRun, seconds: Double, prefix: String) throws -> SendspinClientRun {
        try SendspinClientRun(script: Self.reference, arguments: ["--url", server.address.description, "--name", "reference",
                                                                  "--seconds", String(seconds), "--out", prefix], prefix: prefix)
    }

    func speaker(_ server: AiosendspinServerRun, name: String, output: String, configure: (inout FollowerConfiguration) -> Void = { _ in }) throws -> Follower {
        try startFollower(leader: Endpoint(host: "127.0.0.1", port: 1), name: name, output: .file(path: output, ppm: -120, delayMilliseconds: 0)) { c in
            c.sendspinServer = server.address
            // The speaker's clock is off the server's by 1.5 s and 40 ppm, its DAC 120 ppm slow: the model must find them.
            c.clockOffsetMilliseconds = 1_500
            c.clockSkewPPM = 40
            configure(&c)
        }
    }

    /// Each click leaves the Tutti speaker's file DAC where aiosendspin's
    /// reference filter plays it, and where the server put it on its own
    /// clock: median within 1 ms (the spec) of each. The speaker offers one
    /// codec a run (the server encodes FLAC and Opus with FFmpeg through
    /// PyAV); the reference client takes PCM, so its times are the source's.
    @Test(arguments: ["pcm", "flac", "opus"])
    func aTuttiSpeakerPlaysInStepWithAiosendspinsReferenceClient(codec: String) throws {
        let format = try #require(SendspinPlayerLink.playable.first { $0.codec.rawValue == codec })
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/clicks.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
        let server = try AiosendspinServerRun(wav: dir + "/clicks.wav", players: 2, prefix: dir + "/server")
        defer { server.stop() }
        #expect(waitUntil(timeout: 20) { server.said("listening") }, "\(server.errors)")
        let clocksAtStart = Self.monotonicMinusRaw()
        let speaker = try speaker(server, name: "den", output: dir + "/den.raw") { $0.sendspinFormats = [format] }
        defer { speaker.stop() }
        let client = try startReference(server, seconds: 25, prefix: dir + "/ref")
        defer { client.stop() }
        #expect(waitUntil(timeout: 20) { server.said("streaming") }, "\(server.events) \(server.errors) \(client.errors)")
        #expect(speaker.connected)
        // The server sends the speaker what it offered.
        #expect(server.command("formats"))
        let sent = server.events.last { $0["event"]?.string == "formats" }?["players"]?["den"]?["codec"]?.string
        #expect(sent == codec, "\(server.events.last { $0["event"]?.string == "formats" } ?? [:])")
        // 14 s of clicks played by the reference (its filter settled for the first few).
        #expect(waitUntil(timeout: 40) { client.chunks.reduce(0) { $0 + $1.frames } >= 14 * 48_000 }, "\(client.chunks.count) chunks; \(client.errors)")
        let last = try #require(client.chunks.last).local
        #expect(waitUntilPlayed([dir + "/den.raw"], through: last))
        client.stop()
        speaker.stop()

        try judge(client, output: dir + "/den.raw", clocksAtStart: clocksAtStart, label: codec)
    }

    /// The server's volume and mute reach the speaker (its settings and what
    /// leaves its DAC), and after a `stream/clear` the new chunks play.
    @Test func volumeMuteAndClearFromTheServerReachTheSpeaker() throws {
        let dir = makeTemporaryDirectory()
        // A steady tone, so the level at any moment is the volume's.
        writeFile(dir + "/tone.wav", wavImage(quantize(TestSignal.sine(frequency: 1_000, seconds: 20, amplitude: 0.5))))
        let server = try AiosendspinServerRun(wav: dir + "/tone.wav", players: 1, prefix: dir + "/server")
        defer { server.stop() }
        #expect(waitUntil(timeout: 20) { server.said("listening") }, "\(server.errors)")
        let output = dir + "/study.raw"
        let speaker = try speaker(server, name: "study", output: output)
        defer { speaker.stop() }
        #expect(waitUntil(timeout: 20) { server.said("streaming") }, "\(server.events) \(server.errors)")
        // Full level first: half scale (−6 dB), as sent.
        let full = 16_384 / 2.0.squareRoot()
        #expect(waitUntil(timeout: 20) { level(output, around: Monotonic.now() - 200_000_000) > full * 0.9 }, "\(level(output, around: Monotonic.now() - 200_000_000))")

        #expect(server.command("volume study 50"))
        #expect(waitUntil(timeout: 5) { speaker.settings.volume == 50 }, "\(speaker.settings)")
        let turnedDown = Monotonic.now()
        #expect(waitUntilPlayed([output], through: turnedDown + 300_000_000))
        // Tutti's curve: 50 is −25 dB.
        let down = level(output, around: turnedDown + 200_000_000)
        #expect(abs(down - full * 0.0562) < full * 0.01, "\(down) at volume 50, \(full) at 100")

        #expect(server.command("mute study 1"))
        #expect(waitUntil(timeout: 5) { speaker.settings.muted }, "\(speaker.settings)")
        let muted = Monotonic.now()
        #expect(waitUntilPlayed([output], through: muted + 300_000_000))
        #expect(level(output, around: muted + 200_000_000) < 1, "\(level(output, around: muted + 200_000_000))")
        #expect(server.command("mute study 0"))
        #expect(server.command("volume study 100"))
        #expect(waitUntil(timeout: 5) { !speaker.settings.muted && speaker.settings.volume == 100 })

        // stream/clear (a seek): what was buffered goes at once, the new chunks play.
        let cleared = Monotonic.now()
        #expect(server.command("clear"))
        #expect(waitUntilPlayed([output], through: cleared + 2_500_000_000))
        let gap = silence(output, from: cleared, to: cleared + 2_000_000_000)
        #expect(gap > 20_000_000, "a silent gap of \(gap / 1_000_000) ms after the clear (the buffered audio dropped)")
        #expect(level(output, around: cleared + 2_300_000_000) > full * 0.9, "the tone plays again after the clear")
        #expect(speaker.connected)

        // Stopped, the speaker says client/goodbye (shutdown): aiosendspin's server drops it at
        // once (a player that just vanished it keeps for 180 s, for a reconnect).
        let stopped = Monotonic.now()
        speaker.stop()
        #expect(waitUntil(timeout: 10) { server.said("removed") }, "\(server.events) \(server.errors)")
        print("Sendspin goodbye: the server dropped the stopped speaker \((Monotonic.now() - stopped) / 1_000_000) ms after stop")
    }

    /// With `--sendspin-server mdns` the speaker finds the server announced
    /// as `_sendspin-server._tcp` (a real avahi-daemon; the announcement
    /// made through Avahi, as Music Assistant's host would carry it, its TXT
    /// `path` the server's) and plays what it sends.
    @Test func aSpeakerFindsTheSendspinServerOverMDNSAndPlays() throws {
        let daemon = try AvahiTestDaemon()
        try daemon.start()
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/tone.wav", wavImage(quantize(TestSignal.sine(frequency: 1_000, seconds: 20, amplitude: 0.5))))
        let server = try AiosendspinServerRun(wav: dir + "/tone.wav", players: 1, prefix: dir + "/server")
        defer { server.stop() }
        #expect(waitUntil(timeout: 20) { server.said("listening") }, "\(server.errors)")
        let name = "Music Assistant test \(UInt32.random(in: 0...UInt32.max))"
        let announcement = try ServicePublisher(name: name, port: server.port, txt: ["path": "/sendspin"], type: "_sendspin-server._tcp", log: .silent)
        defer { announcement.stop() }
        #expect(announcement.waitUntilEstablished(timeout: 10) != nil)
        let output = dir + "/hall.raw"
        let speaker = try startFollower(leader: Endpoint(host: "127.0.0.1", port: 1), name: "hall", output: .file(path: output, ppm: 0, delayMilliseconds: 0)) { c in
            c.leader = nil
            c.sendspinDiscovery = true
            c.leaderName = name
        }
        defer { speaker.stop() }
        #expect(waitUntil(timeout: 30) { server.said("streaming") }, "\(server.events) \(server.errors) \(speaker.lastFailure ?? "")")
        #expect(speaker.connected)
        let full = 16_384 / 2.0.squareRoot()
        #expect(waitUntil(timeout: 20) { level(output, around: Monotonic.now() - 200_000_000) > full * 0.9 }, "\(level(output, around: Monotonic.now() - 200_000_000))")
    }

    /// Each click of `output` (a file DAC 120 ppm slow) against where
    /// aiosendspin's reference client played it, and where its server put it
    /// on its own clock: median within 1 ms (the spec) of each; the figures printed.
    func judge(_ client: SendspinClientRun, output: String, clocksAtStart: (offset: Int64, at: Int64), label: String) throws {
        let reference = client.clickTimes()
        let tutti = clickTimes(output, ppm: -120)
        let (signed, median, p99) = try clickAgreement(reference: reference, tutti: tutti)
        #expect(signed.count >= 8, "\(signed.count) clicks compared: reference \(reference.count), Tutti \(tutti.count)")
        // The truth, without the reference filter's own error: where the server put each click on
        // its clock (CLOCK_MONOTONIC_RAW, aiosendspin's), as CLOCK_MONOTONIC (the DAC's log), the two
        // clocks' offset read at the start and the end and interpolated (NTP slews one of them).
        let clocksAtEnd = Self.monotonicMinusRaw()
        let truth = client.clickServerTimes().map { raw -> Int64 in
            let span = Double(clocksAtEnd.at - clocksAtStart.at)
            let f = span > 0 ? Double(raw - clocksAtStart.at) / span : 0
            return raw + clocksAtStart.offset + Int64((Double(clocksAtEnd.offset - clocksAtStart.offset) * f).rounded())
        }
        let (trueSigned, trueMedian, trueP99) = try clickAgreement(reference: truth, tutti: tutti)
        print("[\(label)] Tutti speaker vs aiosendspin's server's own timeline: click difference median \(trueMedian / 1000) µs, p99 \(trueP99 / 1000) µs over \(trueSigned.count) clicks (signed µs: \(trueSigned.map { $0 / 1000 }))")
        #expect(trueMedian < 1_000_000 && trueP99 < 2_000_000, "median \(trueMedian / 1000) µs, p99 \(trueP99 / 1000) µs from the server's timeline")
        print("[\(label)] Tutti speaker on aiosendspin's server vs its reference client: click difference median \(median / 1000) µs, p99 \(p99 / 1000) µs over \(signed.count) clicks (signed µs: \(signed.map { $0 / 1000 }))")
        // The reference filter's own error against the same truth. On this loaded 2-core machine
        // its estimate has strayed by milliseconds for a while (its client stamps a time answer when
        // its event loop reads it): then it is no judge, and the run says so rather than failing.
        let (_, referenceError, _) = try clickAgreement(reference: truth, tutti: reference)
        print("[\(label)] aiosendspin's reference client vs its server's timeline: median \(referenceError / 1000) µs")
        withKnownIssue("aiosendspin's reference filter strayed \(referenceError / 1000) µs from its own server's timeline", isIntermittent: true) {
            #expect(median < 1_000_000, "median \(median / 1000) µs: the spec asks ±1 ms")
            #expect(p99 < 2_000_000, "p99 \(p99 / 1000) µs")
        } when: { referenceError >= 1_000_000 }
    }

    /// CLOCK_MONOTONIC − CLOCK_MONOTONIC_RAW now (ns), and when (raw ns).
    static func monotonicMinusRaw() -> (offset: Int64, at: Int64) {
        var raw = timespec(), mono = timespec(), raw2 = timespec()
        clock_gettime(CLOCK_MONOTONIC_RAW, &raw)
        clock_gettime(CLOCK_MONOTONIC, &mono)
        clock_gettime(CLOCK_MONOTONIC_RAW, &raw2)
        func ns(_ t: timespec) -> Int64 { Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec) }
        let at = (ns(raw) + ns(raw2)) / 2
        return (ns(mono) - at, at)
    }

    /// The RMS of the left channel over the 20 ms that left the DAC around `instant` (monotonic ns).
    func level(_ path: String, around instant: Int64) -> Double {
        guard let range = frames(path, from: instant - 10_000_000, to: instant + 10_000_000) else { return -1 }
        let s = readRaw(path)
        var sum = 0.0
        for i in range where 2 * i < s.count { sum += Double(s[2 * i]) * Double(s[2 * i]) }
        return range.isEmpty ? -1 : (sum / Double(range.count)).squareRoot()
    }

    /// The longest run of silence (ns) that left the DAC between two instants.
    func silence(_ path: String, from: Int64, to: Int64) -> Int64 {
        guard let range = frames(path, from: from, to: to) else { return 0 }
        let s = readRaw(path)
        var longest = 0, run = 0
        for i in range where 2 * i < s.count {
            if abs(Int(s[2 * i])) < 2 { run += 1; longest = max(longest, run) } else { run = 0 }
        }
        return Int64(longest) * 1_000_000_000 / 48_000
    }

    /// The output frames that left the DAC between two instants, from its timing log.
    func frames(_ path: String, from: Int64, to: Int64) -> Range<Int>? {
        let timing = readTiming(path)
        guard let a = timing.last(where: { $0.time <= from }), let b = timing.last(where: { $0.time <= to }) else { return nil }
        let start = a.frame + Int((from - a.time) * 48_000 / 1_000_000_000)
        let end = b.frame + Int((to - b.time) * 48_000 / 1_000_000_000)
        return start < end ? start..<end : nil
    }
}
