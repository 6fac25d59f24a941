import Testing
@testable import TuttiCore

/// Sendspin's messages as the server reads and writes them, exactly.
struct SendspinProtocolTests {
    @Test func aPlayerHelloIsReadAndCheckedWhereItEnters() throws {
        let hello = #"{"type":"client/hello","payload":{"client_id":"k1","name":" Kitchen\u0007 ","version":1,"supported_roles":["player@v1","controller@v1","visualizer@v1"],"player@v1_support":{"supported_formats":[{"codec":"alac","channels":2,"sample_rate":44100,"bit_depth":16},{"codec":"flac","channels":2,"sample_rate":48000,"bit_depth":24}],"buffer_capacity":1048576}}}"#
        guard case .hello(let h) = try Sendspin.parse(Array(hello.utf8)) else { Issue.record("not a hello"); return }
        #expect(h.clientID == "k1" && Sendspin.roomName(h) == "Kitchen")
        #expect(h.formats == [SendspinAudioFormat(codec: .flac, bitDepth: 24)]) // alac skipped
        #expect(h.activeRoles == ["player@v1", "controller@v1"])
        #expect(Sendspin.chooseFormat(offered: h.formats, opusAvailable: false) == SendspinAudioFormat(codec: .flac, bitDepth: 24))
        #expect(Sendspin.chooseFormat(offered: [SendspinAudioFormat(codec: .pcm, sampleRate: 44_100)], opusAvailable: true) == nil)
        // Out-of-range numbers and wrong versions are refused.
        for bad in [#"{"type":"client/hello","payload":{"client_id":"x","version":2,"supported_roles":[]}}"#,
                    #"{"type":"client/hello","payload":{"client_id":"x","supported_roles":["player@v1"],"player@v1_support":{"supported_formats":[{"codec":"pcm","channels":2,"sample_rate":48000,"bit_depth":16}],"buffer_capacity":-1}}}"#,
                    #"{"type":"client/command","payload":{"controller":{"command":"volume","volume":101}}}"#,
                    #"{"type":"client/time","payload":{}}"#, "[1]"] {
            #expect(throws: SendspinError.self) { try Sendspin.parse(Array(bad.utf8)) }
        }
        #expect(try Sendspin.parse(Array(#"{"type":"client/time","payload":{"client_transmitted":123456789012}}"#.utf8)) == .time(clientTransmitted: 123_456_789_012))
        #expect(try Sendspin.parse(Array(#"{"type":"client/command","payload":{"controller":{"command":"repeat_one"}}}"#.utf8)) == .command(.repeatMode("one")))
    }

