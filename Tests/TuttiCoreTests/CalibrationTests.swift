import Foundation
import Testing
@testable import TuttiCore

/// A room as the microphone hears it: the sweep after `delay` seconds, and
/// reflections (a simple reverb tail) after it.
struct SynthesisedRoom {
    var delay: Double
    var reflections: [(delay: Double, gain: Double)]

    /// About 20 reflections, decaying by 60 dB over 300 ms, at delays from 2 ms on.
    static func reverberant(_ delay: Double, seed: UInt64) -> SynthesisedRoom {
        var rng = SplitMix64(seed: seed)
        var reflections: [(Double, Double)] = []
        for _ in 0..<20 {
            let after = 0.002 + rng.unit() * 0.3
            let gain = 0.5 * pow(10, -3 * after / 0.3) * (rng.unit() < 0.5 ? -1 : 1)
            reflections.append((after, gain))
        }
        return SynthesisedRoom(delay: delay, reflections: reflections)
    }
}

/// A recording of `plan` at `rate`: `lead` seconds before the first slot,
/// each slot's room as given, Gaussian noise `snr` dB under the sweep's
/// level, the recorder's clock `ppm` fast.
func synthesisedRecording(plan: CalibrationPlan, rooms: [String: SynthesisedRoom], rate: Int = 48_000, lead: Double = 0.7,
                          amplitude: Double = 0.3, snr: Double? = 20, ppm: Double = 0, seed: UInt64 = 1) -> [Float] {
    let total = Int((lead + plan.duration + 1.0) * Double(rate))
    var out = [Double](repeating: 0, count: total)
    let sweep = plan.sweep
    let top = min(sweep.endFrequency, 0.45 * Double(rate)) // the recorder's anti-alias filter
    for (i, name) in plan.slots.enumerated() {
        guard let room = rooms[name] else { continue }
        let paths = [(room.delay, 1.0)] + room.reflections.map { (room.delay + $0.delay, $0.gain) }
        for (delay, gain) in paths {
            let start = lead + plan.slotStart(i) + delay
            let first = Int(start * (1 + ppm * 1e-6) * Double(rate))
            for n in max(0, first)..<min(total, first + Int((sweep.seconds + 0.01) * Double(rate)) + 2) {
                let t = Double(n) / Double(rate) / (1 + ppm * 1e-6) - start
                out[n] += amplitude * gain * sweep.value(at: t, endingAt: sweep.time(atFrequency: top))
            }
        }
    }
    if let snr {
        var rng = SplitMix64(seed: seed)
        let sigma = amplitude / 2.0.squareRoot() * pow(10, -snr / 20)
        for n in 0..<total {
            // Box–Muller.
            let u = max(rng.unit(), 1e-300), v = rng.unit()
            out[n] += sigma * (-2 * log(u)).squareRoot() * cos(2 * Double.pi * v)
        }
    }
    return out.map { Float($0) }
}

@Suite struct CalibrationTests {
    let plan = CalibrationPlan(rooms: ["kitchen", "living"])

    @Test func fftMatchesTheDefinition() {
        let n = 64
        var rng = SplitMix64(seed: 7)
        let x = (0..<n).map { _ in rng.unit() - 0.5 }
        var re = x, im = [Double](repeating: 0, count: n)
        FFT(count: n).transform(real: &re, imaginary: &im)
        for k in [0, 1, 5, 31, 32, 63] {
            var sr = 0.0, si = 0.0
            for (i, v) in x.enumerated() {
                sr += v * cos(-2 * Double.pi * Double(k * i) / Double(n)); si += v * sin(-2 * Double.pi * Double(k * i) / Double(n))
            }
            #expect(abs(re[k] - sr) < 1e-9 && abs(im[k] - si) < 1e-9)
        }
        FFT(count: n).transform(real: &re, imaginary: &im, inverse: true)
        #expect(zip(re, x).allSatisfy { abs($0 / Double(n) - $1) < 1e-12 })
    }

    @Test func planRepeatsTheFirstRoomAndRoundTripsAsJSON() throws {
        #expect(plan.slots == ["kitchen", "living", "kitchen"])
        #expect(abs(plan.duration - 5.0) < 1e-12)
        var timed = plan
        timed.startLeaderNanoseconds = 123_000_000_000
        let back = try #require(CalibrationPlan(json: timed.json))
        #expect(back == timed)
        #expect(CalibrationPlan(json: ["rooms": ["a", "a"], "slotMs": 2000]) == nil)
        #expect(CalibrationPlan(json: ["rooms": ["a"], "slotMs": 100]) == nil)
    }

