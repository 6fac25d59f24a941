// Buttons: debounced edges in, gestures out (issue 5). Pure logic on
// injected time, so every threshold can be tested to the nanosecond.

import TuttiCore

/// What a button did. The recogniser reports these; the mapping turns them
/// into commands.
public enum Gesture: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The button went down (after debouncing), reported at once. For
    /// actions that must not wait to learn whether a double or long press
    /// follows, such as the first step of a volume ramp.
    case down
    /// A single short press, reported on release or, when a double press is
    /// being looked for, once the double-press window has passed.
    case press
    /// A second press that began within the double-press window after the
    /// first was released; reported when the second press goes down.
    case double
    /// Held for the long-press threshold; reported while still held.
    case long
    /// Repeats while held past the long-press threshold: the first at the
    /// threshold itself, then one every repeat interval (volume ramps).
    case hold
    /// Released after a long press (ends whatever `long` or `hold` began).
    case longRelease = "long-release"

    public var description: String { rawValue }
}

/// A recognised gesture of one named button.
public struct GestureEvent: Sendable, Hashable, CustomStringConvertible {
    public var button: String
    public var gesture: Gesture
    /// When the gesture happened on the input clock: the (debounced) edge
    /// that completed it, or the deadline that expired. This is the logical
    /// time, not when the caller happened to deliver the tick.
    public var time: LocalTime
    /// For `.hold`: 1 for the repeat at the long-press threshold, then 2,
    /// 3, …; 0 for every other gesture.
    public var repeatCount: Int

    public init(button: String, gesture: Gesture, time: LocalTime, repeatCount: Int = 0) {
        self.button = button
        self.gesture = gesture
        self.time = time
        self.repeatCount = repeatCount
    }

    public var description: String {
        "\(button) \(gesture)\(gesture == .hold ? "#\(repeatCount)" : "") @\(time.nanoseconds)ns"
    }
}

/// Timing of one button, in nanoseconds. A `nil` threshold switches that
/// gesture off, which makes the others quicker: without a double-press
/// window a press is reported on release instead of 300 ms later, and
/// without a long-press threshold a long hold still ends as a plain press.
public struct GestureConfiguration: Sendable, Hashable {
    /// Edges closer together than this are contact bounce. A level change
    /// counts once the line has been quiet this long, and is dated at the
    /// first edge of the burst. 0 takes every edge as it comes (for sources
    /// that debounce already, such as the kernel's gpio-keys driver).
    public var debounce: Int64
    /// How long after a release a second press makes a double press.
    public var doublePressWindow: Int64?
    /// How long a button must be held to make a long press.
    public var longPress: Int64?
    /// Period of `.hold` repeats after the long-press threshold.
    public var repeatInterval: Int64?

    public init(
        debounce: Int64 = 20 * nanosecondsPerMillisecond,
        doublePressWindow: Int64? = 300 * nanosecondsPerMillisecond,
        longPress: Int64? = 600 * nanosecondsPerMillisecond,
        repeatInterval: Int64? = 150 * nanosecondsPerMillisecond
    ) {
        self.debounce = debounce
        self.doublePressWindow = doublePressWindow
        self.longPress = longPress
        self.repeatInterval = repeatInterval
    }

    /// Debounce 20 ms, double press 300 ms, long press 600 ms, repeat every 150 ms.
    public static let standard = GestureConfiguration()

    /// Negative durations, a zero long-press or repeat period (which would
    /// fire forever at one instant), or durations over an hour are
    /// programmer errors; the config parser rejects them before they get here.
    var isValid: Bool {
        let hour = 3_600 * nanosecondsPerSecond
        return (0...hour).contains(debounce) && (0...hour).contains(doublePressWindow ?? 0)
            && (1...hour).contains(longPress ?? 1) && (1...hour).contains(repeatInterval ?? 1)
    }
}

/// Turns press and release edges of named buttons into gestures.
///
/// A value-type state machine: feed it edges and `tick(now:)` calls, it
/// returns the gestures that became certain, each dated at its logical
/// time. It never reads a clock, so the caller decides what time is — the
/// kernel's event timestamps in production, exact numbers in tests. Call
/// `tick` by `nextDeadline` at the latest, or gestures are late (never lost
/// or reordered: every edge and tick first catches up on the deadlines that
/// passed). Times that go backwards are treated as the latest time seen.
///
/// Not thread-safe by itself (a value); each input source owns one.
public struct GestureRecognizer: Sendable {
    public let configuration: GestureConfiguration
    private let perButton: [String: GestureConfiguration]
    private var machines: [String: ButtonGestureMachine] = [:]
    private var latest: LocalTime?

    /// - Parameters:
    ///   - configuration: timing of buttons not named in `perButton`.
    ///   - perButton: timing of particular buttons.
    public init(configuration: GestureConfiguration = .standard, perButton: [String: GestureConfiguration] = [:]) {
        precondition(configuration.isValid && perButton.values.allSatisfy(\.isValid), "invalid gesture timing")
        self.configuration = configuration
        self.perButton = perButton
    }

