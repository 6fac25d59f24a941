import Testing
import TuttiCore

/// One or more representative values of every `Message` case, including
/// boundary values (extreme integers, empty and multi-byte strings, empty
/// and maximum payloads).
let sampleMessages: [Message] = {
    var rng = SplitMix64(seed: 42)
    return [
        .authChallenge(nonce: (0..<32).map { UInt8($0) }),
        .authResponse(nonce: [UInt8](repeating: 7, count: 32), proof: (0..<32).map { UInt8(255 - $0) }),
        .authProof(proof: [UInt8](repeating: 0xA5, count: 32)),
        .hello(version: 1, name: "kitchen"),
        .hello(version: 0xFFFF, name: ""),
        .hello(version: 1, name: "Küche 🎵 リビング"),
        .hello(version: 1, name: String(repeating: "x", count: WireProtocol.maxNameBytes)),
        .welcome(version: 1, stream: StreamDescription(streamID: 7, codec: .opus, framesPerChunk: 960, bufferNanoseconds: 250_000_000)),
        .welcome(version: 1, stream: StreamDescription(streamID: .max, codec: .pcm, framesPerChunk: 1, bufferNanoseconds: 0)),
        .welcome(version: 1, stream: StreamDescription(streamID: 0, codec: .pcm, framesPerChunk: 4_800, bufferNanoseconds: 60 * nanosecondsPerSecond)),
        .reject(version: 2, reason: "version mismatch: leader speaks 2"),
        .reject(version: 0, reason: String(repeating: "é", count: WireProtocol.maxReasonBytes / 2)),
        .timeRequest(id: 0xDEAD_BEEF, t1: LocalTime(nanoseconds: 123_456_789_012)),
        .timeRequest(id: 0, t1: LocalTime(nanoseconds: -5)),
        .timeResponse(id: 17, t1: LocalTime(nanoseconds: .min), t2: LeaderTime(nanoseconds: .max), t3: LeaderTime(nanoseconds: -1)),
        .timeResponse(id: .max, t1: LocalTime(nanoseconds: 1), t2: LeaderTime(nanoseconds: 2), t3: LeaderTime(nanoseconds: 3)),
        .chunk(Chunk(streamID: 3, sequence: 0, pts: LeaderTime(nanoseconds: 5_000_000_000), frames: 960, payload: rng.bytes(3_840))),
        .chunk(Chunk(streamID: 3, sequence: .max, pts: LeaderTime(nanoseconds: .min), frames: 1, payload: [])),
        .chunk(Chunk(streamID: 9, sequence: 1 << 40, pts: LeaderTime(nanoseconds: -20_833), frames: 4_800, payload: rng.bytes(19_200))),
        .flush(streamID: 3, from: LeaderTime(nanoseconds: 9_876_543_210), fade: true),
        .flush(streamID: 4, from: LeaderTime(nanoseconds: -1), fade: false),
        .streamEnd(streamID: 3, at: LeaderTime(nanoseconds: .max)),
        .health(HealthReport(clockOffsetNanoseconds: -3_000_000_000, clockSkewPPB: 150_000, roundTripNanoseconds: 412_000,
                             bufferedNanoseconds: 180_000_000, outputErrorNanoseconds: -12_345, resampleRatioPPB: -200_000,
                             underruns: 1, hardResyncs: 2, concealedChunks: .max)),
        .health(HealthReport()),
        .bye(reason: "shutting down"),
        .bye(reason: ""),
        .settings(RoomSettings(volume: 0, muted: true, latencyTrimNanoseconds: -nanosecondsPerSecond)),
        .settings(RoomSettings(volume: 100, muted: false, latencyTrimNanoseconds: 5 * nanosecondsPerSecond)),
        .roomCommand(.toggle),
        .roomCommand(.volumeUp),
        .follow(stream: StreamDescription(streamID: 9, codec: .opus, framesPerChunk: 960, bufferNanoseconds: nanosecondsPerSecond),
                from: LeaderTime(nanoseconds: 123_456_789)),
        .follow(stream: StreamDescription(streamID: 0, codec: .pcm, framesPerChunk: 1, bufferNanoseconds: 0), from: LeaderTime(nanoseconds: -1)),
        .equalizer(.flat),
        .equalizer(try! EqualizerSettings(gains: [-12, -1.5, 0, 2, 4, 4, 3, 2, 1, 12], bass: 6, treble: -3.5, preamp: .manual(decibels: -12))),
        .channels(.stereo),
        .overlay(OverlayChunk(announcementID: 7, codec: .opus, pts: LeaderTime(nanoseconds: 1_000_000), frames: 960,
                              gainPerMille: 800, duckCentibels: 2_000, payload: [1, 2, 3])),
        .channels(.left),
        .channels(.swap),
        .reverb(.off),
        .reverb(try! ReverbSettings(preset: .largeHall, mix: 30)),
        .reverb(try! ReverbSettings(mix: 100, size: 0.25, damping: 0.125)),
        .syncReport(SyncReport()),
        .syncReport(SyncReport(clockUncertaintyNanoseconds: 12_345, clockSamples: .max, clockChannel: .datagram,
                               arrivalLeadMinimumNanoseconds: -5_000_000, lateChunks: 3)),
        .syncReport(SyncReport(clockUncertaintyNanoseconds: 1, clockSamples: 2, clockChannel: .stream,
                               arrivalLeadMinimumNanoseconds: 3, lateChunks: 4, streamDelayMaximumNanoseconds: 212_000_000)),
        .keyOffer(intent: .join, flags: 0, ephemeral: [UInt8](repeating: 1, count: 32), nonce: (0..<32).map { UInt8($0) }),
        .keyOffer(intent: .code, flags: 1, ephemeral: (0..<32).map { UInt8(255 - $0) }, nonce: [UInt8](repeating: 9, count: 32)),
        .keyReply(flags: 3, leaderKey: [UInt8](repeating: 2, count: 32), ephemeral: [UInt8](repeating: 3, count: 32),
                  nonce: [UInt8](repeating: 4, count: 32), confirm: [UInt8](repeating: 5, count: 32)),
        .keyProof(sealedKey: (0..<48).map { UInt8($0) }, confirm: [UInt8](repeating: 0xEE, count: 32)),
        .pairStatus(.waitingForApproval, attemptsLeft: 3),
        .pairStatus(.wrongCode, attemptsLeft: 0),
        .pakeShare(point: [UInt8](repeating: 0x42, count: 32)),
        .pakeConfirm(tag: [UInt8](repeating: 0x24, count: 32)),
        .clockRequest(tag: .max, id: 7, t1: LocalTime(nanoseconds: -1), mac: [UInt8](repeating: 1, count: 16)),
        .clockResponse(id: 7, t1: LocalTime(nanoseconds: 1), t2: LeaderTime(nanoseconds: 2), t3: LeaderTime(nanoseconds: .max),
                       mac: [UInt8](repeating: 2, count: 16)),
    ]
}()