    /// Delays 2.9 and 11.3 ms, a reverb tail, noise at 20 dB SNR: each within ±0.1 ms.
    func measure(rate: Int, ppm: Double = 0) throws -> CalibrationResult {
        let rooms = ["kitchen": SynthesisedRoom.reverberant(0.0029, seed: 11), "living": SynthesisedRoom.reverberant(0.0113, seed: 12)]
        let recording = synthesisedRecording(plan: plan, rooms: rooms, rate: rate, ppm: ppm)
        let result = try Calibration.analyse(recording: recording, sampleRate: rate, plan: plan)
        print("calibration at \(rate) Hz, \(ppm) ppm: \(result)")
        #expect(result.isUsable)
        let kitchen = try #require(result.rooms[0].delayMilliseconds), living = try #require(result.rooms[1].delayMilliseconds)
        #expect(abs(kitchen - 0) < 0.1)
        #expect(abs(living - 8.4) < 0.1)
        #expect(result.rooms.allSatisfy { $0.confidenceDB > 40 })
        return result
    }

    @Test func findsDelaysAt48kHz() throws { _ = try measure(rate: 48_000) }
    @Test func findsDelaysAt16kHz() throws { _ = try measure(rate: 16_000) }
    @Test func findsDelaysAt44100Hz() throws { _ = try measure(rate: 44_100) }

    /// A phone 150 ppm fast would be 0.6 ms off on the last slot; the repeated first room measures it.
    @Test func correctsTheRecordersClockRate() throws {
        let result = try measure(rate: 48_000, ppm: 150)
        #expect(abs(result.recorderRatePPM - 150) < 10)
    }

    /// A recorder that ran dry (Chromium's capture under load) pads with
    /// digital silence: 60 ms of zeros between the first and second sweep
    /// would put the second room 60 ms late. The repeated first room shows
    /// time was gained; the gap is closed and both delays are right again.
    @Test func aDropoutPaddedWithSilenceIsClosed() throws {
        let rooms = ["kitchen": SynthesisedRoom.reverberant(0.0029, seed: 11), "living": SynthesisedRoom.reverberant(0.0113, seed: 12)]
        var recording = synthesisedRecording(plan: plan, rooms: rooms)
        recording.insert(contentsOf: [Float](repeating: 0, count: 2_880), at: Int(2.2 * 48_000))
        let result = try Calibration.analyse(recording: recording, sampleRate: 48_000, plan: plan)
        print("a 60 ms dropout: \(result)")
        #expect(result.isUsable)
        #expect(abs((result.rooms[0].delayMilliseconds ?? .nan) - 0) < 0.1)
        #expect(abs((result.rooms[1].delayMilliseconds ?? .nan) - 8.4) < 0.1)
        #expect(abs(result.closedGapsMilliseconds - 60) < 0.1)
    }

    /// Audio lost between the sweeps leaves nothing to close: refused, with how much.
    @Test func aRecordingThatLostTimeBetweenTheSweepsIsRefused() throws {
        let rooms = ["kitchen": SynthesisedRoom.reverberant(0.0029, seed: 11), "living": SynthesisedRoom.reverberant(0.0113, seed: 12)]
        var recording = synthesisedRecording(plan: plan, rooms: rooms)
        let at = Int(2.2 * 48_000)
        recording.removeSubrange(at..<(at + 2_880))
        do {
            let result = try Calibration.analyse(recording: recording, sampleRate: 48_000, plan: plan)
            Issue.record("analysed a recording that lost 60 ms: \(result)")
        } catch {
            guard case .skipped(let ms) = error else { Issue.record("\(error)"); return }
            #expect(abs(ms + 60) < 0.5)
            #expect(error.message.text(in: .english).contains("record again"))
        }
    }

    /// A noise gate's zeros are real time (no time was lost): nothing is closed.
    @Test func aNoiseGatesSilenceIsKept() throws {
        let rooms = ["kitchen": SynthesisedRoom.reverberant(0.0029, seed: 11), "living": SynthesisedRoom.reverberant(0.0113, seed: 12)]
        var recording = synthesisedRecording(plan: plan, rooms: rooms)
        for n in Int(2.1 * 48_000)..<Int(2.6 * 48_000) { recording[n] = 0 }
        let result = try Calibration.analyse(recording: recording, sampleRate: 48_000, plan: plan)
        #expect(result.isUsable)
        #expect(abs((result.rooms[1].delayMilliseconds ?? .nan) - 8.4) < 0.1)
        #expect(result.closedGapsMilliseconds == 0)
    }

    @Test func trimsDelayTheEarlyRoomsAndKeepTheLatest() {
        let result = CalibrationResult(rooms: [
            CalibrationRoomResult(room: "kitchen", delayMilliseconds: 0, confidenceDB: 60),
            CalibrationRoomResult(room: "living", delayMilliseconds: 8.4, confidenceDB: 60),
        ], recorderRatePPM: 0, peakDBFS: -10)
        // A positive trim plays a room earlier: the early kitchen is delayed by lowering its trim.
        #expect(result.trims(current: ["kitchen": 0, "living": 5]) == ["kitchen": -8.4, "living": 5])
    }

