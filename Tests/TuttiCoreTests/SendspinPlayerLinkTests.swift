import Testing
@testable import TuttiCore

/// A Tutti speaker as a Sendspin player: what each server message means,
/// exactly, and the WebSocket framing under it.
struct SendspinPlayerLinkTests {
    typealias Link = SendspinPlayerLink

    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
    func sent(_ actions: [Link.Action]) -> [JSONValue] {
        actions.compactMap { if case .send(let t) = $0 { JSONValue.parsing(Array(t.utf8)) } else { nil } }
    }

    /// A link that has answered the hello and been given the player role.
    func activeLink(name: String = "Den") -> Link {
        var link = Link(configuration: .init(name: name))
        _ = link.received(text: bytes(#"{"type":"server/hello","payload":{"name":"Music Assistant"}}"#), arrival: nil, serverNow: nil)
        _ = link.received(text: bytes(#"{"type":"server/activate","payload":{"activities":[],"active_roles":["player@v1"]}}"#), arrival: nil, serverNow: nil)
        return link
    }

    func chunk(_ micros: Int64, frames: Int, fill: UInt8 = 1) -> [UInt8] {
        var out: [UInt8] = [4]
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: micros >> Int64(shift))) }
        out += [0, 0, 0x03, 0xe8] // send_ahead 1000 µs, not used
        return out + [UInt8](repeating: fill, count: frames * 4)
    }

    @Test func theHelloOffersFLACPCMAndOpusAndTheStateSaysAvailableOnlyOnceTheClockIsReady() throws {
        var link = Link(configuration: .init(name: "Den", bufferNanoseconds: 2 * nanosecondsPerSecond, requiredLeadMilliseconds: 200))
        // Nothing but server/hello is understood first.
        #expect(link.received(text: bytes(#"{"type":"stream/start","payload":{}}"#), arrival: nil, serverNow: nil) == [.close("stream/start before server/hello")])
        link = Link(configuration: .init(name: "Den"))
        let hello = link.received(text: bytes(#"{"type":"server/hello","payload":{"name":"Music Assistant"}}"#), arrival: nil, serverNow: nil)
        #expect(sent(hello) == [[
            "type": "client/hello",
            "payload": ["name": "Den", "supported_roles": ["player@v1"], "unpaired_access": ["enabled": true],
                        "player@v1_support": ["supported_formats": [["codec": "flac", "sample_rate": 48_000, "channels": 2, "bit_depth": 16],
                                                                     ["codec": "pcm", "sample_rate": 48_000, "channels": 2, "bit_depth": 16],
                                                                     ["codec": "opus", "sample_rate": 48_000, "channels": 2, "bit_depth": 16]],
                                              "buffer_capacity": 384_000]],
        ]])
        #expect(link.phase == .awaitingActivation && link.serverName == "Music Assistant")
        // No time request before the player role.
        #expect(link.timeRequest(at: LocalTime(nanoseconds: 5_000_000)) == nil)
        let activated = link.received(text: bytes(#"{"type":"server/activate","payload":{"activities":["playback"],"active_roles":["player@v1"]}}"#), arrival: nil, serverNow: nil)
        #expect(activated.first == .activated(server: "Music Assistant"))
        let state: JSONValue = ["type": "client/state", "payload": [
            "available": false,
            "player": ["volume": 100, "muted": false, "output_delay_ms": 0, "required_lead_time_ms": 200, "min_buffer_ms": 1_000,
                       "supported_commands": ["volume", "mute"]]]]
        #expect(sent(activated) == [state])
        var ready = state
        if case .object(var o) = ready, case .object(var p) = o["payload"] { p["available"] = true; o["payload"] = .object(p); ready = .object(o) }
        #expect(sent(link.clockBecameReady()) == [ready])
        #expect(link.clockBecameReady().isEmpty) // once
        // A second activate with the same role changes nothing; one without it waits for a person.
        #expect(link.received(text: bytes(#"{"type":"server/activate","payload":{"activities":[]}}"#), arrival: nil, serverNow: nil).isEmpty)
        #expect(link.received(text: bytes(#"{"type":"server/activate","payload":{"activities":[],"active_roles":[]}}"#), arrival: nil, serverNow: nil)
                == [.waitingForApproval(server: "Music Assistant")])
        #expect(link.phase == .waitingForApproval)
    }

    @Test func timeAnswersBecomeClockSamplesOnceEachForRequestsSent() throws {
        var link = activeLink()
        let asked = link.timeRequest(at: LocalTime(nanoseconds: 7_000_123_456))
        let request = try #require(asked)
        #expect(JSONValue.parsing(Array(request.utf8)) == ["type": "client/time", "payload": ["client_transmitted": 7_000_123]])
        let answer = bytes(#"{"type":"server/time","payload":{"client_transmitted":7000123,"server_received":900000000,"server_transmitted":900000040}}"#)
        #expect(link.received(text: answer, arrival: LocalTime(nanoseconds: 7_000_500_000), serverNow: nil)
                == [.clockSample(ClockSample(t1: LocalTime(nanoseconds: 7_000_123_000), t2: LeaderTime(nanoseconds: 900_000_000_000),
                                             t3: LeaderTime(nanoseconds: 900_000_040_000), t4: LocalTime(nanoseconds: 7_000_500_000)))])
        // The same answer again, or one to a request never sent: no sample.
        #expect(link.received(text: answer, arrival: LocalTime(nanoseconds: 7_000_600_000), serverNow: nil).isEmpty)
        // Without an exact arrival the request is used up and no sample made.
        _ = link.timeRequest(at: LocalTime(nanoseconds: 8_000_000_000))
        #expect(link.received(text: bytes(#"{"type":"server/time","payload":{"client_transmitted":8000000,"server_received":1,"server_transmitted":2}}"#),
                              arrival: nil, serverNow: nil).isEmpty)
        // Out of order or missing: the server broke the protocol.
        #expect(link.received(text: bytes(#"{"type":"server/time","payload":{"client_transmitted":1,"server_received":5,"server_transmitted":4}}"#),
                              arrival: nil, serverNow: nil) == [.close("server/time with times out of order or range")])
        // At most 64 requests are remembered: the oldest is forgotten.
        for i in 0..<65 { _ = link.timeRequest(at: LocalTime(nanoseconds: Int64(10_000 + i) * 1_000)) }
        #expect(link.received(text: bytes(#"{"type":"server/time","payload":{"client_transmitted":10000,"server_received":1,"server_transmitted":2}}"#),
                              arrival: LocalTime(nanoseconds: 20_000_000), serverNow: nil).isEmpty)
        #expect(link.received(text: bytes(#"{"type":"server/time","payload":{"client_transmitted":10064,"server_received":1,"server_transmitted":2}}"#),
                              arrival: LocalTime(nanoseconds: 20_000_000), serverNow: nil).count == 1)
    }

    @Test func aStreamsChunksClearAndEndAreTuttiChunksFlushAndEnd() throws {
        var link = activeLink()
        // Audio before stream/start is not played.
        #expect(link.received(binary: chunk(1_000_000, frames: 960)).isEmpty && link.ignoredChunks == 1)
        let start = link.received(text: bytes(#"{"type":"stream/start","payload":{"server_transmitted":5,"player":{"codec":"pcm","sample_rate":48000,"channels":2,"bit_depth":16}}}"#),
                                  arrival: nil, serverNow: nil)
        #expect(start == [.begin(StreamDescription(streamID: 1, codec: .pcm, framesPerChunk: 960, bufferNanoseconds: 2 * nanosecondsPerSecond), format: Link.pcm, header: [])])
        // Server µs become leader ns; sequences are numbered here.
        #expect(link.received(binary: chunk(1_000_000, frames: 960)) == [.chunk(Chunk(streamID: 1, sequence: 0, pts: LeaderTime(nanoseconds: 1_000_000_000), frames: 960,
                                                                                          payload: [UInt8](repeating: 1, count: 3_840)))])
        // A chunk longer than Tutti's 100 ms is cut, each part at its own time on the grid.
        let long = link.received(binary: chunk(1_020_000, frames: 6_000, fill: 2))
        #expect(long == [.chunk(Chunk(streamID: 1, sequence: 1, pts: LeaderTime(nanoseconds: 1_020_000_000), frames: 4_800, payload: [UInt8](repeating: 2, count: 19_200))),
                         .chunk(Chunk(streamID: 1, sequence: 2, pts: LeaderTime(nanoseconds: 1_120_000_000), frames: 1_200, payload: [UInt8](repeating: 2, count: 4_800)))])
        // The same format again: the stream goes on.
        #expect(link.received(text: bytes(#"{"type":"stream/start","payload":{"player":{"codec":"pcm","sample_rate":48000,"channels":2,"bit_depth":16}}}"#),
                              arrival: nil, serverNow: nil).isEmpty)
        // stream/clear cuts at the server's now; another role's clear is not ours.
        #expect(link.received(text: bytes(#"{"type":"stream/clear","payload":{"roles":["visualizer"]}}"#), arrival: nil, serverNow: LeaderTime(nanoseconds: 5)).isEmpty)
        #expect(link.received(text: bytes(#"{"type":"stream/clear","payload":{"roles":["player"]}}"#), arrival: nil, serverNow: LeaderTime(nanoseconds: 1_050_000_000))
                == [.clear(streamID: 1, from: LeaderTime(nanoseconds: 1_050_000_000))])
        _ = link.received(binary: chunk(1_300_000, frames: 480))
        // stream/end: the stream ends after its last chunk (1.3 s + 10 ms); the next start is a new stream.
        #expect(link.received(text: bytes(#"{"type":"stream/end","payload":{}}"#), arrival: nil, serverNow: LeaderTime(nanoseconds: 1_200_000_000))
                == [.end(streamID: 1, at: LeaderTime(nanoseconds: 1_310_000_000))])
        #expect(link.received(binary: chunk(1_400_000, frames: 480)).isEmpty)
        let again = link.received(text: bytes(#"{"type":"stream/start","payload":{"player":{"codec":"pcm","sample_rate":48000,"channels":2,"bit_depth":16}}}"#),
                                  arrival: nil, serverNow: nil)
        #expect(again == [.begin(StreamDescription(streamID: 2, codec: .pcm, framesPerChunk: 960, bufferNanoseconds: 2 * nanosecondsPerSecond), format: Link.pcm, header: [])])
        // What this speaker cannot play, or a chunk that is not whole frames, ends the connection.
        #expect(link.received(binary: Array(chunk(1_500_000, frames: 1).dropLast())) == [.close("an audio chunk of 3 bytes (not whole 16-bit stereo frames)")])
        #expect(link.received(binary: [4, 0, 0]) == [.close("an audio chunk of 3 bytes")])
        var other = activeLink()
        let flac = other.received(text: bytes(#"{"type":"stream/start","payload":{"player":{"codec":"flac","sample_rate":44100,"channels":2,"bit_depth":24}}}"#),
                                  arrival: nil, serverNow: nil)
        #expect(flac == [.close("stream/start in flac 44100 Hz 2 ch 24 bit (this speaker offered flac 16 bit, pcm 16 bit, opus 16 bit, 48 kHz stereo)")])
    }

    /// FLAC and Opus chunks pass whole, as long as their own headers say, on the server's time.
    @Test func flacAndOpusChunksLastWhatTheirHeadersSay() throws {
        var link = activeLink()
        let header: [UInt8] = Array("fLaC".utf8) + [0x80, 0, 0, 34] + [UInt8](repeating: 7, count: 34)
        let start = link.received(text: bytes(#"{"type":"stream/start","payload":{"player":{"codec":"flac","sample_rate":48000,"channels":2,"bit_depth":16,"codec_header":"\#(Base64.encode(header))"}}}"#),
                                  arrival: nil, serverNow: nil)
        #expect(start == [.begin(StreamDescription(streamID: 1, codec: .pcm, framesPerChunk: 960, bufferNanoseconds: 2 * nanosecondsPerSecond), format: Link.flac, header: header)])
        // A FLAC frame header: sync, block size code 0b0111 (16-bit size − 1 after the frame number), 48 kHz, stereo, 16 bit.
        let frame: [UInt8] = [0xff, 0xf8, 0x7a, 0x08, 0x05, 0x11, 0xff, 0x00, 0x42]
        var packet = Array(chunk(2_000_000, frames: 0).prefix(13)) + frame
        #expect(link.received(binary: packet) == [.chunk(Chunk(streamID: 1, sequence: 0, pts: LeaderTime(nanoseconds: 2_000_000_000), frames: 4_608, payload: frame))])
        // stream/end ends after the frame: 4,608 frames at 48 kHz are 96 ms.
        #expect(link.received(text: bytes(#"{"type":"stream/end","payload":{}}"#), arrival: nil, serverNow: nil)
                == [.end(streamID: 1, at: LeaderTime(nanoseconds: 2_096_000_000))])
        // A FLAC chunk whose bytes are no frame header closes the connection.
        _ = link.received(text: bytes(#"{"type":"stream/start","payload":{"player":{"codec":"flac","sample_rate":48000,"channels":2,"bit_depth":16}}}"#), arrival: nil, serverNow: nil)
        packet = Array(chunk(2_100_000, frames: 2))
        #expect(link.received(binary: packet) == [.close("a flac chunk of 8 bytes whose header gives no length up to 4800 frames")])

        // Opus: a new stream (another format); a 20 ms CELT packet (config 31, one frame) is 960 frames.
        var opus = activeLink()
        let started = opus.received(text: bytes(#"{"type":"stream/start","payload":{"player":{"codec":"opus","sample_rate":48000,"channels":2,"bit_depth":16}}}"#), arrival: nil, serverNow: nil)
        #expect(started == [.begin(StreamDescription(streamID: 1, codec: .opus, framesPerChunk: 960, bufferNanoseconds: 2 * nanosecondsPerSecond), format: Link.opus, header: [])])
        let celt: [UInt8] = [0xfc, 1, 2, 3]
        #expect(opus.received(binary: Array(chunk(3_000_000, frames: 0).prefix(13)) + celt)
                == [.chunk(Chunk(streamID: 1, sequence: 0, pts: LeaderTime(nanoseconds: 3_000_000_000), frames: 960, payload: celt))])
        // Another format mid-stream starts a new stream; one not offered closes.
        let pcm = opus.received(text: bytes(#"{"type":"stream/start","payload":{"player":{"codec":"pcm","sample_rate":48000,"channels":2,"bit_depth":16}}}"#), arrival: nil, serverNow: nil)
        #expect(pcm == [.begin(StreamDescription(streamID: 2, codec: .pcm, framesPerChunk: 960, bufferNanoseconds: 2 * nanosecondsPerSecond), format: Link.pcm, header: [])])
        var pcmOnly = Link(configuration: .init(name: "Den", formats: [Link.pcm]))
        _ = pcmOnly.received(text: bytes(#"{"type":"server/hello","payload":{"name":"MA"}}"#), arrival: nil, serverNow: nil)
        _ = pcmOnly.received(text: bytes(#"{"type":"server/activate","payload":{"active_roles":["player@v1"]}}"#), arrival: nil, serverNow: nil)
        #expect(pcmOnly.received(text: bytes(#"{"type":"stream/start","payload":{"player":{"codec":"opus","sample_rate":48000,"channels":2}}}"#), arrival: nil, serverNow: nil)
                == [.close("stream/start in opus 48000 Hz 2 ch 16 bit (this speaker offered pcm 16 bit, 48 kHz stereo)")])
    }

    /// RFC 6716's TOC and the FLAC frame header, each case.
    @Test func packetLengthsFromOpusTOCsAndFLACFrameHeaders() {
        // Opus: SILK 10/20/40/60 ms, hybrid 10/20, CELT 2.5…20; code 1 and 2 two frames, code 3 counted.
        #expect(CodecFrames.opusSamples([0 << 3]) == 480)
        #expect(CodecFrames.opusSamples([3 << 3]) == 2_880)
        #expect(CodecFrames.opusSamples([13 << 3]) == 960)
        #expect(CodecFrames.opusSamples([16 << 3]) == 120)
        #expect(CodecFrames.opusSamples([31 << 3 | 1]) == 1_920)
        #expect(CodecFrames.opusSamples([31 << 3 | 2]) == 1_920)
        #expect(CodecFrames.opusSamples([31 << 3 | 3, 6]) == 5_760)
        #expect(CodecFrames.opusSamples([31 << 3 | 3, 7]) == nil) // 140 ms: over the RFC's 120
        #expect(CodecFrames.opusSamples([31 << 3 | 3]) == nil)
        #expect(CodecFrames.opusSamples([]) == nil)
        // FLAC: coded sizes, and the 8- and 16-bit fields after a one- or two-byte frame number.
        #expect(CodecFrames.flacSamples([0xff, 0xf8, 0x1a, 0x08, 0x00]) == 192)
        #expect(CodecFrames.flacSamples([0xff, 0xf8, 0x5a, 0x08, 0x00]) == 4_608)
        #expect(CodecFrames.flacSamples([0xff, 0xf9, 0xca, 0x08, 0x00]) == 4_096)
        #expect(CodecFrames.flacSamples([0xff, 0xf8, 0x6a, 0x08, 0x00, 0x3f]) == 64)
        #expect(CodecFrames.flacSamples([0xff, 0xf8, 0x7a, 0x08, 0xc2, 0x80, 0x03, 0xbf]) == 960)
        #expect(CodecFrames.flacSamples([0xff, 0xf8, 0x0a, 0x08, 0x00]) == nil) // reserved
        #expect(CodecFrames.flacSamples([0xff, 0xf8, 0x7a, 0x08, 0x00, 0x03]) == nil) // cut
        #expect(CodecFrames.flacSamples([0x66, 0x4c, 0x61, 0x43, 0x00]) == nil)
    }

    @Test func volumeAndMuteCommandsAreTheRoomsSettingsAndReported() throws {
        var link = activeLink()
        let volume = link.received(text: bytes(#"{"type":"server/command","payload":{"player":{"command":"volume","volume":30}}}"#), arrival: nil, serverNow: nil)
        #expect(volume.first == .settings(RoomSettings(volume: 30, muted: false)))
        #expect(sent(volume).first?["payload"]?["player"]?["volume"] == 30)
        let mute = link.received(text: bytes(#"{"type":"server/command","payload":{"player":{"command":"mute","mute":true}}}"#), arrival: nil, serverNow: nil)
        #expect(mute.first == .settings(RoomSettings(volume: 30, muted: true)))
        #expect(sent(mute).first?["payload"]?["player"]?["muted"] == true)
        #expect(link.received(text: bytes(#"{"type":"server/command","payload":{"player":{"command":"volume","volume":101}}}"#), arrival: nil, serverNow: nil)
                == [.close("server/command volume out of 0…100")])
        // A command this speaker did not declare is ignored.
        #expect(link.received(text: bytes(#"{"type":"server/command","payload":{"player":{"command":"set_output_delay","output_delay_ms":5}}}"#), arrival: nil, serverNow: nil).isEmpty)
        #expect(link.received(text: bytes(#"{"type":"group/update","payload":{"playback_state":"playing","group_id":"g","group_name":"Downstairs"}}"#), arrival: nil, serverNow: nil)
                == [.group(state: "playing", name: "Downstairs")])
        #expect(link.received(text: [UInt8](repeating: 32, count: 70_000), arrival: nil, serverNow: nil) == [.close("a text message of 70000 bytes")])
    }

    @Test func serverAddressesParse() {
        #expect(SendspinServerAddress(parsing: "ws://ma.local:8927/sendspin") == SendspinServerAddress(host: "ma.local", port: 8927, path: "/sendspin"))
        #expect(SendspinServerAddress(parsing: "192.168.1.5:9000") == SendspinServerAddress(host: "192.168.1.5", port: 9000))
        #expect(SendspinServerAddress(parsing: "ma.local") == SendspinServerAddress(host: "ma.local"))
        #expect(SendspinServerAddress(parsing: "ws://ma.local/other")?.path == "/other")
        for bad in ["wss://ma.local", "http://x", "ma.local:0", "ma.local:99999", ":8927", "a b:1", "ws://"] {
            #expect(SendspinServerAddress(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func webSocketFramesAreMaskedOutAndBoundedIn() throws {
        let request = String(decoding: WebSocketOpening.request(host: "h", port: 8927, path: "/sendspin", key: [UInt8](repeating: 0, count: 16)), as: UTF8.self)
        #expect(request == "GET /sendspin HTTP/1.1\r\nHost: h:8927\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        #expect(try WebSocketOpening.response(Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n".utf8)) == nil)
        #expect(try WebSocketOpening.response(Array("HTTP/1.1 101 Switching Protocols\r\nupgrade:  WebSocket\r\n\r\n".utf8) + [0x81]) == [0x81])
        #expect(throws: WebSocketError.refused("HTTP/1.1 404 Not Found")) { try WebSocketOpening.response(Array("HTTP/1.1 404 Not Found\r\n\r\n".utf8)) }
        #expect(throws: WebSocketError.self) { try WebSocketOpening.response([UInt8](repeating: 65, count: 8_193)) }
        // Out: masked (RFC 6455 §5.7's "Hello" example), 16- and 64-bit lengths.
        #expect(WebSocketClientFrame.frame(opcode: 1, payload: Array("Hello".utf8), mask: (0x37, 0xfa, 0x21, 0x3d))
                == [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58])
        #expect(WebSocketClientFrame.frame(opcode: 2, payload: [UInt8](repeating: 0, count: 300), mask: (0, 0, 0, 0)).prefix(4) == [0x82, 0xfe, 0x01, 0x2c])
        #expect(WebSocketClientFrame.frame(opcode: 2, payload: [UInt8](repeating: 0, count: 70_000), mask: (0, 0, 0, 0)).prefix(10)
                == [0x82, 0xff, 0, 0, 0, 0, 0, 0x01, 0x11, 0x70])
        // In: whole messages from any split of the bytes, fragments joined, pings answered by the caller.
        var reader = WebSocketFrameReader(maximumMessageBytes: 1_000)
        let stream: [UInt8] = [0x01, 0x03] + Array("Hel".utf8) + [0x89, 0x01, 0x2a] + [0x80, 0x02] + Array("lo".utf8) + [0x82, 0x7e, 0x01, 0x00] + [UInt8](repeating: 7, count: 256)
        var got: [WebSocketMessage] = []
        for b in stream {
            reader.append([b])
            while let m = try reader.next() { got.append(m) }
        }
        #expect(got == [.ping([0x2a]), .text(Array("Hello".utf8)), .binary([UInt8](repeating: 7, count: 256))])
        #expect(reader.pendingBytes == 0)
        reader.append([0x88, 0x05, 0x03, 0xe8, 0x62, 0x79, 0x65])
        #expect(try reader.next() == .close(code: 1000, reason: "bye"))
        // Over the bound, masked, reserved bits, a stray continuation: refused before anything is kept.
        for bad: [UInt8] in [[0x82, 0x7f, 0, 0, 0, 0, 0, 0, 0x03, 0xe9], [0x82, 0x7e, 0x03, 0xe9], [0x81, 0x81, 1, 2, 3, 4, 5], [0xc1, 0x00], [0x80, 0x00],
                             [0x89, 0x7e, 0x00, 0x80]] {
            var r = WebSocketFrameReader(maximumMessageBytes: 1_000)
            r.append(bad)
            #expect(throws: WebSocketError.self, "\(bad)") { try r.next() }
        }
    }
}
