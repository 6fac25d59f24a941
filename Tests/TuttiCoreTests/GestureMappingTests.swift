import Testing
import TuttiCore
import TuttiGestures

private let example = """
    # Living room speaker
    timing debounce=25ms long=0.8s      # slower thumbs
    input /dev/input/by-id/usb-Media_Keys-event-kbd grab
    input /dev/input/event3

    button play_pause key=KEY_PLAYPAUSE
    button b1 gpio=chip0:17 active-low pull-up
    button b2 gpio=gpiochip1:GPIO27 pull-down double=250ms
    encoder vol gpio=chip0:22,23
    encoder dial rel=REL_DIAL

    on b1 press toggle
    on b1 double next
    on b1 long party
    on b1 hold vol+
    on b2 long-release stop
    on dial cw next
    on dial ccw prev
    on KEY_F1 down like
    """

/// The error `text` throws, as "line: code".
private func failure(_ text: String) -> String {
    do {
        _ = try ButtonMapping.parse(text)
        return "parsed"
    } catch {
        return "\(error.line): \(error.code.rawValue)"
    }
}

@Suite("Button mapping: config syntax, defaults, errors")
struct GestureMappingTests {
    @Test("The documented example parses to what it says")
    func example_() throws {
        let m = try ButtonMapping.parse(example)
        #expect(m.timing == GestureConfiguration(debounce: 25_000_000, longPress: 800_000_000))
        #expect(m.inputs == [.init(path: "/dev/input/by-id/usb-Media_Keys-event-kbd", grab: true), .init(path: "/dev/input/event3", grab: false)])
        #expect(m.buttons.map(\.name) == ["play_pause", "b1", "b2"])
        #expect(m.button(named: "play_pause")?.input == .key(code: 164))
        #expect(m.button(named: "b1")?.input == .gpio(chip: "chip0", line: .offset(17), .init(activeLow: true, bias: .pullUp)))
        #expect(m.button(named: "b2")?.input == .gpio(chip: "gpiochip1", line: .name("GPIO27"), .init(activeLow: false, bias: .pullDown)))
        #expect(m.button(named: "b2")?.sourceLine == 8)
        #expect(m.encoder(named: "vol")?.input == .gpio(chip: "chip0", a: .offset(22), b: .offset(23), .init()))
        #expect(m.encoder(named: "vol")?.transitionsPerDetent == 4)
        #expect(m.encoder(named: "dial")?.input == .relative(code: 7))
        #expect(m.bindings["b1"] == [.press: .toggle, .double: .next, .long: .party, .hold: .volumeUp])
        #expect(m.bindings["b2"] == [.longRelease: .stop])
        #expect(m.effectiveBindings(forEncoder: "vol") == [.clockwise: .volumeUp, .counterclockwise: .volumeDown])
        #expect(m.effectiveBindings(forEncoder: "dial") == [.clockwise: .next, .counterclockwise: .prev])
        #expect(m.buttonName(forKeyCode: 59) == "KEY_F1")
        #expect(m.command(for: GestureEvent(button: "KEY_F1", gesture: .down, time: atMs(0))) == .like)
        #expect(m.encoderName(forRelativeCode: 7) == "dial")
    }

    @Test("Gestures nothing is bound to are switched off in the button's timing")
    func derivedTiming() throws {
        let m = try ButtonMapping.parse(example)
        let b1 = m.gestureConfiguration(for: "b1")
        #expect(b1 == GestureConfiguration(debounce: 25_000_000, doublePressWindow: 300_000_000, longPress: 800_000_000, repeatInterval: 150_000_000))
        let b2 = m.gestureConfiguration(for: "b2")
        #expect(b2 == GestureConfiguration(debounce: 25_000_000, doublePressWindow: nil, longPress: 800_000_000, repeatInterval: nil))
        // The aliased play/pause key keeps its media-key default: a press, no waiting.
        let pp = m.gestureConfiguration(for: "play_pause")
        #expect(pp.doublePressWindow == nil && pp.longPress == nil && pp.repeatInterval == nil)
        #expect(m.effectiveBindings(for: "play_pause") == [.press: .toggle])
        #expect(m.buttonName(forKeyCode: 164) == "play_pause")
    }

