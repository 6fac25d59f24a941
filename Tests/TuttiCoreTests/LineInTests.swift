import Foundation
import Testing
import TuttiCore

@Suite struct LineInTests {
    @Test func aLineInNamesItsDeviceAndItsFormat() throws {
        let d = try LineInSpec(parsing: "line:hw:CARD=Device,DEV=0")
        #expect(d.device == "hw:CARD=Device,DEV=0" && d.sampleRate == 48_000 && d.channels == 2 && d.name == "Line in")
        let t = try LineInSpec(parsing: "line:plughw:1,0?rate=44100&channels=1&name=Turntable+%E2%99%AA")
        #expect(t.device == "plughw:1,0" && t.sampleRate == 44_100 && t.channels == 1 && t.name == "Turntable ♪")
        #expect(throws: LineInSpecError.badDevice("line:")) { try LineInSpec(parsing: "line:") }
        #expect(throws: LineInSpecError.badDevice("line:hw 0")) { try LineInSpec(parsing: "line:hw 0") }
        #expect(throws: LineInSpecError.badDevice("line:\"x\"")) { try LineInSpec(parsing: "line:\"x\"") }
        #expect(throws: LineInSpecError.notALineIn("pipe:/x")) { try LineInSpec(parsing: "pipe:/x") }
        #expect { try LineInSpec(parsing: "line:hw:0?rate=1") } throws: { "\($0)".contains("8000…192000") }
        #expect { try LineInSpec(parsing: "line:hw:0?channels=6") } throws: { "\($0)".contains("1 or 2") }
        #expect { try LineInSpec(parsing: "line:hw:0?gain=3") } throws: { "\($0)".contains("one of rate, channels, name") }
    }

    /// A capture device whose crystal is `ppm` off, read the way libasound
    /// hands it over: the reader sleeps until a period is complete (the
    /// device's interrupt wakes it) and wakes late by up to `jitter` (ns),
    /// then takes every whole period captured by then.
    struct SimulatedCapture {
        var rate: Double
        var period: Int
        var jitter: Int64
        var random = SplitMix64(seed: 7)
        var read = 0
        var signal: (Int) -> (Float, Float)

        init(nominal: Int, ppm: Double, periodFrames: Int, jitter: Int64, signal: @escaping (Int) -> (Float, Float)) {
            rate = Double(nominal) * (1 + ppm * 1e-6)
            period = periodFrames
            self.jitter = jitter
            self.signal = signal
        }

        /// Runs until `seconds`, giving each read's frames, time and the running total.
        mutating func run(seconds: Double, _ body: (UnsafeBufferPointer<Float>, Int64, Int) -> Void) {
            var block: [Float] = []
            while true {
                // The next period completes (device time), the reader wakes a little later.
                let complete = Double(read + period) / rate
                guard complete < seconds else { return }
                let now = Int64(complete * 1e9) + Int64(random.next() % UInt64(jitter + 1))
                let capturedByNow = Int(rate * Double(now) / 1e9) / period * period
                block.removeAll(keepingCapacity: true)
                while read < capturedByNow {
                    let (l, r) = signal(read)
                    block.append(l); block.append(r)
                    read += 1
                }
                block.withUnsafeBufferPointer { body($0, now, read) }
            }
        }
    }

    @Test(arguments: [150.0, -150.0, 0.0])
    func theCaptureClockFindsTheCrystalsErrorThroughTheWakeUpJitter(ppm: Double) {
        var clock = CaptureClock(nominalRate: 2_000)
        var device = SimulatedCapture(nominal: 2_000, ppm: ppm, periodFrames: 20, jitter: 3_000_000) { _ in (0, 0) }
        device.run(seconds: 60) { _, t, read in clock.observe(frames: Int64(read), at: t) }
        let measured = clock.ppm ?? .nan
        #expect(abs(measured - ppm) < 5, "measured \(measured) ppm for a device at \(ppm)")
    }

