import Foundation
import Testing
import TuttiCore
import TuttiDaemon
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// The web app in a real browser: headless Chromium driven by Selenium
/// (Tests/Web/webapp_test.py) against a real leader with a library and two
/// speakers on file DACs, with mpc making changes the page must show.
/// TUTTI_SCREENSHOTS=DIR keeps phone-size screenshots of the main screens.
@Suite(.serialized) struct WebAppTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Tagged 10-minute MP3s (8 kHz mono: lame takes well under a second each), two albums with cover art.
    static func makeMusic(_ music: String, dir: String) throws {
        let source = dir + "/source.wav"
        writeFile(source, wavImage((0..<8_000 * 600).map { Int16(($0 % 40) * 100 - 2_000) }, rate: 8_000, channels: 1))
        // A small PNG cover, written by Python's zlib (any valid image does).
        let cover = dir + "/cover.png"
        let png = try runProgram("/usr/bin/python3", ["-c", """
            import struct, zlib, sys
            w = h = 64
            raw = b"".join(b"\\x00" + b"".join(bytes((x * 4, y * 4, 160)) for x in range(w)) for y in range(h))
            def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
            open(sys.argv[1], "wb").write(b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
            """, cover])
        #expect(png.status == 0, "\(png.err)")
        let songs = [("Morning Light", "Aurora Lane", "Dawn", "1", "Aurora Lane/Dawn/01.mp3"),
                     ("Evening Tide", "Aurora Lane", "Dawn", "2", "Aurora Lane/Dawn/02.mp3"),
                     ("Northern Sky", "Aurora Lane", "Dusk", "1", "Aurora Lane/Dusk/01.mp3"),
                     ("Kitchen Blues", "Beta Crew", "Bee Sides", "1", "Beta Crew/01.mp3"),
                     ("Hallway Waltz", "Beta Crew", "Bee Sides", "2", "Beta Crew/02.mp3")]
        for (title, artist, album, track, path) in songs {
            try FileManager.default.createDirectory(atPath: music + "/" + (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var args = ["--quiet", "-b", "16", "--tt", title, "--ta", artist, "--tl", album, "--tn", track, "--ty", "2021"]
            if album != "Bee Sides" { args += ["--ti", cover] }
            let r = try runProgram("/usr/bin/lame", args + [source, music + "/" + path])
            #expect(r.status == 0, "lame: \(r.err)")
        }
    }

    @Test func thePageDrivesTheLeaderAndShowsEveryChange() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/mpc", "/usr/bin/lame"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try Self.makeMusic(music, dir: dir)
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: Self.repository + "/web")
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        #expect(waitUntil(timeout: 20) { (try? leader.library?.trackCount()) == 5 }, "library scan")
        let kitchen = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dir + "/kitchen.raw", ppm: 0, delayMilliseconds: 0))
        let living = try startFollower(leader: leader.endpoint, name: "living", output: .file(path: dir + "/living.raw", ppm: 0, delayMilliseconds: 0))
        defer { kitchen.stop(); living.stop() }
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["kitchen", "living"] }, "rooms joined")
        let web = try #require(leader.webEndpoint), control = try #require(leader.controlEndpoint), mpd = try #require(leader.mpdEndpoint)
        var args = [Self.repository + "/Tests/Web/webapp_test.py", "--url", "http://127.0.0.1:\(web.port)",
                    "--control-port", String(control.port), "--mpd-port", String(mpd.port), "--room", "kitchen", "--query", "aurora"]
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"] { args += ["--screenshots", shots] }
        let r = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 240)
        print(r.out)
        #expect(r.status == 0, "the browser test failed:\n\(r.out)")
        #expect(r.out.contains("ok"), "\(r.out)")
    }

    @Test func theWebAppAsksForThePasswordOnceAndKeepsTheToken() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), "chromedriver is missing: run scripts/setup.sh")
        let password = "living-room-7"
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/t.wav", wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 60, amplitude: 0.2))))
        let leader = try startLeader(files: [dir + "/t.wav"]) { c in
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: Self.repository + "/web")
            c.password = password
            c.passwordOnLoopback = true // the browser runs here: make it a stranger
        }
        defer { leader.stop() }
        let web = try #require(leader.webEndpoint)
        let r = try runProgram("/usr/bin/python3", [Self.repository + "/Tests/Web/login_test.py", "--url", "http://127.0.0.1:\(web.port)",
                                                    "--password", password], mergeErrors: true, timeout: 120)
        print(r.out)
        #expect(r.status == 0 && r.out.contains("all checks passed"), "the login test failed:\n\(r.out)")
    }
}
