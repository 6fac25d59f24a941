import Testing
import TuttiCore

/// The back-off of network sources (a live HTTP stream's reconnects, an HLS
/// playlist's reloads after a failure), on simulated time: no sleeps.
@Suite struct ReconnectBackoffTests {
    /// A generator that hands out the given values, then zeros.
    struct Scripted: RandomNumberGenerator {
        var values: [UInt64]
        mutating func next() -> UInt64 { values.isEmpty ? 0 : values.removeFirst() }
    }

    static let s: Int64 = 1_000_000_000

    @Test func waitsDoubleUpToTheCap() {
        var backoff = ReconnectBackoff(policy: ReconnectPolicy(jitter: 0))
        var random = Scripted(values: [])
        var decisions: [ReconnectBackoff.Decision] = []
        var now: Int64 = 7 * Self.s
        for _ in 0..<9 {
            let d = backoff.failed(now: now, using: &random)
            decisions.append(d)
            if case .retry(_, let at, _) = d { now = at } // the attempt fails the moment it starts
        }
        let delays = decisions.map { d -> Int64 in if case .retry(_, _, let delay) = d { delay } else { -1 } }
        #expect(delays == [0.5, 1, 2, 4, 8, 16, 30, 30, 30].map { Int64($0 * 1e9) })
        #expect(decisions.first == .retry(attempt: 1, at: 7_500_000_000, delay: 500_000_000))
        #expect(decisions.last == .retry(attempt: 9, at: now, delay: 30 * Self.s))
        #expect(backoff.retryAt == now)
        #expect(ReconnectPolicy().delay(beforeAttempt: 1_000) == 30)
    }

    @Test func jitterTakesOffAtMostItsShareFromTheInjectedGenerator() {
        // 0 takes nothing off, half the range half the jitter, the top of the range almost all of it.
        var random = Scripted(values: [0, 1 << 63, .max])
        var backoff = ReconnectBackoff(policy: ReconnectPolicy(initialDelay: 1, maxDelay: 1, jitter: 0.2))
        #expect(backoff.failed(now: 0, using: &random) == .retry(attempt: 1, at: 1_000_000_000, delay: 1_000_000_000))
        #expect(backoff.failed(now: 0, using: &random) == .retry(attempt: 2, at: 900_000_000, delay: 900_000_000))
        #expect(backoff.failed(now: 0, using: &random) == .retry(attempt: 3, at: 800_000_001, delay: 800_000_001))

        // A seeded generator: the same seed, the same waits; all within 80…100 % of the ceiling.
        func waits(seed: UInt64) -> [Int64] {
            var rng = SplitMix64(seed: seed)
            var b = ReconnectBackoff(policy: ReconnectPolicy())
            return (0..<8).map { _ in if case .retry(_, _, let d) = b.failed(now: 0, using: &rng) { d } else { -1 } }
        }
        let a = waits(seed: 42)
        #expect(a == waits(seed: 42))
        #expect(a != waits(seed: 43))
        for (n, wait) in a.enumerated() {
            let ceiling = Int64(ReconnectPolicy().delay(beforeAttempt: n) * 1e9)
            #expect(wait <= ceiling && wait >= ceiling * 8 / 10, "attempt \(n + 1): \(wait) ns of at most \(ceiling)")
        }
    }

    @Test func givesUpAfterMaxAttemptsAndNeverMeansNone() {
        var random = Scripted(values: [])
        var backoff = ReconnectBackoff(policy: ReconnectPolicy(initialDelay: 0.1, maxAttempts: 3, jitter: 0))
        #expect(backoff.failed(now: 0, using: &random) == .retry(attempt: 1, at: 100_000_000, delay: 100_000_000))
        #expect(backoff.failed(now: 100_000_000, using: &random) == .retry(attempt: 2, at: 300_000_000, delay: 200_000_000))
        #expect(backoff.failed(now: 300_000_000, using: &random) == .retry(attempt: 3, at: 700_000_000, delay: 400_000_000))
        #expect(backoff.failed(now: 700_000_000, using: &random) == .giveUp(attempts: 3))
        #expect(backoff.retryAt == nil)

        var never = ReconnectBackoff(policy: .never)
        #expect(never.failed(now: 0, using: &random) == .giveUp(attempts: 0))
        #expect(!ReconnectPolicy.never.allows(attempt: 0))
        #expect(ReconnectPolicy(maxAttempts: 3).allows(attempt: 2) && !ReconnectPolicy(maxAttempts: 3).allows(attempt: 3))
    }

    /// A connection counts as working once it has delivered 32 KiB; a
    /// shorter one (a server that accepts and drops at once) keeps doubling.
    @Test func onlyAConnectionThatDeliveredStartsTheWaitsAfresh() {
        var random = Scripted(values: [])
        var backoff = ReconnectBackoff(policy: ReconnectPolicy(jitter: 0))
        _ = backoff.failed(now: 0, using: &random)
        _ = backoff.failed(now: Self.s / 2, using: &random)
        backoff.connected()
        #expect(backoff.retryAt == nil)
        backoff.received(bytes: 20_000)
        backoff.received(bytes: 12_767) // one byte short
        #expect(backoff.failed(now: 10 * Self.s, using: &random) == .retry(attempt: 3, at: 12 * Self.s, delay: 2 * Self.s))
        backoff.connected()
        backoff.received(bytes: 32_768)
        #expect(backoff.failures == 0)
        #expect(backoff.failed(now: 20 * Self.s, using: &random) == .retry(attempt: 1, at: 20 * Self.s + Self.s / 2, delay: Self.s / 2))
        // Bytes from before a failure do not count for the next connection.
        backoff.received(bytes: 30_000)
        _ = backoff.failed(now: 21 * Self.s, using: &random)
        backoff.connected()
        backoff.received(bytes: 3_000)
        #expect(backoff.failures == 2)
        backoff.succeeded()
        #expect(backoff.failures == 0 && backoff.retryAt == nil)
    }

    /// A radio server down from 0 s to 10 s: a stream that lost it at 0
    /// tries at 0.5, 1.5, 3.5 and 7.5 s and is back at 15.5 s, after five attempts.
    @Test func aServerDownForTenSecondsIsFoundAgainOnSchedule() {
        var random = Scripted(values: [])
        var backoff = ReconnectBackoff(policy: ReconnectPolicy(jitter: 0))
        let upAgain = 10 * Self.s
        var attempts: [Int64] = []
        var now: Int64 = 0
        while true {
            guard case .retry(_, let at, _) = backoff.failed(now: now, using: &random) else { Issue.record("gave up"); return }
            now = at
            attempts.append(at)
            if at >= upAgain { backoff.connected(); break }
        }
        #expect(attempts == [0.5, 1.5, 3.5, 7.5, 15.5].map { Int64($0 * 1e9) })
        #expect(backoff.retryAt == nil)
    }
}
