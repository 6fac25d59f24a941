import TuttiCore

// Buttons and remotes: which gesture of which button sends which command
// (issue 5). The syntax is in hardware/buttons.md; the parser is in
// ButtonMappingParser.swift.

/// A command a source produced, with what caused it (for logs and for a
/// leader that wants to know which room's button it was).
public struct ButtonCommandEvent: Sendable, Hashable, CustomStringConvertible {
    public enum Trigger: Sendable, Hashable, CustomStringConvertible {
        /// `repeatCount` as in `GestureEvent` (hold repeats count from 1).
        case gesture(Gesture, repeatCount: Int)
        case turn(EncoderDirection)

        public var description: String {
            switch self {
            case .gesture(.hold, let n): "hold#\(n)"
            case .gesture(let g, _): g.rawValue
            case .turn(let d): d.rawValue
            }
        }
    }

    public var command: ButtonCommand
    /// The button or encoder name, as in the mapping.
    public var source: String
    public var trigger: Trigger
    public var time: LocalTime

    public init(command: ButtonCommand, source: String, trigger: Trigger, time: LocalTime) {
        self.command = command
        self.source = source
        self.trigger = trigger
        self.time = time
    }

    public var description: String { "\(command) (\(source) \(trigger) @\(time.nanoseconds)ns)" }
}

/// A parsed mapping file: input devices, buttons, encoders and bindings.
/// Built by `ButtonMapping.parse(_:)`; `ButtonMapping()` is the empty file,
/// which binds the media keys of any input device to their usual commands.
public struct ButtonMapping: Sendable, Equatable {
    /// How an input's pull resistor is set up.
    public enum Bias: String, Sendable, Hashable, CaseIterable {
        case asIs = "bias-as-is"
        case disabled = "bias-disable"
        case pullUp = "pull-up"
        case pullDown = "pull-down"
    }

    /// A line of a GPIO chip, by offset or by the name the device tree gives it.
    public enum LineReference: Sendable, Hashable, CustomStringConvertible {
        case offset(UInt32)
        case name(String)

        public var description: String {
            switch self {
            case .offset(let o): "\(o)"
            case .name(let n): n
            }
        }
    }

    /// How GPIO lines are wired. Active-low means the line reads low when
    /// the button is pressed (a button to ground with a pull-up).
    public struct Electrical: Sendable, Hashable {
        public var activeLow: Bool
        public var bias: Bias
        public init(activeLow: Bool = true, bias: Bias = .pullUp) {
            self.activeLow = activeLow
            self.bias = bias
        }
    }

    public enum ButtonInput: Sendable, Hashable {
        /// A key of the Linux input devices (`input` lines).
        case key(code: UInt16)
        /// A GPIO line read through libgpiod. `chip` as written: `chip0`,
        /// `gpiochip0`, `/dev/gpiochip0` or a chip label.
        case gpio(chip: String, line: LineReference, Electrical)
    }

    public struct Button: Sendable, Hashable {
        public var name: String
        public var input: ButtonInput
        /// Timing set on the `button` line; unset values come from `timing`.
        public var timing: TimingOverrides
        /// Where it was declared (1-based), for messages.
        public var sourceLine: Int

        public init(name: String, input: ButtonInput, timing: TimingOverrides = .init(), sourceLine: Int = 0) {
            self.name = name
            self.input = input
            self.timing = timing
            self.sourceLine = sourceLine
        }
    }

    public enum EncoderInput: Sendable, Hashable {
        case gpio(chip: String, a: LineReference, b: LineReference, Electrical)
        /// A relative axis of the Linux input devices (the kernel's
        /// rotary-encoder overlay with `relative_axis`).
        case relative(code: UInt16)
    }

    public struct Encoder: Sendable, Hashable {
        public var name: String
        public var input: EncoderInput
        /// Quadrature transitions per detent (GPIO encoders): 4, 2 or 1.
        public var transitionsPerDetent: Int
        public var sourceLine: Int

        public init(name: String, input: EncoderInput, transitionsPerDetent: Int = 4, sourceLine: Int = 0) {
            self.name = name
            self.input = input
            self.transitionsPerDetent = transitionsPerDetent
            self.sourceLine = sourceLine
        }
    }

    /// An input device to read (`input` lines).
    public struct InputDevice: Sendable, Hashable {
        public var path: String
        /// Take the device for Tutti alone (EVIOCGRAB), so its keys do not
        /// also reach a console or desktop.
        public var grab: Bool

        public init(path: String, grab: Bool = false) {
            self.path = path
            self.grab = grab
        }
    }

    public struct TimingOverrides: Sendable, Hashable {
        public var debounce: Int64?
        public var doublePressWindow: Int64?
        public var longPress: Int64?
        public var repeatInterval: Int64?
        public init() {}
    }

    /// Timing for every button (`timing` line; the recogniser's standard otherwise).
    public var timing = GestureConfiguration.standard
    /// Whether media keys without bindings of their own get `mediaKeyDefaults`.
    public var useMediaKeyDefaults = true
    public var inputs: [InputDevice] = []
    public var buttons: [Button] = []
    public var encoders: [Encoder] = []
    /// Bindings as written (`on` lines), by button name. Buttons of Linux
    /// keys without an alias go by their KEY_* name.
    public var bindings: [String: [Gesture: ButtonCommand]] = [:]
    public var encoderBindings: [String: [EncoderDirection: ButtonCommand]] = [:]

