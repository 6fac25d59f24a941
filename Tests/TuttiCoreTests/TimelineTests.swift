import Testing
import TuttiCore

/// Distinct, recognisable stereo frames: frame k of a test stream is (k + 0.25, −k − 0.5).
func testFrames(_ range: Range<Int>) -> [Float] {
    range.flatMap { [Float($0) + 0.25, -Float($0) - 0.5] }
}

extension AudioTimeline {
    @discardableResult
    func write(_ frames: [Float], at index: Int) -> Int {
        frames.withUnsafeBufferPointer { write($0.baseAddress!, count: frames.count / 2, at: index) }
    }

    /// Writes test frames `range` at their own index.
    @discardableResult
    func writeTest(_ range: Range<Int>) -> Int { write(testFrames(range), at: range.lowerBound) }

    func read(_ index: Int) -> (Float, Float) {
        let p = frame(index)
        return (p[0], p[1])
    }
}

func expectTestFrame(_ t: AudioTimeline, _ index: Int, _ value: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    let (l, r) = t.read(index)
    #expect(l == Float(value) + 0.25 && r == -Float(value) - 0.5, "frame \(index): (\(l), \(r)), expected test frame \(value)",
            sourceLocation: sourceLocation)
}

func expectSilent(_ t: AudioTimeline, _ index: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    let (l, r) = t.read(index)
    #expect(l == 0 && r == 0, "frame \(index) is (\(l), \(r)), expected silence", sourceLocation: sourceLocation)
}

@Suite("Audio timeline")
struct AudioTimelineTests {
    /// 512 frames, 64 guard frames: small enough to wrap in a few writes.
    func small() -> AudioTimeline {
        let t = AudioTimeline(seconds: 0.01, guardFrames: 64)
        t.beginStream(epoch: LeaderTime(nanoseconds: 5 * nanosecondsPerSecond))
        return t
    }

    @Test("Capacity is rounded up to a power of two")
    func capacity() {
        #expect(AudioTimeline().capacity == 524_288) // 8 s = 384 000 frames
        #expect(AudioTimeline(seconds: 0.01).capacity == 512)
        #expect(AudioTimeline(seconds: 1).capacity == 65_536)
        #expect(AudioTimeline(seconds: 4_096.0 / 48_000).capacity == 4_096)
    }

    @Test("A stream uses the part of the ring its buffer needs")
    func ringFollowsTheBuffer() {
        // The buffer, 1.5 s more and the 8192-frame clearance, rounded up to a power of two.
        #expect(AudioTimeline.frames(forBuffer: 0) == 131_072)                            // 80 192 needed
        #expect(AudioTimeline.frames(forBuffer: nanosecondsPerSecond) == 131_072)         // 128 192
        #expect(AudioTimeline.frames(forBuffer: 10 * nanosecondsPerSecond) == 1_048_576)  // 560 192
        #expect(AudioTimeline.frames(forBuffer: -5) == 131_072)
        #expect(AudioTimeline.frames(forBuffer: .max) == 268_435_456)                     // clamped to an hour

        let t = AudioTimeline(seconds: 16)
        #expect(t.maximumCapacity == 1_048_576 && t.capacity == 1_048_576)
        t.beginStream(epoch: LeaderTime(nanoseconds: 0), bufferNanoseconds: nanosecondsPerSecond)
        #expect(t.capacity == 131_072)
        // A new stream begins 8192 frames clear of the reader, and with no clock yet the
        // ring keeps the 1 s buffer and the 1 s trim reserve: 98 880 frames ≥ 96 000.
        #expect(t.snapshot().validStart == t.readStart + 8_192)
        #expect(t.framesKeptWaiting == 98_880)
        t.beginStream(epoch: LeaderTime(nanoseconds: 0), bufferNanoseconds: .max)
        #expect(t.capacity == t.maximumCapacity, "never more than was allocated")
        t.beginStream(epoch: LeaderTime(nanoseconds: 0))
        #expect(t.capacity == t.maximumCapacity, "no buffer given: unchanged")

        // With the ring shrunk, index 131 072 + k lands on slot k.
        let u = AudioTimeline(seconds: 8)
        u.beginStream(epoch: LeaderTime(nanoseconds: 0), bufferNanoseconds: 0)
        #expect(u.capacity == 131_072)
        u.release(upTo: 100_000)
        var frames = [Float](repeating: 0, count: 200)
        for k in 0..<100 { frames[2 * k] = Float(k + 1); frames[2 * k + 1] = -Float(k + 1) }
        #expect(u.write(frames, count: 100, at: 131_072 - 50) == 100)
        #expect(u.frame(131_072 + 10)[0] == 61 && u.frame(131_072 + 10)[1] == -61)
        #expect(u.frame(10)[0] == 61, "the same slot: the ring is 131 072 frames")
    }

