/// A follower's view of local time when tests simulate a machine whose
/// clock is offset and runs at a different rate from the real one:
/// `local = real + offset + skew · (real − origin)`.
public struct SimulatedClock: Sendable, Equatable {
    public var offset: Int64
    public var skew: Double
    public var origin: Int64

    public init(offset: Int64 = 0, skewPPM: Double = 0, origin: Int64 = 0) {
        self.offset = offset
        self.skew = skewPPM * 1e-6
        self.origin = origin
    }

    public var isIdentity: Bool { offset == 0 && skew == 0 }

    @inline(__always)
    public func local(fromReal real: Int64) -> LocalTime {
        LocalTime(nanoseconds: real &+ offset &+ Int64((Double(real &- origin) * skew).rounded()))
    }

    @inline(__always)
    public func real(fromLocal local: LocalTime) -> Int64 {
        let shifted = Double(local.nanoseconds &- offset &- origin) / (1 + skew)
        return origin &+ Int64(shifted.rounded())
    }
}
