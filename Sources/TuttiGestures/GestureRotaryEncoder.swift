/// Which way a rotary encoder turned, as the mapping names it.

import TuttiCore
public enum EncoderDirection: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Line A leads line B (swap the wires, or the mapping, to reverse).
    case clockwise = "cw"
    case counterclockwise = "ccw"

    public var description: String { rawValue }
}

/// Decodes the two lines of a mechanical quadrature encoder into detent
/// steps.
///
/// The lines step through the Gray sequence 00 → 10 → 11 → 01 → 00 (A, B)
/// one way and backwards the other. Each valid transition moves a position
/// counter by ±1; a change of both lines at once is impossible for a real
/// encoder (an edge was missed), so its direction is unknown: it is counted
/// in `invalidTransitions` and the detent it happened in is dropped. Contact
/// bounce on one line is harmless: it moves the counter back and forth.
///
/// A step is reported when the lines arrive at a detent state: the state
/// they were in at `init` (a knob rests in a detent), plus its complement
/// for encoders with two detents per cycle, or every state for one. The
/// step is the counter divided by the transitions per detent, rounded, so a
/// rest state guessed one transition off still gives one step per detent.
///
/// A value type with no clock; not thread-safe by itself.
public struct RotaryDecoder: Sendable, Equatable {
    public enum Action: Sendable, Equatable {
        case none
        /// Detents turned: +1 clockwise, −1 counterclockwise.
        case step(Int)
        /// Both lines changed at once; ignored.
        case invalid
    }

    /// Quadrature transitions from one detent to the next: 4 for most
    /// detented knobs (EC11 and the like), 2 or 1 for others.
    public let transitionsPerDetent: Int
    /// (A << 1) | B, the levels last seen.
    public private(set) var state: UInt8
    public private(set) var invalidTransitions = 0
    private let restState: UInt8
    private var counter = 0
    /// Set by an invalid transition until the next detent state.
    private var lostTrack = false

    public init(a: Bool, b: Bool, transitionsPerDetent: Int = 4) {
        precondition([1, 2, 4].contains(transitionsPerDetent), "transitions per detent must be 1, 2 or 4")
        self.transitionsPerDetent = transitionsPerDetent
        state = Self.encode(a: a, b: b)
        restState = state
    }

    /// The lines now read `a`, `b`.
    public mutating func update(a: Bool, b: Bool) -> Action {
        let next = Self.encode(a: a, b: b)
        let move = (Self.position[Int(next)] - Self.position[Int(state)] + 4) % 4
        state = next
        switch move {
        case 0:
            return .none
        case 2:
            invalidTransitions += 1
            lostTrack = true
            counter = 0
            return .invalid
        default:
            counter += move == 1 ? 1 : -1
        }
        guard isDetent(next) else { return .none }
        defer { counter = 0 }
        if lostTrack {
            lostTrack = false
            return .none
        }
        // Rounded half away from zero: 2 of 4 transitions count as a detent.
        let half = transitionsPerDetent / 2
        let steps = counter >= 0 ? (counter + half) / transitionsPerDetent : -((-counter + half) / transitionsPerDetent)
        return steps == 0 ? .none : .step(steps)
    }

    private func isDetent(_ s: UInt8) -> Bool {
        switch transitionsPerDetent {
        case 4: s == restState
        case 2: s == restState || s == restState ^ 0b11
        default: true
        }
    }

    private static func encode(a: Bool, b: Bool) -> UInt8 { (a ? 2 : 0) | (b ? 1 : 0) }

    /// Place of each state (index (A << 1) | B) in the clockwise Gray cycle
    /// 00, 10, 11, 01.
    private static let position = [0, 3, 1, 2]
}