    @Test("beginStream bumps the generation, sets the epoch and places the stream clear of the reader")
    func beginStream() {
        let t = AudioTimeline(seconds: 0.01, guardFrames: 64)
        #expect(!t.hasStream)
        #expect(t.snapshot().generation == 0)
        t.beginStream(epoch: LeaderTime(nanoseconds: 123_456_789))
        #expect(t.hasStream)
        var s = t.snapshot()
        #expect(s.generation == 1)
        #expect(s.epoch == LeaderTime(nanoseconds: 123_456_789) && t.epoch == s.epoch)
        #expect(s.validStart == 128 && s.writeEnd == 128 && t.writeEnd == 128) // readStart 0 + capacity/4
        #expect(s.endOfStream == Int.max)

        t.writeTest(128..<200)
        t.endStream(at: 200)
        #expect(t.snapshot().endOfStream == 200)
        t.release(upTo: 150)
        t.beginStream(epoch: LeaderTime(nanoseconds: -42))
        s = t.snapshot()
        #expect(s.generation == 2)
        #expect(s.epoch == LeaderTime(nanoseconds: -42))
        #expect(s.validStart == 150 + 128 && s.writeEnd == 278)
        #expect(s.endOfStream == Int.max)
    }

    @Test("Frames written are read back exactly")
    func writeRead() {
        let t = small()
        #expect(t.writeTest(128..<228) == 100)
        #expect(t.writeEnd == 228)
        for i in 128..<228 { expectTestFrame(t, i, i) }
        // Appending continues the stream.
        #expect(t.writeTest(228..<300) == 72)
        #expect(t.writeEnd == 300)
        expectTestFrame(t, 299, 299)
        #expect(t.overflowedFrames == 0)
    }

    @Test("The guard mirror gives contiguous frames around the wrap point")
    func guardMirror() {
        let t = small()
        let half = t.guardFrames / 2
        t.writeTest(128..<400)
        t.release(upTo: 300)          // room up to 812
        t.writeTest(400..<700)        // wraps at 512
        #expect(t.writeEnd == 700)
        // Every index whose ±guard/2 neighbourhood holds live frames (300…699).
        for index in (300 + half)..<(700 - half) {
            let p = t.frame(index)
            for k in -half...half {
                let v = index + k
                let ok = p[2 * k] == Float(v) + 0.25 && p[2 * k + 1] == -Float(v) - 0.5
                if !ok { Issue.record("frame(\(index))[\(k)] = (\(p[2 * k]), \(p[2 * k + 1])), expected frame \(v)"); return }
            }
        }
        // The same across the next wrap (1024), written in pieces that straddle it.
        t.release(upTo: 900)
        for start in stride(from: 700, to: 1_200, by: 37) { t.writeTest(start..<min(start + 37, 1_200)) }
        for index in 990..<1_060 {
            let p = t.frame(index)
            for k in -half...half where p[2 * k] != Float(index + k) + 0.25 {
                Issue.record("second wrap: frame(\(index))[\(k)] = \(p[2 * k])"); return
            }
        }
    }

