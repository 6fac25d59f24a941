import Testing
import TuttiCore

/// The join handshake's timing at both ends and a speaker's reconnect
/// back-off, on simulated time: no sockets, no sleeps.
struct JoinTimingTests {
    let s = nanosecondsPerSecond

    @Test func aLeaderGivesTenSecondsToJoinTwoOnALentPlaceAndAPairingRequestItsLife() {
        #expect(JoinDeadlines.deadline(connectedAt: 5 * s, lentPlace: false, awaitingPerson: false) == 15 * s)
        #expect(JoinDeadlines.deadline(connectedAt: 5 * s, lentPlace: true, awaitingPerson: false) == 7 * s)
        #expect(JoinDeadlines.deadline(connectedAt: 5 * s, lentPlace: false, awaitingPerson: true) == 335 * s)
        // Never the pairing wait on a lent place.
        #expect(JoinDeadlines.deadline(connectedAt: 5 * s, lentPlace: true, awaitingPerson: true) == 7 * s)
    }

    @Test func theWatchClosesWhatIsDueAtItsDeadlineAndSleepsUntilTheNext() {
        let waiting = [(id: "a", deadline: 10 * s), (id: "b", deadline: 12 * s), (id: "c", deadline: 11 * s)]
        func look(_ w: [(id: String, deadline: Int64)], at now: Int64) -> String {
            let l = JoinDeadlines.sweep(w, now: now)
            return "\(l.close) \(l.nextLook.map { "\($0 / s) s" } ?? "nil")"
        }
        #expect(look(waiting, at: 9 * s) == "[] 10 s")
        // At its deadline exactly: closed.
        #expect(look(waiting, at: 10 * s) == "[\"a\"] 11 s")
        #expect(look(waiting, at: 12 * s) == "[\"a\", \"b\", \"c\"] nil")
        #expect(look([], at: 0) == "[] nil")
    }

    @Test func silentPeersAreClosedExactlyAtTheirDeadlinesAndAJoinedOneNever() {
        // The watch thread on simulated time: three connections, one joins at 4 s, one asks a person.
        struct Peer { var name: String; var connectedAt: Int64; var lent = false, person = false, joinedAt: Int64? }
        let peers = [Peer(name: "silent", connectedAt: 0), Peer(name: "lent", connectedAt: 1 * s, lent: true),
                     Peer(name: "joins", connectedAt: 2 * s, joinedAt: 4 * s), Peer(name: "asks", connectedAt: 3 * s, person: true)]
        var now: Int64 = 0
        var closed: [(String, Int64)] = []
        var looks = 0
        while looks < 20 {
            looks += 1
            let waiting = peers.filter { p in !closed.contains { $0.0 == p.name } && p.connectedAt <= now && (p.joinedAt ?? .max) > now }
            let look = JoinDeadlines.sweep(waiting.map { (id: $0.name, deadline: JoinDeadlines.deadline(connectedAt: $0.connectedAt, lentPlace: $0.lent, awaitingPerson: $0.person)) }, now: now)
            closed += look.close.map { ($0, now) }
            // It sleeps until its next look, or a new connection wakes it.
            guard let next = ([look.nextLook].compactMap { $0 } + peers.map(\.connectedAt).filter { $0 > now }).min() else { break }
            now = next
        }
        #expect(closed.map(\.0) == ["lent", "silent", "asks"])
        #expect(closed.map(\.1) == [3 * s, 10 * s, 333 * s])
        // Woken only at arrivals and deadlines: 0 s, 1, 2, 3 (lent's), 10, 333.
        #expect(looks == 6)
    }

    @Test func aSpeakerWaitsFiveSecondsForEachReplyTenForAJoinedLeader() {
        var timer = SpeakerJoinTimer()
        #expect(timer.receiveTimeout == 5 * s)
        #expect(timer.silence(now: 5 * s) == .giveUp)
        timer.joined()
        #expect(timer.receiveTimeout == 10 * s)
        #expect(timer.silence(now: 100 * s) == .giveUp)
    }

    @Test func aSpeakerWaitingForAPersonLooksEveryFiveSecondsAndGivesUpAfter330() {
        var timer = SpeakerJoinTimer()
        timer.waitingForPerson(now: 100 * s)
        // A wrong code typed meanwhile: the wait still runs from the first request.
        timer.waitingForPerson(now: 200 * s)
        #expect(timer.phase == .waitingForPerson(since: 100 * s))
        #expect(timer.receiveTimeout == 5 * s)
        // The leader says nothing: looks every 5 s until 330 s have passed.
        var now = 100 * s, looks = 0
        while true {
            now += timer.receiveTimeout
            if timer.silence(now: now) == .giveUp { break }
            looks += 1
        }
        #expect(looks == 66)
        #expect(now == 435 * s)
        #expect(timer.silence(now: 430 * s) == .lookAgain)
        #expect(timer.silence(now: 430 * s + 1) == .giveUp)
    }

    /// The wait a speaker's back-off gives after a failure at `now` (it never gives up).
    func delay(_ b: inout ReconnectBackoff, now: Int64 = 0) -> Int64 {
        var random = SplitMix64(seed: 1)
        guard case .retry(_, _, let delay) = b.failed(now: now, using: &random) else { Issue.record("gave up"); return .max }
        return delay
    }

    @Test func aSpeakerReconnectsAfter100MillisecondsDoublingTo2SecondsAndAfterACleanEndSoonAgain() {
        var b = ReconnectBackoff(policy: .speaker)
        let ms = nanosecondsPerMillisecond
        #expect((0..<7).map { _ in delay(&b) / ms } == [100, 200, 400, 800, 1_600, 2_000, 2_000])
        // A thousand failures on: still 2 s, and it never gives up.
        #expect((0..<1_000).map { _ in delay(&b) }.allSatisfy { $0 == 2_000 * ms })
        b.succeeded()
        #expect(delay(&b) == 100 * ms)
        #expect(delay(&b) == 200 * ms)
    }

    @Test func aLeaderBackAfterTenSecondsIsFoundWithinTwoSeconds() {
        // Attempts fail at once while the leader is away (0 to 10 s), on simulated time.
        var b = ReconnectBackoff(policy: .speaker)
        var now: Int64 = 0, attempts = 0
        while now < 10 * s {
            attempts += 1
            now += delay(&b, now: now)
        }
        // 0, 0.1, 0.3, 0.7, 1.5, 3.1, 5.1, 7.1, 9.1 s fail; 11.1 s finds it.
        #expect(attempts == 9)
        #expect(now == 11_100 * nanosecondsPerMillisecond)
        #expect(now - 10 * s <= 2 * s)
    }
}
