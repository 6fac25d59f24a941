/// A mistake in a mapping file: the line it is on (1-based), what kind,
/// and a message that says how to fix it.

import TuttiCore
public struct ButtonMappingError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable, Equatable {
        case unknownDirective, missingArgument, badArgument, unknownOption
        case unknownKey, unknownGesture, unknownCommand, unknownName
        case duplicate
    }

    public var line: Int
    public var code: Code
    public var message: String

    public init(line: Int, code: Code, message: String) {
        self.line = line
        self.code = code
        self.message = message
    }

    public var description: String { "line \(line): \(message)" }
}

extension ButtonMapping {
    /// Parses a mapping file (syntax in hardware/buttons.md). Names may be
    /// used before the line that declares them. Throws the first mistake,
    /// with its line number; never traps on any input.
    public static func parse(_ text: String) throws(ButtonMappingError) -> ButtonMapping {
        var parser = MappingParser()
        var number = 0
        // isNewline: "\r\n" is one Character in Swift, so splitting on "\n"
        // alone would read a CRLF file as a single line.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            number += 1
            // Everything after '#' is a comment; paths with '#' are not supported.
            let content = rawLine.prefix { $0 != "#" }
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            guard !words.isEmpty else { continue }
            try parser.directive(words, line: number)
        }
        return try parser.finish()
    }
}

private struct MappingParser {
    var mapping = ButtonMapping()
    /// `on` lines, checked once every name is known.
    var pending: [(line: Int, name: String, trigger: String, command: String)] = []
    var declared: [String: Int] = [:]
    var timingLine: Int?
    var defaultsLine: Int?
    /// GPIO lines in use, "CHIP:LINE" → who uses it (a line can be requested once).
    var gpioLines: [String: (name: String, line: Int)] = [:]

    mutating func claim(chip: String, _ ref: ButtonMapping.LineReference, by name: String, line: Int) throws(ButtonMappingError) {
        let key = "\(chip):\(ref)"
        if let other = gpioLines[key] {
            throw ButtonMappingError(line: line, code: .duplicate, message: "GPIO \(key) is already used by '\(other.name)' (line \(other.line))")
        }
        gpioLines[key] = (name, line)
    }

    mutating func directive(_ w: [String], line: Int) throws(ButtonMappingError) {
        switch w[0] {
        case "button": try button(w, line: line)
        case "encoder": try encoder(w, line: line)
        case "on":
            guard w.count == 4 else {
                throw ButtonMappingError(line: line, code: w.count < 4 ? .missingArgument : .badArgument,
                                         message: "expected 'on NAME GESTURE COMMAND', e.g. 'on b1 press toggle'")
            }
            pending.append((line, w[1], w[2], w[3]))
        case "input":
            guard w.count >= 2 else {
                throw ButtonMappingError(line: line, code: .missingArgument, message: "expected 'input PATH [grab]'")
            }
            var grab = false
            for option in w.dropFirst(2) {
                guard option == "grab" else {
                    throw ButtonMappingError(line: line, code: .unknownOption, message: "unknown option '\(option)' for input (only 'grab')")
                }
                grab = true
            }
            if mapping.inputs.contains(where: { $0.path == w[1] }) {
                throw ButtonMappingError(line: line, code: .duplicate, message: "input \(w[1]) is listed twice")
            }
            mapping.inputs.append(.init(path: w[1], grab: grab))
        case "timing":
            if let first = timingLine {
                throw ButtonMappingError(line: line, code: .duplicate, message: "second 'timing' line (the first is on line \(first))")
            }
            timingLine = line
            guard w.count >= 2 else {
                throw ButtonMappingError(line: line, code: .missingArgument, message: "expected 'timing debounce=20ms double=300ms long=600ms repeat=150ms' (any of them)")
            }
            var overrides = ButtonMapping.TimingOverrides()
            for option in w.dropFirst() {
                guard try Self.timingOption(option, into: &overrides, line: line) else {
                    throw ButtonMappingError(line: line, code: .unknownOption, message: "unknown timing option '\(option)' (debounce=, double=, long=, repeat=)")
                }
            }
            mapping.timing.debounce = overrides.debounce ?? mapping.timing.debounce
            mapping.timing.doublePressWindow = overrides.doublePressWindow ?? mapping.timing.doublePressWindow
            mapping.timing.longPress = overrides.longPress ?? mapping.timing.longPress
            mapping.timing.repeatInterval = overrides.repeatInterval ?? mapping.timing.repeatInterval
        case "defaults":
            if let first = defaultsLine {
                throw ButtonMappingError(line: line, code: .duplicate, message: "second 'defaults' line (the first is on line \(first))")
            }
            defaultsLine = line
            guard w.count == 2, w[1] == "on" || w[1] == "off" else {
                throw ButtonMappingError(line: line, code: .badArgument, message: "expected 'defaults on' or 'defaults off'")
            }
            mapping.useMediaKeyDefaults = w[1] == "on"
        default:
            throw ButtonMappingError(line: line, code: .unknownDirective,
                                     message: "unknown directive '\(w[0])' (expected button, encoder, on, input, timing or defaults)")
        }
    }

