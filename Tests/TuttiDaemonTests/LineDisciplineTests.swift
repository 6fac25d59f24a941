import Testing
@testable import TuttiDaemon
@testable import TuttiLeader
@testable import TuttiControlKit
@testable import TuttiMPD

/// When a control reader wakes with nothing received: at its next deadline
/// only, never in fixed ticks (a connected, logged-in client costs no wake-ups).
@Suite struct LineDisciplineDeadlineTests {
    let second: Int64 = 1_000_000_000

    @Test func aNewConnectionWakesAtItsFirstRequestOrLoginDeadline() {
        let at = LineDiscipline.nextDeadline(connectedAt: 5 * second, requests: 0, loggedIn: false, partial: .init())
        #expect(at == 5 * second + Int64(LineDiscipline.firstRequestMilliseconds) * 1_000_000 + 1)
    }

    @Test func aLoggedInClientThatAskedWaitsWithoutATimeout() {
        #expect(LineDiscipline.nextDeadline(connectedAt: 0, requests: 3, loggedIn: true, partial: .init()) == nil)
    }

    @Test func aHalfLineSetsTheDeadlineFromWhenItWasLeft() {
        var partial = LineDiscipline.PartialLineClock()
        partial.update(unfinished: true, lineEnded: false, now: 40 * second)
        let at = LineDiscipline.nextDeadline(connectedAt: 0, requests: 3, loggedIn: true, partial: partial)
        #expect(at == 40 * second + partial.limitNanoseconds + 1)
        // Not logged in, long connected: the login deadline (already past) comes first.
        let login = LineDiscipline.nextDeadline(connectedAt: 0, requests: 3, loggedIn: false, partial: partial)
        #expect(login == Int64(LineDiscipline.loginMilliseconds) * 1_000_000 + 1)
    }
}
