import Glibc
import Testing
import TuttiCore
import TuttiGestures
@testable import TuttiInput

private func edge(_ line: Int, _ active: Bool, _ ms: Int64) -> GPIOEdge {
    GPIOEdge(line: line, isActive: active, time: LocalTime(nanoseconds: ms * 1_000_000))
}

private let panel = """
    button b1 gpio=chip0:17 active-low pull-up
    encoder vol gpio=chip0:22,23
    on b1 press toggle
    on b1 long party
    on b1 hold vol+
    """

@Suite("GPIO buttons", .timeLimit(.minutes(1)))
struct GPIOButtonSourceTests {
    @Test("Lines are requested buttons first, then each encoder's A and B")
    func requests() throws {
        let m = try ButtonMapping.parse(panel)
        let source = GPIOButtonSource(mapping: m, provider: ScriptedGPIOLines(levels: [], edges: [], end: LocalTime(nanoseconds: 0)))
        #expect(source.lineRequests == [
            GPIOLineRequest(chip: "chip0", line: .offset(17), electrical: .init(activeLow: true, bias: .pullUp)),
            GPIOLineRequest(chip: "chip0", line: .offset(22), electrical: .init()),
            GPIOLineRequest(chip: "chip0", line: .offset(23), electrical: .init()),
        ])
    }

    @Test("Bouncing button, long hold and encoder turns on virtual time, exact to the millisecond")
    func scripted() throws {
        let m = try ButtonMapping.parse(panel)
        let script = [
            // A press with contact bounce, released at 200 ms with bounce.
            edge(0, true, 0), edge(0, false, 2), edge(0, true, 5),
            edge(0, false, 200), edge(0, true, 203), edge(0, false, 207),
            // Held from 1 s to 2 s.
            edge(0, true, 1_000), edge(0, false, 2_000),
            // One detent clockwise (A leads), one back.
            edge(1, true, 3_000), edge(2, true, 3_005), edge(1, false, 3_010), edge(2, false, 3_015),
            edge(2, true, 3_100), edge(1, true, 3_105), edge(2, false, 3_110), edge(1, false, 3_115),
        ]
        let lines = ScriptedGPIOLines(levels: [false, false, false], edges: script, end: LocalTime(nanoseconds: 4_000_000_000))
        let source = GPIOButtonSource(mapping: m, provider: lines)
        let collector = Collector()
        source.start(handler: collector.handler)
        #expect(collector.waitForFinish())
        #expect(collector.summary() == [
            "toggle b1 press 200",
            "party b1 long 1600", "vol+ b1 hold#1 1600", "vol+ b1 hold#2 1750", "vol+ b1 hold#3 1900",
            "vol+ vol cw 3015", "vol- vol ccw 3115",
        ])
        #expect(collector.finishedWith == .some(nil))
    }

    @Test("A button held when the script ends: the ramp stops, nothing is invented")
    func heldAtEnd() throws {
        let m = try ButtonMapping.parse(panel + "\non b1 long-release stop")
        let lines = ScriptedGPIOLines(levels: [true, false, false], edges: [edge(0, false, 100), edge(0, true, 500)], end: LocalTime(nanoseconds: 1_200_000_000))
        let collector = Collector()
        let source = GPIOButtonSource(mapping: m, provider: lines)
        source.start(handler: collector.handler)
        #expect(collector.waitForFinish())
        // Held at start (taken as released), so its release at 100 ms is no press.
        #expect(collector.summary() == ["party b1 long 1100", "vol+ b1 hold#1 1100", "stop b1 long-release 1200"])
    }

    @Test("Real libgpiod: a chip that does not exist is a clear typed error")
    func missingChip() throws {
        let m = try ButtonMapping.parse("button b1 gpio=chip77:17")
        #expect(throws: InputError.gpioChip(chip: "chip77", errno: ENOENT)) {
            _ = try GPIOButtonSource(mapping: m)
        }
        let byPath = try ButtonMapping.parse("encoder v gpio=/dev/gpiochip-none:1,2")
        #expect(throws: InputError.gpioChip(chip: "/dev/gpiochip-none", errno: ENOENT)) {
            _ = try GPIOButtonSource(mapping: byPath)
        }
        let message = InputError.gpioChip(chip: "chip77", errno: ENOENT).description
        #expect(message == "cannot open GPIO chip 'chip77': No such file or directory ('gpiodetect' lists chips; the kernel needs CONFIG_GPIO_CDEV)")
    }

    @Test("Config chip names map to the kernel's")
    func chipNames() {
        #expect(LibgpiodLines.lookupName("chip0") == "gpiochip0")
        #expect(LibgpiodLines.lookupName("chip12") == "gpiochip12")
        #expect(LibgpiodLines.lookupName("gpiochip0") == "gpiochip0")
        #expect(LibgpiodLines.lookupName("chipset") == "chipset")
        #expect(LibgpiodLines.lookupName("pinctrl-bcm2711") == "pinctrl-bcm2711")
    }

    @Test("A mapping without GPIO lines needs no chip")
    func nothingToRequest() throws {
        let source = try GPIOButtonSource(mapping: ButtonMapping())
        #expect(source.lineRequests.isEmpty)
    }
}

@Suite("Opening the sources a mapping asks for")
struct ButtonSourcesTests {
    @Test("No inputs, no GPIO: nothing to open")
    func empty() throws {
        #expect(try ButtonSources.open(ButtonMapping(), logger: .silent).isEmpty)
    }

    @Test("A readable input opens; a missing chip fails the whole set with its error")
    func inputsAndChips() throws {
        let m = try ButtonMapping.parse("input /dev/null")
        let sources = try ButtonSources.open(m, logger: .silent)
        #expect(sources.map(\.name) == ["/dev/null"])
        let bad = try ButtonMapping.parse("input /dev/null\nbutton b gpio=chip77:1")
        #expect(throws: InputError.gpioChip(chip: "chip77", errno: ENOENT)) { _ = try ButtonSources.open(bad, logger: .silent) }
    }
}
