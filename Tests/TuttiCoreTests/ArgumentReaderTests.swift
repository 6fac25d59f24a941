import Testing
import TuttiCore

@Suite("Argument reader")
struct ArgumentReaderTests {
    @Test("Flags and values come off front to back; what is left stays")
    func frontToBack() throws {
        var args = ArgumentReader(["--name", "kitchen", "--latency-ms", "-12.5", "--no-steer", "rest"])
        #expect(args.next == "--name")
        #expect(args.take() == "--name")
        #expect(try args.value("--name") == "kitchen")
        #expect(args.take() == "--latency-ms")
        #expect(try args.number("--latency-ms", -1_000...5_000) == -12.5)
        #expect(args.take() == "--no-steer")
        #expect(args.remaining == ["rest"] && !args.isEmpty)
        _ = args.take()
        #expect(args.isEmpty && args.next == nil)
    }

    @Test("A flag without its value, or followed by another flag, says which flag needs one")
    func missingValue() {
        var end = ArgumentReader([])
        #expect(throws: UsageError("--output needs a value")) { try end.value("--output") }
        var flag = ArgumentReader(["--name", "x"])
        #expect(throws: UsageError("--output needs a value")) { try flag.value("--output") }
        #expect(flag.remaining == ["--name", "x"], "nothing is consumed by the failed read")
    }

    @Test("Numbers must be finite and in range; the message gives the range", arguments: ["abc", "nan", "inf", "5001", "-1000.5", ""])
    func badNumbers(text: String) {
        var args = ArgumentReader([text])
        #expect(throws: UsageError("--latency-ms \(text): expected a number in -1000.0…5000.0")) {
            try args.number("--latency-ms", -1_000...5_000)
        }
    }

    @Test("An empty path is none; log levels by name")
    func pathsAndLevels() throws {
        var args = ArgumentReader(["", "/etc/tutti/buttons.conf", "warning", "loud"])
        #expect(try args.optionalPath("--buttons") == nil)
        #expect(try args.optionalPath("--buttons") == "/etc/tutti/buttons.conf")
        #expect(try args.logLevel("--log-level") == .warning)
        #expect(throws: UsageError("--log-level loud: expected debug, info, warning or error")) { try args.logLevel("--log-level") }
    }
}
