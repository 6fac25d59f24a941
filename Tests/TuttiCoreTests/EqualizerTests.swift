import Foundation
import Testing
@testable import TuttiCore

/// The amplitude of the `frequency` component of `x` (one channel of
/// interleaved stereo) over `count` frames from `start`: a least-squares fit,
/// over a whole number of periods so the estimate has no leakage.
func toneAmplitude(_ x: UnsafePointer<Float>, start: Int, count: Int, frequency: Double, channel: Int = 0) -> Double {
    let period = 48_000 / frequency
    let n = Int((Double(count) / period).rounded(.down) * period)
    var s = 0.0, c = 0.0
    for i in 0..<n {
        let v = Double(x[2 * (start + i) + channel])
        let w = 2 * Double.pi * frequency * Double(start + i) / 48_000
        s += v * sin(w); c += v * cos(w)
    }
    return 2 * (s * s + c * c).squareRoot() / Double(n)
}

/// Runs `frames` of `signal` through a processor in blocks of `block`, publishing `settings` first.
func filtered(_ signal: [Float], _ settings: EqualizerSettings, block: Int = 256) -> [Float] {
    let published = PublishedEqualizer()
    published.publish(EqualizerDesign(settings))
    let processor = EqualizerProcessor(source: published, maxFrames: block)
    var out = signal
    out.withUnsafeMutableBufferPointer { p in
        var i = 0
        while i < signal.count / 2 {
            let n = min(block, signal.count / 2 - i)
            processor.process(p.baseAddress! + 2 * i, frames: n)
            i += n
        }
    }
    return out
}

@Suite struct EqualizerTests {
    @Test func everyPresetReadsAsItsSlidersAtTheBandCentres() {
        for preset in EqualizerPreset.builtIn {
            let design = EqualizerDesign(preset.settings)
            for (f, g) in zip(EqualizerSettings.bandFrequencies, preset.gains) {
                let got = design.filterGainDB(at: f)
                #expect(abs(got - g) < 0.05, "\(preset.name) at \(f) Hz: \(got) dB, slider \(g)")
            }
        }
        // Without the overlap correction one-octave bands add up: Bass would be far louder at 32 Hz than it says.
        let naive = EqualizerDesign.bandsResponse(EqualizerPreset.builtIn[1].gains)
        #expect(naive[0] > 7, "uncorrected Bass at 32 Hz: \(naive[0]) dB")
    }

    @Test func biquadsMatchTheCookbook() {
        let p = BiquadCoefficients.peaking(frequency: 1_000, gainDB: 6, q: 2.0.squareRoot(), sampleRate: 48_000)
        #expect(abs(p.gainDB(at: 1_000, sampleRate: 48_000) - 6) < 1e-9)
        #expect(abs(p.gainDB(at: 20, sampleRate: 48_000)) < 0.01)
        let low = BiquadCoefficients.lowShelf(frequency: 100, gainDB: 6, sampleRate: 48_000)
        #expect(abs(low.gainDB(at: 10, sampleRate: 48_000) - 6) < 0.1 && abs(low.gainDB(at: 100, sampleRate: 48_000) - 3) < 0.01)
        #expect(abs(low.gainDB(at: 5_000, sampleRate: 48_000)) < 0.05)
        let high = BiquadCoefficients.highShelf(frequency: 8_000, gainDB: -6, sampleRate: 48_000)
        #expect(abs(high.gainDB(at: 20_000, sampleRate: 48_000) + 6) < 0.5 && abs(high.gainDB(at: 100, sampleRate: 48_000)) < 0.01)
    }

    @Test func preampLeavesHeadroomForTheLargestBoost() throws {
        #expect(EqualizerPreset.builtIn[1].settings.preampDecibels == -6)
        #expect(try EqualizerSettings(gains: [-3, 0, 0, 0, 0, 0, 0, 0, 0, 0]).preampDecibels == 0, "cuts need no headroom")
        #expect(try EqualizerSettings(gains: Array(repeating: 0, count: 10), treble: 4).preampDecibels == -4)
        #expect(try EqualizerSettings(gains: Array(repeating: 2, count: 10), preamp: .manual(decibels: 1.5)).preampDecibels == 1.5)
        #expect(try EqualizerSettings(gains: [1.26, 0, 0, 0, 0, 0, 0, 0, 0, 0]).gains[0] == 1.5, "0.5 dB steps")
        #expect(throws: EqualizerError.outOfRange("band gain", 13)) { try EqualizerSettings(gains: [13, 0, 0, 0, 0, 0, 0, 0, 0, 0]) }
        #expect(throws: EqualizerError.bandCount(3)) { try EqualizerSettings(gains: [1, 2, 3]) }
        #expect(EqualizerSettings.flat.isFlat && EqualizerDesign(.flat).isBypass)
        #expect(!(try EqualizerSettings(gains: Array(repeating: 0, count: 10), preamp: .manual(decibels: -3))).isFlat, "a preamp alone is not flat")
    }

