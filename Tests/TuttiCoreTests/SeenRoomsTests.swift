import Testing
import TuttiCore

@Suite struct SeenRoomsTests {
    @Test func namesBeyondTheLimitForgetTheOldestThatNothingKeeps() {
        var seen = SeenRooms(limit: 3)
        #expect(seen.saw("kitchen").isEmpty)
        #expect(seen.saw("den").isEmpty)
        #expect(seen.saw("hall").isEmpty)
        // "kitchen" has settings; "den" is the oldest that nothing keeps.
        #expect(seen.saw("x1", keeping: ["kitchen"]) == ["den"])
        #expect(seen.names == ["kitchen", "hall", "x1"])
        // Seeing a name again makes it the newest.
        #expect(seen.saw("hall").isEmpty)
        #expect(seen.saw("x2", keeping: ["kitchen"]) == ["x1"])
        #expect(seen.names == ["kitchen", "hall", "x2"])
    }

    @Test func aPeerJoiningUnderAThousandNamesLeavesTheLimitAndEveryKeptRoom() {
        var seen = SeenRooms(limit: 128)
        seen.saw(all: ["kitchen", "den"])
        let kept: Set<String> = ["kitchen", "den"]
        var forgotten = 0
        for i in 0..<1_000 { forgotten += seen.saw("guest-\(i)", keeping: kept).count }
        #expect(seen.count == 128)
        #expect(forgotten == 1_000 - 126)
        #expect(seen.contains("kitchen") && seen.contains("den"))
        #expect(seen.contains("guest-999") && !seen.contains("guest-873") && seen.contains("guest-874"))
    }

    @Test func whenEverythingIsKeptTheListGrowsRatherThanDropARoom() {
        var seen = SeenRooms(limit: 2)
        seen.saw("a"); seen.saw("b")
        #expect(seen.saw("c", keeping: ["a", "b"]).isEmpty)
        #expect(seen.count == 3)
        seen.forget("a")
        #expect(seen.names == ["b", "c"])
    }
}
