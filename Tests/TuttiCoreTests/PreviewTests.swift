import Testing
import TuttiCore

/// Previews' rules (issue 34): the middle 30 s, the minute-long bounded
/// cache, the per-address limits, and the Opus-in-Ogg mapping, on injected time.
@Suite struct PreviewTests {
    let s = nanosecondsPerSecond

    @Test func theWindowIsTheMiddleThirtySecondsOrTheWholeTrack() {
        // 3 minutes at 44.1 kHz: 75 s in, 30 s long.
        func w(_ total: Int, _ rate: Int) -> [Int] { let x = PreviewWindow.frames(total: total, rate: rate); return [x.start, x.count] }
        #expect(w(180 * 44_100, 44_100) == [75 * 44_100, 30 * 44_100])
        // Shorter than 30 s: all of it.
        #expect(w(20 * 48_000, 48_000) == [0, 20 * 48_000])
        #expect(w(30 * 48_000, 48_000) == [0, 30 * 48_000])
        // An odd remainder rounds toward the start; a length unknown: the first 30 s.
        #expect(w(30 * 48_000 + 3, 48_000) == [1, 30 * 48_000])
        #expect(w(0, 48_000) == [0, 30 * 48_000])
    }

    func preview(_ n: Int, _ tag: UInt8 = 1) -> TrackPreview { TrackPreview(bytes: [UInt8](repeating: tag, count: n), cached: false, encodeMilliseconds: 7) }

    @Test func theCacheKeepsAPreviewAMinuteWithinItsEntriesAndBytes() {
        var c = PreviewCache(limits: .init(entries: 3, bytes: 1_000, lifetimeNanoseconds: 60 * s))
        let t0: Int64 = 1_000 * s
        // Mutating calls cannot sit inside #expect: these make them first.
        func store(_ id: Int64, _ p: TrackPreview, now: Int64) -> Bool { c.store(id, p, now: now) }
        func lookup(_ id: Int64, now: Int64) -> TrackPreview? { c.lookup(id, now: now) }
        #expect(lookup(1, now: t0) == nil)
        #expect(store(1, preview(300), now: t0))
        #expect(c.count == 1 && c.bytes == 300)
        // A hit says it is one, and keeps the encode's time.
        let hit = lookup(1, now: t0 + 60 * s - 1)
        #expect(hit?.cached == true && hit?.bytes.count == 300 && hit?.encodeMilliseconds == 7)
        // A minute after it was stored: gone, and its bytes with it.
        #expect(lookup(1, now: t0 + 60 * s) == nil)
        #expect(c.count == 0 && c.bytes == 0)
        // Three entries at most: a fourth pushes out the oldest (2).
        let t1 = t0 + 100 * s
        #expect(store(2, preview(300), now: t1))
        #expect(store(3, preview(300), now: t1 + 1 * s))
        #expect(store(4, preview(300), now: t1 + 2 * s))
        #expect(c.count == 3 && c.bytes == 900)
        #expect(store(5, preview(100), now: t1 + 3 * s))
        #expect(c.count == 3 && c.bytes == 700)
        #expect(lookup(2, now: t1 + 3 * s) == nil && lookup(3, now: t1 + 3 * s) != nil)
        // 1,000 bytes at most: 600 more push out the oldest (3) until they fit.
        #expect(store(6, preview(600), now: t1 + 4 * s))
        #expect(c.count == 3 && c.bytes == 1_000)
        #expect(lookup(3, now: t1 + 4 * s) == nil && lookup(4, now: t1 + 4 * s) != nil && lookup(6, now: t1 + 4 * s)?.bytes.count == 600)
        // One preview larger than the whole cache is not kept, and pushes nothing out.
        #expect(!store(7, preview(1_001), now: t1 + 5 * s))
        #expect(c.count == 3 && c.bytes == 1_000)
        // Storing a track again replaces it (its bytes counted once).
        #expect(store(6, preview(200, 2), now: t1 + 6 * s))
        #expect(c.count == 3 && c.bytes == 600 && lookup(6, now: t1 + 6 * s)?.bytes.first == 2)
    }