    @Test func sineProbesThroughTheProcessorMatchTheDesign() throws {
        // Every preset, every band centre: the processor does what the design says, within 0.05 dB.
        for preset in EqualizerPreset.builtIn + [EqualizerPreset(name: "shelves", gains: Array(repeating: 0, count: 10))] {
            let settings = preset.name == "shelves" ? try EqualizerSettings(gains: preset.gains, bass: 6, treble: -4) : preset.settings
            let design = EqualizerDesign(settings)
            for f in EqualizerSettings.bandFrequencies {
                let probe = TestSignal.sine(frequency: f, seconds: 0.6, amplitude: 0.25)
                let out = filtered(probe, settings)
                let gain = out.withUnsafeBufferPointer { o in probe.withUnsafeBufferPointer { p in
                    20 * log10(toneAmplitude(o.baseAddress!, start: 14_400, count: 14_400, frequency: f)
                               / toneAmplitude(p.baseAddress!, start: 14_400, count: 14_400, frequency: f))
                } }
                #expect(abs(gain - design.gainDB(at: f)) < 0.05, "\(preset.name) at \(f) Hz: \(gain) dB, design \(design.gainDB(at: f))")
            }
        }
    }

    @Test func flatIsBitExact() {
        let music = TestSignal.music(seconds: 1)
        let out = filtered(music, .flat)
        #expect(out.map(\.bitPattern) == music.map(\.bitPattern))
    }

    @Test func aPresetChangeCrossfadesWithoutAClickAndFlatIsBypassedAgain() {
        let f = 200.0
        let signal = TestSignal.sine(frequency: f, seconds: 3, amplitude: 0.5)
        let published = PublishedEqualizer()
        let block = 240
        let processor = EqualizerProcessor(source: published, maxFrames: block)
        var out = signal
        let presets = ["Flat", "Bass", "Treble", "Loudness", "Vocal", "Flat", "Electronic", "Rock", "Flat"]
        out.withUnsafeMutableBufferPointer { p in
            for b in 0..<(signal.count / 2 / block) {
                // A new preset every 300 ms, flat (bypass) in between too.
                if b % 60 == 10 {
                    let name = presets[(b / 60) % presets.count]
                    published.publish(EqualizerDesign(EqualizerPreset.find(name, custom: [])!.settings))
                }
                processor.process(p.baseAddress! + 2 * b * block, frames: block)
            }
        }
        var peak: Float = 0, step: Float = 0
        for i in 1..<(out.count / 2) {
            peak = max(peak, abs(out[2 * i]))
            step = max(step, abs(out[2 * i] - out[2 * i - 2]))
        }
        // A sine of amplitude A steps at most A·2πf/fs from sample to sample; a click would step far more.
        let ownStep = peak * Float(2 * Double.pi * f / 48_000)
        #expect(step <= ownStep * 1.02, "largest step \(step), the signal's own \(ownStep)")
        #expect(processor.isBypassed, "ended on Flat: bypassed")
    }

    @Test func presetsCycleAndCustomOnesAreFound() {
        let custom = [EqualizerPreset(name: "Bathroom", gains: [0, 0, 0, 0, 0, 0, -2, -3, -4, -4])]
        #expect(EqualizerPreset.next(after: "Flat", custom: custom).name == "Bass")
        #expect(EqualizerPreset.next(after: "Loudness", custom: custom).name == "Bathroom")
        #expect(EqualizerPreset.next(after: "Bathroom", custom: custom).name == "Flat")
        #expect(EqualizerPreset.next(after: nil, custom: []).name == "Bass")
        #expect(EqualizerPreset.find("bathroom", custom: custom)?.gains.last == -4)
    }

    @Test func gainRampsAndTheVolumeCurve() {
        var ramp = GainRamp()
        #expect(ramp.next() == 1)
        ramp.move(to: 0, frames: 4)
        #expect((0..<5).map { _ in ramp.next() } == [0.75, 0.5, 0.25, 0, 0])
        ramp.move(to: 1, frames: 3)
        let up = (0..<4).map { _ in ramp.next() }
        #expect(up.last == 1 && up.allSatisfy { $0 > 0 && $0 <= 1 })
        #expect(RoomSettings(volume: 100).gain == 1)
        #expect(RoomSettings(volume: 50).decibels == -25)
        #expect(abs(Double(RoomSettings(volume: 80).gain) - pow(10, -10.0 / 20)) < 1e-6)
        #expect(RoomSettings(volume: 0).gain == 0 && RoomSettings(volume: 70, muted: true).gain == 0)
    }
}