    @Test("Media-key defaults, replaced per key by the file's own bindings, or switched off")
    func defaults() throws {
        let empty = try ButtonMapping.parse("")
        #expect(empty == ButtonMapping())
        let expected: [(String, Gesture, ButtonCommand)] = [
            ("KEY_PLAYPAUSE", .press, .toggle), ("KEY_NEXTSONG", .press, .next), ("KEY_PREVIOUSSONG", .press, .prev),
            ("KEY_VOLUMEUP", .down, .volumeUp), ("KEY_VOLUMEUP", .hold, .volumeUp),
            ("KEY_VOLUMEDOWN", .down, .volumeDown), ("KEY_VOLUMEDOWN", .hold, .volumeDown),
            ("KEY_MUTE", .press, .mute), ("KEY_PLAY", .press, .play), ("KEY_PAUSE", .press, .pause), ("KEY_STOPCD", .press, .stop),
        ]
        for (key, gesture, command) in expected {
            #expect(empty.command(for: GestureEvent(button: key, gesture: gesture, time: atMs(0))) == command, "\(key) \(gesture)")
        }
        #expect(empty.buttonName(forKeyCode: 115) == "KEY_VOLUMEUP")
        #expect(empty.buttonName(forKeyCode: 30) == nil)  // KEY_A: nothing bound
        let volume = empty.gestureConfiguration(for: "KEY_VOLUMEUP")
        #expect(volume == GestureConfiguration(doublePressWindow: nil))

        let own = try ButtonMapping.parse("on KEY_PLAYPAUSE double party")
        #expect(own.effectiveBindings(for: "KEY_PLAYPAUSE") == [.double: .party])
        #expect(own.effectiveBindings(for: "KEY_NEXTSONG") == [.press: .next])

        let off = try ButtonMapping.parse("defaults off\non KEY_MUTE press like")
        #expect(off.buttonName(forKeyCode: 164) == nil)
        #expect(off.effectiveBindings(for: "KEY_MUTE") == [.press: .like])
    }

    @Test("Durations, numeric keys, encoder options, comments and blank lines")
    func details() throws {
        let m = try ButtonMapping.parse("""
            \t
            timing debounce=0 double=0.25s repeat=100ms   # tabs and comments
            button k key=0xa4 debounce=5ms long=1s
            button n key=200
            encoder e gpio=/dev/gpiochip0:5,6 detent=2 active-high bias-disable
            on e cw vol-\r
            """)
        let crlf = try ButtonMapping.parse("button a key=KEY_A\r\non a press toggle\r\n")
        #expect(crlf.bindings["a"] == [.press: .toggle])
        #expect(m.timing == GestureConfiguration(debounce: 0, doublePressWindow: 250_000_000, repeatInterval: 100_000_000))
        #expect(m.button(named: "k")?.input == .key(code: 164))
        #expect(m.button(named: "k")?.timing.debounce == 5_000_000)
        #expect(m.button(named: "k")?.timing.longPress == 1_000_000_000)
        #expect(m.button(named: "n")?.input == .key(code: 200))
        let e = m.encoder(named: "e")
        #expect(e?.input == .gpio(chip: "/dev/gpiochip0", a: .offset(5), b: .offset(6), .init(activeLow: false, bias: .disabled)))
        #expect(e?.transitionsPerDetent == 2)
        #expect(m.effectiveBindings(forEncoder: "e") == [.clockwise: .volumeDown])
    }

