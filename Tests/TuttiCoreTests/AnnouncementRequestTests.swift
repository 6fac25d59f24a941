import Testing
@testable import TuttiCore

@Suite struct AnnouncementRequestTests {
    @Test func checkedWhereTheyEnter() throws {
        let ok = try AnnouncementRequest(target: .rooms(["kitchen"]), source: .text("Dinner is ready", language: "en"))
        #expect(ok.volume == 0.7 && ok.duckDecibels == -20 && ok.gainPerMille == 700 && ok.duckCentibels == 2_000)
        #expect(throws: AnnouncementError.noRooms) { try AnnouncementRequest(target: .rooms([]), source: .url("/m/bell.wav")) }
        #expect(throws: AnnouncementError.emptyText) { try AnnouncementRequest(target: .all, source: .text("  ", language: "en")) }
        #expect(throws: AnnouncementError.textTooLong(bytes: 1_001)) {
            try AnnouncementRequest(target: .all, source: .text(String(repeating: "a", count: 1_001), language: "en"))
        }
        // A voice name is never an option or a path for espeak-ng.
        for bad in ["-w", "../x", "en us", "", String(repeating: "a", count: 33)] {
            #expect(throws: AnnouncementError.badLanguage(bad)) { try AnnouncementRequest(target: .all, source: .text("hi", language: bad)) }
        }
        for good in ["en", "en-us", "ko", "zh-yue", "fr-FR"] { #expect(AnnouncementRequest.isLanguage(good)) }
        #expect(throws: AnnouncementError.badVolume(1.5)) { try AnnouncementRequest(target: .all, source: .url("/b.wav"), volume: 1.5) }
        #expect(throws: AnnouncementError.badDuck(6)) { try AnnouncementRequest(target: .all, source: .url("/b.wav"), duckDecibels: 6) }
        #expect(throws: AnnouncementError.badDuck(-61)) { try AnnouncementRequest(target: .all, source: .url("/b.wav"), duckDecibels: -61) }
        #expect(try AnnouncementRequest(target: .group("Up"), source: .url("/b.wav"), volume: 0, duckDecibels: -60).duckCentibels == 6_000)
    }

    @Test func anAnnouncementDuringAnotherIsQueuedAfterIt() {
        var q = AnnouncementQueue()
        let now = LeaderTime(nanoseconds: 1_000_000_000)
        let lead: Int64 = 100_000_000
        // The first: the lead from now; 2 s long.
        let first = q.schedule(now: now, lead: lead, frames: 96_000)
        #expect(first == now + lead && q.busyUntil == now + lead + 2_000_000_000)
        // Asked 0.5 s later: after the first's end and the gap.
        let second = q.schedule(now: now + 500_000_000, lead: lead, frames: 48_000)
        #expect(second == now + lead + 2_000_000_000 + AnnouncementQueue.gapNanoseconds)
        // Long after: at once again.
        let later = now + 10_000_000_000
        #expect(q.schedule(now: later, lead: lead, frames: 48_000) == later + lead)
    }

    @Test func messagesSayWhatToDo() {
        #expect(AnnouncementError.speakersCannotAnnounce(["study (protocol v8)"]).description
                == "these speakers cannot play announcements: study (protocol v8) (protocol v9 needed: update their tutti; Snapcast clients, browsers and Sendspin players cannot mix one)")
        #expect(AnnouncementError.unknownRoom("attic", known: ["kitchen", "living"]).description == "no room 'attic' (rooms: kitchen, living)")
    }
}
