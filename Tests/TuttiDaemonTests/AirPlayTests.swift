import Foundation
import Glibc
import Synchronization
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiDiscovery
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// A real AirPlay sender: PyPI's pyatv, streaming a file with its metadata
/// to a receiver the test found over mDNS (`_raop._tcp` through Avahi; pyatv's
/// own scan of 127.0.0.1 merges every receiver of one host into one
/// device). pyatv 0.18 announces raw PCM with an `a=fmtp` line that makes
/// shairport-sync 3.3.8 decode it as ALAC and crash: the sender drops that
/// line (a real iPhone sends ALAC and is not affected). Its DACP-ID and
/// Active-Remote are fixed (`DACP_ID`), so a stand-in remote can be announced.
let airPlaySenderScript = #"""
import asyncio, json, os, sys, time
from ipaddress import IPv4Address
import pyatv, pyatv.support.rtsp as rtsp
from pyatv.conf import AppleTV, ManualService
from pyatv.const import Protocol
from pyatv.interface import MediaMetadata
rtsp.ANNOUNCE_PAYLOAD = "".join(l for l in rtsp.ANNOUNCE_PAYLOAD.splitlines(keepends=True) if not l.startswith("a=fmtp"))
if os.environ.get("DACP_ID"):
    fixed = int(os.environ["DACP_ID"], 16)
    rtsp.randrange = lambda n: fixed % n
async def main():
    loop = asyncio.get_event_loop()
    port, txt, path, title, artist, album, art = sys.argv[1:8]
    conf = AppleTV(IPv4Address("127.0.0.1"), "receiver")
    conf.add_service(ManualService("receiver-%s" % port, Protocol.RAOP, int(port), json.loads(txt)))
    atv = await pyatv.connect(conf, loop)
    try:
        print("start %d" % time.clock_gettime_ns(time.CLOCK_MONOTONIC), flush=True)
        await atv.stream.stream_file(path, metadata=MediaMetadata(title=title, artist=artist, album=album, artwork=open(art, "rb").read()))
        print("end %d" % time.clock_gettime_ns(time.CLOCK_MONOTONIC), flush=True)
    finally:
        atv.close()
asyncio.run(main())
"""#

/// A stand-in for the phone's DACP remote-control server: logs each
/// request's path and Active-Remote, answers 204 as iOS does.
let dacpStandInScript = #"""
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[2], "a") as f: f.write("%s %s\n" % (self.path, self.headers.get("Active-Remote")))
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""#

