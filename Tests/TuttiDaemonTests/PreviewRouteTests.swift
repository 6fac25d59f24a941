import Foundation
import Testing
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiLibrary
import TuttiNet
import TuttiTestSupport

/// `GET /preview/ID` on a real leader (issue 34): refused without a login,
/// 30 s from the middle of the track as Ogg Opus that FFmpeg decodes back to
/// the track's tone, a second request served from the cache without a second
/// encode, the whole of a short track, clear errors for a bad or unknown id,
/// and the 31st request of a minute refused with 429.
@Suite(.serialized) struct PreviewRouteTests {
    /// The answer's status line, headers and body bytes, by curl (the body is binary).
    func get(_ port: UInt16, _ path: String, headers: [(String, String)] = [], dir: String) throws -> (status: Int, headers: String, body: [UInt8]) {
        let head = dir + "/head.txt", body = dir + "/body.bin"
        try? FileManager.default.removeItem(atPath: body)
        var args = ["-s", "-D", head, "-o", body]
        for (n, v) in headers { args += ["-H", "\(n): \(v)"] }
        let r = try runProgram("/usr/bin/curl", args + ["http://127.0.0.1:\(port)\(path)"])
        #expect(r.status == 0, "curl: \(r.err)")
        let text = (try? String(contentsOfFile: head, encoding: .utf8)) ?? ""
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, text, (try? Array(Data(contentsOf: URL(fileURLWithPath: body)))) ?? [])
    }

    /// FFmpeg's decode of an Ogg Opus file: 48 kHz stereo S16.
    func decode(_ bytes: [UInt8], dir: String) throws -> [Int16] {
        writeFile(dir + "/p.ogg", bytes)
        let r = try runProgram("/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", dir + "/p.ogg", "-f", "s16le", "-ar", "48000", "-ac", "2", dir + "/p.raw"])
        #expect(r.status == 0, "ffmpeg could not decode the preview: \(r.err)")
        return readRaw(dir + "/p.raw")
    }

    /// What ffprobe (libavformat, the demuxer closest to a browser's) reads
    /// in an Ogg Opus file: the codec, the duration, and every warning or
    /// error on the way through all its packets.
    func probe(_ bytes: [UInt8], dir: String) throws -> (codec: String, seconds: Double, packets: Int, errors: String) {
        writeFile(dir + "/probe.ogg", bytes)
        let r = try runProgram("/usr/bin/ffprobe", ["-v", "warning", "-count_packets", "-show_entries", "stream=codec_name,nb_read_packets:format=duration",
                                                    "-of", "default=nw=1", dir + "/probe.ogg"])
        func field(_ name: String) -> String {
            r.out.split(separator: "\n").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) } ?? ""
        }
        return (field("codec_name"), Double(field("duration")) ?? -1, Int(field("nb_read_packets")) ?? -1,
                r.status == 0 ? r.err : "status \(r.status): \(r.err)")
    }

    /// The left channel's frequency from its rising zero crossings.
    func frequency(_ stereo: [Int16]) -> Double {
        var crossings: [Int] = []
        var i = 2
        while i < stereo.count { if stereo[i - 2] < 0 && stereo[i] >= 0 { crossings.append(i / 2) }; i += 2 }
        guard crossings.count > 2 else { return 0 }
        return Double(crossings.count - 1) * 48_000 / Double(crossings.last! - crossings.first!)
    }

    @Test func aPreviewIsThirtySecondsFromTheMiddleCachedAndLimited() throws {
        for tool in ["/usr/bin/lame", "/usr/bin/curl", "/usr/bin/ffmpeg"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        // Two minutes at 44.1 kHz: 500 Hz for the first and last 45 s, 1 kHz in the middle 30 s, so only the middle sounds at 1 kHz.
        let rate = 44_100
        var tone = [Int16](repeating: 0, count: rate * 120)
        for i in tone.indices {
            let f = (i >= rate * 45 && i < rate * 75) ? 1_000.0 : 500.0
            tone[i] = Int16(8_000 * sin(2 * Double.pi * f * Double(i) / Double(rate)))
        }
        writeFile(dir + "/tone.wav", wavImage(tone, rate: rate, channels: 1))
        let lame = try runProgram("/usr/bin/lame", ["--quiet", "-b", "128", "--tt", "Middle Tone", dir + "/tone.wav", music + "/tone.mp3"])
        #expect(lame.status == 0, "lame: \(lame.err)")
        // Ten seconds at 48 kHz: shorter than a preview, so all of it.
        writeFile(music + "/short.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 10, amplitude: 0.3))))
        let password = "kitchen-table-3"
        let leader = try startLeader(files: []) { c in
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: WebAppTests.repository + "/web")
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
            c.password = password
            c.passwordOnLoopback = true // this machine is a stranger here
        }
        defer { leader.stop() }
        let library = try #require(leader.library)
        #expect(waitUntil(timeout: 20) { (try? library.trackCount()) == 2 }, "library scan")
        let middle = try #require(try library.track(atPath: music + "/tone.mp3")).id.rawValue
        let short = try #require(try library.track(atPath: music + "/short.wav")).id.rawValue
        let port = try #require(leader.webEndpoint).port

        // Without a login: refused, and nothing encoded.
        let stranger = try get(port, "/preview/\(middle)", dir: dir)
        #expect(stranger.status == 401, "\(stranger.headers)")
        #expect(String(decoding: stranger.body, as: UTF8.self).contains("access.loginFirst"))
        let forged = try get(port, "/preview/\(middle)", headers: [("Authorization", "Bearer not-a-token")], dir: dir)
        #expect(forged.status == 401)
        #expect(leader.previewEncodes == 0)

        let login = httpRequest(port: port, "POST", "/api", headers: [("Content-Type", "application/json")],
                                body: #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"password":"\#(password)"}}"#)
        let token = try #require(JSONValue.parsing(httpBody(login))?["result"]?["token"]?.string, "\(login)")
        let auth = [("Authorization", "Bearer \(token)")]
        var requests = 0 // counted against the minute's 30

        let began = Date()
        let first = try get(port, "/preview/\(middle)", headers: auth, dir: dir)
        requests += 1
        let firstSeconds = Date().timeIntervalSince(began)
        #expect(first.status == 200, "\(first.headers)")
        #expect(first.headers.lowercased().contains("content-type: audio/ogg; codecs=opus"))
        #expect(first.headers.contains("Tutti-Preview-Cache: miss"))
        // libavformat reads it through without a warning: Opus, 30 s (its duration counts the 6.5 ms pre-skip), 20 ms packets.
        let probed = try probe(first.body, dir: dir)
        #expect(probed.codec == "opus" && probed.errors.isEmpty, "ffprobe: \(probed)")
        #expect(abs(probed.seconds - 30) < 0.03, "ffprobe: the preview lasts \(probed.seconds) s")
        #expect(abs(probed.packets - 1_500) <= 1, "ffprobe: \(probed.packets) packets of 20 ms")
        let pcm = try decode(first.body, dir: dir)
        let seconds = Double(pcm.count / 2) / 48_000
        #expect(abs(seconds - 30) < 0.03, "the preview lasts \(seconds) s")
        // 1 kHz throughout except the MP3's smearing at the edges: the middle 30 s, not the start.
        let inner = Array(pcm[(48_000 * 2)..<(48_000 * 28 * 2)])
        let f = frequency(inner)
        #expect(abs(f - 1_000) < 2, "the preview plays \(f) Hz")
        print("preview: \(first.body.count) bytes for \(seconds) s (ffprobe: \(probed.codec), \(probed.seconds) s, \(probed.packets) packets), encoded in \(headerValue(first.headers, "Tutti-Preview-Encode-Ms") ?? "?") ms, answered in \(Int(firstSeconds * 1000)) ms")
        #expect(leader.previewEncodes == 1)

        // Again: from the cache, the same bytes, no second encode.
        let again = try get(port, "/preview/\(middle)", headers: auth, dir: dir)
        requests += 1
        #expect(again.status == 200 && again.headers.contains("Tutti-Preview-Cache: hit"), "\(again.headers)")
        #expect(again.body == first.body)
        #expect(leader.previewEncodes == 1, "a cache hit decodes nothing")

        // A track shorter than 30 s: the whole of it.
        let whole = try get(port, "/preview/\(short)", headers: auth, dir: dir)
        requests += 1
        #expect(whole.status == 200)
        let wholePCM = try decode(whole.body, dir: dir)
        #expect(abs(Double(wholePCM.count / 2) / 48_000 - 10) < 0.03, "\(wholePCM.count / 2) frames")
        #expect(abs(frequency(Array(wholePCM[48_000..<(48_000 * 18)])) - 440) < 1)
        #expect(leader.previewEncodes == 2)

        // Clear errors, never a crash.
        let bad = try get(port, "/preview/12abc", headers: auth, dir: dir)
        requests += 1
        #expect(bad.status == 400 && String(decoding: bad.body, as: UTF8.self).contains("preview.badTrack"), "\(bad.headers)")
        let unknown = try get(port, "/preview/987654", headers: auth + [("Accept-Language", "ko")], dir: dir)
        requests += 1
        #expect(unknown.status == 404 && String(decoding: unknown.body, as: UTF8.self).contains("라이브러리에 트랙 987654"), "\(unknown.headers)")
        let huge = try get(port, "/preview/99999999999999999999999", headers: auth, dir: dir)
        requests += 1
        #expect(huge.status == 400)
        // A page of another site is refused before anything else.
        let crossSite = try get(port, "/preview/\(middle)", headers: auth + [("Origin", "http://evil.example")], dir: dir)
        #expect(crossSite.status == 403)
        let post = httpRequest(port: port, "POST", "/preview/\(middle)", headers: auth)
        #expect(post.hasPrefix("HTTP/1.1 405"), "\(post.prefix(100))")

        // The rest of the minute's 30, then the 31st is refused with when to come back.
        while requests < 30 {
            let r = try get(port, "/preview/\(middle)", headers: auth, dir: dir)
            #expect(r.status == 200, "request \(requests + 1): \(r.headers)")
            requests += 1
        }
        let over = try get(port, "/preview/\(middle)", headers: auth, dir: dir)
        #expect(over.status == 429, "request 31: \(over.headers)")
        let retry = Int(headerValue(over.headers, "Retry-After") ?? "") ?? 0
        #expect(retry >= 1 && retry <= 60, "Retry-After: \(retry)")
        #expect(leader.previewEncodes == 2, "every later one came from the cache")
    }
}

extension PreviewRouteTests {
    /// One address floods the route (127.0.0.2, the attacker, as in
    /// AddressShareTests; curl with six requests at once, one per track)
    /// while another (127.0.0.1) asks for one preview: the flood holds at
    /// most its share of two waiting previews and is told 429 beyond it;
    /// the other address gets its preview, and its page and JSON-RPC are
    /// answered meanwhile. Before the share, one address held one preview
    /// being made and four waiting (5 of the server's 8 lanes), and the
    /// other's preview was refused with 503.
    @Test func anAddressThatFloodsHoldsItsShareAndAnotherAddressIsServed() throws {
        for tool in ["/usr/bin/curl", "/usr/bin/ffmpeg"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        // Twelve 20 s tracks for the flood (each preview a whole track, a real encode), and B's at 1 kHz.
        func tone(_ f: Double) -> [UInt8] {
            wavImage((0..<(48_000 * 20)).map { Int16(8_000 * sin(2 * Double.pi * f * Double($0) / 48_000)) }, channels: 1)
        }
        for i in 0..<12 { writeFile(music + "/flood-\(i).wav", tone(300 + 50 * Double(i))) }
        writeFile(music + "/mine.wav", tone(1_000))
        let leader = try startLeader(files: []) { c in
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: WebAppTests.repository + "/web")
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        let library = try #require(leader.library)
        #expect(waitUntil(timeout: 30) { (try? library.trackCount()) == 13 }, "library scan")
        let flood = try (0..<12).map { try #require(try library.track(atPath: music + "/flood-\($0).wav")).id.rawValue }
        let mine = try #require(try library.track(atPath: music + "/mine.wav")).id.rawValue
        let port = try #require(leader.webEndpoint).port
        let attacker = try #require(SourceAddress.parse("127.0.0.2"))

        // A: every flood track at once, six at a time (its share of the server's connections), from 127.0.0.2.
        let log = dir + "/flood.log"
        let urls = "http://127.0.0.1:\(port)/preview/{\(flood.map(String.init).joined(separator: ","))}"
        // stdbuf: curl's answers reach the log as they come, not when it ends.
        let curl = try BackgroundProgram("/usr/bin/stdbuf", ["-oL", "/usr/bin/curl", "-s", "--no-progress-meter", "-Z", "--parallel-max", "6", "--interface", "127.0.0.2",
                                                          "-o", dir + "/a-#1.body", "-w", "%{http_code} %header{retry-after} %{url}\\n", urls], log: log)
        defer { curl.stop() }
        // One line per answer (curl's parallel progress meter may share the log: its lines are left out).
        func floodLines() -> [Substring] {
            ((try? String(contentsOfFile: log, encoding: .utf8))?.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) ?? [])
                .filter { $0.count > 4 && $0.prefix(3).allSatisfy(\.isNumber) && $0.dropFirst(3).first == " " }
        }
        // Once A has been refused, it holds all it may.
        #expect(waitUntil(timeout: 30) { floodLines().contains { !$0.hasPrefix("200 ") } }, "A refused once: \(floodLines())")
        let held = leader.previewsWaiting(from: attacker)
        #expect(held.address >= 1, "A's previews wait: \(held)")

        // B asks for its preview at once, beside A's (curl in the background: it waits for its encode).
        let me = try #require(SourceAddress.parse("127.0.0.1"))
        let mineLog = dir + "/mine.log", mineBody = dir + "/mine.ogg"
        let mineCurl = try BackgroundProgram("/usr/bin/curl", ["-s", "-o", mineBody, "-w", "%{http_code} %{time_total}\\n",
                                                              "http://127.0.0.1:\(port)/preview/\(mine)"], log: mineLog)
        defer { mineCurl.stop() }
        func mineLine() -> [Substring] {
            ((try? String(contentsOfFile: mineLog, encoding: .utf8)) ?? "").split(separator: "\n").first?.split(separator: " ") ?? []
        }
        // B's place is taken while A holds its share, or B is already answered (then it was not refused: checked below).
        #expect(waitUntil(timeout: 30) { leader.previewsWaiting(from: me).address == 1 || !mineLine().isEmpty }, "B's preview admitted")
        let heldWhenBWaits = leader.previewsWaiting(from: attacker).address

        // Meanwhile the page and a JSON-RPC call are answered: previews hold at most 4 of the server's 8 lanes.
        let pageStarted = Date()
        let page = httpRequest(port: port, "GET", "/")
        let pageMs = Int(Date().timeIntervalSince(pageStarted) * 1_000)
        let rpc = httpRequest(port: port, "POST", "/api", headers: [("Content-Type", "application/json")],
                              body: #"{"jsonrpc":"2.0","id":1,"method":"player.status"}"#)
        let rpcMs = Int(Date().timeIntervalSince(pageStarted) * 1_000) - pageMs
        let stillWaiting = leader.previewsWaiting(from: attacker)
        #expect(stillWaiting.total >= 1, "the page and player.status were answered while \(stillWaiting.total) previews waited")
        #expect(page.hasPrefix("HTTP/1.1 200"), "GET / during the flood, A holding \(held.address) of \(held.total) waiting: \(page.prefix(120))")
        #expect(rpc.hasPrefix("HTTP/1.1 200") && JSONValue.parsing(httpBody(rpc))?["result"] != nil, "player.status during the flood: \(rpc.prefix(300))")

        // B's preview: made, though A has been refused beyond its share.
        #expect(waitUntil(timeout: 60) { mineLine().count == 2 }, "B's curl answered: \(mineLine())")
        let status = Int(mineLine().first ?? "") ?? 0
        let answerMs = Int((Double(mineLine().last ?? "") ?? -1) * 1_000)
        let body = (try? Array(Data(contentsOf: URL(fileURLWithPath: mineBody)))) ?? []
        #expect(status == 200, "B's preview during A's flood, A holding \(held.address) of \(held.total) waiting: \(String(decoding: body.prefix(300), as: UTF8.self))")
        #expect(Array(body.prefix(4)) == Array("OggS".utf8), "an Ogg file: \(body.prefix(4))")
        let probe = try self.probe(body, dir: dir)
        #expect(probe.codec == "opus" && probe.errors.isEmpty, "ffprobe: \(probe)")
        #expect(abs(probe.seconds - 20) < 0.03, "ffprobe: B's preview lasts \(probe.seconds) s, 20 expected")
        let pcm = try decode(body, dir: dir)
        let seconds = Double(pcm.count / 2) / 48_000
        #expect(abs(seconds - 20) < 0.03, "B's preview lasts \(seconds) s, 20 expected")
        #expect(abs(frequency(Array(pcm[48_000 * 2..<48_000 * 18 * 2])) - 1_000) < 2, "B's preview plays its track")

        // A: its share answered, every other request refused at once with when to come back.
        #expect(waitUntil(timeout: 120) { floodLines().count == 12 }, "A's curl answered all 12: \(floodLines())")
        let lines = floodLines()
        let ok = lines.filter { $0.hasPrefix("200 ") }.count
        let refused = lines.filter { $0.hasPrefix("429 ") }
        var busyBodies = 0
        for i in 1...12 {
            let body = (try? String(contentsOfFile: dir + "/a-\(flood[i - 1]).body", encoding: .utf8)) ?? ""
            if body.contains("preview.addressBusy") && body.contains("127.0.0.2") { busyBodies += 1 }
        }
        #expect(ok >= 2 && ok + refused.count == 12, "A: \(ok) previews, \(refused.count) refused, of 12: \(lines)")
        #expect(refused.count >= 1 && refused.allSatisfy { $0.split(separator: " ").dropFirst().first == "2" }, "A's 429s say Retry-After: 2: \(refused)")
        #expect(busyBodies == refused.count, "each refusal says preview.addressBusy for 127.0.0.2: \(busyBodies) of \(refused.count)")
        #expect(leader.previewsMostWaitingFromOneAddress == 2, "one address held \(leader.previewsMostWaitingFromOneAddress) waiting previews at most; its share is 2")
        #expect(waitUntil(timeout: 10) { leader.previewsWaiting(from: attacker) == (0, 0) }, "every place given back: \(leader.previewsWaiting(from: attacker))")
        print("flood: A got \(ok) previews and \(refused.count) × 429 of 12, held at most \(leader.previewsMostWaitingFromOneAddress) waiting (\(held.address) of \(held.total) when B asked); "
              + "B's page \(pageMs) ms and player.status \(rpcMs) ms with \(stillWaiting.total) previews waiting (\(stillWaiting.address) of A's); "
              + "B's preview \(answerMs) ms (\(body.count) bytes, \(seconds) s, A holding \(heldWhenBWaits) when B's was admitted); encodes \(leader.previewEncodes)")
    }
}

/// Previews in a real browser (Tests/Web/preview_test.py): headless Chromium
/// on a private PulseAudio null sink presses a search result's preview; the
/// page's AnalyserNode and the sink's recording hear the track's middle at
/// 1 kHz; a second preview stops the first, the same button again or another
/// screen stops it; the queue, the player and the history are unchanged.
@Suite(.serialized) struct PreviewWebTests {
    @Test func aSearchResultsPreviewPlaysOnThePhoneOnly() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/lame", "/usr/bin/pulseaudio", "/usr/bin/parec"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        // 90 s at 44.1 kHz: 500 Hz, then 1 kHz for the middle 30 s, then 500 Hz; and a 500 Hz track throughout.
        let rate = 44_100
        func tone(_ f: (Int) -> Double) -> [Int16] {
            var phase = 0.0
            return (0..<(rate * 90)).map { i in
                phase += 2 * Double.pi * f(i) / Double(rate)
                return Int16(10_000 * sin(phase))
            }
        }
        writeFile(dir + "/middle.wav", wavImage(tone { $0 >= rate * 30 && $0 < rate * 60 ? 1_000 : 500 }, rate: rate, channels: 1))
        writeFile(dir + "/low.wav", wavImage(tone { _ in 500 }, rate: rate, channels: 1))
        for (source, title, file) in [("middle.wav", "Middle Tone", "01.mp3"), ("low.wav", "Low Tone", "02.mp3")] {
            let r = try runProgram("/usr/bin/lame", ["--quiet", "-b", "128", "--tt", title, "--ta", "Test Tones", "--tl", "Tones", dir + "/" + source, music + "/" + file])
            #expect(r.status == 0, "lame: \(r.err)")
        }
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: WebAppTests.repository + "/web")
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        #expect(waitUntil(timeout: 20) { (try? leader.library?.trackCount()) == 2 }, "library scan")
        let web = try #require(leader.webEndpoint), control = try #require(leader.controlEndpoint)
        var args = [WebAppTests.repository + "/Tests/Web/preview_test.py", "--url", "http://127.0.0.1:\(web.port)",
                    "--control-port", String(control.port), "--timeout", "30"]
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"] { args += ["--screenshot", shots + "/preview.png"] }
        let r = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 240)
        print(r.out)
        let failure = r.out.split(separator: "\n").first { $0.hasPrefix("FAIL") }.map(String.init) ?? ""
        #expect(r.status == 0 && r.out.contains("all checks passed"), "the preview browser test failed: \(failure)\n\(r.out)")
        #expect(leader.previewEncodes == 2, "two previews encoded, the third press served from the cache")
    }
}
