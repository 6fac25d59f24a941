import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiDecode
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// The FFmpeg formats through the whole leader → speaker path to a file
/// DAC: each file at its frequency and length, AAC and Opus halves of one
/// sine joined without a click or a gap, and an AAC station and an HLS live
/// stream heard in every room.
@Suite(.serialized) struct FFmpegPlaybackTests {
    /// The sounding stretch of a raw capture (first to last frame above the threshold).
    static func sounding(_ samples: [Int16], threshold: Int16 = 300) -> ArraySlice<Int16> {
        let frames = samples.count / 2
        guard let first = (0..<frames).first(where: { abs(Int(samples[2 * $0])) >= Int(threshold) }),
              let last = (0..<frames).last(where: { abs(Int(samples[2 * $0])) >= Int(threshold) }) else { return [] }
        return samples[(2 * first)..<(2 * last + 2)]
    }

    /// Frequency from the median period between the left channel's rising
    /// crossings (below -1,000, then above +1,000), at 48 kHz: quiet stretches
    /// and the phase restarting at a file's start do not move it.
    static func hertz(_ s: ArraySlice<Int16>) -> Double {
        var rises: [Int] = [], low = false
        for i in stride(from: s.startIndex, to: s.endIndex, by: 2) {
            if s[i] < -1_000 { low = true } else if s[i] > 1_000, low { rises.append(i / 2); low = false }
        }
        guard rises.count > 2 else { return 0 }
        let periods = zip(rises.dropFirst(), rises).map { $0 - $1 }.sorted()
        // The mean of the middle half of the periods: whole samples, so a single median would round.
        let middle = periods[(periods.count / 4)..<(3 * periods.count / 4)]
        return 48_000 / (Double(middle.reduce(0, +)) / Double(middle.count))
    }

    /// The longest run of frames whose left sample stays within ±`level` (a gap in a tone).
    static func longestQuiet(_ s: ArraySlice<Int16>, level: Int = 150) -> Int {
        var best = 0, run = 0
        for i in stride(from: s.startIndex, to: s.endIndex, by: 2) {
            run = abs(Int(s[i])) <= level ? run + 1 : 0
            best = max(best, run)
        }
        return best
    }