    /// A 250 Hz tone as the device's crystal samples it: at +150 ppm the
    /// device takes 150 ppm more samples of each real second.
    static func tone(nominal: Int, ppm: Double) -> (Int) -> (Float, Float) {
        let perFrame = 2 * Double.pi * 250 / (Double(nominal) * (1 + ppm * 1e-6))
        return { i in let v = Float(0.5 * sin(perFrame * Double(i))); return (v, v) }
    }

    /// Zero crossings (upward) of the left channel, as a frequency at `rate`.
    static func frequency(_ samples: ArraySlice<Float>, rate: Int) -> Double {
        var crossings: [Int] = []
        var previous = samples.first ?? 0
        var i = 0
        for (n, s) in samples.enumerated() where n % 2 == 0 {
            if previous < 0 && s >= 0 { crossings.append(i) }
            previous = s
            i += 1
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) / (Double(last - first) / Double(rate))
    }

    @Test(arguments: [150.0, -150.0])
    func aDriftingInputKeepsAConstantDelayAndItsTrueFrequency(ppm: Double) {
        // 2 kHz keeps the test quick; the arithmetic is the same at 48 kHz.
        let nominal = 2_000, period = 20
        var retimer = CaptureRetimer(nominalRate: nominal, targetDelay: Double(period) * 2.5)
        var device = SimulatedCapture(nominal: nominal, ppm: ppm, periodFrames: period, jitter: 4_000_000,
                                      signal: Self.tone(nominal: nominal, ppm: ppm))
        var output: [Float] = []
        var delays: [(t: Double, backlog: Double)] = []
        var produced: [(t: Double, frames: Int)] = []
        device.run(seconds: 200) { block, t, _ in
            retimer.process(block, at: t, pendingInDevice: 0, into: &output)
            delays.append((Double(t) / 1e9, retimer.backlog))
            produced.append((Double(t) / 1e9, output.count / 2))
        }
        // Uncorrected, 150 ppm over 200 s is 60 frames (30 ms) of growing delay.
        // Corrected, from 30 s on the delay stays within a period and a half of its target.
        let settled = delays.filter { $0.t >= 30 }
        let lowest = settled.map(\.backlog).min()!, highest = settled.map(\.backlog).max()!
        #expect(highest - lowest < Double(period) * 1.5, "delay wandered \(lowest)…\(highest) frames")
        #expect(abs(settled.last!.backlog - retimer.targetDelay) < Double(period), "ended \(settled.last!.backlog) frames behind, target \(retimer.targetDelay)")
        #expect(retimer.resyncs == 0)
        // Frames out follow the monotonic clock at the nominal rate: 8,000 a second, not the crystal's.
        let a = produced.first { $0.t >= 60 }!, b = produced.last!
        let outputRate = Double(b.frames - a.frames) / (b.t - a.t)
        #expect(abs(outputRate / Double(nominal) - 1) < 20e-6, "output at \(outputRate) frames/s")
        // The tone read at the nominal rate is the real 250 Hz (the crystal's error would show 0.0375 Hz).
        let f = Self.frequency(output[(2 * 60 * nominal)...], rate: nominal)
        #expect(abs(f - 250) < 0.01, "tone at \(f) Hz")
    }

    @Test func aStalledInputStartsOverAtItsTargetDelay() {
        let nominal = 8_000
        var retimer = CaptureRetimer(nominalRate: nominal, targetDelay: 200)
        var output: [Float] = []
        let block = [Float](repeating: 0.25, count: 2 * 80)
        var t: Int64 = 0
        for _ in 0..<500 {
            t += 10_000_000
            block.withUnsafeBufferPointer { retimer.process($0, at: t, pendingInDevice: 0, into: &output) }
        }
        #expect(retimer.resyncs == 0)
        // Half a second with nothing (the device was restarted), then periods again.
        t += 500_000_000
        for _ in 0..<10 {
            t += 10_000_000
            block.withUnsafeBufferPointer { retimer.process($0, at: t, pendingInDevice: 0, into: &output) }
        }
        #expect(retimer.resyncs == 1)
        #expect(abs(retimer.backlog - 200) < 100, "backlog \(retimer.backlog)")
        // The constant input passes at its level (no gain in the kernel).
        #expect(output.suffix(200).allSatisfy { abs($0 - 0.25) < 0.001 })
    }
}
