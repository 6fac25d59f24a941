import Testing
@testable import TuttiCore

/// A stereo pair's two speakers measured apart: each is a source of its own
/// in the plan (left, then right), each gets its own trim, and the report
/// shows the pair as one room with its two sides.
@Suite struct CalibrationPairTests {
    let pairs = StereoPairs([StereoPair(name: "Living room", left: "living-l", right: "living-r")])

    @Test func aPairIsMeasuredAsItsTwoSidesOneAfterTheOther() throws {
        let plan = CalibrationPlan(rooms: ["kitchen", "Living room"], pairs: pairs)
        #expect(plan.rooms == ["kitchen", "Living room"])
        #expect(plan.sources == [CalibrationSource(speaker: "kitchen"),
                                 CalibrationSource(speaker: "living-l", room: "Living room", side: .left),
                                 CalibrationSource(speaker: "living-r", room: "Living room", side: .right)])
        #expect(plan.slots == ["kitchen", "living-l", "living-r", "kitchen"])
        #expect(abs(plan.duration - 7.0) < 1e-12)
        // Either speaker's name means the pair; named twice, it is measured once.
        #expect(CalibrationPlan(rooms: ["living-r", "Living room"], pairs: pairs).slots == ["living-l", "living-r", "living-l"])
        // The plan as JSON keeps its sources, so an analysis elsewhere needs no pairs.
        var timed = plan
        timed.startLeaderNanoseconds = 5_000_000_000
        #expect(CalibrationPlan(json: timed.json) == timed)
        // A plan without sources (the web app's file path) measures its rooms as the leader's pairs say.
        #expect(CalibrationPlan(json: ["rooms": ["Living room"], "slotMs": 2000], pairs: pairs)?.slots == ["living-l", "living-r", "living-l"])
        #expect(CalibrationPlan(json: ["rooms": ["Living room"], "slotMs": 2000])?.slots == ["Living room"])
        // Sources that are not the plan's rooms', or a side that is not left or right, are not a plan.
        #expect(CalibrationPlan(json: ["rooms": ["a"], "slotMs": 2000, "sources": [["speaker": "b", "room": "c"]]]) == nil)
        #expect(CalibrationPlan(json: ["rooms": ["a"], "slotMs": 2000, "sources": [["speaker": "b", "room": "a", "side": "mono"]]]) == nil)
    }

    /// The kitchen at 2.9 ms, the pair's left speaker at 4.1 ms and its right
    /// at 11.3 ms (a speaker across the room), reverb, 20 dB SNR: each side's
    /// delay within ±0.1 ms, and the trims line all three up.
    @Test func eachSideOfAPairGetsItsOwnTrim() throws {
        let plan = CalibrationPlan(rooms: ["kitchen", "Living room"], pairs: pairs)
        let rooms = ["kitchen": SynthesisedRoom.reverberant(0.0029, seed: 11), "living-l": SynthesisedRoom.reverberant(0.0041, seed: 12),
                     "living-r": SynthesisedRoom.reverberant(0.0113, seed: 13)]
        let recording = synthesisedRecording(plan: plan, rooms: rooms)
        let result = try Calibration.analyse(recording: recording, sampleRate: 48_000, plan: plan)
        #expect(result.isUsable, "\(result)")
        #expect(result.rooms.map(\.room) == ["kitchen", "living-l", "living-r"])
        #expect(result.rooms.map(\.pair) == [nil, "Living room", "Living room"] && result.rooms.map(\.side) == [nil, .left, .right])
        let delays = result.rooms.map { $0.delayMilliseconds ?? .nan }
        print("pair: delays \(delays) ms (expected 0, 1.2, 8.4)")
        for (d, expected) in zip(delays, [0, 1.2, 8.4]) { #expect(abs(d - expected) < 0.1, "\(delays)") }
        // The right side is the latest: it keeps its 2 ms; the left is delayed by 7.2 ms, the kitchen by 8.4.
        let trims = result.trims(current: ["kitchen": 0, "living-l": 2, "living-r": 2])
        #expect(trims["living-r"] == 2)
        #expect(abs((trims["living-l"] ?? 99) - (2 - 7.2)) < 0.1 && abs((trims["kitchen"] ?? 99) - (-8.4)) < 0.1, "\(trims)")
        // After the trims, the three arrive together: each delay less its trim change is the same.
        let change = ["kitchen": trims["kitchen"]! - 0, "living-l": trims["living-l"]! - 2, "living-r": trims["living-r"]! - 2]
        let arrivals = result.rooms.map { ($0.delayMilliseconds ?? 0) - change[$0.room]! }
        #expect(arrivals.max()! - arrivals.min()! < 0.002, "\(arrivals)")

        // As people see it: the kitchen, and the pair once with its two sides.
        let groups = result.byRoom
        #expect(groups.map(\.room) == ["kitchen", "Living room"] && groups.map(\.isPair) == [false, true])
        #expect(groups[1].measured.map(\.room) == ["living-l", "living-r"])
        let report = result.report(current: ["kitchen": 0, "living-l": 2, "living-r": 2], language: .english)
        let entries = try #require(report["rooms"]?.array)
        #expect(entries.count == 2)
        let pair = entries[1]
        #expect(pair["room"]?.string == "Living room" && pair["pair"]?["left"]?.string == "living-l" && pair["pair"]?["right"]?.string == "living-r")
        #expect(pair["trimMs"] == nil) // set per side, never on the pair's name (which would move both)
        let sides = try #require(pair["sides"]?.array)
        #expect(sides.map { $0["side"]?.string } == ["left", "right"] && sides.map { $0["speaker"]?.string } == ["living-l", "living-r"])
        #expect(sides.map { $0["trimMs"]?.number } == [trims["living-l"], trims["living-r"]])
        #expect(sides.map { $0["currentTrimMs"]?.number } == [2, 2])
        #expect(abs((sides[1]["delayMs"]?.number ?? 0) - (sides[0]["delayMs"]?.number ?? 0) - 7.2) < 0.1)
        // One EQ for the pair, from both sides' response; each side's response is there too.
        #expect(pair["responseDb"]?.array?.count == 10 && pair["eq"]?.array?.count == 10 && sides.allSatisfy { $0["responseDb"]?.array?.count == 10 })
        #expect(entries[0]["trimMs"]?.number == trims["kitchen"] && entries[0]["sides"] == nil)
    }

    @Test func aSideNotHeardMakesThePairUnusableAndSaysWhichSide() throws {
        let plan = CalibrationPlan(rooms: ["kitchen", "Living room"], pairs: pairs)
        let rooms = ["kitchen": SynthesisedRoom.reverberant(0.0029, seed: 11), "living-l": SynthesisedRoom.reverberant(0.0041, seed: 12)]
        let result = try Calibration.analyse(recording: synthesisedRecording(plan: plan, rooms: rooms), sampleRate: 48_000, plan: plan)
        #expect(!result.isUsable)
        #expect(result.rooms[2].problem == .notHeard && result.rooms[1].problem == nil)
        let pair = try #require(result.report(current: [:], language: .english)["rooms"]?.array?.last)
        #expect(pair["problemCode"]?.string == "calibration.notHeard")
        #expect(pair["sides"]?.array?.last?["problemCode"]?.string == "calibration.notHeard" && pair["sides"]?.array?.first?["problem"] == nil)
        #expect(pair["responseDb"] == nil) // one side's response is not the pair's
    }
}
