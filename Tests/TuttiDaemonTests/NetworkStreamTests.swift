import Foundation
import Glibc
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// A network track in the queue plays through the leader; cached, it plays
/// with the server gone. The server is Python's http.server on loopback.
@Suite(.serialized) struct NetworkStreamTests {
    @Test func urlInTheQueuePlaysAndTheCacheKeepsItOffline() throws {
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/www", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir + "/music", withIntermediateDirectories: true)
        writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.sine(frequency: 440, seconds: 2, amplitude: 0.4)))
        try runTool(["lame", "--quiet", "-b", "128", dir + "/tone.wav", dir + "/www/tone.mp3"])

        let server = try LocalFileServer(folder: dir + "/www", log: dir + "/http.log")
        let url = server.url("/tone.mp3")

        let leader = try startLeader(files: []) { c in
            c.musicDirectory = dir + "/music"
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the test servers are on 127.0.0.1
        }
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "r", output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() } // also when an expectation throws; stopping twice is harmless
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        _ = try c.call("queue.add", ["uris": [JSONValue(url)]])
        func loudFrames(_ x: ArraySlice<Int16>) -> Int { stride(from: x.startIndex, to: x.endIndex, by: 2).filter { abs(Int(x[$0])) > 3_000 }.count }
        _ = try c.call("queue.play", ["index": 0])
        // Wait for the sound rather than a fixed time: a slow machine takes longer to fetch and start.
        // 2 s of a 0.4 sine has about 82,000 frames above the threshold.
        _ = waitUntil(timeout: 15) { loudFrames(readRaw(dir + "/r.raw")[...]) > 70_000 }

        // Cache it, stop the server, and play it again from the cache.
        let cached = try #require(try c.call("cache.add", ["url": JSONValue(url)]).object)
        let size = try FileManager.default.attributesOfItem(atPath: dir + "/www/tone.mp3")[.size] as? Int
        #expect(cached["size"]?.integer == size)
        #expect(((try c.call("cache.list").object)?["entries"]?.objectArray)?.first?["url"]?.string == url)
        server.stop()
        let before = readRaw(dir + "/r.raw").count
        _ = try c.call("queue.play", ["index": 0])
        _ = waitUntil(timeout: 15) { loudFrames(readRaw(dir + "/r.raw")[before...]) > 70_000 }
        follower.stop()

        let all = readRaw(dir + "/r.raw")
        let firstPlay = all[0..<before], secondPlay = all[before...]
        #expect(loudFrames(firstPlay) > 48_000, "the stream played: \(loudFrames(firstPlay)) loud frames")
        #expect(loudFrames(secondPlay) > 48_000, "the cached copy played with the server gone: \(loudFrames(secondPlay)) loud frames")
        _ = try c.call("cache.clear")
        #expect((try c.call("cache.size").object)?["entries"]?.integer == 0)
    }
}

/// A raw-socket Python server for the player's network states: `/stall`
/// accepts and sends nothing; `/trickle.mp3` sends a Content-Length and the
/// first `trickle` bytes, then nothing; `/icy` answers SHOUTcast v1 style
/// (`ICY 200 OK`, icy-metaint 8192) with two StreamTitles, then ends;
/// `/file.mp3` is the whole file with a Content-Length.
private let stateServerScript = #"""
import socket, sys, threading, time, os
data = open(sys.argv[1], 'rb').read()
trickle = int(sys.argv[2])
META = 8192
def icy_body():
    out, block = bytearray(), 0
    for start in range(0, len(data), META):
        chunk = data[start:start + META]
        out += chunk
        if len(chunk) < META: break
        title = {0: b"Tutti Radio - First", 4: b"Tutti Radio - Second"}.get(block)
        if title:
            text = b"StreamTitle='" + title + b"';"
            n = (len(text) + 15) // 16
            out += bytes([n]) + text + b"\0" * (n * 16 - len(text))
        else:
            out += b"\0"
        block += 1
    return bytes(out)
