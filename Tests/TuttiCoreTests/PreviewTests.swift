import Testing
import TuttiCore

/// Previews' rules (issue 34): the middle 30 s, the minute-long bounded
/// cache, the per-address limit, and the Ogg Opus pages, on injected time.
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

    /// The pages of a stream, parsed back: (flags, granule, sequence, packets), each page's CRC checked.
    struct Page { var flags: UInt8; var granule: Int64; var sequence: UInt32; var packets: [[UInt8]] }

    func pages(_ bytes: [UInt8]) -> [Page] {
        var out: [Page] = []
        var at = 0
        while at < bytes.count {
            #expect(Array(bytes[at..<at + 4]) == Array("OggS".utf8))
            let flags = bytes[at + 5]
            let granule = (0..<8).reduce(Int64(0)) { $0 | Int64(bytes[at + 6 + $1]) << (8 * Int64($1)) }
            let sequence = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + 18 + $1]) << (8 * UInt32($1)) }
            let crc = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + 22 + $1]) << (8 * UInt32($1)) }
            let segments = Int(bytes[at + 26])
            let lacing = bytes[(at + 27)..<(at + 27 + segments)]
            let length = 27 + segments + lacing.reduce(0) { $0 + Int($1) }
            var page = Array(bytes[at..<at + length])
            page[22] = 0; page[23] = 0; page[24] = 0; page[25] = 0
            #expect(OggOpusWriter.crc32(page) == crc, "page \(sequence)'s checksum")
            var packets: [[UInt8]] = [], current: [UInt8] = [], body = at + 27 + segments
            for l in lacing {
                current += bytes[body..<body + Int(l)]
                body += Int(l)
                if l < 255 { packets.append(current); current = [] }
            }
            out.append(Page(flags: flags, granule: granule, sequence: sequence, packets: packets))
            at += length
        }
        return out
    }

    @Test func anOggOpusStreamHasItsHeadersPagesAndExactLength() {
        // Ogg's CRC (poly 0x04C11DB7, initial 0, no final XOR): the check value of "123456789".
        #expect(OggOpusWriter.crc32(Array("123456789".utf8)) == 0x89A1_897F)
        var w = OggOpusWriter(serial: 0x1234_5678, preSkip: 312)
        // 120 packets of 20 ms (one of 300 bytes, laced 255 + 45), then the end: 2.4 s, the last 100 samples padding.
        for i in 0..<120 { w.append(packet: [UInt8](repeating: UInt8(i), count: i == 7 ? 300 : 40), samples: 960) }
        let bytes = w.finish(samples: 120 * 960 - 100 - 312)
        let p = pages(bytes)
        #expect(p.count == 5, "head, tags, 50 + 50 + 20 packets")
        #expect(p.map { $0.sequence } == [0, 1, 2, 3, 4])
        #expect(p[0].flags == 0x02 && p[0].granule == 0 && Array(p[0].packets[0].prefix(8)) == Array("OpusHead".utf8))
        let head = p[0].packets[0]
        #expect(head[8] == 1 && head[9] == 2 && Int(head[10]) | Int(head[11]) << 8 == 312, "version 1, stereo, pre-skip")
        #expect(Array(p[1].packets[0].prefix(8)) == Array("OpusTags".utf8) && p[1].granule == 0)
        // Granules count decoded samples, the pre-skip among them.
        #expect(p[2].packets.count == 50 && p[2].granule == 50 * 960 && p[2].flags == 0)
        #expect(p[2].packets[7].count == 300 && p[2].packets[7].allSatisfy { $0 == 7 })
        #expect(p[3].packets.count == 50 && p[3].granule == 100 * 960)
        #expect(p[4].packets.count == 20 && p[4].flags == 0x04, "the last page ends the stream")
        #expect(p[4].granule == 120 * 960 - 100, "pre-skip + samples: the decoder drops the padding")
    }
}