/// Managed AirPlay receivers with real programs: shairport-sync (one per
/// group, announced over a real avahi-daemon on loopback) and pyatv as the
/// phone. A few seconds of audio each.
@Suite(.serialized) struct AirPlayTests {
    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/shairport-sync")
            && (try? runProgram("/usr/bin/env", ["python3", "-c", "import pyatv"], timeout: 20).status) == 0
    }

    /// 16-bit stereo at 44.1 kHz: a sine of `hz` at half scale for `seconds`.
    static func tone(_ path: String, hz: Double, seconds: Double) throws {
        var samples: [Int16] = []
        for i in 0..<Int(seconds * 44_100) {
            let v = Int16(16_384 * sin(2 * Double.pi * hz * Double(i) / 44_100))
            samples.append(v); samples.append(v)
        }
        try Data(wavImage(samples, rate: 44_100)).write(to: URL(fileURLWithPath: path))
    }

    /// A small JPEG-looking artwork: SOI, APP0, then bytes that say which it is.
    static func artwork(_ seed: UInt8) -> [UInt8] {
        [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10] + Array("JFIF".utf8) + [0] + (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) } + [0xff, 0xd9]
    }

    /// Frequency (zero crossings) and RMS (full scale 1) of the loud span of `s` (left channel), and its length in seconds.
    static func measure(_ s: [Int16], from: Int, threshold: Int = 8_000) -> (hz: Double, rms: Double, seconds: Double, first: Int)? {
        let frames = s.count / 2
        guard from < frames, let first = (from..<frames).first(where: { abs(Int(s[2 * $0])) > threshold }) else { return nil }
        var last = first
        for i in first..<frames {
            if abs(Int(s[2 * i])) > threshold { last = i }
            if i - last > 2_400 { break } // 50 ms of quiet: the tone ended
        }
        var crossings = 0, energy = 0.0
        for i in (first + 1)...last {
            if (s[2 * i - 2] < 0) != (s[2 * i] < 0) { crossings += 1 }
            energy += Double(s[2 * i]) * Double(s[2 * i]) / (32_768 * 32_768)
        }
        let seconds = Double(last - first) / 48_000
        return (Double(crossings) / 2 / max(seconds, 0.001), (energy / Double(max(1, last - first))).squareRoot(), seconds, first)
    }

    /// The AirPlay receivers announced over mDNS (`_raop._tcp`, "MAC@Name"): name → service.
    static func announced() throws -> [String: DiscoveredLeader] {
        let browser = try ServiceBrowser(type: "_raop._tcp")
        defer { browser.stop() }
        waitUntil(timeout: 3) { browser.settled }
        usleep(200_000)
        var out: [String: DiscoveredLeader] = [:]
        for s in browser.leaders { out[String(s.name.split(separator: "@", maxSplits: 1).last ?? "")] = s }
        return out
    }

    /// The sender, streaming to the receiver announced as `receiver`; its log (with its start time) at `log`.
    func sender(_ dir: String, to receiver: String, _ args: [String], dacpID: String? = nil, log: String? = nil) throws -> BackgroundProgram {
        var service: DiscoveredLeader?
        waitUntil(timeout: 10) { service = (try? Self.announced())?[receiver]; return service != nil }
        guard let service else { throw CommandFailed(description: "no AirPlay receiver \(receiver) announced") }
        let txt = String(decoding: try JSONSerialization.data(withJSONObject: service.txt), as: UTF8.self)
        let script = dir + "/sender.py"
        if !FileManager.default.fileExists(atPath: script) { try airPlaySenderScript.write(toFile: script, atomically: true, encoding: .utf8) }
        let environment = dacpID.map { ["DACP_ID=" + $0] } ?? []
        return try BackgroundProgram("/usr/bin/env", environment + ["python3", script, String(service.port), txt] + args, log: log ?? dir + "/sender.log")
    }

    static func startTime(_ log: String) -> Int64? {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("start ") }.flatMap { Int64($0.dropFirst(6)) }
    }

    @Test func aPhoneTakesTheKitchenOverIsHeardInStepAndGivesItBackPaused() throws {
        guard Self.available else {
            Issue.record("needs shairport-sync and PyPI pyatv (scripts/setup.sh installs them)")
            return
        }
        let avahi = try AvahiTestDaemon()
        try avahi.start()
        let dir = makeTemporaryDirectory()
        try Self.tone(dir + "/a440.wav", hz: 440, seconds: 4)
        try Self.tone(dir + "/b880.wav", hz: 880, seconds: 3)
        try Self.tone(dir + "/long440.wav", hz: 440, seconds: 8)
        try Self.tone(dir + "/before.wav", hz: 220, seconds: 60)
        let art = Self.artwork(1)
        try Data(art).write(to: URL(fileURLWithPath: dir + "/art.jpg"))
        try Data(Self.artwork(2)).write(to: URL(fileURLWithPath: dir + "/art2.jpg"))

        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.allowedFolders = [dir]
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
            c.airplay = true
            c.airplayDirectory = dir + "/airplay"
        }
        defer { leader.stop() }
        let kitchen = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dir + "/kitchen.raw", ppm: 0, delayMilliseconds: 0), steering: false)
        defer { kitchen.stop() }
        let pantry = try startFollower(leader: leader.endpoint, name: "pantry", output: .file(path: dir + "/pantry.raw", ppm: 0, delayMilliseconds: 0), steering: false)
        defer { pantry.stop() }
        #expect(waitUntilInStep(leader, [kitchen, pantry], timeout: 20))
        _ = try leader.createGroup(name: "Kitchen", rooms: ["kitchen", "pantry"])
        leader.settleAirPlay()

        // One receiver per group, announced under its name over Avahi, and following a rename.
        #expect(Set(leader.airPlayReceivers.values.map(\.name)) == ["Home", "Kitchen"])
        #expect(waitUntil(timeout: 15) { (try? Self.announced()).map { Set($0.keys) == ["Home", "Kitchen"] } ?? false })
        _ = try leader.renameGroup("Kitchen", to: "Cuisine")
        leader.settleAirPlay()
        #expect(waitUntil(timeout: 15) { (try? Self.announced()).map { Set($0.keys) == ["Home", "Cuisine"] } ?? false })
        _ = try leader.renameGroup("Cuisine", to: "Kitchen")
        _ = try leader.partyOn()
        leader.settleAirPlay()
        #expect(waitUntil(timeout: 15) { (try? Self.announced()).map { Set($0.keys) == ["Whole house"] } ?? false })
        leader.partyOff()
        leader.settleAirPlay()
        #expect(Set(leader.airPlayReceivers.values.map(\.name)) == ["Home", "Kitchen"])

        // What the kitchen played before: a 220 Hz file, playing.
        _ = try leader.perform(.add(uris: [dir + "/before.wav"], next: false), group: "Kitchen")
        _ = try leader.perform(.play, group: "Kitchen")
        usleep(1_500_000)

        // The phone: 4 s of 440 Hz with title, artist, album and artwork.
        let phone = try sender(dir, to: "Kitchen", [dir + "/a440.wav", "Tone 440", "Tutti", "Tests", dir + "/art.jpg"], log: dir + "/phone.log")
        defer { phone.stop() }
        let control = try #require(leader.controlEndpoint)
        var seen: [String: JSONValue] = [:]
        var firstAudio: Int64?
        #expect(waitUntil(timeout: 20) {
            guard let s = try? ControlClient(endpoint: control).call("player.status", ["group": "Kitchen"]).object else { return false }
            seen = s
            firstAudio = firstAudio ?? leader.airPlayNowPlaying(group: "Kitchen")?.firstAudioAt
            return s["artist"]?.string == "Tutti" && s["coverHash"] != nil
        }, "\(seen)")
        waitUntil(timeout: 5) { firstAudio = firstAudio ?? leader.airPlayNowPlaying(group: "Kitchen")?.firstAudioAt; return firstAudio != nil }
        #expect(seen["title"]?.string == "Tone 440" && seen["album"]?.string == "Tests")
        #expect((seen["source"]?.string)?.hasPrefix("AirPlay from ") == true, "\(seen)")
        let cover = try #require(seen["coverHash"]?.string)
        #expect(leader.airPlayArtwork(id: cover) == art, "the artwork's bytes are the sender's")
        // The web app shows it as a library cover: /art/ID.
        let served = httpRequest(port: try #require(leader.webEndpoint).port, "GET", "/art/" + cover)
        #expect(served.hasPrefix("HTTP/1.1 200") && headerValue(served, "Content-Type") == "image/jpeg"
                && headerValue(served, "Content-Length") == String(art.count), "\(served.prefix(300))")
        // Progress from the phone (prgr): the track's length.
        #expect(abs((seen["duration"]?.number ?? 0) - 4) < 0.1, "\(seen)")

        // The session ends (pend, then a second's grace): back to the 220 Hz file, paused.
        #expect(waitUntil(timeout: 20) { (try? leader.nowPlaying(group: "Kitchen"))?.state == .paused }, "\((try? leader.nowPlaying(group: "Kitchen")).map { "\($0)" } ?? "")")
        let after = try leader.nowPlaying(group: "Kitchen")
        #expect(after.path == dir + "/before.wav" && after.trackCount == 1, "\(after)")
        phone.stop()
        usleep(1_500_000) // the last audio reaches the rooms a buffer later

        // What the kitchen heard: 440 Hz at the sender's level, for the file's length, after the 220 Hz.
        let k = readRaw(dir + "/kitchen.raw")
        let p = readRaw(dir + "/pantry.raw")
        var from = 0, tone: (hz: Double, rms: Double, seconds: Double, first: Int)?
        while let m = Self.measure(k, from: from) { // the first loud span that is not the 220 Hz
            if m.hz > 400 { tone = m; break }
            from = m.first + Int(m.seconds * 48_000) + 2_400
        }
        let heard = try #require(tone, "no 440 Hz in the kitchen")
        #expect(abs(heard.hz - 440) < 440 * 0.005, "\(heard)")
        #expect(abs(heard.rms - 0.5 / 2.squareRoot()) < 0.01, "\(heard)")
        #expect(heard.seconds > 3.9 && heard.seconds < 4.1, "\(heard)")
        // In step in both rooms.
        let timingK = readTiming(dir + "/kitchen.raw"), timingP = readTiming(dir + "/pantry.raw")
        if let pFirst = Self.measure(p, from: max(0, heard.first - 48_000)).map(\.first),
           let tk = leaveTime(ofFrame: heard.first, timing: timingK, ppm: 0), let tp = leaveTime(ofFrame: pFirst, timing: timingP, ppm: 0) {
            #expect(abs(tk - tp) < 2_000_000, "rooms \(Double(tk - tp) / 1e6) ms apart")
            // The phone's start to sound in the rooms.
            if let start = Self.startTime(dir + "/phone.log") {
                let latency = Double(tk - start) / 1e9
                // The take-over: from the session's first audio in the pipe to sound in the rooms. The
                // target is 1.5 s (printed below, as the end-to-end figure is); here a bound only a fault
                // breaks, as for the phone's start: when shairport-sync writes its first bytes varies
                // by a second from run to run (1.04 s and 2.05 s to sound, for one 2.06 s from the phone).
                let takeOver = firstAudio.map { Double(tk - $0) / 1e9 } ?? .infinity
                #expect(takeOver < 3, "\(takeOver) s from the first audio to sound")
                print("AirPlay: phone start to sound \(fixedPoint(latency, decimals: 3)) s, first audio in the pipe to sound \(fixedPoint(takeOver, decimals: 3)) s; rooms \(fixedPoint(Double(abs(tk - tp)) / 1e6, decimals: 2)) ms apart; \(fixedPoint(heard.hz, decimals: 2)) Hz, RMS \(fixedPoint(heard.rms, decimals: 3)), \(fixedPoint(heard.seconds, decimals: 3)) s")
                #expect(latency < 3, "\(latency) s from the phone's start to sound")
            }
        } else {
            Issue.record("the pantry did not play the tone")
        }
    }

    @Test func aSecondPhoneTakesOverTheRemoteReachesThePhoneAndAKilledReceiverComesBack() throws {
        guard Self.available else {
            Issue.record("needs shairport-sync and PyPI pyatv (scripts/setup.sh installs them)")
            return
        }
        let avahi = try AvahiTestDaemon()
        try avahi.start()
        let dir = makeTemporaryDirectory()
        try Self.tone(dir + "/long440.wav", hz: 440, seconds: 8)
        try Self.tone(dir + "/b880.wav", hz: 880, seconds: 3)
        try Data(Self.artwork(1)).write(to: URL(fileURLWithPath: dir + "/art.jpg"))
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastControl = Endpoint(host: "127.0.0.1", port: 0)
            c.airplay = true
            c.airplayDirectory = dir + "/airplay"
        }
        defer { leader.stop() }
        let room = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dir + "/kitchen.raw", ppm: 0, delayMilliseconds: 0), steering: false)
        defer { room.stop() }
        #expect(waitUntilInStep(leader, [room], timeout: 20))
        leader.settleAirPlay()

        // The stand-in remote, announced as the phone announces its own (iTunes_Ctrl_<DACP-ID>).
        let dacpPort = UInt16(20_000 + Int(getpid()) % 20_000)
        try dacpStandInScript.write(toFile: dir + "/dacp.py", atomically: true, encoding: .utf8)
        let remote = try BackgroundProgram("/usr/bin/env", ["python3", dir + "/dacp.py", String(dacpPort), dir + "/dacp.log"])
        defer { remote.stop() }
        let announcement = try ServicePublisher(name: "iTunes_Ctrl_ABCDEF12", port: dacpPort, type: "_dacp._tcp", log: .silent)
        defer { announcement.stop() }
        _ = announcement.waitUntilEstablished(timeout: 10)

        // A Snapcast control client (Home Assistant's integration) listening before the phone plays.
        let listener = try TCPConnection.connect(to: try #require(leader.snapcastControlEndpoint))
        defer { listener.close() }
        listener.setReceiveTimeout(milliseconds: 200)

        let first = try sender(dir, to: "Home", [dir + "/long440.wav", "First", "Phone A", "Album", dir + "/art.jpg"], dacpID: "ABCDEF12")
        defer { first.stop() }
        #expect(waitUntil(timeout: 20) { leader.airPlayNowPlaying(group: nil)?.title == "First" })
        // It is told: Stream.OnProperties with the phone's title.
        var heard: [UInt8] = []
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { chunk.deallocate() }
        let notified = waitUntil(timeout: 5) {
            if let (n, _) = try? listener.receive(into: chunk), n > 0 { heard += chunk[0..<n] }
            return String(decoding: heard, as: UTF8.self).split(separator: "\n")
                .contains { $0.contains("\"Stream.OnProperties\"") && $0.contains("\"title\":\"First\"") }
        }
        #expect(notified, "\(String(decoding: heard.suffix(2_000), as: UTF8.self))")
        // `tutti next` reaches the phone as DACP, with the session's Active-Remote.
        #expect(waitUntil(timeout: 10) { leader.airPlayNowPlaying(group: nil)?.remote != nil }, "no DACP port from shairport-sync")
        let (status, out) = try runTutti(port: try #require(leader.controlEndpoint).port, ["next"])
        #expect(status == 0, "\(out)")
        #expect(waitUntil(timeout: 5) {
            ((try? String(contentsOfFile: dir + "/dacp.log", encoding: .utf8)) ?? "").contains("/ctrl-int/1/nextitem \(0xABCD_EF12)")
        }, "\((try? String(contentsOfFile: dir + "/dacp.log", encoding: .utf8)) ?? "no request")")

        // Now playing on every surface: tutti status, MPD currentsong, Snapcast's stream properties.
        let shown = try runTutti(port: try #require(leader.controlEndpoint).port, ["status"]).out
        #expect(shown.contains("Phone A — First [Album]") && shown.contains("AirPlay from "), "\(shown)")
        let song = exchange(port: try #require(leader.mpdEndpoint).port, Array("currentsong\n".utf8), until: "OK\n")
        #expect(song.contains("Title: First\n") && song.contains("Artist: Phone A\n") && song.contains("Name: AirPlay from "), "\(song)")
        let snap = exchange(port: try #require(leader.snapcastControlEndpoint).port,
                            Array("{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"Server.GetStatus\"}\n".utf8), untilLine: true)
        #expect(snap.contains("\"title\":\"First\"") && (snap.contains("\"artUrl\":\"\\/art\\/a1a1a1a1") || snap.contains("\"artUrl\":\"/art/a1a1a1a1")), "\(snap.prefix(2_000))")

        // A second phone interrupts the first: 880 Hz, its title.
        let second = try sender(dir, to: "Home", [dir + "/b880.wav", "Second", "Phone B", "Album", dir + "/art.jpg"])
        defer { second.stop() }
        #expect(waitUntil(timeout: 20) { leader.airPlayNowPlaying(group: nil)?.title == "Second" })
        #expect(waitUntil(timeout: 20) { leader.nowPlaying.state == .stopped }, "back to nothing (nothing played before)")
        usleep(1_500_000)
        let k = readRaw(dir + "/kitchen.raw")
        var from = 0, spans: [(hz: Double, rms: Double, seconds: Double, first: Int)] = []
        while let m = Self.measure(k, from: from) { spans.append(m); from = m.first + Int(m.seconds * 48_000) + 2_400 }
        #expect(spans.contains { abs($0.hz - 440) < 3 } && spans.last.map { abs($0.hz - 880) < 880 * 0.005 && $0.seconds > 2.8 } == true,
                "\(spans.map { "\(Int($0.hz)) Hz \(fixedPoint($0.seconds, decimals: 2)) s" })")

        // kill -9 of a receiver: back within 5 s, announced again.
        let before = try #require(leader.airPlayReceivers["main"]?.pid)
        kill(before, SIGKILL)
        let killedAt = Monotonic.now()
        #expect(waitUntil(timeout: 5) { (leader.airPlayReceivers["main"]?.pid).map { $0 != before } ?? false })
        print("AirPlay: receiver back \(fixedPoint(Double(Monotonic.now() - killedAt) / 1e9, decimals: 2)) s after kill -9")
        #expect(waitUntil(timeout: 15) { (try? Self.announced())?["Home"] != nil })
    }
}