    @Test("The resampler can read straight through the wrap")
    func interpolateAcrossWrap() {
        let t = small()
        let signal = SineSignal(frequency: 1_000)
        t.release(upTo: 400)
        var frames: [Float] = []
        for i in 128..<800 { frames += [Float(signal.left(Double(i))), Float(signal.right(Double(i)))] }
        t.write(frames, at: 128)
        let r = FractionalResampler()
        var ideal: [Double] = [], actual: [Double] = []
        var x = 480.0
        while x < 560 {
            let i = Int(x)
            let (l, rr) = r.interpolate(at: t.frame(i), fraction: x - Double(i))
            ideal += [signal.left(x), signal.right(x)]; actual += [Double(l), Double(rr)]
            x += 1.00015
        }
        #expect(snrDecibels(ideal: ideal, actual: actual) >= 80)
    }

    @Test("A gap before a write is filled with silence")
    func gapSilence() {
        let t = small()
        // Dirty the slots first so silence has to be written, not inherited.
        t.writeTest(128..<160)
        t.flush(from: 128)
        #expect(t.writeEnd == 128)
        t.writeTest(128..<133)
        #expect(t.writeTest(140..<145) == 5)
        #expect(t.writeEnd == 145)
        for i in 128..<133 { expectTestFrame(t, i, i) }
        for i in 133..<140 { expectSilent(t, i) }
        for i in 140..<145 { expectTestFrame(t, i, i) }
    }

    @Test("An overlapping write rewrites and becomes the new end")
    func overlap() {
        let t = small()
        t.writeTest(128..<228)
        // Newer audio for 178…187, taken from a different part of the test signal.
        #expect(t.write(testFrames(1_000..<1_010), at: 178) == 10)
        #expect(t.writeEnd == 188)
        for i in 128..<178 { expectTestFrame(t, i, i) }
        for i in 178..<188 { expectTestFrame(t, i, i - 178 + 1_000) }
    }

    @Test("flush(from:) drops unplayed frames at and after the index")
    func flush() {
        let t = small()
        t.writeTest(128..<228)
        t.flush(from: 200)
        #expect(t.writeEnd == 200)
        t.flush(from: 300) // beyond the end: nothing to drop
        #expect(t.writeEnd == 200)
        t.release(upTo: 150)
        t.flush(from: 100) // already played frames stay played
        #expect(t.writeEnd == 150)
        #expect(t.readStart == 150)
        // Writing resumes at the flush point.
        #expect(t.writeTest(150..<160) == 10)
        #expect(t.writeEnd == 160)
    }

    @Test("Frames behind readStart are skipped")
    func behindReadStart() {
        let t = small()
        t.writeTest(128..<180)
        t.release(upTo: 200)
        // 190…209: the first 10 already played.
        #expect(t.writeTest(190..<210) == 10)
        #expect(t.writeEnd == 210)
        for i in 200..<210 { expectTestFrame(t, i, i) }
        #expect(t.overflowedFrames == 0)
        // release never moves backwards.
        t.release(upTo: 100)
        #expect(t.readStart == 200)
    }

    @Test("A write entirely in the past changes nothing")
    func staleWrite() {
        let t = small()
        t.writeTest(128..<328)
        t.release(upTo: 200)
        #expect(t.writeTest(150..<170) == 0)
        #expect(t.writeEnd == 328) // the buffered future is kept
        for i in 200..<328 { expectTestFrame(t, i, i) }
        #expect(t.writeTest(180..<200) == 0) // ends exactly at readStart
        #expect(t.writeEnd == 328)
    }