    public func configuration(for button: String) -> GestureConfiguration {
        perButton[button] ?? configuration
    }

    /// The debounced state of `button`.
    public func isPressed(_ button: String) -> Bool { machines[button]?.stable ?? false }

    /// The earliest time at which a tick could produce a gesture (or settle
    /// a bouncing contact); nil when nothing is pending.
    public var nextDeadline: LocalTime? {
        machines.values.compactMap(\.nextDeadline).min()
    }

    public mutating func pressed(_ button: String, at time: LocalTime) -> [GestureEvent] {
        edge(button, isPressed: true, at: time)
    }

    public mutating func released(_ button: String, at time: LocalTime) -> [GestureEvent] {
        edge(button, isPressed: false, at: time)
    }

    /// One edge of `button` at `time`. An edge to the level the button is
    /// already at (a missed opposite edge, or a level read late by the
    /// driver) counts as bounce activity and changes nothing else.
    public mutating func edge(_ button: String, isPressed: Bool, at time: LocalTime) -> [GestureEvent] {
        let t = clamp(time)
        var out: [GestureEvent] = []
        advance(to: t, into: &out)
        var machine = machines[button] ?? ButtonGestureMachine(name: button, config: configuration(for: button))
        machine.edge(isPressed: isPressed, at: t, into: &out)
        machines[button] = machine
        return ordered(out)
    }

    /// Reports the gestures whose deadlines are at or before `now`.
    public mutating func tick(now: LocalTime) -> [GestureEvent] {
        let t = clamp(now)
        var out: [GestureEvent] = []
        advance(to: t, into: &out)
        return ordered(out)
    }

    /// The input has ended at `time` (device unplugged, end of a replay):
    /// catches up to `time`, takes a still-bouncing contact at its last
    /// level, reports a press still waiting for its double-press window,
    /// closes a long press with `.longRelease`, and forgets every button.
    public mutating func finish(at time: LocalTime) -> [GestureEvent] {
        let t = clamp(time)
        var out: [GestureEvent] = []
        advance(to: t, into: &out)
        for name in machines.keys.sorted() {
            machines[name]!.finish(at: t, into: &out)
        }
        machines = [:]
        return ordered(out)
    }

    /// Forgets every button without reporting anything: the state of the
    /// keys is unknown (the kernel dropped events). A button still held
    /// produces nothing until it is released and pressed again.
    public mutating func reset() {
        machines = [:]
    }

    private mutating func clamp(_ time: LocalTime) -> LocalTime {
        // Kept well inside Int64 so that time plus any threshold (at most an
        // hour) cannot overflow, whatever timestamp a corrupt record carries.
        let t = min(max(time, latest ?? time, Self.minimumTime), Self.maximumTime)
        latest = t
        return t
    }

    private static let minimumTime = LocalTime(nanoseconds: Int64.min / 4)
    private static let maximumTime = LocalTime(nanoseconds: Int64.max / 4)

    /// Runs every button's internal deadlines up to `t`, earliest first
    /// across buttons (ties by name), so gestures come out in time order.
    private mutating func advance(to t: LocalTime, into out: inout [GestureEvent]) {
        while true {
            var best: (name: String, at: LocalTime)?
            for (name, machine) in machines {
                guard let d = machine.nextDeadline, d <= t else { continue }
                if best == nil || d < best!.at || (d == best!.at && name < best!.name) { best = (name, d) }
            }
            guard let name = best?.name else { return }
            machines[name]!.step(upTo: t, into: &out)
        }
    }

    /// Settling a burst can report gestures dated before ones another button
    /// reported in the same call; callers get them in time order.
    private func ordered(_ events: [GestureEvent]) -> [GestureEvent] {
        guard events.count > 1 else { return events }
        return events.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
    }
}

/// One button: a debouncer in front of a gesture state machine.
struct ButtonGestureMachine: Sendable {
    let name: String
    let config: GestureConfiguration

    /// The debounced level, and the level the last edge left the line at.
    private(set) var stable = false
    private var raw = false
    /// A burst of edges not yet settled: when it began, and its last edge.
    private var burst: (start: LocalTime, last: LocalTime)?

    enum Phase: Sendable, Equatable {
        case idle
        /// Down, not yet long.
        case firstDown(since: LocalTime)
        /// Held past the long-press threshold; `repeats` reported so far.
        case held(repeats: Int, nextRepeat: LocalTime?)
        /// Released after a short press; a press now would be a double.
        case awaitingSecond(releasedAt: LocalTime)
        /// The second press of a double, held; its release ends it quietly.
        case secondDown
    }
    private(set) var phase = Phase.idle

    init(name: String, config: GestureConfiguration) {
        self.name = name
        self.config = config
    }

