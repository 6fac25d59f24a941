import Testing
import TuttiCore
@testable import TuttiInput

@Suite("input_event records")
struct InputEventDecoderTests {
    @Test("24-byte records decode field by field, however the bytes are split")
    func splits() {
        let records = rawEvent(ms: 1_234_567, type: 1, code: 164, value: 1) + rawEvent(ms: 1_234_568, type: 0, code: 0, value: 0)
            + rawEvent(ms: 9, type: 2, code: 7, value: -3)
        let expected = [
            InputEvent(seconds: 1_234, microseconds: 567_000, type: 1, code: 164, value: 1),
            InputEvent(seconds: 1_234, microseconds: 568_000, type: 0, code: 0, value: 0),
            InputEvent(seconds: 0, microseconds: 9_000, type: 2, code: 7, value: -3),
        ]
        #expect(InputEventDecoder().recordSize == 24)
        for cut1 in 0...records.count {
            for cut2 in stride(from: cut1, through: records.count, by: 7) {
                var d = InputEventDecoder()
                let out = d.decode(Array(records[..<cut1])) + d.decode(Array(records[cut1..<cut2])) + d.decode(Array(records[cut2...]))
                #expect(out == expected)
                #expect(d.pendingByteCount == 0)
            }
        }
        #expect(expected[0].time == LocalTime(nanoseconds: 1_234_567_000_000))
    }

    @Test("A short record stays pending; encode is the kernel layout")
    func partial() {
        var d = InputEventDecoder()
        let e = InputEvent(seconds: 5, microseconds: 6, type: 1, code: 2, value: 3)
        #expect(InputEventDecoder.encode(e) == rawEvent(ms: 0, type: 1, code: 2, value: 3).enumerated().map { i, b in
            i == 0 ? 5 : i == 8 ? 6 : b
        })
        #expect(d.decode(Array(InputEventDecoder.encode(e).prefix(23))).isEmpty)
        #expect(d.pendingByteCount == 23)
    }

    @Test("16-byte records of 32-bit boards")
    func thirtyTwoBit() {
        var d = InputEventDecoder(wordSize: 4)
        #expect(d.recordSize == 16)
        let e = InputEvent(seconds: 100, microseconds: 250_000, type: 1, code: 115, value: 0)
        let bytes = InputEventDecoder.encode(e, wordSize: 4) + InputEventDecoder.encode(e, wordSize: 4)
        #expect(bytes.count == 32)
        #expect(d.decode(Array(bytes.prefix(5))).isEmpty)
        #expect(d.decode(Array(bytes.dropFirst(5))) == [e, e])
    }

    @Test("Absurd timestamps saturate instead of trapping")
    func saturation() {
        #expect(InputEvent(seconds: .max, microseconds: 0, type: 0, code: 0, value: 0).time.nanoseconds == .max)
        #expect(InputEvent(seconds: .min, microseconds: 0, type: 0, code: 0, value: 0).time.nanoseconds == .min)
        #expect(InputEvent(seconds: 0, microseconds: .max, type: 0, code: 0, value: 0).time.nanoseconds == .max)
    }
}
