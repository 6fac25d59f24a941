import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiDiscovery
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// A Tutti speaker that waits for Sendspin servers to dial in
/// (`--sendspin-listen`), as Music Assistant reaches the players it finds:
/// aiosendspin's own server dials it (`connect_to_client`).
extension SendspinPlayerTests {
    /// A speaker listening on a port the kernel picks (loopback), its clock
    /// 1.5 s and 40 ppm off, its file DAC 120 ppm slow; returns once it listens.
    func listeningSpeaker(name: String, output: String) throws -> (Follower, url: String) {
        let speaker = try startFollower(leader: Endpoint(host: "127.0.0.1", port: 1), name: name, output: .file(path: output, ppm: -120, delayMilliseconds: 0)) { c in
            c.sendspinListen = SendspinListenAddress(host: "127.0.0.1", port: 0)
            c.clockOffsetMilliseconds = 1_500
            c.clockSkewPPM = 40
        }
        #expect(waitUntil(timeout: 10) { speaker.sendspinListening != nil }, "\(speaker.lastFailure ?? "")")
        let port = speaker.sendspinListening?.port ?? 0
        return (speaker, "ws://127.0.0.1:\(port)/sendspin")
    }

    /// aiosendspin's server dials the listening speaker; each click leaves
    /// its file DAC where the server's reference client plays it (median
    /// within 1 ms, the spec), and where the server put it on its own clock.
    @Test func aiosendspinsServerDialsAListeningSpeakerThatPlaysInStep() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/clicks.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
        let clocksAtStart = Self.monotonicMinusRaw()
        let (speaker, url) = try listeningSpeaker(name: "den", output: dir + "/den.raw")
        defer { speaker.stop() }
        let server = try AiosendspinServerRun(wav: dir + "/clicks.wav", players: 2, prefix: dir + "/server", dial: [url])
        defer { server.stop() }
        #expect(waitUntil(timeout: 20) { server.said("listening") }, "\(server.errors)")
        // The speaker joins by the server's dial, as a player named as it is.
        #expect(waitUntil(timeout: 20) { server.events.contains { $0["event"]?.string == "client" && $0["name"]?.string == "den" } },
                "\(server.events) \(server.errors) \(speaker.lastFailure ?? "")")
        let client = try startReference(server, seconds: 25, prefix: dir + "/ref")
        defer { client.stop() }
        #expect(waitUntil(timeout: 20) { server.said("streaming") }, "\(server.events) \(server.errors) \(client.errors)")
        #expect(speaker.connected)
        #expect(waitUntil(timeout: 40) { client.chunks.reduce(0) { $0 + $1.frames } >= 14 * 48_000 }, "\(client.chunks.count) chunks; \(client.errors)")
        let last = try #require(client.chunks.last).local
        #expect(waitUntil(timeout: 15) { !readTiming(dir + "/den.raw").isEmpty }, "the speaker played nothing: \(speaker.lastFailure ?? "")")
        #expect(waitUntilPlayed([dir + "/den.raw"], through: last))
        client.stop()
        speaker.stop()
        try judge(client, output: dir + "/den.raw", clocksAtStart: clocksAtStart, label: "server dials")
    }

    /// A second server dials while the first plays: both declare playback,
    /// so the spec lets the newer one in; the first is told `another_server`
    /// and the speaker plays the second's audio.
    @Test func aSecondServerThatDialsTakesTheSpeakerOverAndTheFirstHearsWhy() throws {
        let dir = makeTemporaryDirectory()
        // The two servers' tones differ in level: −12 dB and −6 dB.
        writeFile(dir + "/quiet.wav", wavImage(quantize(TestSignal.sine(frequency: 1_000, seconds: 20, amplitude: 0.25))))
        writeFile(dir + "/loud.wav", wavImage(quantize(TestSignal.sine(frequency: 1_000, seconds: 20, amplitude: 0.5))))
        let output = dir + "/study.raw"
        let (speaker, url) = try listeningSpeaker(name: "study", output: output)
        defer { speaker.stop() }
        let first = try AiosendspinServerRun(wav: dir + "/quiet.wav", players: 1, prefix: dir + "/first", dial: [url])
        defer { first.stop() }
        #expect(waitUntil(timeout: 30) { first.said("streaming") }, "\(first.events) \(first.errors) \(speaker.lastFailure ?? "")")
        let quiet = 8_192 / 2.0.squareRoot(), loud = 16_384 / 2.0.squareRoot()
        #expect(waitUntil(timeout: 20) { abs(level(output, around: Monotonic.now() - 200_000_000) - quiet) < quiet * 0.1 },
                "\(level(output, around: Monotonic.now() - 200_000_000)) against \(quiet)")

        let second = try AiosendspinServerRun(wav: dir + "/loud.wav", players: 1, prefix: dir + "/second", dial: [url])
        defer { second.stop() }
        let dialed = Monotonic.now()
        #expect(waitUntil(timeout: 30) { second.said("streaming") }, "\(second.events) \(second.errors) \(speaker.lastFailure ?? "")")
        #expect(waitUntil(timeout: 10) { first.events.contains { $0["event"]?.string == "disconnected" && $0["reason"]?.string == "another_server" } },
                "\(first.events)")
        #expect(waitUntil(timeout: 20) { abs(level(output, around: Monotonic.now() - 200_000_000) - loud) < loud * 0.1 },
                "\(level(output, around: Monotonic.now() - 200_000_000)) against \(loud)")
        print("Sendspin takeover: the second server's tone left the DAC \((Monotonic.now() - dialed) / 1_000_000) ms after it started (at most; its clock model forms first)")
        #expect(speaker.connected)
        // The first server does not dial back and take it again (another_server is not a reason to).
        // (The second may be refused once with concurrent_attempt: aiosendspin's server dials before it
        // declares playback, and an activity below the holder's is refused, as the spec and aiosendspin's
        // own client do; it dials again once it plays.)
        #expect(!second.events.contains { $0["event"]?.string == "disconnected" && $0["reason"]?.string == "another_server" },
                "second: \(second.events); first: \(first.events)")
        #expect(first.events.filter { $0["event"]?.string == "client" }.count == 1, "the first server dialled again: \(first.events)")
    }

    /// The listening speaker is announced as `_sendspin._tcp` with the
    /// spec's TXT (`path`, `name`): avahi-browse, through a real avahi-daemon, sees it.
    @Test func theListeningSpeakerIsAnnouncedAsASendspinPlayer() throws {
        let daemon = try AvahiTestDaemon()
        try daemon.start()
        let dir = makeTemporaryDirectory()
        let name = "Kitchen \(UInt16.random(in: 0...UInt16.max))"
        let (speaker, _) = try listeningSpeaker(name: name, output: dir + "/k.raw")
        defer { speaker.stop() }
        let port = try #require(speaker.sendspinListening?.port)
        var seen = ""
        let found = waitUntil(timeout: 15) {
            seen = (try? runProgram("/usr/bin/avahi-browse", ["-rpt", "_sendspin._tcp"], timeout: 10))?.out ?? ""
            return seen.split(separator: "\n").contains { $0.hasPrefix("=") && $0.contains(name) }
        }
        #expect(found, "\(seen)")
        // =;lo;IPv4;NAME;_sendspin._tcp;local;HOST;127.0.0.1;PORT;"name=NAME" "path=/sendspin"
        let line = try #require(seen.split(separator: "\n").first { $0.hasPrefix("=") && $0.contains(name) })
        let fields = line.split(separator: ";", omittingEmptySubsequences: false)
        #expect(fields.count >= 10)
        if fields.count >= 10 {
            #expect(fields[4] == "_sendspin._tcp")
            #expect(fields[8] == "\(port)")
            #expect(fields[9].contains("\"path=/sendspin\"") && fields[9].contains("\"name=\(name)\""), "\(fields[9])")
        }
    }

    /// What is not a Sendspin server's WebSocket is answered with an HTTP
    /// status and closed; one address holds two connections at most, and another host is still served.
    @Test func aListeningSpeakerRefusesWhatIsNotASendspinServerAndBoundsEachAddress() throws {
        let dir = makeTemporaryDirectory()
        let (speaker, _) = try listeningSpeaker(name: "hall", output: dir + "/h.raw")
        defer { speaker.stop() }
        let endpoint = try #require(speaker.sendspinListening)
        func answer(_ conn: TCPConnection, milliseconds: Int = 5_000) -> String {
            conn.setReceiveTimeout(milliseconds: milliseconds)
            var bytes = [UInt8](repeating: 0, count: 1_024)
            let n = (try? bytes.withUnsafeMutableBytes { try conn.receive(into: $0) })?.count ?? 0
            return String(decoding: bytes[..<n], as: UTF8.self)
        }
        let wrongPath = try TCPConnection.connect(to: endpoint)
        try wrongPath.send(Array("GET /other HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
        #expect(answer(wrongPath).hasPrefix("HTTP/1.1 404 "))
        wrongPath.close()
        // Two silent connections from one address are held (each could be a server still to speak); a third is refused.
        // The 404's place is given back when its thread ends, which a loaded machine may not have reached
        // yet (then b is the one refused and the third is held): two fresh ones, and a third, until it is refused.
        var pair: [TCPConnection] = []
        defer { for c in pair { c.close() } }
        var third = ""
        #expect(waitUntil(timeout: 20) {
            for c in pair { c.close() }
            pair = [0, 1].compactMap { _ in try? TCPConnection.connect(to: endpoint) }
            usleep(100_000)
            guard pair.count == 2, let c = try? TCPConnection.connect(to: endpoint) else { return false }
            defer { c.close() }
            third = answer(c, milliseconds: 2_000)
            return third.hasPrefix("HTTP/1.1 503 ")
        }, "\(third)")
        #expect(third.contains("127.0.0.1"), "\(third)")
        // Meanwhile another host is served: one host that dials and says nothing cannot keep the real server out.
        let other = try runProgram("/usr/bin/python3", ["-c", """
            import socket, sys
            s = socket.socket(); s.settimeout(5); s.bind(("127.0.0.2", 0)); s.connect(("127.0.0.1", int(sys.argv[1])))
            s.sendall(b"GET /sendspin HTTP/1.1\\r\\nHost: x\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n"
                      b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n")
            print(s.recv(1024).decode(errors="replace").splitlines()[0])
            """, String(endpoint.port)], mergeErrors: true)
        #expect(other.out.hasPrefix("HTTP/1.1 101 "), "another host while 127.0.0.1 holds two: \(other.out)")
        // Once they leave, a server is served again.
        for c in pair { c.close() }
        pair = []
        #expect(waitUntil(timeout: 5) {
            guard let c = try? TCPConnection.connect(to: endpoint) else { return false }
            defer { c.close() }
            try? c.send(Array("GET /sendspin HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n".utf8))
            return answer(c).hasPrefix("HTTP/1.1 101 ")
        })
    }
}