    public init() {}

    /// The bindings media keys get unless the file binds that key itself or
    /// says `defaults off`. Volume keys step once on the way down and then
    /// ramp while held, the way a kernel autorepeat would.
    public static let mediaKeyDefaults: [String: [Gesture: ButtonCommand]] = [
        "KEY_PLAYPAUSE": [.press: .toggle],
        "KEY_PLAY": [.press: .play],
        "KEY_PLAYCD": [.press: .play],
        "KEY_PAUSE": [.press: .pause],
        "KEY_PAUSECD": [.press: .pause],
        "KEY_STOPCD": [.press: .stop],
        "KEY_STOP": [.press: .stop],
        "KEY_NEXTSONG": [.press: .next],
        "KEY_NEXT": [.press: .next],
        "KEY_PREVIOUSSONG": [.press: .prev],
        "KEY_PREVIOUS": [.press: .prev],
        "KEY_VOLUMEUP": [.down: .volumeUp, .hold: .volumeUp],
        "KEY_VOLUMEDOWN": [.down: .volumeDown, .hold: .volumeDown],
        "KEY_MUTE": [.press: .mute],
        "KEY_SHUFFLE": [.press: .shuffle],
        "KEY_MEDIA_REPEAT": [.press: .repeat],
        "KEY_FAVORITES": [.press: .like],
    ]

    /// An encoder without `on` lines turns the volume.
    public static let encoderDefaults: [EncoderDirection: ButtonCommand] = [
        .clockwise: .volumeUp, .counterclockwise: .volumeDown,
    ]

    // MARK: Queries for the input sources

    public func button(named name: String) -> Button? { buttons.first { $0.name == name } }
    public func encoder(named name: String) -> Encoder? { encoders.first { $0.name == name } }

    /// The name the bindings use for a Linux key: its `button` alias, else
    /// its KEY_* name, else nil when nothing is bound to it (so the source
    /// can drop its events early).
    public func buttonName(forKeyCode code: UInt16) -> String? {
        if let alias = buttons.first(where: { $0.input == .key(code: code) }) {
            return effectiveBindings(for: alias.name).isEmpty ? nil : alias.name
        }
        guard let name = LinuxInputCode.keyName(code), !effectiveBindings(for: name).isEmpty else { return nil }
        return name
    }

    /// The encoder bound to a relative axis of the input devices.
    public func encoderName(forRelativeCode code: UInt16) -> String? {
        encoders.first { $0.input == .relative(code: code) }?.name
    }

    /// What each gesture of `button` does: the file's `on` lines for it, or,
    /// for a media key the file does not bind, its default.
    public func effectiveBindings(for button: String) -> [Gesture: ButtonCommand] {
        if let own = bindings[button], !own.isEmpty { return own }
        guard useMediaKeyDefaults else { return [:] }
        let keyName: String?
        if let declared = self.button(named: button) {
            guard case .key(let code) = declared.input else { return [:] }
            keyName = LinuxInputCode.keyName(code)
        } else {
            keyName = button
        }
        return keyName.flatMap { Self.mediaKeyDefaults[$0] } ?? [:]
    }

    public func effectiveBindings(forEncoder encoder: String) -> [EncoderDirection: ButtonCommand] {
        if let own = encoderBindings[encoder], !own.isEmpty { return own }
        return Self.encoderDefaults
    }

    public func command(for event: GestureEvent) -> ButtonCommand? {
        effectiveBindings(for: event.button)[event.gesture]
    }

    /// The recogniser timing for `button`: `timing`, then the button's own
    /// values, with the gestures nothing is bound to switched off so the
    /// others are not delayed (a button without a double-press binding
    /// reports its press on release, not 300 ms later).
    public func gestureConfiguration(for button: String) -> GestureConfiguration {
        var c = timing
        if let o = self.button(named: button)?.timing {
            c.debounce = o.debounce ?? c.debounce
            c.doublePressWindow = o.doublePressWindow ?? c.doublePressWindow
            c.longPress = o.longPress ?? c.longPress
            c.repeatInterval = o.repeatInterval ?? c.repeatInterval
        }
        let bound = Set(effectiveBindings(for: button).keys)
        if !bound.contains(.double) { c.doublePressWindow = nil }
        if bound.isDisjoint(with: [.long, .hold, .longRelease]) { c.longPress = nil }
        if !bound.contains(.hold) { c.repeatInterval = nil }
        return c
    }

    /// Every button name a source might report: declared buttons, Linux keys
    /// bound by name, and the media keys with defaults.
    public var allButtonNames: Set<String> {
        var names = Set(buttons.map(\.name)).union(bindings.keys)
        if useMediaKeyDefaults {
            for key in Self.mediaKeyDefaults.keys {
                guard let code = LinuxInputCode.keys[key] else { continue }
                if let n = buttonName(forKeyCode: code) { names.insert(n) }
            }
        }
        return names
    }

    /// A recogniser with every button's timing from this mapping.
    public func makeRecognizer() -> GestureRecognizer {
        var perButton: [String: GestureConfiguration] = [:]
        for name in allButtonNames { perButton[name] = gestureConfiguration(for: name) }
        return GestureRecognizer(configuration: timing, perButton: perButton)
    }
}
