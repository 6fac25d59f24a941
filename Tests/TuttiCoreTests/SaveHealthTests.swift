import Testing
import TuttiCore

struct SaveHealthTests {
    @Test func aFailingDiskIsLoggedOnceAndItsRecoveryOnce() {
        var health = SaveHealth()
        #expect(health.succeeded() == nil, "nothing to say while saving works")
        let first = health.failed("database or disk is full")
        #expect(first?.contains("database or disk is full") == true)
        for _ in 0..<59 { #expect(health.failed("database or disk is full") == nil) }
        #expect(health.failedAttempts == 60)
        #expect(health.failure == "database or disk is full")
        // A different reason is news.
        #expect(health.failed("disk I/O error") != nil)
        #expect(health.succeeded() == "the player state is saved again (after 61 failed attempts)")
        #expect(health.failure == nil && health.failedAttempts == 0)
        #expect(health.succeeded() == nil)
    }
}
