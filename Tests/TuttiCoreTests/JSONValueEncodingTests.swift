import Testing
import TuttiCore

/// `JSONValue` written as Swift literals and encoded as the leader's
/// clients have always read it.
@Suite struct JSONValueEncodingTests {
    func text(_ v: JSONValue) -> String { String(decoding: v.encoded(), as: UTF8.self) }

    @Test func literalsAreTheValuesTheySpell() {
        let n = 7
        let v: JSONValue = ["s": "x", "i": 3, "d": 0.25, "b": false, "a": [1, "two", .null], "o": [:], "t": "n=\(n)", "u": .int(UInt8(200))]
        #expect(v == .object(["s": .string("x"), "i": .number(3), "d": .number(0.25), "b": .bool(false),
                              "a": .array([.number(1), .string("two"), .null]), "o": .object([:]), "t": .string("n=7"), "u": .number(200)]))
        #expect(JSONValue.strings(["a", "b"]) == .array(["a", "b"]) && JSONValue.numbers([0.5]) == [0.5])
    }

    /// Keys in UTF-8 byte order, not `String.<`'s: U+212B (Å as the Ångström
    /// sign) sorts after Æ by its bytes, before it by its normal form.
    @Test func keysAreInByteOrder() {
        let v: JSONValue = ["b": 1, "a": 2, "Z": 3, "\u{212B}": 4, "\u{C6}": 5, "ab": 6]
        #expect(text(v) == "{\"Z\":3,\"a\":2,\"ab\":6,\"b\":1,\"\u{C6}\":5,\"\u{212B}\":4}")
        #expect("\u{212B}" < "\u{C6}" && JSONValue.keyPrecedes("\u{C6}", "\u{212B}"))
    }

    @Test func numbersAsTheLeaderHasAlwaysWrittenThem() {
        #expect(text([3, -0.0, 12.0, 0.5, 1e20, 1.5e-7, -2.25, 999_999_999_999_999, 1e15, 0.1]) == "[3,0,12,0.5,1e+20,1.5e-07,-2.25,999999999999999,1000000000000000.0,0.1]")
        #expect(text([.number(.nan), .number(.infinity)]) == "[null,null]", "JSON has no NaN: null, not a reply that is not JSON")
        var out: [UInt8] = []
        JSONValue.appendInteger(Int64.min, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "-9223372036854775808")
    }

    @Test func stringsEscapeWhatJSONNeeds() {
        #expect(text("a\"b\\c\n\r\t\u{1}\u{1F}/é🎵") == #""a\"b\\c\n\r\t\u0001\u001f/é🎵""#)
        // What it writes reads back the same.
        let v: JSONValue = ["k\u{7}": ["x\"", 1.25, true, .null, ["deep": []]]]
        #expect(JSONValue.parsing(v.encoded()) == v && JSONValue.parsing(v.serialized) == v)
    }
}