    /// A pairing token as aiosendspin 10.2.1's `encode_psk_token` writes it (key 0…31, PSK 32…63),
    /// read leniently (lower case, spaces, no prefix); anything else is refused.
    @Test func aPairingTokenGivesTheClientAndItsPairingPSK() {
        let text = "SP:0AAAQEAYEAUDAOCAJBIFQYDIOB4IBCEQTCQKRMFYYDENBWHA5DYPSAIJCEMSCKJRHFAUSUKZMFUXC6MBRGIZTINJWG44DSOR3HQ6T4PY"
        let expected = SendspinPairingToken(clientID: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", psk: Array(32..<64))
        #expect(SendspinPairingToken.parse(text) == expected)
        #expect(SendspinPairingToken.parse("  " + text.lowercased() + "\n") == expected)
        #expect(SendspinPairingToken.parse(String(text.dropFirst(3))) == expected)
        for bad in ["", "SP:", "SP:1" + text.dropFirst(4), "SP:0AAAA", text + "é", String(text.map { $0 == "Q" ? "1" : $0 }),
                    "SP:0" + String(repeating: "A", count: 300)] {
            #expect(SendspinPairingToken.parse(bad) == nil, "\(bad)")
        }
    }

    /// The pairing messages (Pairing PSK and pairing-code flows), read and checked where they enter, and the server's.
    @Test func pairingMessagesAreReadAndCheckedWhereTheyEnter() throws {
        func parse(_ s: String) throws -> SendspinClientMessage { try Sendspin.parse(Array(s.utf8)) }
        func b64(_ n: Int, _ from: UInt8 = 0) -> String { Base64URL.encode((0..<n).map { UInt8(truncatingIfNeeded: Int(from) + $0) }) }
        #expect(try parse(#"{"type":"client/pair-init","payload":{"pairing_index":1}}"#) == .pairInit(pairingIndex: 1, commitment: nil))
        #expect(try parse(#"{"type":"client/pair-init","payload":{"pairing_index":2,"commit_B":"\#(b64(32))"}}"#) == .pairInit(pairingIndex: 2, commitment: Array(0..<32)))
        let psk = Base64URL.encode(Array(0..<32))
        #expect(try parse(#"{"type":"client/pair-finalize","payload":{"long_term_psk":"\#(psk)"}}"#) == .pairFinalize(longTermPSK: Array(0..<32)))
        #expect(try parse(#"{"type":"client/pair-finalize","payload":{"wrapped_psk":"\#(b64(48))"}}"#) == .pairFinalizeWrapped(wrappedPSK: Array(0..<48)))
        #expect(try parse(#"{"type":"client/pair-finalize","payload":{}}"#) == .pairFinalize(longTermPSK: nil))
        #expect(try parse(#"{"type":"pair/abort","payload":{"reason":"user_cancelled"}}"#) == .pairAbort(reason: "user_cancelled"))
        #expect(try parse(#"{"type":"client/pair-auth","payload":{"pake_msg_2":"\#(b64(32, 9))"}}"#) == .pairAuth(share: (0..<32).map { UInt8($0 + 9) }))
        #expect(try parse(#"{"type":"client/pair-confirm","payload":{"client_kc":"\#(b64(64))"}}"#) == .pairConfirm(clientKC: Array(0..<64), wrappedNonceB: nil))
        #expect(try parse(#"{"type":"client/pair-confirm","payload":{"client_kc":"\#(b64(64))","wrapped_nonce_B":"\#(b64(48))"}}"#)
                == .pairConfirm(clientKC: Array(0..<64), wrappedNonceB: Array(0..<48)))
        #expect(try parse(#"{"type":"client/pair-retry","payload":{}}"#) == .pairRetry)
        #expect(try parse(#"{"type":"client/pair-pending","payload":{"pairing_index":1,"message":"press the button"}}"#) == .pairPending(pairingIndex: 1))
        // Every field's length is checked where it enters: one byte short, one long, or a text far too long.
        let long = String(repeating: "A", count: 10_000)
        for bad in [#"{"type":"client/pair-init","payload":{}}"#, #"{"type":"client/pair-init","payload":{"pairing_index":-1}}"#,
                    #"{"type":"client/pair-init","payload":{"pairing_index":1,"commit_B":"x"}}"#,
                    #"{"type":"client/pair-init","payload":{"pairing_index":1,"commit_B":"\#(b64(33))"}}"#,
                    #"{"type":"client/pair-finalize","payload":{"long_term_psk":"\#(Base64URL.encode(Array(0..<31)))"}}"#,
                    #"{"type":"client/pair-finalize","payload":{"long_term_psk":"not base64!"}}"#,
                    #"{"type":"client/pair-finalize","payload":{"long_term_psk":"\#(psk)","wrapped_psk":"x"}}"#,
                    #"{"type":"client/pair-finalize","payload":{"wrapped_psk":"\#(b64(47))"}}"#,
                    #"{"type":"client/pair-finalize","payload":{"wrapped_psk":"\#(long)"}}"#,
                    #"{"type":"client/pair-auth","payload":{}}"#, #"{"type":"client/pair-auth","payload":{"pake_msg_2":"\#(b64(31))"}}"#,
                    #"{"type":"client/pair-auth","payload":{"pake_msg_2":"\#(b64(33))"}}"#, #"{"type":"client/pair-auth","payload":{"pake_msg_2":"\#(long)"}}"#,
                    #"{"type":"client/pair-confirm","payload":{"client_kc":"\#(b64(65))"}}"#,
                    #"{"type":"client/pair-confirm","payload":{"client_kc":"\#(b64(64))","wrapped_nonce_B":"\#(b64(49))"}}"#,
                    #"{"type":"client/pair-pending","payload":{}}"#] {
            #expect(throws: SendspinError.self, "\(bad.prefix(120))") { try parse(bad) }
        }
        #expect(JSONValue.parsing(Sendspin.serverActivatePairing(method: .pairingPSK)) ==
                ["type": "server/activate", "payload": ["activities": ["pairing"], "active_roles": [], "pairing": ["method": "pairing_psk"]]])
        #expect(JSONValue.parsing(Sendspin.serverActivatePairing(method: .dynamicPairingCode, format: "digits")) ==
                ["type": "server/activate", "payload": ["activities": ["pairing"], "active_roles": [],
                                                        "pairing": ["method": "dynamic_pairing_code", "format": "digits"]]])
        #expect(JSONValue.parsing(Sendspin.serverPairFinalize()) == ["type": "server/pair-finalize", "payload": [:]])
        #expect(JSONValue.parsing(Sendspin.serverPairInit(nonceA: nil)) == ["type": "server/pair-init", "payload": [:]])
        #expect(JSONValue.parsing(Sendspin.serverPairInit(nonceA: Array(0..<32))) == ["type": "server/pair-init", "payload": ["nonce_A": .string(b64(32))]])
        // What a client offers: the dynamic code where it offers digits, else the static code.
        func offered(_ s: String) -> SendspinTrust.PairMethod? { SendspinCodePairing.offeredMethod(JSONValue.parsing(s)) }
        #expect(offered(#"{"pairing_psk":{},"dynamic_pairing_code":{"out_channels":["display"],"formats":["digits"]}}"#) == .dynamicPairingCode)
        #expect(offered(#"{"pairing_psk":{},"static_pairing_code":{}}"#) == .staticPairingCode)
        // Both listed (a client should not): the static code is disregarded, as the spec asks, even where Tutti cannot run the dynamic one.
        #expect(offered(#"{"dynamic_pairing_code":{"out_channels":["display"],"formats":["digits"]},"static_pairing_code":{}}"#) == .dynamicPairingCode)
        #expect(offered(#"{"dynamic_pairing_code":{"out_channels":["display"],"formats":["qr_code"]},"static_pairing_code":{}}"#) == nil)
        // A dynamic descriptor with nothing the spec knows counts as unknown: the static code stands.
        #expect(offered(#"{"dynamic_pairing_code":{"out_channels":["hologram"],"formats":["digits"]},"static_pairing_code":{}}"#) == .staticPairingCode)
        #expect(offered(#"{"dynamic_pairing_code":{"out_channels":["display"],"formats":["smell"]},"static_pairing_code":{}}"#) == .staticPairingCode)
        // aiosendspin 10.2.1's speaker (no digit_audio) speaks the digits itself; a newer one that asks for the server's pack has no code method here.
        #expect(offered(#"{"dynamic_pairing_code":{"out_channels":["speaker"],"formats":["digits"]}}"#) == .dynamicPairingCode)
        #expect(offered(#"{"dynamic_pairing_code":{"out_channels":["speaker"],"formats":["digits"],"digit_audio":{"codec":"opus","sample_rate":16000,"bit_depth":16,"max_bytes":65536}}}"#) == nil)
        // A pack codec the spec does not know: as if it had no speaker, so no out-channel, and the static code stands.
        #expect(offered(#"{"dynamic_pairing_code":{"out_channels":["speaker"],"formats":["digits"],"digit_audio":{"codec":"mp3"}},"static_pairing_code":{}}"#) == .staticPairingCode)
        #expect(offered(#"{"dynamic_pairing_code":{"out_channels":["display","speaker"],"formats":["digits"],"digit_audio":{"codec":"mp3"}}}"#) == .dynamicPairingCode)
        #expect(offered(#"{"pairing_psk":{}}"#) == nil)
        #expect(offered(#"["pairing_psk"]"#) == nil)
    }

    @Test func audioHeadersAreNineOrThirteenBytesBigEndian() {
        #expect(Sendspin.binaryHeader(type: 4, timestamp: 0x0102030405060708, sendAhead: nil) == [4, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Sendspin.binaryHeader(type: 4, timestamp: 1, sendAhead: 250_000) == [4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0x03, 0xd0, 0x90])
        #expect(Sendspin.binaryHeader(type: 4, timestamp: 1, sendAhead: -5).suffix(4) == [0, 0, 0, 0])
        #expect(Sendspin.binaryHeader(type: 4, timestamp: 1, sendAhead: 1 << 40).suffix(4) == [255, 255, 255, 255])
    }

    @Test func serverTimeCarriesTheThreeStamps() {
        let text = Sendspin.serverTime(clientTransmitted: 5, received: 1_700_000_000_123, transmitted: 1_700_000_000_456)
        let payload = JSONValue.parsing(text)?["payload"]
        #expect(JSONValue.parsing(text)?["type"]?.string == "server/time")
        #expect(payload?["server_received"]?.integer == 1_700_000_000_123 && payload?["server_transmitted"]?.integer == 1_700_000_000_456)
        #expect(payload?["client_transmitted"]?.integer == 5)
    }

    /// The encrypted path's hello: no client_id (the handshake's key is the id), unpaired access read.
    @Test func anEncryptedHelloNeedsNoIdAndSaysWhetherItAllowsUnpairedAccess() throws {
        let hello = #"{"type":"client/hello","payload":{"name":"Garden","supported_roles":["metadata@v1"],"unpaired_access":{"enabled":true}}}"#
        guard case .hello(let h) = try Sendspin.parse(Array(hello.utf8)) else { Issue.record("not a hello"); return }
        #expect(h.clientID == "" && h.name == "Garden" && h.unpairedAccess)
        let closed = #"{"type":"client/hello","payload":{"name":"Den","supported_roles":["metadata@v1"]}}"#
        guard case .hello(let d) = try Sendspin.parse(Array(closed.utf8)) else { Issue.record("not a hello"); return }
        #expect(!d.unpairedAccess)
        let activate = JSONValue.parsing(Sendspin.serverActivate(playback: false, activeRoles: []))
        #expect(activate?["type"]?.string == "server/activate" && activate?["payload"]?["activities"]?.strings == [] &&
                activate?["payload"]?["active_roles"]?.strings == [])
        #expect(JSONValue.parsing(Sendspin.serverHello(name: "Tutti"))?["payload"] == ["name": "Tutti"])
    }

    @Test func aPeersHostIsItsAddressWithoutThePort() {
        #expect(Sendspin.host(ofPeer: "192.168.1.20:5512") == "192.168.1.20")
        #expect(Sendspin.host(ofPeer: "[fe80::1]:5512") == "fe80::1")
        #expect(Sendspin.host(ofPeer: "fe80::1") == "fe80::1")
        #expect(Sendspin.host(ofPeer: "host") == "host")
    }

    /// Artwork channels from `client/state` (aiosendspin 10) and from the
    /// deprecated hello: 1…4 channels, sides 1…4096, formats JPEG and PNG.
    @Test func artworkChannelsAreReadAndBoundedWhereTheyEnter() throws {
        let state = #"{"type":"client/state","payload":{"available":true,"artwork":{"channels":[{"source":"album","format":"jpeg","width":300,"height":300},{"source":"none"},{"source":"artist","format":"png","media_width":64,"media_height":48},{"source":"album","format":"bmp","width":10,"height":10}]}}}"#
        #expect(try Sendspin.parse(Array(state.utf8)) == .state(state: nil, volume: nil, muted: nil, artwork: [
            SendspinArtworkChannel(source: .album, format: "jpeg", width: 300, height: 300), .off,
            SendspinArtworkChannel(source: .artist, format: "png", width: 64, height: 48), .off, // bmp: not served, the channel off
        ]))
        let plain = #"{"type":"client/state","payload":{"player":{"volume":40}}}"#
        #expect(try Sendspin.parse(Array(plain.utf8)) == .state(state: nil, volume: 40, muted: nil, artwork: nil))
        let hello = #"{"type":"client/hello","payload":{"client_id":"d","name":"Display","version":1,"supported_roles":["artwork@v1"],"artwork@v1_support":{"channels":[{"source":"album","format":"png","media_width":800,"media_height":480}]}}}"#
        guard case .hello(let h) = try Sendspin.parse(Array(hello.utf8)) else { Issue.record("not a hello"); return }
        #expect(h.has("artwork") && h.artworkChannels == [SendspinArtworkChannel(source: .album, format: "png", width: 800, height: 480)])
        func channels(_ list: String) -> String { #"{"type":"client/state","payload":{"artwork":{"channels":["# + list + "]}}}" }
        let album = #"{"source":"album","format":"jpeg","width":300,"height":300}"#
        for bad in [channels(""), channels(Array(repeating: album, count: 5).joined(separator: ",")),
                    channels(#"{"source":"album","format":"jpeg","width":0,"height":300}"#),
                    channels(#"{"source":"album","format":"jpeg","width":300,"height":4097}"#),
                    channels(#"{"source":"album","format":"jpeg","width":300}"#),
                    channels(#"{"source":"cover","format":"jpeg","width":300,"height":300}"#),
                    channels(#"{"format":"jpeg","width":300,"height":300}"#), channels("7"),
                    #"{"type":"client/state","payload":{"artwork":{"channels":"all"}}}"#] {
            #expect(throws: SendspinError.self, "\(bad)") { try Sendspin.parse(Array(bad.utf8)) }
        }
        #expect(throws: Never.self) { try Sendspin.parse(Array(channels(#"{"source":"album","format":"jpeg","width":4096,"height":1}"#).utf8)) }
    }

    /// `stream/start` names the channels up to the last streamed; an image is
    /// an announce and parts (spec #188), or one message for a hello-declared client.
    @Test func artworkGoesAsAnnounceAndPartsOrAsOneMessage() {
        let start = JSONValue.parsing(Sendspin.streamStart(artwork: [.off, SendspinArtworkChannel(source: .album, format: "jpeg", width: 300, height: 300), .off]))
        #expect(start?["type"]?.string == "stream/start")
        #expect(start?["payload"]?["artwork"]?["channels"] == [["source": "none"], ["source": "album", "format": "jpeg", "width": 300, "height": 300]])
        #expect(JSONValue.parsing(Sendspin.streamStart(artwork: [.off]))?["payload"]?["artwork"]?["channels"] == [])

        let image = (0..<70_000).map { UInt8(truncatingIfNeeded: $0) }
        let transfer = Sendspin.artworkMessages(channel: 1, timestamp: 0x0102030405060708, image: image, singleMessage: false)
        #expect(transfer.count == 3)
        #expect(transfer[0] == [9, 0x02, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 0x11, 0x70]) // 70,000 = 0x011170
        #expect(transfer[1].count == 65_519 && transfer[1].prefix(2) == [9, 0] && Array(transfer[1].dropFirst(2)) == Array(image[0..<65_517]))
        #expect(transfer[2].prefix(2) == [9, 0] && Array(transfer[2].dropFirst(2)) == Array(image[65_517...]))
        // Cleared: an announce of 0 bytes, nothing after.
        #expect(Sendspin.artworkMessages(channel: 0, timestamp: 5, image: [], singleMessage: false) == [[8, 0x02, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0]])
        #expect(Sendspin.artworkMessages(channel: 3, timestamp: 5, image: [0xFF, 0xD8], singleMessage: true) == [[11, 0, 0, 0, 0, 0, 0, 0, 5, 0xFF, 0xD8]])
        #expect(Sendspin.artworkMessages(channel: 2, timestamp: 5, image: [], singleMessage: true) == [[10, 0, 0, 0, 0, 0, 0, 0, 5]])
    }
}
