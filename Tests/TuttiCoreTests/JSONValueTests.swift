import Testing
import TuttiCore

@Suite struct JSONValueTests {
    func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    @Test func aRoomsListAnswerReads() throws {
        let v = try parse(#" {"jsonrpc":"2.0","id":1,"result":{"rooms":[{"name":"den","connected":true,"health":{"bufferMs":980.5,"rttUs":-1.5e2}},{"name":"k\u00fcche","connected":false,"x":null}]}} "#)
        #expect(v["id"]?.number == 1)
        let rooms = try #require(v["result"]?["rooms"]?.array)
        #expect(rooms[0]["health"]?["bufferMs"]?.number == 980.5)
        #expect(rooms[0]["health"]?["rttUs"]?.number == -150)
        #expect(rooms[0]["connected"]?.bool == true)
        #expect(rooms[1]["name"]?.string == "küche")
        #expect(rooms[1]["x"] == .null)
    }

    @Test func escapesAndSurrogatePairs() throws {
        #expect(try parse(#""a\"b\\c\/d\n\t\ud83c\udfb5""#) == .string("a\"b\\c/d\n\t🎵"))
        #expect(try parse("[]") == .array([]) && parse("{}") == .object([:]))
    }

    @Test func malformedInputIsAnErrorNotACrash() {
        for text in ["", "{", "[1,]", "{\"a\" 1}", "tru", "\"open", "1 2", "\"\\x\"", "\"\\u12\"", "nan", "1e999", "\"a\u{1}\"",
                     String(repeating: "[", count: 100) + String(repeating: "]", count: 100)] {
            #expect(throws: JSONValue.Malformed.self, "\(text.prefix(20))") { try parse(text) }
        }
    }

    @Test func serializedTextReadsBackTheSameValue() throws {
        let value: JSONValue = .object([
            "volume": .number(100), "latencyNs": .number(-1_500_000), "bass": .number(0.5), "tiny": .number(1e-5),
            "name": .string("K\u{fc}che \"A\\B\"\n\u{1}"), "gains": .array([.number(1), .number(-2.25)]), "none": .null, "on": .bool(true),
        ])
        let text = value.serialized
        #expect(text.hasPrefix(#"{"bass":0.5,"gains":[1,-2.25],"latencyNs":-1500000,"name":"Küche \"A\\B\"\n\u0001","none":null,"on":true"#))
        #expect(try parse(text) == value)
        #expect(JSONValue.number(3).integer == 3 && JSONValue.number(3.5).integer == nil && JSONValue.number(1e300).integer == nil)
    }
}