    @Test("Every mistake names its line")
    func errors() {
        let cases: [(String, String)] = [
            ("\n\nfrobnicate", "3: unknownDirective"),
            ("# c\non b1 press toggle", "2: unknownName"),
            ("button b1 gpio=chip0:17\non b1 press volup", "2: unknownCommand"),
            ("button b1 gpio=chip0:17\non b1 tripple toggle", "2: unknownGesture"),
            ("encoder v gpio=chip0:1,2\non v press toggle", "2: unknownGesture"),
            ("button b key=KEY_NOPE", "1: unknownKey"),
            ("button b key=0", "1: unknownKey"),
            ("button b key=99999", "1: unknownKey"),
            ("button b gpio=17", "1: badArgument"),
            ("button b gpio=chip0:", "1: badArgument"),
            ("button b gpio=chip0:99999999", "1: badArgument"),
            ("button b serial=1", "1: badArgument"),
            ("button b", "1: missingArgument"),
            ("button 1b key=KEY_A", "1: badArgument"),
            ("button KEY_FOO key=KEY_A", "1: badArgument"),
            ("button b gpio=chip0:17 wobbly", "1: unknownOption"),
            ("button b gpio=chip0:17 pull-up pull-down", "1: duplicate"),
            ("button b gpio=chip0:17\nbutton b gpio=chip0:18", "2: duplicate"),
            ("button a gpio=chip0:17\nbutton b gpio=chip0:17", "2: duplicate"),
            ("button a key=KEY_A\nbutton b key=30", "2: duplicate"),
            ("button b key=KEY_A debounce=20", "1: badArgument"),
            ("button b key=KEY_A debounce=-1ms", "1: badArgument"),
            ("button b key=KEY_A long=0", "1: badArgument"),
            ("button b key=KEY_A repeat=0ms", "1: badArgument"),
            ("button b key=KEY_A long=61s", "1: badArgument"),
            ("button b key=KEY_A long=1e3ms", "1: badArgument"),
            ("encoder v gpio=chip0:1", "1: badArgument"),
            ("encoder v gpio=chip0:1,1", "1: badArgument"),
            ("encoder v gpio=chip0:1,2 detent=3", "1: badArgument"),
            ("encoder v rel=REL_SPIN", "1: unknownKey"),
            ("encoder v gpio=chip0:1,2 grab", "1: unknownOption"),
            ("on KEY_A press", "1: missingArgument"),
            ("on KEY_A press toggle now", "1: badArgument"),
            ("on KEY_A press toggle\n\non KEY_A press next", "3: duplicate"),
            ("button pp key=KEY_PLAYPAUSE\non KEY_PLAYPAUSE press play", "2: unknownName"),
            ("timing", "1: missingArgument"),
            ("timing speed=1s", "1: unknownOption"),
            ("timing long=1s\ntiming long=2s", "2: duplicate"),
            ("defaults maybe", "1: badArgument"),
            ("input", "1: missingArgument"),
            ("input /dev/x exclusive", "1: unknownOption"),
            ("input /dev/x\ninput /dev/x", "2: duplicate"),
            ("button a gpio=chip0:22\nencoder v gpio=chip0:22,23", "2: duplicate"),
            ("encoder v gpio=chip0:22,23\nencoder w gpio=chip0:24,23", "2: duplicate"),
            ("button a key=KEY_A\r\n\r\non a tap toggle\r\n", "3: unknownGesture"),
        ]
        for (text, expected) in cases {
            #expect(failure(text) == expected, "\(text.debugDescription)")
        }
    }

    @Test("Error messages say what to write instead")
    func messages() {
        do {
            _ = try ButtonMapping.parse("\non b1 press volup\nbutton b1 gpio=chip0:4")
            Issue.record("parsed")
        } catch {
            #expect(error.description == "line 2: unknown command 'volup' (play, pause, toggle, stop, next, prev, vol+, vol-, mute, like, party, shuffle, repeat, eq)")
        }
    }

    @Test("Random token soup either parses or throws with a line inside the text")
    func fuzz() {
        var rng = SplitMix64(seed: 77)
        let words = ["button", "encoder", "on", "input", "timing", "defaults", "b1", "v", "KEY_A", "key=KEY_MUTE", "gpio=chip0:3",
                     "gpio=c:1,2", "rel=REL_X", "press", "hold", "cw", "vol+", "toggle", "=", ":", "#", "debounce=5ms", "long=", "ü", "off", "\t"]
        for _ in 0..<3_000 {
            let lines = (0..<Int(rng.next() % 6)).map { _ in
                (0..<Int(rng.next() % 6)).map { _ in words[Int(rng.next() % UInt64(words.count))] }.joined(separator: " ")
            }
            do {
                _ = try ButtonMapping.parse(lines.joined(separator: "\n"))
            } catch {
                #expect(error.line >= 1 && error.line <= lines.count)
            }
        }
    }
}
