import Glibc

/// Speed and pitch of a group's playback, applied at the leader before the
/// encode. Positions stay in track time: at speed s, a track frame plays
/// for 1/s of a stream frame.
public struct PlaybackTempo: Sendable, Equatable, Codable {
    public static let speedRange: ClosedRange<Double> = 0.5...2.0
    public static let pitchRange: ClosedRange<Double> = -12...12
    public static let normal = PlaybackTempo()

    /// Track seconds per second heard.
    public var speed: Double = 1
    /// Semitones up (positive) or down, at unchanged speed.
    public var pitchSemitones: Double = 0

    public init(speed: Double = 1, pitchSemitones: Double = 0) {
        self.speed = speed
        self.pitchSemitones = pitchSemitones
    }

    /// Nothing to do: the samples pass untouched (and bit-exact).
    public var isNormal: Bool { speed == 1 && pitchSemitones == 0 }

    /// Frequency ratio of a shift by `semitones` (equal temperament).
    public static func pitchScale(semitones: Double) -> Double { pow(2, semitones / 12) }

    /// Checks a speed from a client: 0.5–2.0×, rounded to 0.01.
    public static func validSpeed(_ value: Double) -> Double? {
        guard value.isFinite, speedRange.contains(value) else { return nil }
        return (value * 100).rounded() / 100
    }

    /// Checks a pitch from a client: ±12 semitones, rounded to 0.1 (cents beyond that are no use here).
    public static func validPitch(_ value: Double) -> Double? {
        guard value.isFinite, pitchRange.contains(value) else { return nil }
        return (value * 10).rounded() / 10
    }
}
