import Glibc
import Testing
import TuttiCore

/// The reverb processor on plain blocks (the speaker runs it after the EQ).
@Suite struct ReverbTests {
    static let rate = 48_000

    func run(_ p: ReverbProcessor, _ samples: inout [Float], period: Int = 480) {
        samples.withUnsafeMutableBufferPointer { b in
            var f = 0
            let frames = b.count / 2
            while f < frames {
                let n = min(period, frames - f)
                p.process(b.baseAddress! + 2 * f, frames: n)
                f += n
            }
        }
    }

    @Test func offIsBitExact() throws {
        let published = PublishedReverb()
        let p = ReverbProcessor(source: published)
        var rng = SplitMix64(seed: 7)
        let input = (0..<(2 * 48_000)).map { _ in Float(Int(rng.next() % 65_536) - 32_768) / 32_768 }
        var out = input
        run(p, &out)
        #expect(out == input, "never set")
        // Set, then back to 0 %: once the 10 ms fade is over, bit-exact again.
        published.publish(try ReverbSettings(preset: .largeHall, mix: 40))
        var warm = input
        run(p, &warm)
        #expect(warm != input)
        published.publish(try ReverbSettings(preset: .largeHall, mix: 0))
        var fade = [Float](repeating: 0, count: 2 * ReverbProcessor.fadeFrames)
        run(p, &fade)
        out = input
        run(p, &out)
        #expect(out == input, "0 % after a fade")
        #expect(p.isBypassed)
    }

    /// The decay time of an impulse in the 500 Hz–1 kHz band, from the energy decay curve
    /// (Schroeder's backward integral), −5 to −25 dB extended to 60 dB (T20, as ISO 3382 measures rooms).
    func decaySeconds(_ preset: ReverbPreset) throws -> Double {
        let published = PublishedReverb()
        published.publish(try ReverbSettings(preset: preset, mix: 100))
        let p = ReverbProcessor(source: published)
        let frames = Int(preset.decaySeconds * 1.2 * Double(Self.rate))
        var x = [Float](repeating: 0, count: 2 * frames)
        // The mix reaches 100 % over its 10 ms fade first (silence), then the impulse.
        let start = 2 * ReverbProcessor.fadeFrames
        x[2 * start] = 1; x[2 * start + 1] = 1
        run(p, &x)
        // A room's RT60 is its mid-frequency one (ISO 3382 reports 500 Hz and 1 kHz):
        // an RBJ band-pass at 707 Hz, an octave wide, over the left channel.
        let w0 = 2 * Double.pi * 707 / Double(Self.rate), q = 1.41, alpha = sin(w0) / (2 * q)
        let a0 = 1 + alpha, a1 = -2 * cos(w0), a2 = 1 - alpha
        var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0
        for i in 0..<frames {
            let v = Double(x[2 * i])
            let y = (alpha * v - alpha * x2 - a1 * y1 - a2 * y2) / a0
            x2 = x1; x1 = v; y2 = y1; y1 = y
            x[2 * i] = Float(y); x[2 * i + 1] = 0
        }
        var energy = [Double](repeating: 0, count: frames + 1)
        for i in stride(from: frames - 1, through: start + 1, by: -1) {
            energy[i] = energy[i + 1] + Double(x[2 * i] * x[2 * i]) + Double(x[2 * i + 1] * x[2 * i + 1])
        }
        let total = energy[start + 1]
        func firstBelow(_ db: Double) -> Int {
            let limit = total * pow(10, db / 10)
            return (start + 1..<frames).first { energy[$0] < limit } ?? frames
        }
        let t5 = firstBelow(-5), t25 = firstBelow(-25)
        return 3 * Double(t25 - t5) / Double(Self.rate)
    }

    @Test func eachPresetDecaysInItsStatedTimeWithinTwentyPercent() throws {
        var measured: [ReverbPreset: Double] = [:]
        for preset in ReverbPreset.allCases {
            let t = try decaySeconds(preset)
            measured[preset] = t
            print("reverb \(preset.rawValue): stated RT60 \(preset.decaySeconds) s, measured \((t * 1000).rounded() / 1000) s")
            #expect(abs(t - preset.decaySeconds) <= 0.2 * preset.decaySeconds, "\(preset.rawValue): \(t) s for \(preset.decaySeconds) s")
        }
        // Larger presets decay longer.
        let bySize = ReverbPreset.allCases.sorted { $0.size < $1.size }.map { measured[$0]! }
        #expect(bySize == bySize.sorted())
    }