    @Test func everyFormatPlaysAtItsFrequencyAndLength() throws {
        let dir = makeTemporaryDirectory()
        let corpus = try FFmpegCorpus(dir: dir + "/music", seconds: 0.5)
        let files = FFmpegCorpus.entries.map { corpus.dir + "/" + $0.file }
        // Each file's own length, as its decoder plays it.
        var expected = 0.0
        for f in files {
            let d = try AudioFile.open(f)
            var out: [Float] = []
            while try d.read(into: &out, maxFrames: 8_192) > 0 {}
            expected += Double(out.count / 2) / Double(d.sampleRate)
        }
        let (leader, follower) = try startPlayback(files: files, follower: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        waitForPlayout(leader)
        follower.stop()
        leader.stop()
        let heard = Self.sounding(readRaw(dir + "/a.raw"))
        let seconds = Double(heard.count / 2) / 48_000, hz = Self.hertz(heard), gap = Self.longestQuiet(heard)
        print("\(files.count) formats: \(seconds) s heard for \(expected) s decoded, \(hz) Hz, longest quiet \(gap) frames")
        // Raw AAC's priming is silence at a file's start: the tone is heard from just after it.
        #expect(abs(seconds - expected) < 0.06)
        #expect(abs(hz - 440) < 3)
        #expect(gap < 2_400, "a gap of \(gap) frames: a file did not play")
    }

    @Test func aacAndOpusHalvesOfOneSineJoinWithoutAClickOrAGap() throws {
        let dir = makeTemporaryDirectory()
        // 441 Hz for 1 s at 48 kHz: whole cycles, so each pair starts where the last ended.
        let sine = TestSignal.sine(frequency: 441, seconds: 1, amplitude: 0.5, rate: 48_000)
        let cut = 24_000 + 123
        writeFile(dir + "/a.wav", TestSignal.wav16(Array(sine[0..<(2 * cut)]), rate: 48_000))
        writeFile(dir + "/b.wav", TestSignal.wav16(Array(sine[(2 * cut)...]), rate: 48_000))
        var files: [String] = []
        for (ext, args) in [("m4a", ["-c:a", "aac", "-b:a", "256k", "-movie_timescale", "48000"]), ("opus", ["-c:a", "libopus", "-b:a", "256k"])] {
            for half in ["a", "b"] {
                try runTool(["ffmpeg", "-v", "error", "-y", "-i", "\(dir)/\(half).wav"] + args + ["\(dir)/\(half).\(ext)"])
                files.append("\(dir)/\(half).\(ext)")
            }
        }
        let (leader, follower) = try startPlayback(files: files, follower: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        waitForPlayout(leader)
        follower.stop()
        leader.stop()
        let heard = Self.sounding(readRaw(dir + "/a.raw"))
        // The ideal continuous sine (amplitude and phase fitted over the whole capture) against what was
        // heard, 10 ms either side of each join: a gap or an overlap of even a few frames leaves a large
        // error there (10 frames off at 441 Hz: about 10 dB), a lossy encoder's edge a small one.
        let left = stride(from: heard.startIndex, to: heard.endIndex, by: 2).map { Double(heard[$0]) }
        var ss = 0.0, sc = 0.0, cc = 0.0, ys = 0.0, yc = 0.0
        for (i, y) in left.enumerated() {
            let a = 2 * Double.pi * 441 * Double(i) / 48_000
            let (sn, cs) = (sin(a), cos(a))
            ss += sn * sn; sc += sn * cs; cc += cs * cs; ys += y * sn; yc += y * cs
        }
        let det = ss * cc - sc * sc
        let (p, q) = ((ys * cc - yc * sc) / det, (yc * ss - ys * sc) / det)
        func ideal(_ i: Int) -> Double { let a = 2 * Double.pi * 441 * Double(i) / 48_000; return p * sin(a) + q * cos(a) }
        let seconds = Double(left.count) / 48_000
        var worst = Double.infinity
        for join in [cut, 48_000, 48_000 + cut] {
            var signal = 0.0, error = 0.0
            for i in max(0, join - 480)..<min(left.count, join + 480) {
                signal += ideal(i) * ideal(i)
                error += (left[i] - ideal(i)) * (left[i] - ideal(i))
            }
            let snr = 10 * log10(signal / max(error, 1e-9))
            print("join at frame \(join): \(snr) dB against the ideal sine")
            worst = min(worst, snr)
        }
        print("AAC + AAC + Opus + Opus: \(seconds) s for 2 s, worst join \(worst) dB, longest quiet \(Self.longestQuiet(heard)) frames")
        #expect(abs(seconds - 2) < 0.005, "length \(seconds) s")
        #expect(worst > 20, "a join \(worst) dB from the ideal sine")
        #expect(Self.longestQuiet(heard) < 10)
    }

    @Test func anAACStationAndAnHLSLiveStreamPlayInEveryRoom() throws {
        let dir = makeTemporaryDirectory()
        try runTool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=44100:duration=1.5", "-ac", "2",
                     "-c:a", "aac", "-b:a", "128k", dir + "/station.aac"])
        try runTool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=44100:duration=2", "-ac", "2",
                     "-c:a", "aac", "-b:a", "96k", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_playlist_type", "vod",
                     dir + "/index.m3u8"])
        try hlsTestServerScript.write(toFile: dir + "/server.py", atomically: true, encoding: .utf8)
        let server = try BackgroundServer(script: dir + "/server.py", arguments: [dir])
        defer { server.stop() }
        let leader = try startLeader(files: []) { c in
            c.network.destinations = StreamDestinationPolicy(allowsLocal: true) // the test server is on 127.0.0.1
        }
        defer { leader.stop() }
        let rooms = try ["kitchen", "study"].map { name in
            try startFollower(leader: leader.endpoint, name: name, output: .file(path: "\(dir)/\(name).raw", ppm: 0, delayMilliseconds: 0), steering: false)
        }
        #expect(waitUntilInStep(leader, rooms, timeout: 20))
        _ = try leader.perform(.add(uris: ["http://127.0.0.1:\(server.port)/station.aac", "http://127.0.0.1:\(server.port)/live.m3u8"], next: false))
        _ = try leader.perform(.play)
        waitForPlayout(leader, timeout: 30)
        for room in rooms { room.stop() }
        for name in ["kitchen", "study"] {
            let heard = Self.sounding(readRaw("\(dir)/\(name).raw"))
            let seconds = Double(heard.count / 2) / 48_000, hz = Self.hertz(heard)
            print("\(name): \(seconds) s of \(hz) Hz for 1.5 s (AAC station) + 2 s (HLS live)")
            #expect(abs(seconds - 3.5) < 0.25, "\(name): \(seconds) s")
            #expect(abs(hz - 1_000) < 5, "\(name): \(hz) Hz")
        }
    }
}

/// A Python server script run in the background: prints its port, exits when stdin closes.
final class BackgroundServer {
    let process = Process()
    let stdin = Pipe()
    let port: Int

    init(script: String, arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", script] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = stdin
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let more = out.fileHandleForReading.availableData
            if more.isEmpty { throw CommandFailed(description: "the test server did not start") }
            line.append(more)
        }
        port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))!
    }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
