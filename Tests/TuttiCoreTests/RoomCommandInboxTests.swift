import Testing
@testable import TuttiCore

/// What a speaker's buttons do when pressed faster than the leader acts:
/// merged as a user holding a button down expects, at a bounded rate.
struct RoomCommandInboxTests {
    let ms = nanosecondsPerMillisecond

    @Test func aButtonHeldDownForThreeSecondsIsDonePressByPress() {
        // A hold repeats every 150 ms (6.7 a second): under the 8 a second, so no press waits or merges.
        var inbox = RoomCommandInbox()
        var done: [RoomAction] = []
        for i in 0..<20 {
            let now = Int64(i) * 150 * ms
            inbox.receive(.volumeUp)
            if case .run(let a) = inbox.take(now: now) { done.append(a) }
        }
        #expect(done == Array(repeating: .volume(steps: 1), count: 20))
        #expect(inbox.isEmpty)
    }

    @Test func aHundredThousandNextsWaitingBecomeOneSkipOfTen() {
        var inbox = RoomCommandInbox()
        for _ in 0..<100_000 { inbox.receive(.next) }
        #expect(inbox.waiting == [.skip(10)])
        #expect(inbox.dropped == 0)
        #expect(inbox.take(now: 0) == .run(.skip(10)))
        #expect(inbox.take(now: 0) == .idle)
        // Each track skipped costs a token: the next skip of 10 waits for all 10 (1.25 s at 8 a second).
        for _ in 0..<100_000 { inbox.receive(.next) }
        #expect(inbox.take(now: 0) == .wait(until: 1_250 * ms))
        #expect(inbox.take(now: 1_250 * ms) == .run(.skip(10)))
    }

    @Test func pairsOfTogglesCancelRepeatsOfPlayAreOnePrevTakesBackANext() {
        var inbox = RoomCommandInbox()
        inbox.receive(.toggle); inbox.receive(.toggle)
        #expect(inbox.waiting.isEmpty, "play/pause twice is nothing")
        inbox.receive(.mute); inbox.receive(.mute); inbox.receive(.mute)
        #expect(inbox.waiting == [.toggle(.mute, presses: 1)])
        inbox.receive(.play); inbox.receive(.play)
        #expect(inbox.waiting == [.toggle(.mute, presses: 1), .once(.play)])
        inbox.receive(.next); inbox.receive(.next); inbox.receive(.prev)
        #expect(inbox.waiting.last == .skip(1))
        inbox.receive(.prev)
        #expect(inbox.waiting == [.toggle(.mute, presses: 1), .once(.play)], "a next and a prev: no skip at all")
        inbox.receive(.repeat); inbox.receive(.repeat); inbox.receive(.repeat); inbox.receive(.repeat); inbox.receive(.repeat)
        #expect(inbox.waiting.last == .cycle(.repeat, presses: 4))
    }

    @Test func volumeStepsAddUpWithinTheWholeRange() {
        var inbox = RoomCommandInbox()
        for _ in 0..<30 { inbox.receive(.volumeUp) }
        #expect(inbox.waiting == [.volume(steps: 20)], "20 steps of 5 are 0 to 100")
        for _ in 0..<50 { inbox.receive(.volumeDown) }
        #expect(inbox.waiting == [.volume(steps: -20)])
        for _ in 0..<20 { inbox.receive(.volumeUp) }
        #expect(inbox.waiting == [.volume(steps: 0)], "kept: the presses still unmute")
    }

    @Test func differentCommandsKeepTheirOrderAndAtMostSixteenWait() {
        var inbox = RoomCommandInbox()
        var intakes: [RoomCommandInbox.Intake] = []
        for i in 0..<40 { intakes.append(inbox.receive(i % 2 == 0 ? .next : .volumeUp)) }
        #expect(inbox.waiting.count == 16)
        #expect(inbox.waiting.prefix(4) == [.skip(1), .volume(steps: 1), .skip(1), .volume(steps: 1)])
        // Full, a command still merges into the last one waiting (the vol+ presses); the nexts are dropped.
        #expect(inbox.waiting.last == .volume(steps: 13))
        #expect(inbox.dropped == 12)
        #expect(intakes.filter { $0 == .dropped }.count == 12)
    }

    @Test func tenAtOnceThenEightASecond() {
        var inbox = RoomCommandInbox()
        for i in 0..<40 { inbox.receive(i % 2 == 0 ? .next : .volumeUp) }
        var runs = 0
        while case .run = inbox.take(now: 0) { runs += 1 }
        #expect(runs == 10)
        #expect(inbox.take(now: 0) == .wait(until: 125 * ms), "the next token in 1/8 s")
        #expect(inbox.take(now: 124 * ms) == .wait(until: 125 * ms))
        var later = 0
        for t in stride(from: Int64(125), through: 1_000, by: 125) { if case .run = inbox.take(now: t * ms) { later += 1 } }
        #expect(later == 6, "the 6 left of 16, one every 125 ms")
        #expect(inbox.take(now: 2_000 * ms) == .idle)
    }

    @Test func aSnapclientsMixerKeepsItsLatestReport() {
        var inbox = RoomCommandInbox()
        inbox.receiveMixer(volume: 10, muted: nil)
        inbox.receiveMixer(volume: 20, muted: nil)
        inbox.receiveMixer(volume: nil, muted: true)
        inbox.receiveMixer(volume: nil, muted: nil)
        #expect(inbox.waiting == [.mixer(volume: 20, muted: true)])
    }

