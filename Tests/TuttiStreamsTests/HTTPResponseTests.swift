import Testing
import TuttiStreams

/// The plain-socket HTTP client's parsers: response heads and chunked bodies.
@Suite struct HTTPResponseTests {
    func decode(_ text: String) throws -> [UInt8] {
        var decoder = ChunkedDecoder()
        var body: [UInt8] = []
        try Array(text.utf8).withUnsafeBytes { raw in try decoder.process(raw) { body += $0 } }
        return body
    }

    @Test func chunkedBodiesDecode() throws {
        #expect(try decode("4\r\nWiki\r\n6;x=1\r\npedia \r\n0\r\n\r\n") == Array("Wikipedia ".utf8))
    }

    /// Found by the http-chunked fuzz target: Int(_:radix:) takes a sign, so
    /// a server's "-3" chunk size became a negative length and the stream's
    /// thread trapped slicing the body.
    @Test func aSignedChunkSizeIsMalformed() {
        for size in ["-3", "+3", "-0", " -1"] {
            #expect(throws: ChunkedDecoder.Malformed.self) { try decode("\(size)\r\nabc\r\n0\r\n\r\n") }
        }
    }

    /// Found reading the http-head target's check: "Content-Length: -5" was a
    /// negative length, and SocketTransfer sliced its buffer 0..<-5 (a trap).
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
}