    @Test("Overflow is counted and never overwrites unplayed frames")
    func overflow() {
        let t = small() // readStart 0, capacity 512, stream from 128
        #expect(t.writeTest(128..<628) == 384) // room up to 512
        #expect(t.overflowedFrames == 116)
        #expect(t.writeEnd == 512)
        expectTestFrame(t, 0 + 512 - 1, 511)
        // Nothing at or after 512 fits until the reader releases.
        #expect(t.writeTest(600..<610) == 0)
        #expect(t.overflowedFrames == 126)
        #expect(t.writeEnd == 512)
        // Frames 128…511 are intact.
        for i in 128..<512 { expectTestFrame(t, i, i) }
        // After release, the gap 512…599 is silence and 600…609 lands.
        t.release(upTo: 200)
        #expect(t.writeTest(600..<610) == 10)
        for i in 512..<600 { expectSilent(t, i) }
        for i in 600..<610 { expectTestFrame(t, i, i) }
        for i in 200..<512 { expectTestFrame(t, i, i) }
    }

    @Test("frameIndex(of:) maps PTS on the 48 kHz grid exactly")
    func frameIndex() {
        let t = AudioTimeline(seconds: 0.01)
        let epoch = LeaderTime(nanoseconds: 1_234_567_890_123)
        t.beginStream(epoch: epoch)
        let start = t.snapshot().validStart
        for k in [0, 1, 2, 3, 4, 47_999, 48_000, 48_001, 1_000_003, 48_000 * 86_400, 48_000 * 86_400 * 365, -1, -2, -3, -48_000] {
            #expect(t.frameIndex(of: epoch + StreamFormat.nanoseconds(frames: k)) == start + k, "frame \(k)")
        }
        // Rounds to the nearest frame: a frame lasts 20 833.3 ns.
        #expect(t.frameIndex(of: epoch + 10_416) == start)
        #expect(t.frameIndex(of: epoch + 10_417) == start + 1)
        #expect(t.frameIndex(of: epoch - 10_416) == start)
        #expect(t.frameIndex(of: epoch - 10_417) == start - 1)
        // Every frame of the first ten seconds.
        var mismatches = 0
        for k in 0..<480_000 where t.frameIndex(of: epoch + StreamFormat.nanoseconds(frames: k)) != start + k { mismatches += 1 }
        #expect(mismatches == 0)
    }
}

@Suite("Time helpers and simulated clock")
struct TimeTests {
    @Test("StreamFormat.nanoseconds(frames:) is exact and rounds to nearest")
    func nanoseconds() {
        #expect(StreamFormat.nanoseconds(frames: 0) == 0)
        #expect(StreamFormat.nanoseconds(frames: 1) == 20_833)   // 20 833.33
        #expect(StreamFormat.nanoseconds(frames: 2) == 41_667)   // 41 666.67
        #expect(StreamFormat.nanoseconds(frames: 3) == 62_500)
        #expect(StreamFormat.nanoseconds(frames: 48) == 1_000_000)
        #expect(StreamFormat.nanoseconds(frames: 48_000) == nanosecondsPerSecond)
        #expect(StreamFormat.nanoseconds(frames: 960) == 20 * nanosecondsPerMillisecond)
        #expect(StreamFormat.nanoseconds(frames: -1) == -20_833)
        #expect(StreamFormat.nanoseconds(frames: -2) == -41_667)
        #expect(StreamFormat.nanoseconds(frames: 48_000 * 3_600 * 24 * 365) == 365 * 86_400 * nanosecondsPerSecond)
        // No accumulated drift: n frames is within 0.5 ns of n · 1e9 / 48 000 for every n.
        for n in [7, 1_001, 123_457, 99_999_999, 12_345_678_901] {
            let exact = Double(n) * 62_500 / 3
            #expect(abs(Double(StreamFormat.nanoseconds(frames: n)) - exact) <= 0.5)
            #expect(StreamFormat.nanoseconds(frames: -n) == -StreamFormat.nanoseconds(frames: n))
        }
    }

