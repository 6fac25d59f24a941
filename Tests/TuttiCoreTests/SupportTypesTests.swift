import Foundation
import Synchronization
import Testing
import TuttiCore

@Suite("Seqlock, published clock model, logger")
struct PublishingTests {
    @Test("SeqLockedValues is nil before the first store and returns what was stored")
    func seqLock() {
        let cell = SeqLockedValues()
        #expect(cell.load() == nil)
        cell.store(1, -2, .max, .min)
        let v = cell.load()
        #expect(v?.0 == 1 && v?.1 == -2 && v?.2 == .max && v?.3 == .min)
        cell.store(0, 0, 0, 0)
        #expect(cell.load().map { [$0.0, $0.1, $0.2, $0.3] } == [0, 0, 0, 0])
    }

    /// A consistency property that holds under any interleaving: a reader
    /// never sees a mix of two stores.
    @Test("Concurrent reads never see a torn store")
    func seqLockNoTearing() {
        final class Shared: Sendable {
            let cell = SeqLockedValues()
            let done = Atomic<Bool>(false)
        }
        let shared = Shared()
        let writer = Thread {
            for k in Int64(1)...200_000 { shared.cell.store(k, -k, k &* 3, ~k) }
            shared.done.store(true, ordering: .releasing)
        }
        writer.start()
        var reads = 0, torn = 0
        while !shared.done.load(ordering: .acquiring) {
            if let (a, b, c, d) = shared.cell.load() {
                reads += 1
                if b != -a || c != a &* 3 || d != ~a { torn += 1 }
            }
        }
        #expect(torn == 0)
        let last = shared.cell.load()
        #expect(last?.0 == 200_000 && last?.1 == -200_000 && last?.3 == ~200_000)
    }

    @Test("PublishedClockModel round-trips every field exactly and can be invalidated")
    func publishedModel() {
        let p = PublishedClockModel()
        #expect(p.current() == nil)
        let m = ClockModel(reference: LocalTime(nanoseconds: -123_456_789), offset: 7_000_000_001, skew: -87.654_321e-6)
        p.publish(m)
        #expect(p.current() == m)
        #expect(p.current()?.skew.bitPattern == m.skew.bitPattern)
        p.invalidate()
        #expect(p.current() == nil)
        p.publish(.identity)
        #expect(p.current() == .identity)
    }

    @Test("Logger passes level, label and message to its sink")
    func logger() {
        let lines = Mutex<[String]>([])
        let log = Logger(label: "core") { level, label, message in lines.withLock { $0.append("\(level) \(label): \(message)") } }
        log.debug("a"); log.info("b"); log.warning("c"); log.error("d")
        log.with(label: "net").info("e")
        #expect(lines.withLock { $0 } == ["debug core: a", "info core: b", "warning core: c", "error core: d", "info net: e"])
        #expect(Logger.Level.debug < .info && Logger.Level.warning < .error && !(Logger.Level.error < .info))
        Logger.silent.error("dropped") // must not crash or block
    }
}

@Suite("Test signals and metrics")
struct SignalTests {
    @Test("sine has the requested length, amplitude and frequency")
    func sine() {
        let s = TestSignal.sine(frequency: 1_000, seconds: 0.5, amplitude: 0.25)
        #expect(s.count == 2 * 24_000)
        #expect(abs(s.map(abs).max()! - 0.25) < 1e-6)
        var crossings = 0
        for i in 1..<24_000 where (s[2 * (i - 1)] < 0) != (s[2 * i] < 0) { crossings += 1 }
        #expect(abs(crossings - 1_000) <= 1) // 500 periods, two crossings each
        #expect(stride(from: 0, to: s.count, by: 2).allSatisfy { s[$0] == s[$0 + 1] })
    }

    @Test("clicks start exactly at half an interval, then every interval")
    func clicks() {
        let s = TestSignal.clicks(seconds: 3, interval: 1)
        let left = stride(from: 0, to: s.count, by: 2).map { s[$0] }
        #expect(SignalMetrics.firstAbove(left, threshold: 0.5) == 24_000)
        #expect(SignalMetrics.firstAbove(left, threshold: 0.5, from: 24_096) == 72_000)
        #expect(SignalMetrics.firstAbove(left, threshold: 0.5, from: 72_096) == 120_000)
        #expect(SignalMetrics.firstAbove(left, threshold: 0.5, from: 120_096) == nil)
        // A 2 ms cosine burst at 2 kHz: starts at its peak, 24 samples a cycle, then silence.
        #expect(left[24_000] == 0.9 && abs(left[24_012] + 0.9) < 1e-6 && abs(left[24_024] - 0.9) < 1e-6 && left[24_096] == 0)
        #expect(left[23_999] == 0)
    }

    @Test("wav16 produces a file WAVParser reads back to the quantised samples")
    func wav16() throws {
        let samples = TestSignal.sine(frequency: 440, seconds: 0.1)
        let file = TestSignal.wav16(samples)
        let f = try WAVParser.parse(header: Array(file.prefix(64)), fileSize: file.count)
        #expect(f.sampleRate == 48_000 && f.channels == 2 && f.bitsPerSample == 16 && f.frameCount == 4_800)
        var out: [Float] = []
        Array(file[f.dataOffset...]).withUnsafeBytes { WAVParser.appendStereoFloats(from: $0, format: f, to: &out) }
        #expect(out.count == samples.count)
        #expect(out.map(sampleToInt16) == samples.map(sampleToInt16))
        #expect(zip(out, samples).allSatisfy { abs($0 - $1) <= 0.5 / 32_768 + 1e-9 })
    }

    @Test("bestLag finds a known shift; correlation and SNR behave")
    func metrics() {
        let a = TestSignal.music(seconds: 1).enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let shifted = [Float](repeating: 0, count: 37) + a
        let best = SignalMetrics.bestLag(a, aStart: 2_000, shifted, candidates: -100...100, count: 4_800)
        #expect(best.lag == 37)
        #expect(abs(best.correlation - 1) < 1e-9)
        #expect(abs(SignalMetrics.correlation(a, 1_000, a.map { -2 * $0 }, 1_000, count: 1_000) + 1) < 1e-9)
        #expect(SignalMetrics.correlation(a, 0, [Float](repeating: 0, count: 10), 0, count: 10) == 0)
        // Gain does not count as noise; added noise 40 dB down does.
        #expect(SignalMetrics.snr(a, 0, a.map { $0 * 0.5 }, 0, count: 10_000) == .infinity)
        var rng = SplitMix64(seed: 4)
        let rms = (a[0..<10_000].map { Double($0) * Double($0) }.reduce(0, +) / 10_000).squareRoot()
        let noisy = a.map { $0 + Float((rng.unit() - 0.5) * 2 * rms * 0.01 * 3.0.squareRoot()) } // uniform, RMS = 1 % of the signal
        let snr = SignalMetrics.snr(a, 0, noisy, 0, count: 10_000)
        #expect(abs(snr - 40) < 1)
    }
}