    /// While a burst is unsettled the gesture deadlines wait: the burst may
    /// turn out to be a release that happened before them (a button let go
    /// at 590 ms with bounce until 610 ms was not a long press).
    var nextDeadline: LocalTime? {
        if let burst { return burst.last + config.debounce }
        return gestureDeadline
    }

    private var gestureDeadline: LocalTime? {
        switch phase {
        case .idle, .secondDown: nil
        case .firstDown(let since): config.longPress.map { since + $0 }
        case .held(_, let next): next
        case .awaitingSecond(let releasedAt): config.doublePressWindow.map { releasedAt + $0 }
        }
    }

    mutating func edge(isPressed: Bool, at t: LocalTime, into out: inout [GestureEvent]) {
        if config.debounce == 0 {
            guard isPressed != stable else { return }
            stable = isPressed
            raw = isPressed
            apply(isPressed: isPressed, at: t, into: &out)
            return
        }
        if let b = burst {
            burst = (b.start, t)
        } else {
            burst = (t, t)
        }
        raw = isPressed
    }

    /// Performs the one earliest internal step due at or before `t`.
    mutating func step(upTo t: LocalTime, into out: inout [GestureEvent]) {
        if let b = burst {
            guard b.last + config.debounce <= t else { return }
            settle(b, into: &out)
            return
        }
        guard let d = gestureDeadline, d <= t else { return }
        if case .held(let repeats, let next?) = phase, let interval = config.repeatInterval,
            t - next > Self.maxCatchUp * interval
        {
            // Far behind (a stalled thread, a replay that jumps in time):
            // a burst of hundreds of volume steps helps no one, so skip to
            // the last few repeats due. The count still says how long it
            // has been held.
            let skipped = (t - next) / interval - (Self.maxCatchUp - 1)
            phase = .held(repeats: repeats + Int(skipped), nextRepeat: next + skipped * interval)
            fire(at: next + skipped * interval, into: &out)
            return
        }
        fire(at: d, into: &out)
    }

    /// At most this many overdue hold repeats are reported at once.
    static let maxCatchUp: Int64 = 8

    mutating func finish(at t: LocalTime, into out: inout [GestureEvent]) {
        if let b = burst { settle(b, into: &out) }
        switch phase {
        case .awaitingSecond:
            out.append(GestureEvent(button: name, gesture: .press, time: min(gestureDeadline ?? t, t)))
        case .held:
            out.append(GestureEvent(button: name, gesture: .longRelease, time: t))
        case .idle, .firstDown, .secondDown:
            break
        }
        phase = .idle
        stable = false
        raw = false
    }

    private mutating func settle(_ b: (start: LocalTime, last: LocalTime), into out: inout [GestureEvent]) {
        burst = nil
        guard raw != stable else { return }  // a glitch: back where it was
        // Deadlines before the burst began were run by the edge that began
        // it; this loop only matters if an edge was fed without one.
        while let d = gestureDeadline, d <= b.start { fire(at: d, into: &out) }
        stable = raw
        apply(isPressed: raw, at: b.start, into: &out)
    }

    private mutating func fire(at d: LocalTime, into out: inout [GestureEvent]) {
        switch phase {
        case .firstDown:
            out.append(GestureEvent(button: name, gesture: .long, time: d))
            if let interval = config.repeatInterval {
                out.append(GestureEvent(button: name, gesture: .hold, time: d, repeatCount: 1))
                phase = .held(repeats: 1, nextRepeat: d + interval)
            } else {
                phase = .held(repeats: 0, nextRepeat: nil)
            }
        case .held(let repeats, let next?):
            out.append(GestureEvent(button: name, gesture: .hold, time: next, repeatCount: repeats + 1))
            phase = .held(repeats: repeats + 1, nextRepeat: next + (config.repeatInterval ?? 0))
        case .awaitingSecond:
            out.append(GestureEvent(button: name, gesture: .press, time: d))
            phase = .idle
        case .idle, .secondDown, .held(_, nil):
            break  // no deadline in these phases
        }
    }

    /// A debounced level change.
    private mutating func apply(isPressed: Bool, at t: LocalTime, into out: inout [GestureEvent]) {
        if isPressed {
            out.append(GestureEvent(button: name, gesture: .down, time: t))
            switch phase {
            case .awaitingSecond:
                out.append(GestureEvent(button: name, gesture: .double, time: t))
                phase = .secondDown
            default:
                phase = .firstDown(since: t)
            }
        } else {
            switch phase {
            case .firstDown:
                if config.doublePressWindow != nil {
                    phase = .awaitingSecond(releasedAt: t)
                } else {
                    out.append(GestureEvent(button: name, gesture: .press, time: t))
                    phase = .idle
                }
            case .held:
                out.append(GestureEvent(button: name, gesture: .longRelease, time: t))
                phase = .idle
            case .secondDown, .idle, .awaitingSecond:
                phase = .idle
            }
        }
    }
}