    // MARK: button and encoder lines

    mutating func declare(_ w: [String], kind: String, line: Int) throws(ButtonMappingError) -> String {
        guard w.count >= 3 else {
            let example = kind == "button" ? "button b1 gpio=chip0:17" : "encoder vol gpio=chip0:22,23"
            throw ButtonMappingError(line: line, code: .missingArgument, message: "expected '\(kind) NAME SOURCE …', e.g. '\(example)'")
        }
        let name = w[1]
        guard Self.isValidName(name) else {
            throw ButtonMappingError(line: line, code: .badArgument,
                                     message: "bad name '\(name)': use letters, digits, '_', '-' or '.', starting with a letter")
        }
        guard LinuxInputCode.keys[name] == nil, !name.hasPrefix("KEY_"), !name.hasPrefix("BTN_") else {
            throw ButtonMappingError(line: line, code: .badArgument,
                                     message: "'\(name)' looks like a key name; Linux keys need no declaration, or give this one another name")
        }
        if let first = declared[name] {
            throw ButtonMappingError(line: line, code: .duplicate, message: "'\(name)' is already declared on line \(first)")
        }
        declared[name] = line
        return name
    }

    mutating func button(_ w: [String], line: Int) throws(ButtonMappingError) {
        let name = try declare(w, kind: "button", line: line)
        let (key, value) = Self.split(w[2])
        var timing = ButtonMapping.TimingOverrides()
        let input: ButtonMapping.ButtonInput
        var options = Array(w.dropFirst(3))
        switch key {
        case "key":
            guard let code = LinuxInputCode.keyCode(value) else {
                throw ButtonMappingError(line: line, code: .unknownKey,
                                         message: "unknown key '\(value)' (a KEY_* or BTN_* name from hardware/buttons.md, or a code number)")
            }
            if let other = mapping.buttons.first(where: { $0.input == .key(code: code) }) {
                throw ButtonMappingError(line: line, code: .duplicate,
                                         message: "key \(value) is already button '\(other.name)' (line \(other.sourceLine))")
            }
            input = .key(code: code)
        case "gpio":
            let (chip, lineRef) = try Self.gpioLine(value, line: line)
            let electrical = try Self.electrical(&options, line: line)
            input = .gpio(chip: chip, line: lineRef, electrical)
            try claim(chip: chip, lineRef, by: name, line: line)
        default:
            throw ButtonMappingError(line: line, code: .badArgument,
                                     message: "expected key=KEY_NAME or gpio=CHIP:LINE after the button name, not '\(w[2])'")
        }
        for option in options {
            guard try Self.timingOption(option, into: &timing, line: line) else {
                throw ButtonMappingError(line: line, code: .unknownOption, message: "unknown button option '\(option)'")
            }
        }
        mapping.buttons.append(.init(name: name, input: input, timing: timing, sourceLine: line))
    }