    @Test("StreamFormat.frames(nanoseconds:) inverts nanoseconds(frames:)")
    func frames() {
        #expect(StreamFormat.frames(nanoseconds: nanosecondsPerSecond) == 48_000)
        #expect(StreamFormat.frames(nanoseconds: 62_500) == 3)
        #expect(StreamFormat.frames(nanoseconds: -20_000_000) == -960)
        var rng = SplitMix64(seed: 8)
        for _ in 0..<10_000 {
            let n = Int(rng.next() % 10_000_000_000) - 5_000_000_000
            let back = StreamFormat.frames(nanoseconds: StreamFormat.nanoseconds(frames: n))
            #expect(abs(back - Double(n)) < 3e-5)
            #expect(Int(back.rounded()) == n)
        }
        #expect(StreamFormat.sampleRate == 48_000 && StreamFormat.channels == 2)
    }

    @Test("LeaderTime and LocalTime arithmetic")
    func timeArithmetic() {
        let a = LeaderTime(nanoseconds: 1_000), b = LeaderTime(nanoseconds: 250)
        #expect(a - b == 750 && b - a == -750)
        #expect(a + 5 == LeaderTime(nanoseconds: 1_005) && a - 5 == LeaderTime(nanoseconds: 995))
        #expect(b < a && !(a < b))
        #expect(a.description == "L1000ns")
        let l = LocalTime(nanoseconds: -7)
        #expect(l.description == "l-7ns")
        #expect(l + 10 - LocalTime(nanoseconds: 0) == 3)
        #expect([LocalTime(nanoseconds: 3), LocalTime(nanoseconds: -1), LocalTime(nanoseconds: 2)].sorted().map(\.nanoseconds) == [-1, 2, 3])
        // Wrapping, never trapping.
        #expect(LeaderTime(nanoseconds: .max) + 1 == LeaderTime(nanoseconds: .min))
        #expect(LeaderTime(nanoseconds: .min) - LeaderTime(nanoseconds: 1) == .max)
    }

    @Test("SimulatedClock maps real → local and back within 1 ns")
    func simulatedClock() {
        let identity = SimulatedClock()
        #expect(identity.isIdentity)
        #expect(identity.local(fromReal: 12_345) == LocalTime(nanoseconds: 12_345))
        #expect(identity.real(fromLocal: LocalTime(nanoseconds: 12_345)) == 12_345)
        #expect(!SimulatedClock(skewPPM: 1).isIdentity && !SimulatedClock(offset: 1).isIdentity)

        let c = SimulatedClock(offset: 3 * nanosecondsPerSecond, skewPPM: 150, origin: 10 * nanosecondsPerSecond)
        #expect(c.local(fromReal: 10 * nanosecondsPerSecond) == LocalTime(nanoseconds: 13 * nanosecondsPerSecond))
        #expect(c.local(fromReal: 11 * nanosecondsPerSecond) == LocalTime(nanoseconds: 14 * nanosecondsPerSecond + 150_000))
        #expect(c.local(fromReal: 9 * nanosecondsPerSecond) == LocalTime(nanoseconds: 12 * nanosecondsPerSecond - 150_000))

        var rng = SplitMix64(seed: 21)
        var worst: Int64 = 0
        for skew in [-500.0, -200, -0.5, 0, 1e-3, 150, 500] {
            for offset in [0, -5 * nanosecondsPerSecond, 7_777_777_777, -86_400 * nanosecondsPerSecond] as [Int64] {
                let clock = SimulatedClock(offset: offset, skewPPM: skew, origin: Int64(rng.next() % 1_000_000_000_000))
                for _ in 0..<300 {
                    let real = Int64(rng.next() % (10 * 86_400 * 1_000_000_000)) // up to ten days
                    let back = clock.real(fromLocal: clock.local(fromReal: real))
                    worst = max(worst, abs(back - real))
                    // Monotonic: one more real nanosecond never moves local time backwards.
                    #expect(clock.local(fromReal: real + 1) >= clock.local(fromReal: real))
                }
            }
        }
        print("SimulatedClock inverse: worst error \(worst) ns")
        #expect(worst <= 1)
    }
}