    @Test func theThirtyFirstRequestInAMinuteIsRefusedUntilTheWindowEnds() {
        var l = PreviewRateLimit(policy: .init(requests: 30, windowNanoseconds: 60 * s, capacity: 2))
        let phone = SourceAddress.parse("192.168.1.20")!, tablet = SourceAddress.parse("192.168.1.21")!
        func admit(_ a: SourceAddress, now: Int64) -> Int64? { l.admit(a, now: now) }
        let t0: Int64 = 5_000 * s
        for i in 0..<30 { #expect(admit(phone, now: t0 + Int64(i) * s / 10) == nil, "request \(i + 1)") }
        #expect(admit(phone, now: t0 + 10 * s) == 50, "refused, 50 s before the window ends")
        #expect(admit(phone, now: t0 + 60 * s - 1) == 1)
        // Another address has its own allowance.
        #expect(admit(tablet, now: t0 + 10 * s) == nil)
        // A new window.
        #expect(admit(phone, now: t0 + 60 * s) == nil)
        // Two addresses at most: a third pushes out the one whose window began first (the tablet's).
        let third = SourceAddress.parse("10.0.0.9")!
        #expect(admit(third, now: t0 + 61 * s) == nil)
        #expect(l.count == 2)
    }

    @Test func opusInOggGivesTheHeadersEachOnItsPageGranulesAndATrimmedEnd() throws {
        var m = OpusOggMapping(preSkip: 312)
        let headers = m.headers(vendor: "Tutti")
        #expect(headers.count == 2)
        let head = headers[0].bytes
        #expect(Array(head.prefix(8)) == Array("OpusHead".utf8) && head.count == 19, "OpusHead is 19 bytes for family 0: \(head.count)")
        #expect(head[8] == 1 && head[9] == 2 && Int(head[10]) | Int(head[11]) << 8 == 312, "version 1, stereo, pre-skip 312")
        #expect(Array(head[12..<16]) == [0x80, 0xbb, 0, 0] && head[16] == 0 && head[17] == 0 && head[18] == 0, "48000 Hz, gain 0, family 0")
        #expect(headers[0].first && !headers[0].last && headers[0].endsPage && headers[0].granule == 0 && headers[0].number == 0)
        #expect(Array(headers[1].bytes.prefix(8)) == Array("OpusTags".utf8) && headers[1].bytes.count == 8 + 4 + 5 + 4)
        #expect(!headers[1].first && headers[1].endsPage && headers[1].granule == 0 && headers[1].number == 1)

        // 120 packets of 20 ms, the last 100 samples padding: each packet comes
        // back when the next one arrives, with the samples decoded to its end.
        var out: [OpusOggMapping.Packet] = []
        func append(_ i: Int) -> OpusOggMapping.Packet? { m.append([UInt8](repeating: UInt8(i), count: 40), samples: 960) }
        #expect(append(0) == nil, "the first packet is held: it could be the last")
        for i in 1..<120 { if let p = append(i) { out.append(p) } }
        #expect(out.count == 119)
        #expect(out.map { $0.granule } == (1...119).map { Int64($0 * 960) }, "granules count the pre-skip's samples among the decoded")
        #expect(out.map { $0.number } == (2...120).map { Int64($0) })
        #expect(out.allSatisfy { !$0.first && !$0.last && !$0.endsPage } && out[7].bytes == [UInt8](repeating: 7, count: 40))
        let end = m.finish(samples: 120 * 960 - 100 - 312)
        let last = try #require(end)
        #expect(last.last && last.endsPage && last.number == 121 && last.bytes.first == 119)
        #expect(last.granule == Int64(120 * 960 - 100), "pre-skip + samples: the decoder drops the last packet's padding")
        #expect(m.finish(samples: 0) == nil, "nothing held after the end")

        // Trimming never reaches into the packets before the last, nor past what was decoded.
        var short = OpusOggMapping(preSkip: 312)
        _ = short.append([1], samples: 960)
        _ = short.append([2], samples: 960)
        #expect(short.finish(samples: 10)?.granule == 960, "at most the last packet's 960 samples are dropped")
        var long = OpusOggMapping(preSkip: 312, channels: 1)
        _ = long.append([1], samples: 960)
        #expect(long.finish(samples: 5_000)?.granule == 960, "no more than was decoded")
        #expect(long.headers()[0].bytes[9] == 1, "mono")
    }

    /// One address floods the preview route while others ask for one each:
    /// the places are shared as a port's connections are (`ConnectionShares`
    /// under `PreviewWaiting.limits`).
    @Test func waitingPreviewsAreSharedPerAddressTwoEachFourInAll() {
        let limits = PreviewWaiting.limits
        #expect(limits.perAddress == 2 && limits.port == 4 && limits.loopbackReserve == 0 && limits.provisionalReserve == 0)
        var places = ConnectionShares(limits: limits)
        let a = SourceAddress.parse("127.0.0.2")!, b = SourceAddress.parse("127.0.0.1")!
        let c = SourceAddress.parse("192.168.1.20")!, d = SourceAddress.parse("192.168.1.21")!
        func admit(_ x: SourceAddress) -> Result<ConnectionShares.Place, ConnectionShares.Refusal> { places.admit(x) }
        // A's third and every later request is refused while two wait, as its share.
        #expect(admit(a) == .success(.general) && admit(a) == .success(.general))
        for i in 3...20 { #expect(admit(a) == .failure(.addressFull(a, 2)), "A's request \(i)") }
        #expect(places.held(by: a) == 2 && places.total == 2)
        // B still gets a place, and so does C; then the four are taken.
        #expect(admit(b) == .success(.general))
        #expect(admit(c) == .success(.general))
        #expect(places.total == 4)
        // D is refused because all four are taken (503), not for its share; loopback has no reserve here.
        #expect(admit(d) == .failure(.portFull(4)))
        #expect(admit(SourceAddress.parse("127.0.0.3")!) == .failure(.portFull(4)), "no loopback reserve: a preview is a phone's")
        // One of A's is answered: its place is free for the next request, A's or another's.
        places.release(a, place: .general)
        #expect(admit(d) == .success(.general))
        #expect(admit(a) == .failure(.portFull(4)))
        for x in [a, b, c, d] { places.release(x, place: .general) }
        #expect(places.total == 0 && places.addresses == 0, "every place given back: the table is empty")
        // The refusals the route turns into 429 and 503, with the catalogue's words.
        let share = PreviewError.addressBusy(a, share: 2).message
        #expect(share.key == .previewAddressBusy && share.text(in: .english) == "127.0.0.2 is already waiting for 2 previews: try again when one is ready")
        #expect(share.text(in: .korean).contains("127.0.0.2") && share.text(in: .korean).contains("2개"))
        #expect(PreviewWaiting.retryAfterSeconds == 2)
    }
}