    mutating func encoder(_ w: [String], line: Int) throws(ButtonMappingError) {
        let name = try declare(w, kind: "encoder", line: line)
        let (key, value) = Self.split(w[2])
        var options = Array(w.dropFirst(3))
        let input: ButtonMapping.EncoderInput
        var perDetent = 4
        switch key {
        case "gpio":
            guard let colon = value.lastIndex(of: ":") else {
                throw ButtonMappingError(line: line, code: .badArgument, message: "expected gpio=CHIP:A,B (e.g. gpio=chip0:22,23), not '\(value)'")
            }
            let lines = value[value.index(after: colon)...].split(separator: ",", omittingEmptySubsequences: false)
            guard lines.count == 2 else {
                throw ButtonMappingError(line: line, code: .badArgument, message: "an encoder needs two lines, A and B: gpio=CHIP:A,B")
            }
            let chip = String(value[..<colon])
            let (_, a) = try Self.gpioLine("\(chip):\(lines[0])", line: line)
            let (_, b) = try Self.gpioLine("\(chip):\(lines[1])", line: line)
            guard a != b else {
                throw ButtonMappingError(line: line, code: .badArgument, message: "lines A and B must differ")
            }
            try claim(chip: chip, a, by: name, line: line)
            try claim(chip: chip, b, by: name, line: line)
            let electrical = try Self.electrical(&options, line: line)
            var rest: [String] = []
            for option in options {
                let (k, v) = Self.split(option)
                if k == "detent" {
                    guard let n = Int(v), [1, 2, 4].contains(n) else {
                        throw ButtonMappingError(line: line, code: .badArgument, message: "detent= takes 4, 2 or 1 (transitions per detent), not '\(v)'")
                    }
                    perDetent = n
                } else {
                    rest.append(option)
                }
            }
            options = rest
            input = .gpio(chip: chip, a: a, b: b, electrical)
        case "rel":
            guard let code = LinuxInputCode.relativeAxes[value] else {
                throw ButtonMappingError(line: line, code: .unknownKey,
                                         message: "unknown axis '\(value)' (REL_X, REL_Y, REL_Z, REL_RX, REL_RY, REL_RZ, REL_HWHEEL, REL_DIAL, REL_WHEEL, REL_MISC)")
            }
            if let other = mapping.encoders.first(where: { $0.input == .relative(code: code) }) {
                throw ButtonMappingError(line: line, code: .duplicate, message: "\(value) is already encoder '\(other.name)' (line \(other.sourceLine))")
            }
            input = .relative(code: code)
        default:
            throw ButtonMappingError(line: line, code: .badArgument,
                                     message: "expected gpio=CHIP:A,B or rel=REL_AXIS after the encoder name, not '\(w[2])'")
        }
        if let option = options.first {
            throw ButtonMappingError(line: line, code: .unknownOption, message: "unknown encoder option '\(option)'")
        }
        mapping.encoders.append(.init(name: name, input: input, transitionsPerDetent: perDetent, sourceLine: line))
    }

    // MARK: bindings, once all names are known

