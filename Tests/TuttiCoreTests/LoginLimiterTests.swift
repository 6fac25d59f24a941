import Testing
import TuttiCore

/// Failed logins per address (issue 26): free ones, then waits that double, on injected time.
@Suite struct LoginLimiterTests {
    let s = nanosecondsPerSecond

    @Test func fiveFailuresAreFreeThenEachWaitDoublesUpToTheCap() {
        var l = LoginLimiter(policy: .init(freeFailures: 5, firstDelayNanoseconds: s, maximumDelayNanoseconds: 8 * s))
        var now: Int64 = 1_000 * s
        for _ in 0..<4 {
            #expect(l.check(address: "192.0.2.7", now: now) == nil)
            #expect(l.recordFailure(address: "192.0.2.7", now: now) == nil)
        }
        #expect(l.recordFailure(address: "192.0.2.7", now: now)?.retryAfterSeconds == 1, "the fifth starts a 1 s wait")
        let refusal = l.check(address: "192.0.2.7", now: now + s / 2)
        #expect(refusal == LoginLimiter.Refusal(address: "192.0.2.7", retryAfterSeconds: 1))
        #expect(refusal?.description == "too many failed logins from 192.0.2.7; try again in 1 s")
        #expect(l.check(address: "198.51.100.1", now: now) == nil, "another address is not held up")
        var waits: [Int64] = []
        for _ in 0..<5 {
            now += 60 * s // each try after its wait
            #expect(l.check(address: "192.0.2.7", now: now) == nil)
            waits.append(l.recordFailure(address: "192.0.2.7", now: now)?.retryAfterSeconds ?? 0)
        }
        #expect(waits == [2, 4, 8, 8, 8])
        l.recordSuccess(address: "192.0.2.7")
        #expect(l.check(address: "192.0.2.7", now: now) == nil && l.failures(address: "192.0.2.7") == 0, "a success starts afresh")
    }

    @Test func anAddressThatStopsFailingIsForgotten() {
        var l = LoginLimiter(policy: .init(freeFailures: 2, forgetAfterNanoseconds: 3_600 * s))
        _ = l.recordFailure(address: "a", now: 0)
        #expect(l.recordFailure(address: "a", now: 4_000 * s) == nil, "an hour later the first failure no longer counts")
    }

    @Test func theTableStaysBoundedAndDropsAnAddressWhoseWaitIsOverFirst() {
        var l = LoginLimiter(policy: .init(freeFailures: 1, firstDelayNanoseconds: 10 * s, maximumDelayNanoseconds: 10 * s, capacity: 3))
        l.recordFailure(address: "blocked-old", now: 0)       // waits until 10 s
        l.recordFailure(address: "free", now: -20 * s)        // its wait is over at 0
        l.recordFailure(address: "blocked-new", now: 1 * s)
        l.recordFailure(address: "newcomer", now: 2 * s)
        #expect(l.count == 3)
        #expect(l.failures(address: "free") == 0, "the address whose wait was over went first")
        #expect(l.check(address: "blocked-old", now: 3 * s) != nil && l.check(address: "blocked-new", now: 3 * s) != nil)
        for i in 0..<10_000 { l.recordFailure(address: "flood-\(i)", now: 5 * s) }
        #expect(l.count == 3, "a flood of addresses holds at most the capacity")
    }

    @Test func failuresAreCountedByIPv4AddressOrByIPv6Prefix() {
        #expect(LoginLimiter.key(host: "192.0.2.7") == "192.0.2.7")
        #expect(LoginLimiter.key(host: "::ffff:192.0.2.7") == "192.0.2.7", "IPv4-mapped is IPv4")
        #expect(LoginLimiter.key(host: "2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64")
        #expect(LoginLimiter.key(host: "2001:0db8:0001:0002::1") == "2001:db8:1:2::/64", "one host's privacy addresses share a key")
        #expect(LoginLimiter.key(host: "[fe80::1%eth0]") == "fe80:0:0:0::/64")
        #expect(LoginLimiter.key(host: "::1") == "0:0:0:0::/64")
        #expect(LoginLimiter.key(host: "2001:db8::1::2") == "2001:db8::1::2", "not an address: kept as it is")
    }

    @Test func theWaitNeverOverflows() {
        var l = LoginLimiter(policy: .init(freeFailures: 0, firstDelayNanoseconds: s, maximumDelayNanoseconds: 900 * s))
        var last: LoginLimiter.Refusal?
        for i in 0..<200 { last = l.recordFailure(address: "x", now: Int64(i) * 1_000 * s) }
        #expect(last?.retryAfterSeconds == 900)
    }
}

/// The live login tokens' digests: bounded, oldest dropped, compared against every entry.
@Suite struct ControlTokensTests {
    func same(_ a: [UInt8], _ b: [UInt8]) -> Bool { a == b }

    @Test func atMostTheCapacityLiveAndTheOldestGoesFirst() {
        var t = ControlTokens(capacity: 256)
        for i in 0..<256 { #expect(t.add(.init(digest: [UInt8(i & 255), UInt8(i >> 8)], issuedAt: Int64(i))).isEmpty) }
        let dropped = t.add(.init(digest: [0xAA, 0xBB], issuedAt: 1_000))
        #expect(dropped == [.init(digest: [0, 0], issuedAt: 0)] && t.entries.count == 256)
        #expect(!t.contains([0, 0], same: same) && t.contains([1, 0], same: same) && t.contains([0xAA, 0xBB], same: same))
        #expect(t.remove([1, 0], same: same) && !t.contains([1, 0], same: same) && !t.remove([1, 0], same: same))
        t.removeAll()
        #expect(t.entries.isEmpty)
    }

    @Test func loadedEntriesAreOrderedAndTrimmedToTheCapacity() {
        let t = ControlTokens(capacity: 2, entries: [.init(digest: [3], issuedAt: 30), .init(digest: [1], issuedAt: 10), .init(digest: [2], issuedAt: 20)])
        #expect(t.entries.map(\.digest) == [[2], [3]])
    }

    @Test func everyEntryIsComparedWhateverMatches() {
        var t = ControlTokens()
        for i in 0..<10 { t.add(.init(digest: [UInt8(i)], issuedAt: Int64(i))) }
        var compared = 0
        #expect(t.contains([0]) { a, b in compared += 1; return a == b })
        #expect(compared == 10, "a match on the first entry still compares all of them")
    }
}

/// Cover art types from the bytes alone.
@Suite struct ImageTypeTests {
    @Test func onlyJPEGPNGGIFAndWebPAreRecognised() {
        #expect(ImageType.sniff([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]) == .jpeg)
        #expect(ImageType.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]) == .png)
        #expect(ImageType.sniff(Array("GIF89a....".utf8)) == .gif && ImageType.sniff(Array("GIF87a".utf8)) == .gif)
        #expect(ImageType.sniff(Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)) == .webp)
        for other in ["<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>", "<!DOCTYPE html><script>x</script>",
                      "<?xml version=\"1.0\"?><svg/>", "BM6\u{0}\u{0}", "GIF8", "RIFF\u{0}\u{0}\u{0}\u{0}WAVE", ""] {
            #expect(ImageType.sniff(Array(other.utf8)) == nil, "\(other)")
        }
        #expect(ImageType.sniff([0x89, 0x50, 0x4E, 0x47]) == nil, "a truncated PNG signature")
    }
}
