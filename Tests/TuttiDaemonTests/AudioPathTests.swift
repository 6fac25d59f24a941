import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// Leader → follower → virtual DAC, end to end on loopback, real codecs.
@Suite(.serialized) struct AudioPathTests {
    @Test func pcmAt48kHzIsBitExact() throws {
        let dir = makeTemporaryDirectory()
        let input = quantize(TestSignal.music(seconds: 3))
        writeFile(dir + "/music.wav", wavImage(input))
        // Steering off: a DAC exactly at 48 kHz needs none, and any
        // resampling would (correctly) change the bits.
        let (leader, follower) = try startPlayback(files: [dir + "/music.wav"], follower: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        waitForPlayout(leader)
        follower.stop()
        leader.stop()

        let output = readRaw(dir + "/a.raw")
        let inStart = try #require(firstSoundingFrame(input))
        let outStart = try #require(firstSoundingFrame(output))
        let frames = input.count / 2 - inStart
        #expect(output.count / 2 - outStart >= frames, "output holds every input frame")
        var mismatches = 0
        for i in 0..<(2 * frames) where 2 * outStart + i < output.count {
            if output[2 * outStart + i] != input[2 * inStart + i] { mismatches += 1 }
        }
        #expect(mismatches == 0, "\(mismatches) of \(2 * frames) samples differ")
        #expect(follower.engine.statistics.starvedFrames < 48_000, "starved frames only after the end")
    }

    @Test func wavAt44100HzComesOutAt48kHz() throws {
        let dir = makeTemporaryDirectory()
        // The same continuous signal sampled at both rates: the ideal output.
        let source = TestSignal.music(seconds: 3, rate: 44_100, percussion: false)
        let reference = TestSignal.music(seconds: 3, rate: 48_000, percussion: false)
        writeFile(dir + "/music44.wav", wavImage(quantize(source), rate: 44_100))
        let (leader, follower) = try startPlayback(files: [dir + "/music44.wav"], follower: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        waitForPlayout(leader)
        follower.stop()
        leader.stop()

        let output = readRaw(dir + "/a.raw").map { Float($0) / 32768 }
        let outStart = try #require(firstSoundingFrame(readRaw(dir + "/a.raw")))
        let expectedFrames = 3 * 48_000
        #expect(abs(output.count / 2 - outStart - expectedFrames) < 48_000, "about 3 s of 48 kHz audio")
        // Align: find the reference offset that best matches, then correlate 2 s.
        let window = 2 * 48_000 * 2
        let best = SignalMetrics.bestLag(reference, aStart: 2 * 4_800, output, candidates: (2 * outStart - 400)...(2 * outStart + 400), count: window)
        #expect(best.correlation >= 0.999, "correlation \(best.correlation)")
    }

    @Test(arguments: ["sine", "music"])
    func opusKeepsTheSignal(kind: String) throws {
        let dir = makeTemporaryDirectory("opus\(kind)")
        let signal = kind == "sine" ? TestSignal.sine(frequency: 1_000, seconds: 3) : TestSignal.music(seconds: 3)
        let input = quantize(signal)
        writeFile(dir + "/in.wav", wavImage(input))
        let (leader, follower) = try startPlayback(files: [dir + "/in.wav"], codec: .opus, follower: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        waitForPlayout(leader)
        follower.stop()
        leader.stop()

        let reference = input.map { Float($0) / 32768 }
        let raw = readRaw(dir + "/a.raw")
        let output = raw.map { Float($0) / 32768 }
        let outStart = try #require(firstSoundingFrame(raw))
        // Compare 2 s from 0.5 s in, searching a few ms of lag (codec delay is compensated in the PTS).
        let count = 2 * 48_000 * 2
        let aStart = 2 * 24_000
        let best = SignalMetrics.bestLag(reference, aStart: aStart, output, candidates: (2 * outStart - 2 * 600)...(2 * outStart + 2 * 600), count: count)
        let snr = SignalMetrics.snr(reference, aStart, output, aStart + best.lag, count: count)
        print("opus \(kind): SNR \(String(format: "%.1f", snr)) dB, lag \(best.lag / 2 - outStart) frames")
        #expect(best.lag % 2 == 0)
        #expect(snr >= 25, "SNR \(snr) dB")
    }

    @Test func consecutiveFilesJoinWithoutGapOrRepeat() throws {
        let dir = makeTemporaryDirectory()
        // Split a counter signal at a point that is not a chunk boundary,
        // 3 s in: a follower that connects late on a loaded machine starts at
        // the live position (by design), and must still hear the join.
        let joinFrame = 144_001
        let first = counterFrames(count: joinFrame)
        let second = counterFrames(count: 40_000, from: joinFrame)
        writeFile(dir + "/1.wav", wavImage(first))
        writeFile(dir + "/2.wav", wavImage(second))
        let (leader, follower) = try startPlayback(files: [dir + "/1.wav", dir + "/2.wav"], follower: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        waitForPlayout(leader)
        let statistics = follower.engine.statistics
        follower.stop()
        leader.stop()

        let output = readRaw(dir + "/a.raw")
        let start = try #require(firstSoundingFrame(output))
        let firstHeard = try #require(counterIndex(output[2 * start], output[2 * start + 1]))
        #expect(firstHeard < joinFrame - 48_000, "the follower came in at frame \(firstHeard), too late to hear the join")
        var expected = firstHeard, breaks = 0, repeats = 0
        var joinHeard = false
        var i = start
        while 2 * i + 1 < output.count, let index = counterIndex(output[2 * i], output[2 * i + 1]) {
            if index != expected { breaks += 1 }
            if index < expected { repeats += 1 }
            if index == joinFrame, expected == joinFrame { joinHeard = true }
            expected = index + 1
            i += 1
        }
        // The join itself must be seamless: the last frame of 1.wav followed by the first of 2.wav.
        #expect(joinHeard, "frame \(joinFrame) (the first of 2.wav) did not follow the last of 1.wav")
        #expect(repeats == 0, "\(repeats) frames went backwards")
        // Steering is off, so nothing skips once playing; a playout thread
        // starved of CPU underruns the DAC (counted) but loses no frame.
        #expect(breaks == 0, "\(breaks) discontinuities after frame \(firstHeard) (\(statistics.underruns) underruns)")
        #expect(expected == joinFrame + 40_000, "played up to frame \(expected) of \(joinFrame + 40_000)")
    }

    @Test func mp3PlaysThroughTheLeader() throws {
        let dir = makeTemporaryDirectory()
        let input = quantize(TestSignal.music(seconds: 2))
        writeFile(dir + "/in.wav", wavImage(input))
        try runLame(dir + "/in.wav", dir + "/in.mp3")
        let (leader, follower) = try startPlayback(files: [dir + "/in.mp3"], follower: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        waitForPlayout(leader)
        follower.stop()
        leader.stop()
        let raw = readRaw(dir + "/a.raw")
        let output = raw.map { Float($0) / 32768 }
        let reference = input.map { Float($0) / 32768 }
        let outStart = try #require(firstSoundingFrame(raw))
        let count = 2 * 48_000
        let best = SignalMetrics.bestLag(reference, aStart: 2 * 12_000, output, candidates: (2 * outStart - 2 * 200)...(2 * outStart + 2 * 1_200), count: count)
        #expect(best.correlation > 0.99, "correlation \(best.correlation)")
    }

    @Test func corruptFileIsSkippedAndPlaybackGoesOn() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/broken.mp3", (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7919 &+ 13) })
        writeFile(dir + "/broken.wav", Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVEjunk".utf8))
        writeFile(dir + "/good.wav", wavImage(counterFrames(count: 24_000)))
        // Half a second of silence first: the skips happen in a running stream, and
        // a room that starts late on a loaded machine (it joins at the live
        // position, by design) trims silence, not the file under test.
        writeFile(dir + "/lead-in.wav", wavImage([Int16](repeating: 0, count: 2 * 24_000)))
        let (leader, follower) = try startPlayback(files: [dir + "/lead-in.wav", dir + "/missing.wav", dir + "/broken.wav", dir + "/broken.mp3", dir + "/good.wav"],
                                                   follower: "a", output: .file(path: dir + "/a.raw", ppm: 0, delayMilliseconds: 0))
        // Whatever libmpg123 salvaged from noise, the good file plays in full and in order.
        func heard() -> Int {
            let output = readRaw(dir + "/a.raw")
            var seen = Set<Int>()
            var i = 0
            while 2 * i + 1 < output.count {
                if let index = counterIndex(output[2 * i], output[2 * i + 1]), index < 24_000 { seen.insert(index) }
                i += 1
            }
            return seen.count
        }
        waitForPlayout(leader)
        // The speaker's file DAC may still be writing its last periods on a loaded machine: wait for them, not a time.
        _ = waitUntil(timeout: 5) { heard() == 24_000 }
        follower.stop()
        leader.stop()
        let seen = heard()
        #expect(seen == 24_000, "good file frames heard: \(seen); \(missingRanges())")
        /// Which frames of the good file never played, as ranges, and where the file DAC's timing log says it paused.
        func missingRanges() -> String {
            let output = readRaw(dir + "/a.raw")
            var present = [Bool](repeating: false, count: 24_000)
            var i = 0
            while 2 * i + 1 < output.count {
                if let index = counterIndex(output[2 * i], output[2 * i + 1]), index < 24_000 { present[index] = true }
                i += 1
            }
            var ranges: [String] = [], start: Int?
            for f in 0...24_000 {
                let gap = f < 24_000 && !present[f]
                if gap, start == nil { start = f }
                if !gap, let s = start { ranges.append("\(s)..<\(f)"); start = nil }
            }
            return "missing frames \(ranges.prefix(8).joined(separator: ", ")); DAC frames written \(output.count / 2)"
        }
    }
}

func runLame(_ wav: String, _ mp3: String) throws {
    try runTool(["lame", "--quiet", "-b", "192", wav, mp3])
}