    @Test func refusesSilence() {
        let silence = [Float](repeating: 0, count: 48_000 * 7)
        #expect(throws: CalibrationRefusal.tooQuiet(peakDBFS: -200)) {
            try Calibration.analyse(recording: silence, sampleRate: 48_000, plan: plan)
        }
    }

    @Test func refusesNoiseOnly() {
        let noise = synthesisedRecording(plan: plan, rooms: [:], snr: 20)
        #expect(throws: CalibrationRefusal.tooNoisy) {
            try Calibration.analyse(recording: noise, sampleRate: 48_000, plan: plan)
        }
    }

    @Test func refusesAClippedRecording() throws {
        let rooms = ["kitchen": SynthesisedRoom(delay: 0.003, reflections: []), "living": SynthesisedRoom(delay: 0.01, reflections: [])]
        let loud = synthesisedRecording(plan: plan, rooms: rooms, amplitude: 3, snr: nil).map { max(-1, min(1, $0)) }
        do {
            _ = try Calibration.analyse(recording: loud, sampleRate: 48_000, plan: plan)
            Issue.record("a clipped recording was accepted")
        } catch {
            guard case .clipped(let n) = error else { Issue.record("refused as \(error)"); return }
            #expect(n > 1_000)
        }
    }

    @Test func refusesATooShortRecordingAndALowRate() {
        #expect(throws: CalibrationRefusal.tooShort(seconds: 1, needed: 5)) {
            try Calibration.analyse(recording: [Float](repeating: 0.1, count: 48_000), sampleRate: 48_000, plan: plan)
        }
        #expect(throws: CalibrationRefusal.sampleRateTooLow(8_000)) {
            try Calibration.analyse(recording: [Float](repeating: 0.1, count: 80_000), sampleRate: 8_000, plan: plan)
        }
    }

    @Test func aRoomNotHeardIsSaidSo() throws {
        let rooms = ["kitchen": SynthesisedRoom.reverberant(0.0029, seed: 11), "living": SynthesisedRoom.reverberant(0.0113, seed: 12)]
        let three = CalibrationPlan(rooms: ["kitchen", "living", "attic"])
        let recording = synthesisedRecording(plan: three, rooms: rooms)
        let result = try Calibration.analyse(recording: recording, sampleRate: 48_000, plan: three)
        #expect(!result.isUsable)
        #expect(result.rooms[2].problem == .notHeard)
        #expect(result.rooms[0].problem == nil && result.rooms[1].problem == nil)
        #expect(abs((result.rooms[1].delayMilliseconds ?? 0) - 8.4) < 0.1)
    }

    @Test func anEchoLouderThanTheDirectSoundIsSaidSo() throws {
        // The direct sound at 2.9 ms, an echo 4 ms later 1.5 times as loud.
        let rooms = ["kitchen": SynthesisedRoom(delay: 0.0029, reflections: [(0.004, 1.5)]),
                     "living": SynthesisedRoom.reverberant(0.0113, seed: 12)]
        let result = try Calibration.analyse(recording: synthesisedRecording(plan: plan, rooms: rooms, amplitude: 0.2), sampleRate: 48_000, plan: plan)
        guard case .twoPeaks(let apart) = result.rooms[0].problem else { Issue.record("\(result)"); return }
        #expect(abs(apart - 4) < 0.1)
        #expect(!result.isUsable)
    }

    /// Room correction: a known EQ applied to the sweeps (and noise at 20 dB SNR) is found within ±1 dB at the ten band centres.
    @Test func recoversAKnownFilterWithinOneDecibel() throws {
        let settings = try EqualizerSettings(gains: [4, -3, 0, 5, -6, 2, 0, -4, 3, -2])
        let rooms = ["kitchen": SynthesisedRoom(delay: 0.0029, reflections: []), "living": SynthesisedRoom(delay: 0.0113, reflections: [])]
        let dry = synthesisedRecording(plan: plan, rooms: rooms, snr: nil)
        let wet = filtered(dry.flatMap { [$0, $0] }, settings)
        let noise = synthesisedRecording(plan: plan, rooms: [:], snr: 20, seed: 3)
        let recording = (0..<dry.count).map { wet[2 * $0] + noise[$0] }
        let result = try Calibration.analyse(recording: recording, sampleRate: 48_000, plan: plan)
        let design = EqualizerDesign(settings)
        let bands = EqualizerSettings.bandFrequencies
        let truth = bands.map { design.filterGainDB(at: $0) }
        let mid = zip(bands, truth).filter { (250...4_000).contains($0.0) }.map(\.1)
        let expected = truth.map { $0 - mid.reduce(0, +) / Double(mid.count) }
        for room in result.rooms {
            let found = room.responseDB.map { $0 ?? .nan }
            print("response of \(room.room): \(found.map { Calibration.format($0, 2) }), expected \(expected.map { Calibration.format($0, 2) }), EQ \(room.correction)")
            #expect(found.count == 10)
            for (f, e) in zip(found, expected) { #expect(abs(f - e) <= 1, "found \(found), expected \(expected)") }
            // The correction cuts what is too loud and boosts at most 3 dB.
            #expect(zip(room.correction, expected).allSatisfy { c, e in abs(c - max(-12, min(3, -e))) <= 1.25 })
            #expect(room.correction.allSatisfy { $0 <= 3 })
        }
    }
}