/// 24-bit audio from a Sendspin server: decoded exactly into the speaker's
/// float pipeline, rounded once to the 16-bit output.
extension SendspinPlayerTests {
    /// A 24-bit stereo WAV: left a 997 Hz sine at half scale, right the same at a quarter, inverted.
    static func wav24(seconds: Double) -> (wav: [UInt8], left: [Int32], right: [Int32]) {
        let n = Int(seconds * 48_000)
        var left: [Int32] = [], right: [Int32] = []
        var data: [UInt8] = []
        data.reserveCapacity(n * 6)
        for i in 0..<n {
            let x = sin(2 * Double.pi * 997 * Double(i) / 48_000)
            let l = Int32((0.5 * x * 8_388_607).rounded()), r = Int32((-0.25 * x * 8_388_607).rounded())
            left.append(l); right.append(r)
            for v in [l, r] { data += [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v >> 16)] }
        }
        return (wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 24, dataBytes: data.count) + data, left, right)
    }

    /// aiosendspin's server sends a 24-bit tone in the format the speaker
    /// offered (24-bit PCM, or 24-bit FLAC); the speaker's 16-bit file DAC
    /// plays it at its level, each sample the 24-bit one rounded to 16 bits
    /// (not truncated: that would be half an LSB low on average, and off in
    /// half the samples).
    @Test(arguments: ["pcm24", "flac24"])
    func a24BitStreamReachesTheSixteenBitOutputRoundedOnce(codec: String) throws {
        let format = try #require(SendspinPlayerLink.format(named: codec))
        let dir = makeTemporaryDirectory()
        let source = Self.wav24(seconds: 10)
        writeFile(dir + "/tone24.wav", source.wav)
        let server = try AiosendspinServerRun(wav: dir + "/tone24.wav", players: 1, prefix: dir + "/server")
        defer { server.stop() }
        #expect(waitUntil(timeout: 20) { server.said("listening") }, "\(server.errors)")
        let output = dir + "/deep.raw"
        // No steering and a DAC on time: what the pipeline makes of each sample reaches the file as it is.
        let speaker = try startFollower(leader: Endpoint(host: "127.0.0.1", port: 1), name: "deep", output: .file(path: output, ppm: 0, delayMilliseconds: 0), steering: false) { c in
            c.sendspinServer = server.address
            c.sendspinFormats = [format]
        }
        defer { speaker.stop() }
        #expect(waitUntil(timeout: 30) { server.said("streaming") }, "\(server.events) \(server.errors) \(speaker.lastFailure ?? "")")
        #expect(server.command("formats"))
        let sent = server.events.last { $0["event"]?.string == "formats" }?["players"]?["deep"]
        #expect(sent?["codec"]?.string == format.codec.rawValue && sent?["bit_depth"]?.integer == 24, "\(sent ?? .null)")
        // Three seconds of tone out.
        #expect(waitUntil(timeout: 30) { readRaw(output).lazy.filter { $0 != 0 }.count > 6 * 48_000 }, "\(speaker.lastFailure ?? "")")
        speaker.stop()

        let played = readRaw(output)
        let first = try #require(played.firstIndex { $0 != 0 }) / 2
        // A second in: 4,800 frames, matched to where they are in the source (it loops).
        let start = first + 48_000, count = 4_800
        #expect(played.count >= 2 * (start + count))
        func rounded(_ v: Int32) -> Int16 { sampleToInt16(Float(v) / 8_388_608) }
        func matches(at offset: Int, frames: Int) -> Bool {
            (0..<frames).allSatisfy { k in
                let i = (offset + k) % source.left.count
                return abs(Int(played[2 * (start + k)]) - Int(rounded(source.left[i]))) <= 1
                    && abs(Int(played[2 * (start + k) + 1]) - Int(rounded(source.right[i]))) <= 1
            }
        }
        let offset = try #require((0..<source.left.count).first { matches(at: $0, frames: 64) }, "the tone is not the source's")
        var exact = 0, truncatedWouldBe = 0, worst = 0, sumError = 0.0, sumSquares = 0.0
        for k in 0..<count {
            let i = (offset + k) % source.left.count
            for (out, src) in [(played[2 * (start + k)], source.left[i]), (played[2 * (start + k) + 1], source.right[i])] {
                let error = Int(out) - Int(rounded(src))
                worst = max(worst, abs(error))
                if error == 0 { exact += 1 }
                if Int(out) == Int(src >> 8) { truncatedWouldBe += 1 }
                sumError += Double(out) - Double(src) / 256
            }
            sumSquares += Double(played[2 * (start + k)]) * Double(played[2 * (start + k)])
        }
        let rms = (sumSquares / Double(count)).squareRoot(), expected = 16_384 / 2.0.squareRoot()
        let meanError = sumError / Double(2 * count)
        print("[\(codec)] 24-bit to a 16-bit DAC: \(exact) of \(2 * count) samples the 24-bit one rounded, worst \(worst) LSB, mean error \(meanError) LSB (truncation: \(truncatedWouldBe) agree); level \(rms) against \(expected)")
        #expect(exact == 2 * count && worst == 0, "\(exact) of \(2 * count) exact, worst \(worst) LSB")
        #expect(abs(meanError) < 0.05, "mean error \(meanError) LSB (truncation would be −0.5)")
        #expect(abs(rms - expected) < expected * 0.01, "\(rms) against \(expected)")
    }
}
