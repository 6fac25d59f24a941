import Testing
import TuttiCore

struct JSONNestingTests {
    @Test func depthIsCountedOutsideStringsOnly() {
        #expect(!JSONNesting.exceeds(Array(#"{"jsonrpc":"2.0","params":{"gains":[1,2,3]}}"#.utf8)))
        #expect(!JSONNesting.exceeds(Array((String(repeating: "[", count: 32) + String(repeating: "]", count: 32)).utf8)))
        #expect(JSONNesting.exceeds(Array((String(repeating: "[", count: 33) + String(repeating: "]", count: 33)).utf8)))
        #expect(JSONNesting.exceeds(Array(String(repeating: "{\"a\":", count: 40).utf8)), "unclosed still counts")
        // Brackets in strings, with escaped quotes, are text.
        let text = "{\"q\":\"" + String(repeating: "[", count: 100) + "\\\"" + String(repeating: "{", count: 100) + "\"}"
        #expect(!JSONNesting.exceeds(Array(text.utf8)))
        #expect(JSONNesting.exceeds(Array("[[[[".utf8), limit: 3) && !JSONNesting.exceeds(Array("[[[]]][[[]]]".utf8), limit: 3))
    }
}
