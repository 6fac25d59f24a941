import Testing
import TuttiCore

@Suite struct RoomGroupsTests {
    @Test func roomsStartInTheMainGroupAndMove() throws {
        var t = RoomGroups()
        #expect(t.groupID(ofRoom: "den") == "main")
        let k = try t.create(name: "Kitchen")
        #expect(k.id == "g2")
        #expect(try t.move(room: "den", to: "kitchen") == "main") // by name, any case
        #expect(t.groupID(ofRoom: "den") == "g2")
        #expect(t.rooms(in: "g2", of: ["den", "hall"]) == ["den"])
        #expect(t.rooms(in: "main", of: ["den", "hall"]) == ["hall"])
        try t.move(room: "den", to: "main")
        #expect(t.assignment.isEmpty, "the main group needs no entry")
    }

    @Test func namesAreValidatedAndUnique() throws {
        var t = RoomGroups()
        #expect(throws: GroupError.invalidName("  ")) { _ = try t.create(name: "  ") }
        #expect(throws: GroupError.invalidName("a\u{7}b")) { _ = try t.create(name: "a\u{7}b") }
        #expect(throws: GroupError.nameTaken("home")) { _ = try t.create(name: "home") }
        #expect(throws: GroupError.nameTaken("main")) { _ = try t.create(name: "main") }
        let g = try t.create(name: "  Loft ")
        #expect(g.name == "Loft")
        #expect(try t.rename("Loft", to: "loft").name == "loft", "renaming to another case of its own name is fine")
        _ = try t.create(name: "Cellar")
        #expect(throws: GroupError.nameTaken("Cellar")) { _ = try t.rename("loft", to: "Cellar") }
        #expect(throws: GroupError.unknownGroup("nope", known: ["Home", "loft", "Cellar"])) { try t.move(room: "x", to: "nope") }
    }

    @Test func deletingAGroupSendsItsRoomsToMainAndIDsAreNotReused() throws {
        var t = RoomGroups()
        let a = try t.create(name: "A")
        try t.move(room: "r1", to: "A"); try t.move(room: "r2", to: "A")
        #expect(throws: GroupError.mainGroupIsPermanent) { _ = try t.delete("main") }
        let (gone, rooms) = try t.delete("A")
        #expect(gone == a && rooms == ["r1", "r2"])
        #expect(t.groupID(ofRoom: "r1") == "main")
        #expect(try t.create(name: "B").id == "g3")
    }

    @Test func partyMovesEveryRoomAndOffPutsThemBack() throws {
        var t = RoomGroups()
        _ = try t.create(name: "Up")
        try t.move(room: "bed", to: "Up")
        let rooms = ["bed", "den", "hall"]
        #expect(try t.partyOn(rooms: rooms, into: "main").id == "main")
        #expect(t.partyActive && rooms.allSatisfy { t.groupID(ofRoom: $0) == "main" })
        // A second party call (into another group) keeps the first saved places.
        _ = try t.partyOn(rooms: rooms, into: "Up")
        #expect(rooms.allSatisfy { t.groupID(ofRoom: $0) == "g2" })
        let moved = t.partyOff()
        #expect(moved == ["den", "hall"])
        #expect(t.groupID(ofRoom: "bed") == "g2" && t.groupID(ofRoom: "den") == "main" && !t.partyActive)
        #expect(t.partyOff() == [], "off twice is harmless")
    }

    @Test func aRoomArrivingDuringThePartyJoinsItAndLeavesWithIt() throws {
        var t = RoomGroups()
        _ = try t.create(name: "Up")
        _ = try t.partyOn(rooms: ["bed"], into: "Up")
        let first = t.admit(room: "porch"), second = t.admit(room: "porch")
        #expect(first && t.groupID(ofRoom: "porch") == "g2")
        #expect(!second, "admitted once")
        t.partyOff()
        #expect(t.groupID(ofRoom: "porch") == "main" && t.partyGroup == nil)
        let afterParty = t.admit(room: "attic")
        #expect(!afterParty, "no party, no move")
        let saved = RoomGroups(groups: t.groups, assignment: [:], beforeParty: ["x": "main"], partyGroup: "g2")
        #expect(saved.partyGroup == "g2")
    }

    @Test func partyOffAfterTheSavedGroupWasDeletedUsesMain() throws {
        var t = RoomGroups()
        _ = try t.create(name: "Up")
        try t.move(room: "bed", to: "Up")
        _ = try t.partyOn(rooms: ["bed"], into: "main")
        _ = try t.delete("Up")
        t.partyOff()
        #expect(t.groupID(ofRoom: "bed") == "main")
    }

    @Test func restoringDropsAssignmentsToMissingGroupsAndContinuesNumbering() {
        let t = RoomGroups(groups: [.init(id: "main", name: "Casa"), .init(id: "g7", name: "Seven")],
                           assignment: ["a": "g7", "b": "g9", "c": "main"], beforeParty: nil)
        #expect(t.groups.map(\.name) == ["Casa", "Seven"])
        #expect(t.assignment == ["a": "g7"])
        var u = t
        #expect((try? u.create(name: "Next"))?.id == "g8")
    }

    @Test func groupCountIsBounded() throws {
        var t = RoomGroups()
        for i in 1..<RoomGroups.maxGroups { _ = try t.create(name: "G\(i)") }
        #expect(throws: GroupError.tooMany(RoomGroups.maxGroups)) { _ = try t.create(name: "one more") }
    }
}