    @Test func aTokenBucketRefillsInFractionsAndSaturates() {
        var b = TokenBucket(capacity: 2, perSecond: 3)
        let start = [b.take(now: 0), b.take(now: 0), b.take(now: 0)]
        #expect(start == [true, true, false])
        let early = b.take(now: 333 * ms), onTime = b.take(now: 334 * ms), next = b.nextToken(now: 334 * ms)
        #expect(!early, "a third of a second is just short of a token")
        #expect(onTime)
        #expect(next > 334 * ms)
        // A clock going back gives nothing; years later the bucket is just full.
        let back = b.take(now: 0)
        #expect(!back)
        let late = [b.take(now: Int64.max / 2), b.take(now: Int64.max / 2), b.take(now: Int64.max / 2)]
        #expect(late == [true, true, false])
    }
}

/// Connections counted per source address first, then per port.
struct ConnectionSharesTests {
    func address(_ text: String) -> SourceAddress { SourceAddress.parse(text)! }

    @Test func aHostGetsAQuarterOfThePortAndAtMost16() {
        #expect(ConnectionShares.Limits(port: 256).perAddress == 16)
        #expect(ConnectionShares.Limits(port: 32).perAddress == 8)
        var shares = ConnectionShares(limits: .init(port: 256))
        let a = address("10.0.0.7:5000"), b = address("10.0.0.8:5000")
        let results = (0..<40).map { _ in shares.admit(a) }
        #expect(results.filter { (try? $0.get()) == .general }.count == 16)
        #expect(results.last == .failure(.addressFull(a, 16)))
        #expect(shares.admit(b) == .success(.general), "another host is served")
        #expect(shares.held(by: a) == 16 && shares.held(by: b) == 1 && shares.addresses == 2)
    }

    /// The web ports' limits: a reverse proxy or tunnel on the leader brings
    /// every phone from 127.0.0.1 (or ::1), so that address may fill the port
    /// and its loopback places; any other address, 127.0.0.2 included, keeps a host's share.
    @Test func localhostMayFillAWebPortWhileAnyOtherHostKeepsItsShare() {
        let limits = ConnectionShares.Limits(port: 20, perAddress: 12, loopbackReserve: 4, localhostShare: 24)
        var shares = ConnectionShares(limits: limits)
        let proxy = address("127.0.0.1:40000"), other = address("127.0.0.2:40000"), six = address("[::1]:40000")
        let results = (0..<30).map { _ in shares.admit(proxy) }
        #expect(results.filter { (try? $0.get()) == .general }.count == 20)
        #expect(results.filter { (try? $0.get()) == .loopback }.count == 4)
        #expect(results.last == .failure(.addressFull(proxy, 24)))
        #expect(shares.admit(six) == .failure(.portFull(20)), "the port is full")
        var fresh = ConnectionShares(limits: limits)
        let others = (0..<14).map { _ in fresh.admit(other) }
        #expect(others.filter { (try? $0.get()) != nil }.count == 12)
        #expect(others.last == .failure(.addressFull(other, 12)), "127.0.0.2 keeps a host's share")
        #expect((0..<12).allSatisfy { _ in (try? fresh.admit(six).get()) != nil }, "::1 takes the rest of the port and the loopback places")
        #expect(fresh.admit(six) == .failure(.portFull(20)))
        #expect(ConnectionShares.Limits(port: 256).share(of: proxy) == 16, "other ports: localhost is a host like any other")
    }

    @Test func beyondAFullPortOnlyLoopbackAndWouldBeSpeakersGetTheReservedPlaces() {
        var shares = ConnectionShares(limits: .init(port: 8, loopbackReserve: 2, provisionalReserve: 1))
        for i in 1...4 { for _ in 0..<2 { _ = shares.admit(address("10.0.0.\(i)")) } }
        #expect(shares.general == 8)
        #expect(shares.admit(address("10.0.0.9")) == .failure(.portFull(8)))
        #expect(shares.admit(address("10.0.0.9"), mayProvision: true) == .success(.provisional))
        #expect(shares.admit(address("10.0.0.10"), mayProvision: true) == .failure(.portFull(8)), "one provisional place")
        #expect(shares.admit(address("127.0.0.1")) == .success(.loopback))
        #expect(shares.admit(address("::1")) == .success(.loopback))
        #expect(shares.admit(address("127.0.0.1")) == .failure(.portFull(8)), "two loopback places")
        // Given back, the places and the table are as before.
        shares.release(address("10.0.0.9"), place: .provisional)
        shares.release(address("127.0.0.1"), place: .loopback)
        shares.release(address("::1"), place: .loopback)
        for i in 1...4 { for _ in 0..<2 { shares.release(address("10.0.0.\(i)"), place: .general) } }
        #expect(shares.total == 0 && shares.addresses == 0)
    }

    @Test func addressesAreReadAsTheKernelGivesThem() {
        #expect(address("192.168.1.20:4953") == address("192.168.1.20"))
        #expect(address("::ffff:192.168.1.20") == address("192.168.1.20"), "an IPv4 peer on a dual-stack socket")
        #expect(address("[2001:db8:1:2::1]:80") == address("2001:db8:1:2:ffff::9"), "one /64 is one host")
        #expect(address("2001:db8:1:2::1") != address("2001:db8:1:3::1"))
        #expect(address("fe80::1%eth0") == address("fe80::2"))
        #expect(address("127.0.0.2").isLoopback && address("::1").isLoopback && !address("10.0.0.1").isLoopback)
        #expect(!address("::2").isLoopback)
        for bad in ["", "x", "1.2.3", "1.2.3.256", "1::2::3", "12345::", "1.2.3.4.5", ":::"] {
            #expect(SourceAddress.parse(bad) == nil, "\(bad)")
        }
    }
}
