/// Everything between an input source and the player: button edges go
/// through a `GestureRecognizer`, encoder lines through `RotaryDecoder`s,
/// and what comes out is looked up in a `ButtonMapping`.
///
/// Pure and clock-free like its parts: the source passes the time of each
/// edge and ticks it by `nextDeadline`. The returned commands are in time
/// order. A value type; each source owns one and uses it from its thread.

import TuttiCore
public struct GestureRouter: Sendable {
    public let mapping: ButtonMapping
    public private(set) var recognizer: GestureRecognizer
    private var decoders: [String: RotaryDecoder] = [:]

    /// A relative-axis event moves at most this many detents: a corrupt
    /// value must not turn into a billion volume steps.
    public static let maxStepsPerEvent = 16

    public init(mapping: ButtonMapping) {
        self.mapping = mapping
        recognizer = mapping.makeRecognizer()
    }

    public var nextDeadline: LocalTime? { recognizer.nextDeadline }

    /// An edge of a button. Buttons nothing is bound to are ignored.
    public mutating func button(_ name: String, isPressed: Bool, at time: LocalTime) -> [ButtonCommandEvent] {
        guard !mapping.effectiveBindings(for: name).isEmpty else { return tick(now: time) }
        return commands(recognizer.edge(name, isPressed: isPressed, at: time))
    }

    public mutating func tick(now: LocalTime) -> [ButtonCommandEvent] {
        commands(recognizer.tick(now: now))
    }

    /// The levels of a GPIO encoder's lines when the source started. An
    /// encoder not started this way takes its first reported levels as
    /// its start.
    public mutating func startEncoder(_ name: String, a: Bool, b: Bool) {
        let perDetent = mapping.encoder(named: name)?.transitionsPerDetent ?? 4
        decoders[name] = RotaryDecoder(a: a, b: b, transitionsPerDetent: perDetent)
    }

    /// A GPIO encoder's lines now read `a`, `b` (after an edge on either).
    public mutating func encoderLevels(_ name: String, a: Bool, b: Bool, at time: LocalTime) -> [ButtonCommandEvent] {
        var out = tick(now: time)
        guard var decoder = decoders[name] else {
            startEncoder(name, a: a, b: b)
            return out
        }
        if case .step(let n) = decoder.update(a: a, b: b) {
            out += turns(name, steps: n, at: time)
        }
        decoders[name] = decoder
        return out
    }

    /// Invalid quadrature transitions seen on `name` (both lines changed at once).
    public func invalidTransitions(_ name: String) -> Int { decoders[name]?.invalidTransitions ?? 0 }

    /// A relative-axis encoder moved `steps` detents (positive: clockwise).
    public mutating func encoderSteps(_ name: String, steps: Int, at time: LocalTime) -> [ButtonCommandEvent] {
        tick(now: time) + turns(name, steps: steps, at: time)
    }

    /// The source ended; see `GestureRecognizer.finish(at:)`.
    public mutating func finish(at time: LocalTime) -> [ButtonCommandEvent] {
        decoders = [:]
        return commands(recognizer.finish(at: time))
    }

    /// Forgets all button state (events were lost); reports nothing.
    public mutating func reset() {
        recognizer.reset()
    }

    private func turns(_ name: String, steps: Int, at time: LocalTime) -> [ButtonCommandEvent] {
        let direction: EncoderDirection = steps > 0 ? .clockwise : .counterclockwise
        guard steps != 0, let command = mapping.effectiveBindings(forEncoder: name)[direction] else { return [] }
        let count = min(steps.magnitude, UInt(Self.maxStepsPerEvent))
        return Array(repeating: ButtonCommandEvent(command: command, source: name, trigger: .turn(direction), time: time), count: Int(count))
    }

    private func commands(_ gestures: [GestureEvent]) -> [ButtonCommandEvent] {
        gestures.compactMap { g in
            mapping.command(for: g).map {
                ButtonCommandEvent(command: $0, source: g.button, trigger: .gesture(g.gesture, repeatCount: g.repeatCount), time: g.time)
            }
        }
    }
}
