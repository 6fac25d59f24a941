import Testing
@testable import TuttiCore

/// A speaker that Sendspin servers dial: which server it plays for
/// (the spec's multiple-servers rules), the WebSocket server side it
/// answers with, and its listening address.
struct SendspinListenTests {
    typealias Holder = SendspinAdmission.Holder

    @Test func theFirstServerIsAdmittedAndAnEqualOrHigherOneDisplacesIt() {
        var desk = SendspinAdmission()
        let a = desk.arrived()!, b = desk.arrived()!, third = desk.arrived()!, fourth = desk.arrived()!
        #expect(desk.arrived() == nil, "four provisional at most")
        desk.left(token: third)
        desk.left(token: fourth)
        // The first playback server plays, and is remembered as the last to play.
        let first = desk.activated(Holder(token: a, serverID: "A", activities: ["playback"]))
        #expect(first.0 == .admit(displacing: nil) && first.persist == "A")
        // Another playback server: equal rank, it takes over; the first is told another_server.
        let second = desk.activated(Holder(token: b, serverID: "B", activities: ["playback"]))
        #expect(second.0 == .admit(displacing: a) && second.persist == "B")
        #expect(desk.admitted?.token == b && desk.lastPlaybackServer == "B")
        desk.left(token: a)
        #expect(desk.admitted?.token == b)
        // A lower rank (nothing declared) is refused while playback holds it: concurrent_attempt.
        let c = desk.arrived()!
        #expect(desk.activated(Holder(token: c, serverID: "C", activities: [])).0 == .reject)
        // Pairing ranks above nothing, below playback.
        let d = desk.arrived()!
        #expect(desk.activated(Holder(token: d, serverID: "D", activities: ["pairing"])).0 == .reject)
        desk.left(token: b)
        let e = desk.arrived()!
        #expect(desk.activated(Holder(token: e, serverID: "E", activities: ["pairing"])) == (.admit(displacing: nil), nil))
        let f = desk.arrived()!
        #expect(desk.activated(Holder(token: f, serverID: "F", activities: ["playback"])).0 == .admit(displacing: e))
    }

    @Test func whenNeitherDeclaresAnActivityOnlyTheLastPlaybackServerWins() {
        var desk = SendspinAdmission(lastPlaybackServer: "L")
        let a = desk.arrived()!
        #expect(desk.activated(Holder(token: a, serverID: "X", activities: [])).0 == .admit(displacing: nil))
        let b = desk.arrived()!
        #expect(desk.activated(Holder(token: b, serverID: "Y", activities: [])).0 == .reject, "neither is the last to play: the holder stays")
        let c = desk.arrived()!
        #expect(desk.activated(Holder(token: c, serverID: "L", activities: [])).0 == .admit(displacing: a))
        let d = desk.arrived()!
        #expect(desk.activated(Holder(token: d, serverID: "L", activities: [])).0 == .reject, "the holder is the last to play itself")
        // A later activation changes the holder's rank (and who played last) without arbitration.
        #expect(desk.updated(token: c, activities: ["playback"]) == nil, "L is already the last to play")
        #expect(desk.updated(token: 99, activities: ["playback"]) == nil)
        #expect(desk.admitted?.activities == ["playback"])
        // A token that is not provisional (already decided) is refused.
        #expect(desk.activated(Holder(token: c, serverID: "L", activities: ["playback"])).0 == .reject)
    }