/// Builds a framed message by hand: `u32 length | type | body`.
func frame(type: UInt8, body: [UInt8]) -> [UInt8] {
    let length = UInt32(body.count + 1)
    return [UInt8(length >> 24), UInt8((length >> 16) & 0xff), UInt8((length >> 8) & 0xff), UInt8(length & 0xff), type] + body
}

func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(v & 0xff)] }
func be32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> UInt32(24 - 8 * $0)) & 0xff) } }
func be64(_ v: Int64) -> [UInt8] { let u = UInt64(bitPattern: v); return (0..<8).map { UInt8((u >> UInt64(56 - 8 * $0)) & 0xff) } }

/// Runs the framer over `bytes` delivered in the given pieces, collecting
/// every message; rethrows the first error.
func drain(_ pieces: [ArraySlice<UInt8>], limit: Int = WireProtocol.maxMessageBytes) throws(ProtocolError) -> [Message] {
    var framer = MessageFramer(limit: limit)
    var out: [Message] = []
    for piece in pieces {
        framer.append(piece)
        while let m = try framer.next() { out.append(m) }
    }
    return out
}

/// Decodes one framed message through the framer, expecting exactly one
/// message or an error.
func decodeFramed(_ bytes: [UInt8]) throws(ProtocolError) -> Message? {
    var framer = MessageFramer()
    framer.append(bytes)
    return try framer.next()
}

