import Testing
import TuttiAuth
import TuttiCore

/// SHA-1 from libcrypto, for the one check that needs it: a WebSocket server's accept.
struct SHA1Tests {
    @Test func theDigestAndTheAcceptOfRFC6455sExample() throws {
        // FIPS 180's "abc".
        let abc = try #require(SHA1.digest(Array("abc".utf8)))
        #expect(SHA256.hex(abc) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        // RFC 6455 section 1.3: the key "dGhlIHNhbXBsZSBub25jZQ==" is answered "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
        let key = try #require(Base64.decode(Array("dGhlIHNhbXBsZSBub25jZQ==".utf8)))
        let accept = WebSocketOpening.accept(key: key) { SHA1.digest($0) ?? [] }
        #expect(accept == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let answer = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\nX".utf8)
        #expect(try WebSocketOpening.response(answer, expectedAccept: accept) == Array("X".utf8))
        #expect(throws: WebSocketError.self) { try WebSocketOpening.response(answer, expectedAccept: "AAAAAAAAAAAAAAAAAAAAAAAAAAA=") }
        let without = Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n".utf8)
        #expect(throws: WebSocketError.refused("101 without Sec-WebSocket-Accept")) { try WebSocketOpening.response(without, expectedAccept: accept) }
    }
}
