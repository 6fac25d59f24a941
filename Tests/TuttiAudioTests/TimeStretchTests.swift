import Testing
import TuttiCore
import TuttiTimeStretch
import Glibc

/// librubberband through `TimeStretcher`: lengths come out as track time
/// divided by speed, and a pitch shift moves a sine's frequency.
@Suite struct TimeStretchTests {
    static func sine(_ frequency: Double, seconds: Double) -> [Float] {
        let n = Int(seconds * 48_000)
        var out = [Float](repeating: 0, count: 2 * n)
        for i in 0..<n {
            let v = Float(0.5 * sin(2 * Double.pi * frequency * Double(i) / 48_000))
            out[2 * i] = v; out[2 * i + 1] = v
        }
        return out
    }

    /// Frequency of the left channel from its upward zero crossings (interpolated), over `range` frames.
    static func frequency(_ samples: [Float], frames range: Range<Int>) -> Double {
        var crossings: [Double] = []
        for i in max(1, range.lowerBound)..<min(range.upperBound, samples.count / 2) {
            let a = samples[2 * (i - 1)], b = samples[2 * i]
            if a < 0 && b >= 0 { crossings.append(Double(i - 1) + Double(-a / (b - a))) }
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) * 48_000 / (last - first)
    }

    func stretch(_ input: [Float], speed: Double, pitch: Double, engine: TimeStretcher.Engine = .faster) throws -> [Float] {
        let s = try TimeStretcher(speed: speed, pitchSemitones: pitch, engine: engine)
        var out: [Float] = []
        // In the blocks the player decodes in.
        var at = 0
        while at < input.count {
            let n = min(4_096 * 2, input.count - at)
            input[at..<(at + n)].withUnsafeBufferPointer { s.process($0, into: &out) }
            at += n
        }
        s.finish(into: &out)
        return out
    }

    @Test(arguments: [0.5, 0.75, 1.25, 1.5, 2.0], TimeStretcher.Engine.allCases)
    func lengthIsTrackTimeOverSpeedAndPitchStays(speed: Double, engine: TimeStretcher.Engine) throws {
        let input = Self.sine(440, seconds: 6)
        let out = try stretch(input, speed: speed, pitch: 0, engine: engine)
        // Exact: the player's position bookkeeping counts n / speed.
        #expect(out.count / 2 == Int((6 * 48_000 / speed).rounded()), "\(out.count / 2) frames")
        let f = Self.frequency(out, frames: 24_000..<(out.count / 2 - 24_000))
        #expect(abs(f - 440) / 440 < 0.01, "heard \(f) Hz at \(speed)×")
    }

    @Test(arguments: [3.0, -2, 12, -12], TimeStretcher.Engine.allCases)
    func pitchMovesASine(semitones: Double, engine: TimeStretcher.Engine) throws {
        let out = try stretch(Self.sine(440, seconds: 3), speed: 1, pitch: semitones, engine: engine)
        #expect(out.count / 2 == 3 * 48_000)
        let f = Self.frequency(out, frames: 24_000..<(out.count / 2 - 24_000))
        let target = 440 * PlaybackTempo.pitchScale(semitones: semitones)
        #expect(abs(f - target) / target < 0.01, "heard \(f) Hz, expected \(target)")
    }

    @Test func startIsAlignedWithTheInput() throws {
        // Silence, then a tone from 1 s: at 2× it must start at 0.5 s of output.
        var input = [Float](repeating: 0, count: 2 * 48_000) + Self.sine(1_000, seconds: 1)
        input += [Float](repeating: 0, count: 2 * 4_800)
        let out = try stretch(input, speed: 2, pitch: 0)
        let onset = stride(from: 0, to: out.count, by: 2).first { abs(out[$0]) > 0.1 }.map { $0 / 2 }
        let o = try #require(onset)
        // ±10 ms: the analysis window (about 46 ms) smears an onset; what matters is no start delay left.
        #expect(abs(o - 24_000) <= 480, "tone starts at frame \(o), expected 24000 (±10 ms)")
    }

    @Test func outOfRangeIsRefused() {
        #expect(throws: TimeStretchError.self) { try TimeStretcher(speed: 3, pitchSemitones: 0) }
        #expect(throws: TimeStretchError.self) { try TimeStretcher(speed: 1, pitchSemitones: 13) }
        #expect(PlaybackTempo.validSpeed(1.234) == 1.23)
        #expect(PlaybackTempo.validSpeed(.nan) == nil)
        #expect(PlaybackTempo.validPitch(-12.04) == nil)
    }
}

/// `TUTTI_BENCH=1 swift test -c release --filter TimeStretchBenchmark`:
/// the leader's CPU for a stretched stream, per engine (bench/sound/stretch.sh).
@Suite struct TimeStretchBenchmark {
    @Test(.enabled(if: ProcessInfoEnv.bench)) func cpuPerEngine() throws {
        let input = TimeStretchTests.sine(440, seconds: 20).enumerated().map { i, v in v + 0.1 * Float(sin(Double(i) * 0.37)) }
        for engine in [TimeStretcher.Engine.faster, .finer] {
            for (speed, pitch) in [(1.5, 0.0), (0.75, 0.0), (1.0, 3.0)] {
                var runs: [Double] = []
                for _ in 0..<3 {
                    var t0 = timespec(); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0)
                    let s = try TimeStretcher(speed: speed, pitchSemitones: pitch, engine: engine)
                    var out: [Float] = []
                    out.reserveCapacity(Int(Double(input.count) / speed) + 100_000)
                    var at = 0
                    while at < input.count {
                        let n = min(960 * 2, input.count - at)
                        input[at..<(at + n)].withUnsafeBufferPointer { s.process($0, into: &out) }
                        at += n
                    }
                    s.finish(into: &out)
                    var t1 = timespec(); clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1)
                    let cpu = Double(t1.tv_sec - t0.tv_sec) + Double(t1.tv_nsec - t0.tv_nsec) / 1e9
                    runs.append(cpu / (20 / speed) * 100)
                }
                runs.sort()
                print(String(format: "stretch %@ speed %.2f pitch %+.0f: %.2f %% of one core (median of 3; %.2f–%.2f)", "\(engine)", speed, pitch, runs[1], runs[0], runs[2]))
            }
        }
    }
}

enum ProcessInfoEnv {
    static var bench: Bool { getenv("TUTTI_BENCH") != nil }
}