    mutating func finish() throws(ButtonMappingError) -> ButtonMapping {
        var boundAt: [String: Int] = [:]  // "name trigger" → line, for duplicates
        for p in pending {
            let isEncoder = mapping.encoder(named: p.name) != nil
            if !isEncoder && mapping.button(named: p.name) == nil {
                if let code = LinuxInputCode.keys[p.name] {
                    if let alias = mapping.buttons.first(where: { $0.input == .key(code: code) }) {
                        throw ButtonMappingError(line: p.line, code: .unknownName,
                                                 message: "\(p.name) is declared as button '\(alias.name)' (line \(alias.sourceLine)); bind that name")
                    }
                } else {
                    throw ButtonMappingError(line: p.line, code: .unknownName,
                                             message: "unknown button '\(p.name)': declare it with a 'button' or 'encoder' line, or use a KEY_* name")
                }
            }
            guard let command = ButtonCommand(rawValue: p.command) else {
                throw ButtonMappingError(line: p.line, code: .unknownCommand,
                                         message: "unknown command '\(p.command)' (\(ButtonCommand.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            let key = "\(p.name) \(p.trigger)"
            if let first = boundAt[key] {
                throw ButtonMappingError(line: p.line, code: .duplicate, message: "\(p.name) \(p.trigger) is already bound on line \(first)")
            }
            boundAt[key] = p.line
            if isEncoder {
                guard let direction = EncoderDirection(rawValue: p.trigger) else {
                    throw ButtonMappingError(line: p.line, code: .unknownGesture,
                                             message: "an encoder turns 'cw' or 'ccw', not '\(p.trigger)'")
                }
                mapping.encoderBindings[p.name, default: [:]][direction] = command
            } else {
                guard let gesture = Gesture(rawValue: p.trigger) else {
                    throw ButtonMappingError(line: p.line, code: .unknownGesture,
                                             message: "unknown gesture '\(p.trigger)' (\(Gesture.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                mapping.bindings[p.name, default: [:]][gesture] = command
            }
        }
        return mapping
    }

    // MARK: pieces

    static func isValidName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, first.properties.isAlphabetic, first.isASCII else { return false }
        return s.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_-.".unicodeScalars.contains($0)) }
    }

    static func split(_ option: String) -> (String, String) {
        guard let eq = option.firstIndex(of: "=") else { return (option, "") }
        return (String(option[..<eq]), String(option[option.index(after: eq)...]))
    }

    /// `CHIP:LINE`; the chip may itself contain no colon, the line is an
    /// offset or a line name.
    static func gpioLine(_ value: String, line: Int) throws(ButtonMappingError) -> (String, ButtonMapping.LineReference) {
        guard let colon = value.lastIndex(of: ":") else {
            throw ButtonMappingError(line: line, code: .badArgument, message: "expected gpio=CHIP:LINE (e.g. gpio=chip0:17), not '\(value)'")
        }
        let chip = String(value[..<colon]), lineText = String(value[value.index(after: colon)...])
        guard !chip.isEmpty, !lineText.isEmpty else {
            throw ButtonMappingError(line: line, code: .badArgument, message: "expected gpio=CHIP:LINE (e.g. gpio=chip0:17), not '\(value)'")
        }
        if lineText.allSatisfy({ $0.isASCII && $0.isNumber }) {
            // libgpiod v1 requests at most 64 lines at once, but chips have
            // more; 65535 is a generous bound that still fits every chip.
            guard let offset = UInt32(lineText), offset <= 65_535 else {
                throw ButtonMappingError(line: line, code: .badArgument, message: "line offset \(lineText) is out of range")
            }
            return (chip, .offset(offset))
        }
        return (chip, .name(lineText))
    }

    /// Takes the polarity and bias words out of `options`. Unset polarity
    /// follows the bias: a pull-down means a button to 3.3 V (active-high);
    /// anything else, a button to ground (active-low, pulled up).
    static func electrical(_ options: inout [String], line: Int) throws(ButtonMappingError) -> ButtonMapping.Electrical {
        var activeLow: Bool?
        var bias: ButtonMapping.Bias?
        var rest: [String] = []
        for option in options {
            if option == "active-low" || option == "active-high" {
                if activeLow != nil {
                    throw ButtonMappingError(line: line, code: .duplicate, message: "give active-low or active-high once")
                }
                activeLow = option == "active-low"
            } else if let b = ButtonMapping.Bias(rawValue: option) {
                if bias != nil {
                    throw ButtonMappingError(line: line, code: .duplicate, message: "give one of pull-up, pull-down, bias-disable, bias-as-is")
                }
                bias = b
            } else {
                rest.append(option)
            }
        }
        options = rest
        let resolvedBias = bias ?? .pullUp
        return .init(activeLow: activeLow ?? (resolvedBias != .pullDown), bias: resolvedBias)
    }

    /// Reads `debounce=`, `double=`, `long=` or `repeat=`; false if the
    /// option is none of them.
    static func timingOption(_ option: String, into t: inout ButtonMapping.TimingOverrides, line: Int) throws(ButtonMappingError) -> Bool {
        let (key, value) = split(option)
        guard ["debounce", "double", "long", "repeat"].contains(key), option.contains("=") else { return false }
        guard let ns = duration(value) else {
            throw ButtonMappingError(line: line, code: .badArgument,
                                     message: "bad duration '\(value)' for \(key)= (e.g. 20ms or 0.6s, at most 60s)")
        }
        switch key {
        case "debounce":
            t.debounce = ns
        case "double":
            t.doublePressWindow = ns
        case "long":
            guard ns > 0 else { throw ButtonMappingError(line: line, code: .badArgument, message: "long= must be more than 0") }
            t.longPress = ns
        default:
            guard ns >= nanosecondsPerMillisecond else {
                throw ButtonMappingError(line: line, code: .badArgument, message: "repeat= must be at least 1ms")
            }
            t.repeatInterval = ns
        }
        return true
    }

    /// `20ms`, `0.6s`, `1s`, `0` → nanoseconds; nil if malformed, negative
    /// or over a minute.
    static func duration(_ text: String) -> Int64? {
        let (number, scale): (Substring, Double)
        if text.hasSuffix("ms") {
            (number, scale) = (text.dropLast(2), 1e6)
        } else if text.hasSuffix("s") {
            (number, scale) = (text.dropLast(1), 1e9)
        } else if text == "0" {
            return 0
        } else {
            return nil
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isNumber || $0 == "." }), let value = Double(number), value.isFinite,
            value >= 0, value * scale <= 60e9
        else { return nil }
        return Int64((value * scale).rounded())
    }
}
