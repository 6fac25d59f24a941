import Testing
import TuttiStreams

/// The HTTP client's pure part: response heads, as libcurl hands them over line by line.
@Suite struct HTTPResponseTests {
    /// Found reading the http-head target's check: "Content-Length: -5" was a
    /// negative length, and the socket client of the time sliced its buffer 0..<-5 (a trap).
    @Test func aNegativeOrMalformedContentLengthIsNoLength() throws {
        for (text, length) in [("900", Int64(900)), (" 0 ", 0), ("-5", nil), ("+5", nil), ("5x", nil), ("", nil), ("99999999999999999999", nil)] as [(String, Int64?)] {
            let head = try ResponseHead.parse(lines: ["HTTP/1.1 200 OK", "Content-Length: \(text)"])
            #expect(head.contentLength == length, "Content-Length: \(text)")
        }
    }

    @Test func headsParseAcrossAnyChunking() throws {
        let bytes = Array("\r\nICY 200 OK\r\nicy-name:Caf\u{e9}\r\nicy-metaint:8192\r\n\r\nAUDIO".utf8)
        var reader = HeadReader()
        var used = 0
        for b in bytes where !reader.done { used += try [b].withUnsafeBytes { try reader.feed($0) } }
        #expect(used == bytes.count - 5)
        let head = try ResponseHead.parse(lines: reader.lines)
        #expect(head.status == 200)
        #expect(ICYText.metaint(head.headers) == 8192)
    }

    @Test func http2AndICYStatusLinesParseAndOthersDoNot() throws {
        #expect(try ResponseHead.parse(lines: ["HTTP/2 206", "content-range: bytes 5-9/10"]).status == 206)
        #expect(try ResponseHead.parse(lines: ["ICY 200 OK"]).status == 200)
        for line in ["HTTP/0.9 200 OK", "HTTPS/1.1 200 OK", "ICY", "HTTP/1.1 99 Low", "SIP/2.0 200 OK"] {
            #expect(throws: ResponseHead.ParseError.self) { try ResponseHead.parse(lines: [line]) }
        }
    }
}