/// The daemon's own children (a shairport-sync per group): started, started
/// again when killed, ended for good by `stop`; a missing program is an error.
@Suite struct ChildProcessTests {
    @Test func aKilledChildComesBackAndStopEndsIt() throws {
        let exits = Mutex<[Int32]>([])
        let child = ChildProcess(path: "/bin/sleep", arguments: ["30"], log: .silent,
                                 backoff: RestartBackoff(first: 50_000_000, ceiling: 1_000_000_000, stableAfter: 60_000_000_000),
                                 onExit: { status in exits.withLock { $0.append(status) } })
        try child.start()
        let first = try #require(child.processID)
        kill(first, SIGKILL)
        #expect(waitUntil(timeout: 2) { (child.processID.map { $0 != first } ?? false) && child.starts == 2 })
        #expect(exits.withLock { $0 } == [128 + SIGKILL])
        let second = try #require(child.processID)
        child.stop()
        #expect(child.processID == nil && kill(second, 0) != 0, "stopped and reaped")
        usleep(200_000)
        #expect(child.starts == 2, "not started again after stop")
        #expect(throws: ChildProcessError.self) { try ChildProcess(path: "/nonexistent/shairport-sync", arguments: [], log: .silent).start() }
    }
}

/// A leader that ended while a phone held a group (a crash, a power cut)
/// saved the receiver's pipe in the queue: the next start drops it, and
/// says so when shairport-sync is missing rather than failing.
@Suite struct AirPlayRecoveryTests {
    @Test func aStalePipeLeavesTheSavedQueueAndAMissingProgramIsOnlyAWarning() throws {
        let dir = makeTemporaryDirectory()
        try Data(wavImage(counterFrames(count: 4_800))).write(to: URL(fileURLWithPath: dir + "/a.wav"))
        let pipe = "pipe:\(dir)/airplay/0/audio.fifo?rate=44100&format=s16le&channels=2&name=AirPlay"
        let first = try startLeader(files: []) { c in c.databasePath = dir + "/library.db"; c.allowedFolders = [dir] }
        _ = try first.perform(.add(uris: [dir + "/a.wav", pipe], next: false))
        first.stop()
        let log = CapturingLog()
        let second = try startLeader(files: [], log: log.logger) { c in
            c.databasePath = dir + "/library.db"
            c.airplay = true
            c.airplayDirectory = dir + "/airplay"
            c.airplayProgram = dir + "/no-shairport-sync"
        }
        defer { second.stop() }
        #expect(second.queue.entries.map(\.uri) == [dir + "/a.wav"])
        #expect(log.lines.contains { $0.contains("is not installed (apt install shairport-sync)") }, "\(log.lines)")
        #expect(second.airPlayReceivers.isEmpty)
    }
}