    /// The largest second difference, left channel: about (2π f / rate)² A for
    /// a smooth signal of amplitude A, and the size of the step for a click.
    func largestKink(_ x: [Float], from: Int, to: Int) -> Float {
        var most: Float = 0
        for i in max(2, from)..<to { most = max(most, abs(x[2 * i] - 2 * x[2 * (i - 1)] + x[2 * (i - 2)])) }
        return most
    }

    /// A 220 Hz sine at half scale through `plan` (frame, settings), 480-frame periods.
    func play(_ plan: [(Int, ReverbSettings)], frames: Int = 48_000) -> [Float] {
        let q = PublishedReverb(), r = ReverbProcessor(source: q)
        var x = (0..<frames).flatMap { i -> [Float] in let v = Float(0.5 * sin(2 * Double.pi * 220 * Double(i) / 48_000)); return [v, v] }
        x.withUnsafeMutableBufferPointer { b in
            var f = 0
            while f < frames {
                if let step = plan.first(where: { $0.0 == f }) { q.publish(step.1) }
                r.process(b.baseAddress! + 2 * f, frames: 480)
                f += 480
            }
        }
        return x
    }

    @Test func mixChangesMakeNoClick() throws {
        let room = ReverbPreset.mediumRoom
        // Steady at 80 %, the most wet of the plan below (after its fade-in).
        let steady = largestKink(play([(0, try .init(preset: room, mix: 80))]), from: 24_000, to: 48_000)
        // Every 100 ms: 60 % → 10 % → 80 % → 0 % → 50 %.
        let changed = play([(0, .off), (4_800, try .init(preset: room, mix: 60)), (9_600, try .init(preset: room, mix: 10)),
                            (14_400, try .init(preset: room, mix: 80)), (19_200, try .init(preset: room, mix: 0)),
                            (24_000, try .init(preset: room, mix: 50))])
        let worst = largestKink(changed, from: 2, to: 48_000)
        // Changed at once, 0 → 60 % would step by 0.6 |wet − dry|, a kink of about 0.3 here;
        // ramped over 10 ms, the corners of the ramp stay under 0.003 (−50 dB).
        print("reverb mix changes: largest kink \(worst), steady at 80 % \(steady), the dry sine \(0.5 * pow(2 * Float.pi * 220 / 48_000, 2))")
        #expect(worst <= 0.003, "a click: \(worst)")
    }

    @Test func presetChangesFadeTheOldRoomOutAndTheNewOneIn() throws {
        let changed = play([(0, try .init(preset: .smallRoom, mix: 50)), (9_600, try .init(preset: .cathedral, mix: 50)),
                            (24_000, try .init(preset: .plate, mix: 50))])
        let worst = largestKink(changed, from: 2, to: 48_000)
        let steady = [ReverbPreset.smallRoom, .cathedral, .plate].map { largestKink(play([(0, try! .init(preset: $0, mix: 50))]), from: 24_000, to: 48_000) }.max()!
        print("reverb preset changes: largest kink \(worst), steady \(steady)")
        #expect(worst <= 0.003, "a click: \(worst)")
    }

    @Test func settingsAreCheckedAndPresetsFoundByName() throws {
        #expect(throws: ReverbError.self) { try ReverbSettings(mix: 101, size: 0.5, damping: 0.5) }
        #expect(throws: ReverbError.self) { try ReverbSettings(mix: 10, size: .nan, damping: 0.5) }
        #expect(throws: ReverbError.self) { try ReverbSettings(mix: 10, size: 0.5, damping: -0.1) }
        #expect(ReverbPreset.named("hall") == .largeHall)
        #expect(ReverbPreset.named("small-room") == .smallRoom)
        #expect(ReverbPreset.named("CATHEDRAL") == .cathedral)
        #expect(ReverbPreset.named("bathroom") == nil)
        for preset in ReverbPreset.allCases {
            #expect(abs(try ReverbSettings(preset: preset, mix: 30).decaySeconds - preset.decaySeconds) < 1e-9)
        }
    }
}
