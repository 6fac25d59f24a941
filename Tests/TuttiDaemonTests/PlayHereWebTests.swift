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

/// "Play here" in a real browser (Tests/Web/playhere_test.py): headless
/// Chromium on a private PulseAudio null sink becomes a room, and its clicks,
/// recorded with parec, are measured against a speaker's file DAC; then the
/// Media Session's title and its next button. Once with Opus decoded by
/// WebCodecs, once with PCM (AudioDecoder deleted before the app loads).
@Suite(.serialized) struct PlayHereWebTests {
    static let repository = WebAppTests.repository

    /// An album "Clicks" of two 60 s MP3s (48 kHz stereo), a 2 ms click every 250 ms.
    static func makeClicks(_ music: String, dir: String) throws {
        var samples = [Int16](repeating: 0, count: 48_000 * 60 * 2)
        for start in stride(from: 0, to: 48_000 * 60, by: 12_000) {
            for i in 0..<96 {
                let v: Int16 = (i / 12) % 2 == 0 ? 24_000 : -24_000 // a 2 kHz square burst: a sharp onset that survives coding
                samples[2 * (start + i)] = v
                samples[2 * (start + i) + 1] = v
            }
        }
        let source = dir + "/clicks.wav"
        writeFile(source, wavImage(samples, rate: 48_000, channels: 2))
        try FileManager.default.createDirectory(atPath: music + "/Clicks", withIntermediateDirectories: true)
        for (n, title) in ["Click One", "Click Two"].enumerated() {
            let r = try runProgram("/usr/bin/lame", ["--quiet", "-b", "192", "--tt", title, "--ta", "Metronome", "--tl", "Clicks",
                                                     "--tn", String(n + 1), source, music + "/Clicks/0\(n + 1).mp3"])
            #expect(r.status == 0, "lame: \(r.err)")
        }
    }

    /// On http://127.0.0.1 (a secure origin) the page has WebCodecs and asks for Opus.
    @Test func aBrowserPlaysHereInStepWithASpeakerAndItsLockScreenSendsNext() throws {
        try playsInStep(["--codec", "opus"], screenshot: "play-here.png")
    }

    /// Without AudioDecoder (as on plain http on the LAN, where browsers have no WebCodecs) the page asks for PCM and plays in step all the same.
    @Test func aBrowserWithoutWebCodecsFallsBackToPCMAndPlaysInStep() throws {
        try playsInStep(["--codec", "pcm", "--no-webcodecs"], screenshot: nil)
    }

    func playsInStep(_ codec: [String], screenshot: String?) throws {
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/lame", "/usr/bin/pulseaudio", "/usr/bin/parec"] {
            try #require(FileManager.default.isExecutableFile(atPath: tool), "\(tool) is missing: run scripts/setup.sh")
        }
        let dir = makeTemporaryDirectory()
        let music = dir + "/music"
        try Self.makeClicks(music, dir: dir)
        let leader = try startLeader(files: [], codec: .opus) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: Self.repository + "/web")
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
        }
        defer { leader.stop() }
        #expect(waitUntil(timeout: 20) { (try? leader.library?.trackCount()) == 2 }, "library scan")
        let dac = dir + "/kitchen.raw"
        let kitchen = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dac, ppm: 0, delayMilliseconds: 0))
        defer { kitchen.stop() }
        #expect(waitUntil(timeout: 10) { leader.followerNames == ["kitchen"] }, "the speaker joined")
        let web = try #require(leader.webEndpoint), control = try #require(leader.controlEndpoint)
        var args = [Self.repository + "/Tests/Web/playhere_test.py", "--url", "http://127.0.0.1:\(web.port)",
                    "--control-port", String(control.port), "--dac", dac, "--seconds", "15", "--bound-ms", "20", "--realtime",
                    // Bounds only a fault breaks, beside other suites on two cores; bench/web/playhere.sh measures the targets.
                    "--timeout", "30", "--start-bound-ms", "5000"] + codec
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"], let screenshot { args += ["--screenshot", shots + "/" + screenshot] }
        let r = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 180)
        print(r.out)
        let failure = r.out.split(separator: "\n").first { $0.hasPrefix("FAIL") }.map(String.init) ?? ""
        #expect(r.status == 0, "the browser test failed: \(failure)\n\(r.out)")
        #expect(r.out.contains("ok sync"), "\(r.out)")
        #expect(r.out.contains("ok codec: the page asked for \(codec[1])"), "\(r.out)")
        #expect(waitUntil(timeout: 5) { leader.followerNames == ["kitchen"] }, "the browser's room left with the switch off")
    }
}