func expectProtocolError(_ expected: ProtocolError, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let m = try decodeFramed(bytes)
        Issue.record("expected \(expected), decoded \(String(describing: m))", sourceLocation: sourceLocation)
    } catch {
        #expect(error == expected, sourceLocation: sourceLocation)
    }
}

/// Expects `.invalidField(type, …)` and returns the description.
@discardableResult
func expectInvalidField(_ type: MessageType, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    do {
        let m = try decodeFramed(bytes)
        Issue.record("expected invalidField(\(type)), decoded \(String(describing: m))", sourceLocation: sourceLocation)
    } catch {
        if case .invalidField(let t, let what) = error {
            #expect(t == type, sourceLocation: sourceLocation)
            return what
        }
        Issue.record("expected invalidField(\(type)), got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

@Suite("Wire protocol")
struct WireProtocolTests {
    // MARK: Round trips

    @Test("Every message round-trips through encoded() and MessageFramer", arguments: sampleMessages)
    func roundTrip(_ message: Message) throws {
        let bytes = message.encoded()
        // Length prefix counts the type byte and body.
        let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        #expect(length == bytes.count - 4)
        #expect(bytes[4] == message.type.rawValue)
        var framer = MessageFramer()
        framer.append(bytes)
        let decoded = try framer.next()
        #expect(decoded == message)
        #expect(try framer.next() == nil)
        #expect(framer.pendingBytes == 0)
        // And directly through decode(body:).
        #expect(try Message.decode(body: bytes[4...]) == message)
    }

    @Test("Every MessageType case is covered by the samples")
    func everyTypeCovered() {
        #expect(Set(sampleMessages.map(\.type.rawValue)) == Set(MessageType.allCases.map(\.rawValue)))
        #expect(MessageType.allCases.map(\.rawValue) == Array(1...18) + Array(30...32) + Array(40...47))
    }

    @Test("Exact byte layout (big-endian) of fixed-size messages")
    func exactLayout() {
        let req = Message.timeRequest(id: 0x0102_0304, t1: LocalTime(nanoseconds: 0x1122_3344_5566_7788)).encoded()
        #expect(req == [0, 0, 0, 13, 4, 1, 2, 3, 4, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88])

        let hello = Message.hello(version: 0x0102, name: "ab").encoded()
        #expect(hello == [0, 0, 0, 7, 1, 1, 2, 0, 2, 0x61, 0x62])

        let welcome = Message.welcome(version: 1, stream: StreamDescription(streamID: 5, codec: .opus, framesPerChunk: 960,
                                                                            bufferNanoseconds: 0x0102)).encoded()
        #expect(welcome == [0, 0, 0, 20, 2, 0, 1, 0, 0, 0, 5, 1, 0, 0, 0x03, 0xC0, 0, 0, 0, 0, 0, 0, 1, 2])

        // Fixed sizes: type byte + body.
        #expect(Message.timeResponse(id: 0, t1: .init(nanoseconds: 0), t2: .init(nanoseconds: 0), t3: .init(nanoseconds: 0)).encoded().count == 4 + 1 + 28)
        #expect(Message.flush(streamID: 0, from: .init(nanoseconds: 0), fade: false).encoded().count == 4 + 1 + 13)
        #expect(Message.streamEnd(streamID: 0, at: .init(nanoseconds: 0)).encoded().count == 4 + 1 + 12)
        #expect(Message.health(HealthReport()).encoded().count == 4 + 1 + 60)
        // Equalizer: band count, ten gains, bass, treble, preamp mode and value; half-dB steps in signed bytes.
        let eq = try! EqualizerSettings(gains: [6, 5, 4, 2, 0, 0, 0, 0, 0, -0.5], treble: 1, preamp: .manual(decibels: -3))
        #expect(Message.equalizer(eq).encoded() == [0, 0, 0, 16, 14, 10, 12, 10, 8, 4, 0, 0, 0, 0, 0, 0xFF, 0, 2, 1, 0xFA])
        // Channels: one byte, the map (v8).
        #expect(Message.channels(.right).encoded() == [0, 0, 0, 2, 16, 2])
        // v9 overlay: bounds checked where they enter.
        let overlayHead: [UInt8] = [17, 0, 0, 0, 1, 0] + [UInt8](repeating: 0, count: 8) + [0, 0, 0x03, 0xC0]
        #expect(throws: ProtocolError.invalidField(.overlay, "gain 1001‰ above 1000")) {
            try Message.decode(body: ArraySlice(overlayHead + [0x03, 0xE9, 0, 0]))
        }
        #expect(throws: ProtocolError.invalidField(.overlay, "duck 6001 cB above 6000")) {
            try Message.decode(body: ArraySlice(overlayHead + [0, 100, 0x17, 0x71]))
        }
        #expect(throws: ProtocolError.invalidField(.overlay, "codec 9 unknown")) {
            try Message.decode(body: ArraySlice([17, 0, 0, 0, 1, 9] + [UInt8](repeating: 0, count: 16)))
        }
        #expect(abs(OverlayChunk(announcementID: 1, codec: .pcm, pts: LeaderTime(nanoseconds: 0), frames: 1, gainPerMille: 1000,
                                 duckCentibels: 2_000, payload: []).duckGain - 0.1) < 1e-6)
        #expect(throws: ProtocolError.invalidField(.channels, "channel map 5 is not 0…4")) { try Message.decode(body: [16, 5]) }
        // v10 reverb: mix %, preset (0 custom, 1… in ReverbPreset order), size and damping in ‰; a preset's own values on decoding.
        #expect(Message.reverb(try! ReverbSettings(preset: .largeHall, mix: 30)).encoded() == [0, 0, 0, 7, 18, 30, 3, 0x02, 0xAB, 0x01, 0xC2])
        #expect(Message.reverb(try! ReverbSettings(mix: 5, size: 0.25, damping: 1)).encoded() == [0, 0, 0, 7, 18, 5, 0, 0, 250, 0x03, 0xE8])
        #expect(throws: ProtocolError.invalidField(.reverb, "mix 101 % above 100")) { try Message.decode(body: [18, 101, 0, 0, 0, 0, 0]) }
        #expect(throws: ProtocolError.invalidField(.reverb, "preset 6 is not 0…5")) { try Message.decode(body: [18, 10, 6, 0, 0, 0, 0]) }
        #expect(throws: ProtocolError.invalidField(.reverb, "size 1001‰ or damping 0‰ above 1000")) { try Message.decode(body: [18, 10, 0, 0x03, 0xE9, 0, 0]) }
        #expect(throws: ProtocolError.invalidField(.reverb, "preset 3 carries size 683‰ and damping 450‰, not 0‰ and 0‰")) { try Message.decode(body: [18, 10, 3, 0, 0, 0, 0]) }
        #expect(Message.chunk(Chunk(streamID: 0, sequence: 0, pts: .init(nanoseconds: 0), frames: 1, payload: [9, 8, 7])).encoded()
            == [0, 0, 0, 28, 6] + [UInt8](repeating: 0, count: 4 + 8 + 8) + [0, 0, 0, 1, 9, 8, 7])
    }

    @Test("Concatenated messages fed one byte at a time")
    func byteAtATime() throws {
        let stream = sampleMessages.flatMap { $0.encoded() }
        var framer = MessageFramer()
        var out: [Message] = []
        for b in stream {
            framer.append(CollectionOfOne(b))
            while let m = try framer.next() { out.append(m) }
            #expect(framer.pendingBytes <= WireProtocol.maxMessageBytes + 4)
        }
        #expect(out == sampleMessages)
        #expect(framer.pendingBytes == 0)
    }

    @Test("Concatenated messages fed in random splits", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomSplits(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let stream = sampleMessages.shuffled(using: &rng).flatMap { $0.encoded() }
        let expected = try drain([stream[...]])
        var pieces: [ArraySlice<UInt8>] = []
        var i = 0
        while i < stream.count {
            // Mix of tiny, medium and large reads, plus empty ones.
            let n = [0, 1, 3, 5, 17, 300, 4_096, 20_000][Int(rng.next() % 8)]
            let end = min(stream.count, i + Int(rng.next() % UInt64(n + 1)))
            pieces.append(stream[i..<end])
            i = end
        }
        #expect(try drain(pieces) == expected)
        #expect(expected.count == sampleMessages.count)
    }

    @Test("An incomplete message returns nil and is completed later")
    func incomplete() throws {
        let bytes = Message.bye(reason: "later").encoded()
        var framer = MessageFramer()
        framer.append(bytes[0..<3])
        #expect(try framer.next() == nil)
        #expect(framer.pendingBytes == 3)
        framer.append(bytes[3..<(bytes.count - 1)])
        #expect(try framer.next() == nil)
        #expect(framer.pendingBytes == bytes.count - 1)
        framer.append(bytes[(bytes.count - 1)...])
        #expect(try framer.next() == .bye(reason: "later"))
        #expect(framer.pendingBytes == 0)
    }

    @Test("A message of exactly the maximum size is accepted; one byte more is refused")
    func sizeLimit() throws {
        let maxPayload = WireProtocol.maxMessageBytes - 1 - 24
        let big = Message.chunk(Chunk(streamID: 1, sequence: 2, pts: .init(nanoseconds: 3), frames: 4_800,
                                      payload: [UInt8](repeating: 0xAB, count: maxPayload)))
        let bytes = big.encoded()
        #expect(bytes.count == WireProtocol.maxMessageBytes + 4)
        #expect(try decodeFramed(bytes) == big)

        let tooBig = Message.chunk(Chunk(streamID: 1, sequence: 2, pts: .init(nanoseconds: 3), frames: 4_800,
                                         payload: [UInt8](repeating: 0xAB, count: maxPayload + 1))).encoded()
        expectProtocolError(.oversized(length: WireProtocol.maxMessageBytes + 1, limit: WireProtocol.maxMessageBytes), tooBig)
    }

    // MARK: Malformed input

    @Test("Oversized length prefix is refused as soon as the prefix arrives")
    func oversized() {
        for length in [65_537, 100_000, 0x00FF_FFFF, 0x7FFF_FFFF, 0xFFFF_FFFF] as [UInt32] {
            // Only the prefix and a type byte: the framer must not wait for the body.
            expectProtocolError(.oversized(length: Int(length), limit: 65_536), be32(length) + [1])
        }
        // A custom limit is honoured.
        do {
            _ = try drain([Message.bye(reason: String(repeating: "z", count: 100)).encoded()[...]], limit: 50)
            Issue.record("expected oversized")
        } catch {
            #expect(error == .oversized(length: 103, limit: 50))
        }
    }

    @Test("Zero length prefix and empty body")
    func zeroLength() throws {
        expectProtocolError(.emptyMessage, [0, 0, 0, 0])
        expectProtocolError(.emptyMessage, [0, 0, 0, 0, 1, 2, 3])
        #expect(throws: ProtocolError.emptyMessage) { try Message.decode(body: ArraySlice<UInt8>()) }
    }

    @Test("Unknown type byte", arguments: [0, 19, 29, 33, 127, 200, 255] as [UInt8])
    func unknownType(_ type: UInt8) {
        expectProtocolError(.unknownType(type), frame(type: type, body: []))
        expectProtocolError(.unknownType(type), frame(type: type, body: [1, 2, 3, 4]))
    }

    @Test("Truncated bodies throw .truncated with exact needed/had", arguments: sampleMessages)
    func truncated(_ message: Message) {
        let full = Array(message.encoded().dropFirst(5)) // body without length and type
        // Chunk payload is "the rest": only its 24-byte header can be truncated (an overlay's 21).
        let checked = message.type == .chunk ? 24 : message.type == .overlay ? 21 : full.count
        // A v6 syncReport cut to its v5 layout (without the stream delay) is a whole v5 report.
        var optionalTail: Int?
        if case .syncReport(let r) = message, r.streamDelayMaximumNanoseconds != nil { optionalTail = full.count - 8 }
        for had in 0..<checked where had != optionalTail {
            let bytes = frame(type: message.type.rawValue, body: Array(full[0..<had]))
            do {
                let m = try decodeFramed(bytes)
                Issue.record("\(message.type) truncated to \(had) bytes decoded as \(String(describing: m))")
            } catch {
                guard case .truncated(let t, let needed, let gotHad) = error else {
                    Issue.record("\(message.type) truncated to \(had): \(error)")
                    continue
                }
                #expect(t == message.type)
                #expect(gotHad == had)
                #expect(needed > had && needed <= full.count)
                if had == full.count - 1 && message.type != .chunk && message.type != .overlay {
                    #expect(needed == full.count) // the last field is the one missing a byte
                }
            }
        }
    }

    @Test("Specific truncation numbers")
    func truncationNumbers() {
        // hello: version(2) + length(2) + 5 bytes of name; body stops after the length.
        let hello = Array(Message.hello(version: 1, name: "hello").encoded().dropFirst(5))
        expectProtocolError(.truncated(.hello, needed: 9, had: 4), frame(type: 1, body: Array(hello[0..<4])))
        expectProtocolError(.truncated(.hello, needed: 2, had: 1), frame(type: 1, body: [0]))
        // health: 6×i64 + 3×u32 = 60 bytes; stopping at 50 fails inside the first u32 (bytes 48..<52).
        expectProtocolError(.truncated(.health, needed: 52, had: 50), frame(type: 9, body: [UInt8](repeating: 0, count: 50)))
        // chunk header needs 24 bytes.
        expectProtocolError(.truncated(.chunk, needed: 24, had: 23), frame(type: 6, body: [UInt8](repeating: 1, count: 23)))
        // A length prefix shorter than the message: the framer hands the decoder a cut body.
        var cut = Message.timeRequest(id: 1, t1: .init(nanoseconds: 2)).encoded()
        cut[3] -= 3
        expectProtocolError(.truncated(.timeRequest, needed: 12, had: 9), Array(cut[0..<(cut.count - 3)]))
    }

    @Test("Trailing bytes throw .trailingBytes", arguments: sampleMessages.filter { $0.type != .chunk && $0.type != .overlay })
    func trailing(_ message: Message) {
        let body = Array(message.encoded().dropFirst(5))
        // A v5 syncReport's next 8 bytes are v6's stream delay: trailing bytes start after it.
        var optional = 0
        if case .syncReport(let r) = message, r.streamDelayMaximumNanoseconds == nil { optional = 8 }
        for extra in [1, 3, 100] {
            if extra <= optional {
                expectProtocolError(.truncated(message.type, needed: body.count + 8, had: body.count + extra),
                                    frame(type: message.type.rawValue, body: body + [UInt8](repeating: 0x5A, count: extra)))
                continue
            }
            expectProtocolError(.trailingBytes(message.type, count: extra - optional),
                                frame(type: message.type.rawValue, body: body + [UInt8](repeating: 0x5A, count: extra)))
        }
    }

    @Test("Chunk payload absorbs trailing bytes")
    func chunkPayloadIsRest() throws {
        let header = be32(1) + be64(2) + be64(3) + be32(4)
        let m = try decodeFramed(frame(type: 6, body: header + [1, 2, 3]))
        #expect(m == .chunk(Chunk(streamID: 1, sequence: 2, pts: .init(nanoseconds: 3), frames: 4, payload: [1, 2, 3])))
    }

    @Test("Settings out of range are refused")
    func settingsRanges() {
        func body(_ volume: UInt8, _ muted: UInt8, _ trim: Int64) -> [UInt8] {
            var b: [UInt8] = [11, volume, muted]
            for shift in stride(from: 56, through: 0, by: -8) { b.append(UInt8((UInt64(bitPattern: trim) >> UInt64(shift)) & 0xff)) }
            return b
        }
        #expect(throws: ProtocolError.invalidField(.settings, "volume 101 above 100")) { try Message.decode(body: body(101, 0, 0)[...]) }
        #expect(throws: ProtocolError.invalidField(.settings, "muted flag 2 is not 0 or 1")) { try Message.decode(body: body(50, 2, 0)[...]) }
        #expect(throws: ProtocolError.self) { try Message.decode(body: body(50, 0, 6 * nanosecondsPerSecond)[...]) }
        #expect(throws: ProtocolError.self) { try Message.decode(body: body(50, 0, -2 * nanosecondsPerSecond)[...]) }
        #expect(RoomSettings(volume: 100).gain == 1)
        #expect(RoomSettings(volume: 100, muted: true).gain == 0)
        #expect(abs(RoomSettings(volume: 50).gain - 0.056234) < 1e-5, "dB-linear: 50 → −25 dB")
    }

    @Test("Invalid codec byte", arguments: [2, 3, 0x7F, 0xFF] as [UInt8])
    func invalidCodec(_ codec: UInt8) {
        let body = be16(1) + be32(5) + [codec] + be32(960) + be64(100)
        let what = expectInvalidField(.welcome, frame(type: 2, body: body))
        #expect(what == "unknown codec \(codec)")
    }

    @Test("Frames per chunk out of range in welcome and chunk")
    func framesOutOfRange() throws {
        for frames in [0, 4_801, 10_000, UInt32.max] as [UInt32] {
            expectInvalidField(.welcome, frame(type: 2, body: be16(1) + be32(5) + [0] + be32(frames) + be64(100)))
            expectInvalidField(.chunk, frame(type: 6, body: be32(1) + be64(2) + be64(3) + be32(frames) + [1, 2]))
        }
        for frames in [1, 960, 4_800] as [UInt32] {
            #expect(try decodeFramed(frame(type: 2, body: be16(1) + be32(5) + [0] + be32(frames) + be64(100)))
                == .welcome(version: 1, stream: StreamDescription(streamID: 5, codec: .pcm, framesPerChunk: frames, bufferNanoseconds: 100)))
            #expect(try decodeFramed(frame(type: 6, body: be32(1) + be64(2) + be64(3) + be32(frames)))
                == .chunk(Chunk(streamID: 1, sequence: 2, pts: .init(nanoseconds: 3), frames: frames, payload: [])))
        }
    }

    @Test("Welcome buffer latency outside 0…60 s")
    func bufferOutOfRange() {
        for buffer in [-1, 60 * nanosecondsPerSecond + 1, .min, .max] as [Int64] {
            expectInvalidField(.welcome, frame(type: 2, body: be16(1) + be32(5) + [1] + be32(960) + be64(buffer)))
        }
    }

    @Test("Invalid UTF-8 in strings", arguments: [
        [0xFF], [0xFE, 0xFF], [0xC3], [0xE2, 0x82], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x61, 0x80, 0x62],
    ] as [[UInt8]])
    func invalidUTF8(_ raw: [UInt8]) {
        let string = be16(UInt16(raw.count)) + raw
        #expect(expectInvalidField(.hello, frame(type: 1, body: be16(1) + string)) == "string is not valid UTF-8")
        #expect(expectInvalidField(.reject, frame(type: 3, body: be16(1) + string)) == "string is not valid UTF-8")
        #expect(expectInvalidField(.bye, frame(type: 10, body: string)) == "string is not valid UTF-8")
    }

    @Test("Over-long strings are refused on decode; the limit itself is accepted")
    func overlongStrings() throws {
        func s(_ n: Int) -> [UInt8] { be16(UInt16(n)) + [UInt8](repeating: 0x61, count: n) }
        #expect(try decodeFramed(frame(type: 1, body: be16(1) + s(64))) == .hello(version: 1, name: String(repeating: "a", count: 64)))
        #expect(expectInvalidField(.hello, frame(type: 1, body: be16(1) + s(65))) == "string of 65 bytes exceeds 64")
        #expect(try decodeFramed(frame(type: 3, body: be16(1) + s(512))) == .reject(version: 1, reason: String(repeating: "a", count: 512)))
        #expect(expectInvalidField(.reject, frame(type: 3, body: be16(1) + s(513))) == "string of 513 bytes exceeds 512")
        #expect(try decodeFramed(frame(type: 10, body: s(512))) == .bye(reason: String(repeating: "a", count: 512)))
        #expect(expectInvalidField(.bye, frame(type: 10, body: s(513))) == "string of 513 bytes exceeds 512")
        // A declared length beyond the limit is refused before the bytes are even needed.
        #expect(expectInvalidField(.bye, frame(type: 10, body: be16(0xFFFF))) == "string of 65535 bytes exceeds 512")
    }

    @Test("Encoding cuts over-long strings at a character boundary")
    func encodingTruncatesStrings() throws {
        // 'é' is two bytes: "a" + 40×"é" is 81 bytes; byte 64 is a continuation byte, so the cut lands at 63.
        let name = "a" + String(repeating: "é", count: 40)
        let m = try decodeFramed(Message.hello(version: 1, name: name).encoded())
        #expect(m == .hello(version: 1, name: "a" + String(repeating: "é", count: 31)))
        // Four-byte scalars: 17×"🎵" = 68 bytes → 16 of them (64 bytes).
        let emoji = try decodeFramed(Message.hello(version: 1, name: String(repeating: "🎵", count: 17)).encoded())
        #expect(emoji == .hello(version: 1, name: String(repeating: "🎵", count: 16)))
        let reason = String(repeating: "r", count: 600)
        #expect(try decodeFramed(Message.bye(reason: reason).encoded()) == .bye(reason: String(repeating: "r", count: 512)))
        #expect(try decodeFramed(Message.reject(version: 3, reason: reason).encoded()) == .reject(version: 3, reason: String(repeating: "r", count: 512)))
    }

    @Test("Codec names and descriptions")
    func codecNames() {
        #expect(Codec(name: "PCM") == .pcm)
        #expect(Codec(name: "opus") == .opus)
        #expect(Codec(name: "flac") == nil)
        #expect(Codec.allCases.map(\.description) == ["pcm", "opus"])
        #expect(ProtocolError.oversized(length: 70_000, limit: 65_536).description == "message of 70000 bytes exceeds the 65536-byte limit")
    }

    // MARK: Fuzzing

    @Test("Random garbage only ever yields messages or errors")
    func fuzzGarbage() {
        var rng = SplitMix64(seed: 0xF00D)
        var messages = 0, errors = 0, incomplete = 0
        for _ in 0..<3_000 {
            // Small length prefixes so the decoder, not just the length check, is exercised.
            var bytes = rng.bytes(Int(rng.next() % 120))
            if bytes.count >= 5 && rng.next() % 4 != 0 {
                let length = UInt32(rng.next() % UInt64(bytes.count))
                bytes.replaceSubrange(0..<4, with: be32(length))
                bytes[4] = UInt8(1 + rng.next() % 11)
            }
            switch fuzzOnce(bytes, rng: &rng) {
            case .messages(let n): messages += n; incomplete += 1
            case .error(let n): messages += n; errors += 1
            }
        }
        #expect(messages + errors > 0)
        #expect(errors > 100)
        #expect(incomplete > 100)
    }

    @Test("Mutated valid streams only ever yield messages or errors; decoded messages re-encode identically")
    func fuzzMutations() {
        var rng = SplitMix64(seed: 0xBEEF)
        let valid = sampleMessages.filter { $0.encoded().count < 600 }.map { $0.encoded() }
        var decodedAny = 0, threw = 0
        for _ in 0..<3_000 {
            var bytes = (0..<3).flatMap { _ in valid[Int(rng.next() % UInt64(valid.count))] }
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let i = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0: bytes[i] ^= UInt8(1 << (rng.next() % 8))
                case 1: bytes[i] = UInt8(truncatingIfNeeded: rng.next())
                default: bytes.remove(at: i)
                }
            }
            switch fuzzOnce(bytes, rng: &rng) {
            case .messages(let n): decodedAny += n
            case .error(let n): decodedAny += n; threw += 1
            }
        }
        #expect(decodedAny > 1_000)
        #expect(threw > 500)
    }

    enum FuzzOutcome { case messages(Int), error(Int) }

    /// Feeds `bytes` in random pieces; every decoded message must re-encode to
    /// exactly the bytes it was decoded from.
    func fuzzOnce(_ bytes: [UInt8], rng: inout SplitMix64) -> FuzzOutcome {
        var framer = MessageFramer()
        var i = 0, count = 0
        do {
            while i < bytes.count {
                let end = min(bytes.count, i + 1 + Int(rng.next() % 40))
                framer.append(bytes[i..<end])
                i = end
                while true {
                    let before = framer.pendingBytes
                    guard let m = try framer.next() else { break }
                    count += 1
                    let consumed = before - framer.pendingBytes
                    let start = end - before
                    let encoded = m.encoded()
                    #expect(encoded.count == consumed)
                    #expect(encoded[...] == bytes[start..<(start + consumed)])
                }
            }
            return .messages(count)
        } catch {
            switch error {
            case .oversized, .emptyMessage, .unknownType, .truncated, .trailingBytes, .invalidField: break
            }
            #expect(!error.description.isEmpty)
            return .error(count)
        }
    }
}
