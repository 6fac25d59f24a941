import Foundation
import Testing
import TuttiAudio
import TuttiCore

@Suite struct SinkTests {
    @Test func outputSpecsParse() throws {
        #expect(try OutputSpec(parsing: "alsa:default") == .alsa(device: "default"))
        #expect(try OutputSpec(parsing: "alsa:plughw:1,0") == .alsa(device: "plughw:1,0"))
        #expect(try OutputSpec(parsing: "file:/tmp/x.raw,ppm=-150,delay-ms=20") == .file(path: "/tmp/x.raw", ppm: -150, delayMilliseconds: 20))
        for bad in ["", "alsa:", "file:", "file:/x,ppm=abc", "file:/x,ppm=1e9", "file:/x,speed=2", "pulse:x", "file:/x,delay-ms=-3"] {
            #expect(throws: AudioError.self, "\(bad)") { try OutputSpec(parsing: bad) }
        }
    }

    @Test func alsaNullDeviceNegotiatesAndPlays() throws {
        let sink = try ALSASink(device: "null")
        #expect(sink.periodFrames > 0)
        let frames = sink.periodFrames
        let silence = [Int16](repeating: 0, count: frames * 2)
        let start = Monotonic.now()
        var written = 0
        while written < 48_000 / 2 {  // half a second
            #expect(silence.withUnsafeBufferPointer { sink.write($0.baseAddress!, frames: frames) })
            written += frames
        }
        let elapsed = Double(Monotonic.now() - start) / 1e9
        // `null` never blocks; the sink paces itself so the follower does not spin.
        #expect(elapsed > 0.3, "paced: \(elapsed) s for 0.5 s of audio")
        #expect(sink.delay().frames >= 0)
        sink.close()
    }

    @Test func alsaUnknownDeviceIsAClearError() {
        do { _ = try ALSASink(device: "no-such-device-xyz"); Issue.record("opened a missing device") } catch {
            #expect("\(error)".contains("no-such-device-xyz"))
        }
    }

    @Test func virtualDACPlaysInRealTimeAtItsPPM() throws {
        let path = NSTemporaryDirectory() + "tutti-vdac-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).raw"
        let ppm = 5_000.0  // exaggerated so one second shows it
        let dac = try VirtualDAC(path: path, ppm: ppm, delayMilliseconds: 7)
        let block = [Int16](repeating: 3, count: 240 * 2)
        let start = Monotonic.now()
        for _ in 0..<200 { _ = block.withUnsafeBufferPointer { dac.write($0.baseAddress!, frames: 240) } }  // 1 s
        let elapsed = Double(Monotonic.now() - start) / 1e9
        let queued = dac.delay().frames
        dac.close()
        // It blocked in real time (1 s of audio less its 80 ms buffer).
        #expect(elapsed > 0.9 && elapsed < 1.5, "elapsed \(elapsed)")
        #expect(queued > 0 && queued <= 3_840)
        let text = try String(contentsOfFile: path + ".timing", encoding: .utf8)
        let lines = text.split(separator: "\n").map { $0.split(separator: " ").map { Int64($0)! } }
        #expect(lines.count == 200)
        // Timing lines are 240 frames apart and spaced by 240 / (48000·(1+ppm)) seconds.
        let first = lines[1], last = lines[199]
        let rate = Double(last[0] - first[0]) / (Double(last[1] - first[1]) / 1e9)
        #expect(abs(rate / 48_000 - 1 - ppm * 1e-6) < 1e-6, "rate \(rate)")
        // delay-ms is in the logged times: the first frame leaves 7 ms after it was written.
        #expect(lines[0][1] - start >= 7_000_000 && lines[0][1] - start < 30_000_000)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        #expect(size == 200 * 240 * 4)
    }
}