    @Test func theLinkKeepsTheActivitiesOfEachActivation() {
        var link = SendspinPlayerLink(configuration: .init(name: "Den"))
        _ = link.received(text: Array(#"{"type":"server/hello","payload":{"name":"MA"}}"#.utf8), arrival: nil, serverNow: nil)
        #expect(link.activations == 0)
        _ = link.received(text: Array(#"{"type":"server/activate","payload":{"activities":["playback"],"active_roles":["player@v1"]}}"#.utf8), arrival: nil, serverNow: nil)
        #expect(link.activations == 1 && link.activities == ["playback"])
        _ = link.received(text: Array(#"{"type":"server/activate","payload":{"activities":[]}}"#.utf8), arrival: nil, serverNow: nil)
        #expect(link.activations == 2 && link.activities == [] && link.phase == .active, "active_roles persists when omitted")
    }

    static let key = "dGhlIHNhbXBsZSBub25jZQ=="

    func request(_ path: String = "/sendspin", headers: String = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n") -> [UInt8] {
        Array("GET \(path) HTTP/1.1\r\nHost: speaker:8928\r\n\(headers)\r\n".utf8)
    }

    @Test func aServersOpeningRequestIsAnsweredWithItsAccept() throws {
        // aiohttp's request, split anywhere, then a frame behind it.
        let whole = request("/sendspin?x=1") + [0x81, 0x80, 1, 2, 3, 4]
        for cut in [0, 10, whole.count - 7] { #expect(try WebSocketUpgrade.request(Array(whole[..<cut]), path: "/sendspin") == nil) }
        let (key, rest) = try #require(try WebSocketUpgrade.request(whole, path: "/sendspin"))
        #expect(Base64.encode(key) == Self.key && rest == [0x81, 0x80, 1, 2, 3, 4])
        // RFC 6455's own example: this key is answered s3pPLMBiTxaQ9kYGzzhZRbK+xOo=.
        let sha1Example: [UInt8] = [0xb3, 0x7a, 0x4f, 0x2c, 0xc0, 0x62, 0x4f, 0x16, 0x90, 0xf6, 0x46, 0x06, 0xcf, 0x38, 0x59, 0x45, 0xb2, 0xbe, 0xc4, 0xea]
        let accept = WebSocketOpening.accept(key: key) { input in
            #expect(String(decoding: input, as: UTF8.self) == Self.key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
            return sha1Example
        }
        #expect(accept == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(String(decoding: WebSocketUpgrade.switching(accept: accept), as: UTF8.self).hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
    }

    @Test func requestsThatAreNotThisWebSocketAreRefusedWithAStatus() {
        func status(_ bytes: [UInt8]) -> Int? {
            do { _ = try WebSocketUpgrade.request(bytes, path: "/sendspin"); return nil } catch { return error.status }
        }
        #expect(status(request("/other")) == 404)
        #expect(status(Array("POST /sendspin HTTP/1.1\r\n\r\n".utf8)) == 405)
        #expect(status(Array("hello\r\n\r\n".utf8)) == 400)
        #expect(status(request(headers: "Connection: Upgrade\r\nSec-WebSocket-Key: \(Self.key)\r\nSec-WebSocket-Version: 13\r\n")) == 426)
        #expect(status(request(headers: "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(Self.key)\r\nSec-WebSocket-Version: 8\r\n")) == 426)
        #expect(status(request(headers: "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: c2hvcnQ=\r\nSec-WebSocket-Version: 13\r\n")) == 400)
        // A request that never ends is cut at 8 KiB.
        #expect(status([UInt8](repeating: 65, count: WebSocketUpgrade.maximumRequestBytes + 1)) == 431)
        let refusal = String(decoding: WebSocketUpgrade.refusal(.init(status: 503, reason: "busy")), as: UTF8.self)
        #expect(refusal.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n") && refusal.hasSuffix("\r\n\r\nbusy\n"))
    }

    @Test func aClientsMaskedFramesAreReadAndOursGoUnmasked() throws {
        var reader = WebSocketFrameReader(maximumMessageBytes: 1_024, fromClient: true)
        let payload = Array("hello".utf8)
        reader.append(WebSocketClientFrame.frame(opcode: WebSocketClientFrame.text, payload: payload, mask: (9, 8, 7, 6)))
        #expect(try reader.next() == .text(payload))
        // A server's (unmasked) frame is refused from a client, and the other way round.
        reader.append(WebSocketServerFrame.frame(opcode: WebSocketClientFrame.binary, payload: payload))
        #expect(throws: WebSocketError.self) { try reader.next() }
        var client = WebSocketFrameReader(maximumMessageBytes: 70_000)
        let big = [UInt8](repeating: 7, count: 66_000)
        client.append(WebSocketServerFrame.frame(opcode: WebSocketClientFrame.binary, payload: big))
        #expect(try client.next() == .binary(big))
        client.append(WebSocketServerFrame.close(code: 1000, reason: "bye"))
        #expect(try client.next() == .close(code: 1000, reason: "bye"))
        // Masked pings and bounded lengths from a client.
        var server = WebSocketFrameReader(maximumMessageBytes: 100, fromClient: true)
        server.append(WebSocketClientFrame.frame(opcode: WebSocketClientFrame.ping, payload: [1, 2], mask: (1, 1, 1, 1)))
        #expect(try server.next() == .ping([1, 2]))
        server.append(WebSocketClientFrame.frame(opcode: WebSocketClientFrame.binary, payload: [UInt8](repeating: 0, count: 101), mask: (1, 1, 1, 1)))
        #expect(throws: WebSocketError.self) { try server.next() }
    }

    @Test func theListeningAddressDefaultsToTheSpecsPortAndPath() {
        #expect(SendspinListenAddress(parsing: "yes") == SendspinListenAddress(host: "0.0.0.0", port: 8928, path: "/sendspin"))
        #expect(SendspinListenAddress(parsing: "") == SendspinListenAddress())
        #expect(SendspinListenAddress(parsing: "9000") == SendspinListenAddress(port: 9000))
        #expect(SendspinListenAddress(parsing: ":9000") == SendspinListenAddress(port: 9000))
        #expect(SendspinListenAddress(parsing: "127.0.0.1:9000/ss") == SendspinListenAddress(host: "127.0.0.1", port: 9000, path: "/ss"))
        #expect(SendspinListenAddress(parsing: "10.0.0.2") == SendspinListenAddress(host: "10.0.0.2"))
        #expect(SendspinListenAddress(parsing: "host:99999") == nil)
        #expect(SendspinListenAddress(parsing: "host:1/a b") == nil)
    }

    @Test func twentyFourBitPCMIsCutIntoChunksOfWholeSixByteFrames() {
        var link = SendspinPlayerLink(configuration: .init(name: "Den", formats: [SendspinPlayerLink.pcm24, SendspinPlayerLink.flac24]))
        _ = link.received(text: Array(#"{"type":"server/hello","payload":{"name":"MA"}}"#.utf8), arrival: nil, serverNow: nil)
        _ = link.received(text: Array(#"{"type":"server/activate","payload":{"activities":["playback"],"active_roles":["player@v1"]}}"#.utf8), arrival: nil, serverNow: nil)
        // The hello offers what was configured: 24 bits.
        #expect(link.hello.contains(#""bit_depth":24"#) && !link.hello.contains(#""bit_depth":16"#))
        let begin = link.received(text: Array(#"{"type":"stream/start","payload":{"player":{"codec":"pcm","sample_rate":48000,"channels":2,"bit_depth":24}}}"#.utf8), arrival: nil, serverNow: nil)
        guard case .begin(_, let format, _)? = begin.first else { Issue.record("\(begin)"); return }
        #expect(format == SendspinPlayerLink.pcm24)
        func chunk(frames: Int, extra: Int = 0) -> [UInt8] {
            [4, 0, 0, 0, 0, 0, 0x0f, 0x42, 0x40, 0, 0, 0, 0] + (0..<(frames * 6 + extra)).map { UInt8(truncatingIfNeeded: $0) }
        }
        // 6,000 frames (125 ms): 4,800 then 1,200, each payload whole frames of six bytes, timed by frame.
        let actions = link.received(binary: chunk(frames: 6_000))
        let chunks = actions.compactMap { if case .chunk(let c) = $0 { c } else { nil } }
        #expect(chunks.map(\.frames) == [4_800, 1_200])
        #expect(chunks.map(\.payload.count) == [4_800 * 6, 1_200 * 6])
        #expect(chunks.map(\.pts.nanoseconds) == [1_000_000_000, 1_100_000_000])
        #expect(chunks.first?.payload.prefix(3) == [0, 1, 2])
        // Not whole 24-bit frames (a 16-bit frame's four bytes too many): closed.
        guard case .close? = link.received(binary: chunk(frames: 10, extra: 4)).first else { Issue.record("not closed"); return }
        // A 16-bit stream was not offered: closed.
        var other = link
        guard case .close? = other.received(text: Array(#"{"type":"stream/start","payload":{"player":{"codec":"pcm","sample_rate":48000,"channels":2,"bit_depth":16}}}"#.utf8), arrival: nil, serverNow: nil).first else {
            Issue.record("a 16-bit stream was taken"); return
        }
        #expect(SendspinPlayerLink.offered(outputBits: 16) == SendspinPlayerLink.playable)
        #expect(SendspinPlayerLink.offered(outputBits: 24).prefix(2) == [SendspinPlayerLink.flac24, SendspinPlayerLink.flac])
        #expect(SendspinPlayerLink.format(named: "pcm24") == SendspinPlayerLink.pcm24 && SendspinPlayerLink.format(named: "mp3") == nil)
    }
}