def handle(c):
    try:
        req = b''
        while b'\r\n\r\n' not in req and len(req) < 65536:
            d = c.recv(4096)
            if not d: return
            req += d
        path = req.split(b' ')[1].decode()
        with open(sys.argv[1] + '.requests', 'a') as log:  # one line per request, for the tests to count
            log.write(path + '\n')
        if path.startswith('/stall'):
            time.sleep(120)
        elif path.startswith('/trickle'):
            c.sendall(b'HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nContent-Length: %d\r\n\r\n' % len(data) + data[:trickle])
            time.sleep(120)
        elif path.startswith('/file.mp3'):
            c.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' % len(data) + data)
        elif path.startswith('/icy'):
            c.sendall(b'ICY 200 OK\r\nicy-name: Tutti Radio\r\ncontent-type: audio/mpeg\r\nicy-metaint: 8192\r\n\r\n')
            body = icy_body()
            for i in range(0, len(body), 16384):  # about real time: 16 KiB = 1 s at 128 kbit/s
                c.sendall(body[i:i + 16384]); time.sleep(0.5)
        else:
            c.sendall(b'HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n')
    except OSError:
        pass
    finally:
        c.close()
def exit_with_parent():
    sys.stdin.buffer.read(); os._exit(0)
threading.Thread(target=exit_with_parent, daemon=True).start()
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(('127.0.0.1', 0)); srv.listen(16)
print(srv.getsockname()[1], flush=True)
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
"""#

/// A Python server script run for one test: it prints its port on its first
/// line and exits when its stdin closes (or is killed with the test).
private final class PythonTestServer {
    let process = Process()
    let stdin = Pipe()
    let port: Int
    init(script: String, path: String, arguments: [String], what: String) throws {
        try script.write(toFile: path, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-u", path] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = stdin
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let more = out.fileHandleForReading.availableData
            if more.isEmpty { throw NetError.timedOut(what + " to start") }
            line.append(more)
        }
        port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))!
    }
    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
}

private final class StateServer {
    let server: PythonTestServer
    init(mp3: String, trickleBytes: Int) throws {
        server = try PythonTestServer(script: stateServerScript, path: NSTemporaryDirectory() + "tutti-state-server-\(getpid()).py",
                                      arguments: [mp3, String(trickleBytes)], what: "the state test server")
    }
    func url(_ path: String) -> String { "http://127.0.0.1:\(server.port)\(path)" }
}

/// An MP3 of `seconds` of a 0.4 sine (128 kbit/s CBR, 44.1 kHz) made with lame.
private func makeMP3(_ dir: String, seconds: Double) throws -> String {
    writeFile(dir + "/tone.wav", TestSignal.wav16(TestSignal.sine(frequency: 440, seconds: seconds, amplitude: 0.4)))
    try runTool(["lame", "--quiet", "-b", "128", "--cbr", dir + "/tone.wav", dir + "/tone.mp3"])
    return dir + "/tone.mp3"
}

/// Calls `method` and returns (result object, seconds it took).
private func timedCall(_ c: ControlClient, _ method: String, _ params: [String: JSONValue] = [:]) throws -> ([String: JSONValue], Double) {
    let start = Monotonic.now()
    let result = try c.call(method, params).object ?? [:]
    return (result, Double(Monotonic.now() - start) / 1e9)
}

private func status(_ c: ControlClient) -> [String: JSONValue] { (try? c.call("player.status"))?.object ?? [:] }

@Suite(.serialized) struct NetworkStreamStateTests {
    /// A server that accepts and sends nothing: commands still answer at once,
    /// the state reads loading, and after the timeout it is an error with a reason.
    @Test func stalledServerNeverDelaysCommandsAndEndsInAnError() throws {
        let dir = makeTemporaryDirectory()
        let server = try StateServer(mp3: try makeMP3(dir, seconds: 2), trickleBytes: 0)
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the test servers are on 127.0.0.1
            c.network.connectTimeout = 3
            c.network.stallTimeout = 3
        }
        defer { leader.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        _ = try c.call("queue.add", ["uris": JSONValue([server.url("/stall/a.mp3"), server.url("/stall/b.mp3")])])
        let (played, playTime) = try timedCall(c, "queue.play", ["index": 0])
        #expect(playTime < 1, "queue.play took \(playTime) s")
        #expect(waitUntil(timeout: 2) { status(c)["state"]?.string == "loading" }, "\(played)")

        let (afterNext, nextTime) = try timedCall(c, "player.next")
        #expect(nextTime < 1, "player.next took \(nextTime) s while the server stalls")
        #expect(afterNext["state"]?.string != "error")
        #expect(waitUntil(timeout: 2) { status(c)["state"]?.string == "loading" && status(c)["track"]?.integer == 1 })

        let (afterPause, pauseTime) = try timedCall(c, "player.pause")
        #expect(pauseTime < 1, "player.pause took \(pauseTime) s")
        #expect(afterPause["state"]?.string == "paused")
        let (_, resumeTime) = try timedCall(c, "player.play")
        #expect(resumeTime < 1)
        #expect(waitUntil(timeout: 2) { status(c)["state"]?.string == "loading" })

        // 3 s without headers: the player gives up on b.mp3, the end of the list, state error with the reason.
        let start = Monotonic.now()
        #expect(waitUntil(timeout: 10) { status(c)["state"]?.string == "error" })
        let gaveUpAfter = Double(Monotonic.now() - start) / 1e9
        let s = status(c)
        let reason = s["error"]?.string ?? ""
        #expect(reason.contains(server.url("/stall/b.mp3")) && reason.contains("nothing received for 3 s"), "\(reason)")
        #expect(gaveUpAfter > 2 && gaveUpAfter < 6, "gave up after \(gaveUpAfter) s")
        print("stalled server: queue.play \(playTime) s, next \(nextTime) s, pause \(pauseTime) s, play \(resumeTime) s; error after \(gaveUpAfter) s: \(reason)")
        // A play command clears the error and tries again.
        _ = try c.call("queue.play", ["index": 1])
        #expect(waitUntil(timeout: 2) { status(c)["state"]?.string == "loading" && status(c)["error"] == nil })
    }

    /// A finite file that stops arriving after about 1.5 s of audio: the
    /// state goes playing → buffering with the position standing still,
    /// buffered progress reports what arrived, and `next` stays immediate.
    @Test func starvedFileReadsBufferingWithProgressAndCommandsStayFast() throws {
        let dir = makeTemporaryDirectory()
        let mp3 = try makeMP3(dir, seconds: 6)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: mp3)[.size] as? Int)
        let server = try StateServer(mp3: mp3, trickleBytes: 24_000) // 1.5 s at 128 kbit/s
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the test servers are on 127.0.0.1
            c.network.connectTimeout = 3
            c.network.stallTimeout = 20
        }
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "r", output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        _ = try c.call("queue.add", ["uris": JSONValue([server.url("/trickle.mp3"), server.url("/stall/next.mp3")])])
        _ = try c.call("queue.play", ["index": 0])
        var sawPlaying = false, progress: [String: JSONValue] = [:]
        #expect(waitUntil(timeout: 8) {
            let s = status(c)
            if s["state"]?.string == "playing" { sawPlaying = true; progress = s }
            return s["state"]?.string == "buffering"
        })
        #expect(sawPlaying)
        let fraction = progress["bufferedFraction"]?.number ?? -1
        #expect(abs(fraction - 24_000.0 / Double(size)) < 0.02, "bufferedFraction \(fraction) of \(size) bytes, 24000 sent")
        #expect((progress["bufferedSeconds"]?.number ?? -1) >= 0)
        let p1 = status(c)["position"]?.number ?? 0
        usleep(500_000)
        let buffering = status(c)
        #expect(buffering["state"]?.string == "buffering")
        #expect(buffering["position"]?.number == p1, "the position stands still while buffering")
        #expect(p1 > 1.0 && p1 < 1.8, "heard up to \(p1) s of the 1.5 s that arrived")
        let (after, nextTime) = try timedCall(c, "player.next")
        #expect(nextTime < 1, "player.next took \(nextTime) s while buffering")
        #expect(after["state"]?.string != "error")
        #expect(waitUntil(timeout: 2) { status(c)["track"]?.integer == 1 && status(c)["state"]?.string == "loading" })
        print("starved file: played until \(p1) s, bufferedFraction \(fraction), next \(nextTime) s")
    }

    /// SHOUTcast v1 (`ICY 200 OK`): it plays, and its StreamTitles become now playing.
    @Test func shoutcastV1StreamPlaysAndItsTitleUpdatesNowPlaying() throws {
        let dir = makeTemporaryDirectory()
        let server = try StateServer(mp3: try makeMP3(dir, seconds: 6), trickleBytes: 0)
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the test servers are on 127.0.0.1
            c.network.connectTimeout = 3
            c.network.reconnect = .never
        }
        defer { leader.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        _ = try c.call("queue.add", ["uris": [JSONValue(server.url("/icy"))]])
        _ = try c.call("queue.play", ["index": 0])
        var titles: [String] = []
        #expect(waitUntil(timeout: 10) {
            let s = status(c)
            if let t = s["title"]?.string, titles.last != t { titles.append(t) }
            return titles.last == "Tutti Radio - Second" && s["state"]?.string == "playing"
        }, "titles seen: \(titles)")
        #expect(titles.contains("Tutti Radio - First"))
        #expect(status(c)["station"]?.string == "Tutti Radio")
    }

    /// Auto-cache: a finite file played once is kept (teed as it arrived, one
    /// download), and plays again with the server gone.
    @Test func aFilePlayedOnceIsCachedWithoutASecondDownloadAndPlaysOffline() throws {
        let dir = makeTemporaryDirectory()
        let mp3 = try makeMP3(dir, seconds: 2)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: mp3)[.size] as? Int)
        var server: StateServer? = try StateServer(mp3: mp3, trickleBytes: 0)
        let url = server!.url("/file.mp3")
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the test servers are on 127.0.0.1
            c.cacheDirectory = dir + "/cache"
        }
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "r", output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        _ = try c.call("queue.add", ["uris": [JSONValue(url)]])
        _ = try c.call("queue.play", ["index": 0])
        func entries() -> [[String: JSONValue]] { ((try? c.call("cache.list"))?.object)?["entries"]?.objectArray ?? [] }
        #expect(waitUntil(timeout: 10) { entries().first?["url"]?.string == url })
        #expect(entries().first?["size"]?.integer == size)
        func loudFrames(_ x: ArraySlice<Int16>) -> Int { stride(from: x.startIndex, to: x.endIndex, by: 2).filter { abs(Int(x[$0])) > 3_000 }.count }
        _ = waitUntil(timeout: 15) { loudFrames(readRaw(dir + "/r.raw")[...]) > 70_000 }
        let requests = (try? String(contentsOfFile: mp3 + ".requests", encoding: .utf8)) ?? ""
        #expect(requests.split(separator: "\n").filter { $0 == "/file.mp3" }.count == 1, "one download: \(requests)")
        server = nil // killed: the second play must come from the cache
        let before = readRaw(dir + "/r.raw").count
        _ = try c.call("queue.play", ["index": 0])
        _ = waitUntil(timeout: 15) { loudFrames(readRaw(dir + "/r.raw")[before...]) > 70_000 }
        let again = loudFrames(readRaw(dir + "/r.raw")[before...])
        #expect(again > 48_000, "the cached copy played with the server gone: \(again) loud frames")
        #expect(status(c)["error"] == nil)
    }
}

private final class HTTPSServer {
    let server: PythonTestServer
    /// Serves `folder` with a fresh self-signed certificate for 127.0.0.1 (`dir`/cert.pem).
    init(folder: String, dir: String) throws {
        try runTool(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                     "-days", "1", "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem"])
        server = try PythonTestServer(script: httpsFileServerScript, path: dir + "/https-server.py",
                                      arguments: [folder, dir + "/cert.pem", dir + "/key.pem"], what: "the https test server")
    }
    func url(_ path: String) -> String { "https://127.0.0.1:\(server.port)\(path)" }
}

@Suite(.serialized) struct HTTPSStreamTests {
    /// An https:// source whose certificate is not trusted (self-signed, not
    /// in the system store): the track ends in the error state with the
    /// TLS reason and the URL, nothing is heard, and the leader keeps
    /// answering. (`--ca-file` trusts a private CA: HTTPSSourceTests.)
    @Test func untrustedCertificateIsAnErrorWithItsReasonNotACrash() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl is missing: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/www", withIntermediateDirectories: true)
        let mp3 = try makeMP3(dir, seconds: 2)
        try FileManager.default.copyItem(atPath: mp3, toPath: dir + "/www/tone.mp3")
        let server = try HTTPSServer(folder: dir + "/www", dir: dir)
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the test servers are on 127.0.0.1
            c.network.connectTimeout = 5
            c.network.stallTimeout = 5
        }
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "r", output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        let c = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        let url = server.url("/tone.mp3")
        _ = try c.call("queue.add", ["uris": [JSONValue(url)]])
        let (_, playTime) = try timedCall(c, "queue.play", ["index": 0])
        #expect(playTime < 1, "queue.play took \(playTime) s")
        #expect(waitUntil(timeout: 10) { status(c)["state"]?.string == "error" }, "\(status(c))")
        let reason = status(c)["error"]?.string ?? ""
        #expect(reason.contains(url) && reason.lowercased().contains("certificate"), "\(reason)")
        // The leader still answers, and nothing of the refused stream was played.
        let (_, statusTime) = try timedCall(c, "player.status")
        #expect(statusTime < 1)
        let loud = readRaw(dir + "/r.raw").filter { abs(Int($0)) > 3_000 }.count
        #expect(loud == 0, "\(loud) loud samples from an untrusted server")
        print("https with an untrusted certificate: \(reason)")
    }

    /// An https:// stream from a server whose certificate the system trusts
    /// plays. The leader process runs in a private mount namespace where the
    /// system CA bundle (the one libcurl reads by default) has the test
    /// certificate appended: nothing outside that process is changed.
    /// Needs root (unshare --mount), as CI has.
    @Test func trustedHTTPSStreamPlays() throws {
        let bundle = "/etc/ssl/certs/ca-certificates.crt"
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl"), "openssl is missing: run scripts/setup.sh")
        try #require(FileManager.default.fileExists(atPath: bundle), "no system CA bundle at \(bundle): install ca-certificates")
        try #require(getuid() == 0, "this test needs root for a private mount namespace (unshare --mount)")
        let dir = makeTemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir + "/www", withIntermediateDirectories: true)
        let mp3 = try makeMP3(dir, seconds: 2)
        try FileManager.default.copyItem(atPath: mp3, toPath: dir + "/www/tone.mp3")
        let server = try HTTPSServer(folder: dir + "/www", dir: dir)
        let trusted = try Data(contentsOf: URL(fileURLWithPath: bundle)) + Data(contentsOf: URL(fileURLWithPath: dir + "/cert.pem"))
        try trusted.write(to: URL(fileURLWithPath: dir + "/bundle.crt"))

        let listen = Int.random(in: 20_000...40_000)
        let tuttid = URL(fileURLWithPath: DaemonBinaryTests.binary).path
        let leader = Process()
        leader.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        leader.arguments = ["--mount", "sh", "-c",
                            "mount --bind \"$1\" \(bundle) && exec \"$2\" leader --allow-local-streams --listen 127.0.0.1:$3 --control off --mpd off --no-announce --codec pcm --loop --play \"$4\"",
                            "sh", dir + "/bundle.crt", tuttid, String(listen), server.url("/tone.mp3")]
        leader.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try leader.run()
        // SIGKILL: the leader may have inherited a blocked SIGTERM from the test thread that started it.
        defer { if leader.isRunning { kill(leader.processIdentifier, SIGKILL); leader.waitUntilExit() } }
        let follower = try startFollower(leader: Endpoint(host: "127.0.0.1", port: UInt16(listen)), name: "r",
                                         output: .file(path: dir + "/r.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        // A 2 s 0.4 sine, looped: about 41,000 frames a second above the threshold.
        func loudFrames() -> Int { let x = readRaw(dir + "/r.raw"); return stride(from: 0, to: x.count, by: 2).filter { abs(Int(x[$0])) > 3_000 }.count }
        let played = waitUntil(timeout: 20) { loudFrames() > 70_000 }
        #expect(played, "the https stream played \(loudFrames()) loud frames; leader running: \(leader.isRunning)")
    }
}
