import Testing
import TuttiCore
import TuttiGestures

/// A point `n` milliseconds into a test's virtual time.
func atMs(_ n: Int64) -> LocalTime { LocalTime(nanoseconds: n * nanosecondsPerMillisecond) }

/// Shorthand for expected gestures: `"b press 400"`, `"b hold#2 750"`.
private func g(_ events: [GestureEvent]) -> [String] {
    events.map { e in
        let name = e.gesture == .hold ? "hold#\(e.repeatCount)" : e.gesture.rawValue
        let t = e.time.nanoseconds
        let when = t % nanosecondsPerMillisecond == 0 ? "\(t / nanosecondsPerMillisecond)" : "\(t)ns"
        return "\(e.button) \(name) \(when)"
    }
}

/// Feeds `script` (edges of button "b", `+` press, `-` release, at ms) and
/// ticks to `until`; returns every gesture.
private func run(_ script: [(Character, Int64)], until: Int64, config: GestureConfiguration = .standard) -> [String] {
    var r = GestureRecognizer(configuration: config)
    var out: [GestureEvent] = []
    for (edge, t) in script { out += r.edge("b", isPressed: edge == "+", at: atMs(t)) }
    out += r.tick(now: atMs(until))
    return g(out)
}

private let noDebounce = GestureConfiguration(debounce: 0)

@Suite("Gesture recogniser: press, double, long, hold, debounce")
struct GestureRecognizerTests {
    @Test("Single press waits out the double-press window, measured from the release")
    func singlePress() {
        var r = GestureRecognizer()
        var out = r.pressed("b", at: atMs(0)) + r.released("b", at: atMs(100))
        #expect(r.nextDeadline == atMs(120))  // the release settles after 20 ms of quiet
        out += r.tick(now: atMs(399))
        #expect(g(out) == ["b down 0"])
        #expect(r.nextDeadline == atMs(400))
        out += r.tick(now: atMs(400))
        #expect(g(out) == ["b down 0", "b press 400"])
        #expect(r.nextDeadline == nil)
    }

    @Test("A late tick reports each gesture once, at its logical time")
    func lateTick() {
        #expect(run([("+", 0), ("-", 100)], until: 10_000) == ["b down 0", "b press 400"])
    }

    @Test("Second press 1 ns inside the window is a double; at the window's end it is a new press")
    func doubleBoundary() {
        var r = GestureRecognizer(configuration: noDebounce)
        var out = r.pressed("b", at: atMs(0)) + r.released("b", at: atMs(100))
        out += r.pressed("b", at: atMs(400) - 1) + r.released("b", at: atMs(450))
        out += r.tick(now: atMs(5_000))
        #expect(g(out) == ["b down 0", "b down 399999999ns", "b double 399999999ns"])

        var s = GestureRecognizer(configuration: noDebounce)
        var out2 = s.pressed("b", at: atMs(0)) + s.released("b", at: atMs(100))
        out2 += s.pressed("b", at: atMs(400)) + s.released("b", at: atMs(450))
        out2 += s.tick(now: atMs(5_000))
        #expect(g(out2) == ["b down 0", "b press 400", "b down 400", "b press 750"])
    }

    @Test("A double press swallows its second press: no long press however long it is held")
    func doubleThenHold() {
        let out = run([("+", 0), ("-", 100), ("+", 200), ("-", 2_000)], until: 3_000, config: noDebounce)
        #expect(out == ["b down 0", "b down 200", "b double 200"])
    }

    @Test("Long press exactly at the threshold; 1 ns short is a press")
    func longBoundary() {
        let c = GestureConfiguration(debounce: 0, doublePressWindow: nil)
        var r = GestureRecognizer(configuration: c)
        var out = r.pressed("b", at: atMs(0)) + r.released("b", at: atMs(600) - 1)
        #expect(g(out) == ["b down 0", "b press 599999999ns"])

        r = GestureRecognizer(configuration: c)
        out = r.pressed("b", at: atMs(0))
        out += r.tick(now: atMs(600) - 1)
        #expect(g(out) == ["b down 0"])
        out += r.tick(now: atMs(600))
        #expect(g(out) == ["b down 0", "b long 600", "b hold#1 600"])
        out += r.released("b", at: atMs(600))
        #expect(g(out) == ["b down 0", "b long 600", "b hold#1 600", "b long-release 600"])
    }

    @Test("Hold repeats: one at the threshold, then every 150 ms; a repeat due at the release instant counts")
    func holdRepeatCounts() {
        let held1000 = run([("+", 0), ("-", 1_000)], until: 2_000, config: noDebounce)
        #expect(held1000 == ["b down 0", "b long 600", "b hold#1 600", "b hold#2 750", "b hold#3 900", "b long-release 1000"])

        let held1050 = run([("+", 0), ("-", 1_050)], until: 2_000, config: noDebounce)
        #expect(held1050.filter { $0.contains("hold") }.count == 4)
        #expect(held1050.last == "b long-release 1050")

        // Ten seconds of ramp, ticked every 10 ms: 1 + floor((10000 − 600) / 150) = 63 repeats.
        var r = GestureRecognizer(configuration: noDebounce)
        var ramp = r.pressed("b", at: atMs(0))
        for t in stride(from: Int64(10), to: 10_000, by: 10) { ramp += r.tick(now: atMs(t)) }
        ramp += r.released("b", at: atMs(10_000))
        #expect(ramp.filter { $0.gesture == .hold }.count == 63)
        #expect(ramp.filter { $0.gesture == .hold }.map(\.repeatCount) == Array(1...63))
    }

    @Test("A tick far behind reports only the last 8 repeats due; the count still tells the time held")
    func catchUpCap() {
        var r = GestureRecognizer(configuration: noDebounce)
        let out = r.pressed("b", at: atMs(0)) + r.tick(now: atMs(15_600))
        #expect(g(out) == ["b down 0", "b long 600", "b hold#1 600"] + (94...101).map { "b hold#\($0) \(600 + ($0 - 1) * 150)" })
    }

    @Test("Absurd timestamps neither trap nor hang")
    func absurdTimes() {
        var r = GestureRecognizer()
        var out = r.pressed("b", at: LocalTime(nanoseconds: .min))
        out += r.tick(now: LocalTime(nanoseconds: .max))
        out += r.released("b", at: LocalTime(nanoseconds: .max))
        out += r.pressed("c", at: LocalTime(nanoseconds: 0))
        out += r.finish(at: LocalTime(nanoseconds: .max))
        #expect(out.count < 30)
        #expect(out.contains { $0.gesture == .long })
    }

    @Test("Repeat off: a long press but no holds; long press off: a long hold is a press")
    func gesturesSwitchedOff() {
        let noRepeat = GestureConfiguration(debounce: 0, repeatInterval: nil)
        #expect(run([("+", 0), ("-", 1_000)], until: 2_000, config: noRepeat) == ["b down 0", "b long 600", "b long-release 1000"])
        let noLong = GestureConfiguration(debounce: 0, doublePressWindow: nil, longPress: nil)
        #expect(run([("+", 0), ("-", 5_000)], until: 6_000, config: noLong) == ["b down 0", "b press 5000"])
    }

    @Test("Chatter on both edges: one press, dated at the first contact")
    func chatter() {
        let c = GestureConfiguration(doublePressWindow: nil)
        var r = GestureRecognizer(configuration: c)
        var out: [GestureEvent] = []
        // Make: 5 edges within 15 ms, ending pressed.
        for (i, t) in [0, 3, 7, 12, 15].enumerated() { out += r.edge("b", isPressed: i % 2 == 0, at: atMs(Int64(t))) }
        out += r.tick(now: atMs(34))
        #expect(out.isEmpty)  // 15 + 20: still 1 ms from settled
        out += r.tick(now: atMs(35))
        #expect(g(out) == ["b down 0"])
        #expect(r.isPressed("b"))
        // Break: released, bounces back twice.
        for (i, t) in [200, 204, 209, 211, 218].enumerated() { out += r.edge("b", isPressed: i % 2 == 1, at: atMs(Int64(t))) }
        out += r.tick(now: atMs(237))
        #expect(g(out) == ["b down 0"])
        out += r.tick(now: atMs(238))
        #expect(g(out) == ["b down 0", "b press 200"])
        #expect(!r.isPressed("b"))
    }

    @Test("A pulse shorter than the debounce time is noise: nothing at all")
    func glitch() {
        #expect(run([("+", 0), ("-", 19)], until: 1_000) == [])
        // Same level twice (a missed edge): activity, no change.
        #expect(run([("-", 0), ("-", 5)], until: 1_000) == [])
    }

    @Test("Edges exactly the debounce time apart are two real edges")
    func debounceBoundary() {
        let c = GestureConfiguration(doublePressWindow: nil)
        #expect(run([("+", 0), ("-", 20)], until: 1_000, config: c) == ["b down 0", "b press 20"])
    }

    @Test("A release bouncing across the long-press threshold is a press, not a long press")
    func releaseBounceAcrossThreshold() {
        let c = GestureConfiguration(doublePressWindow: nil)
        // Let go at 590 ms, contacts bounce until 605 ms: settles at 625 ms.
        let out = run([("+", 0), ("-", 590), ("+", 597), ("-", 605)], until: 2_000, config: c)
        #expect(out == ["b down 0", "b press 590"])
        // A glitch while held does not cancel the long press, only delays its report.
        var r = GestureRecognizer(configuration: c)
        var events = r.pressed("b", at: atMs(0))
        events += r.released("b", at: atMs(590)) + r.pressed("b", at: atMs(595))
        events += r.tick(now: atMs(614))
        #expect(g(events) == ["b down 0"])
        events += r.tick(now: atMs(615))
        #expect(g(events) == ["b down 0", "b long 600", "b hold#1 600"])
    }

    @Test("Buttons are independent and their gestures come out in time order")
    func twoButtons() {
        var r = GestureRecognizer(configuration: noDebounce)
        var out = r.pressed("a", at: atMs(0)) + r.pressed("b", at: atMs(50))
        out += r.released("a", at: atMs(100))
        out += r.released("b", at: atMs(700))
        out += r.tick(now: atMs(2_000))
        #expect(g(out) == ["a down 0", "b down 50", "a press 400", "b long 650", "b hold#1 650", "b long-release 700"])
    }

    @Test("Per-button timing")
    func perButton() {
        var r = GestureRecognizer(
            configuration: noDebounce,
            perButton: ["fast": GestureConfiguration(debounce: 0, doublePressWindow: nil, longPress: atMs(200).nanoseconds, repeatInterval: atMs(50).nanoseconds)])
        var out = r.pressed("fast", at: atMs(0)) + r.released("fast", at: atMs(300))
        out += r.tick(now: atMs(1_000))
        #expect(g(out) == ["fast down 0", "fast long 200", "fast hold#1 200", "fast hold#2 250", "fast hold#3 300", "fast long-release 300"])
    }

    @Test("Time going backwards is taken as the latest time seen")
    func backwardsTime() {
        var r = GestureRecognizer(configuration: noDebounce)
        var out = r.pressed("b", at: atMs(1_000))
        out += r.released("b", at: atMs(900))
        out += r.tick(now: atMs(2_000))
        #expect(g(out) == ["b down 1000", "b press 1300"])
    }

    @Test("finish() resolves a waiting press, closes a long press and forgets everything")
    func finish() {
        var r = GestureRecognizer()
        var out = r.pressed("a", at: atMs(0)) + r.pressed("h", at: atMs(0))
        out += r.released("a", at: atMs(100))
        out += r.tick(now: atMs(700))
        // "a" waits until 400 for a double; "h" passed 600 and held.
        #expect(g(out) == ["a down 0", "h down 0", "a press 400", "h long 600", "h hold#1 600"])
        out = r.pressed("c", at: atMs(710)) + r.released("c", at: atMs(800))
        out += r.finish(at: atMs(810))  // "c"'s release has not settled: taken as final
        #expect(g(out) == ["c down 710", "h hold#2 750", "c press 810", "h long-release 810"])
        #expect(r.nextDeadline == nil)
        #expect(!r.isPressed("h"))
    }

    @Test("reset() forgets gestures in progress silently")
    func reset() {
        var r = GestureRecognizer(configuration: noDebounce)
        var out = r.pressed("b", at: atMs(0))
        r.reset()
        out += r.released("b", at: atMs(100))
        out += r.tick(now: atMs(5_000))
        #expect(g(out) == ["b down 0"])
    }

    @Test("A random edge storm never traps and keeps time order")
    func fuzz() {
        var rng = SplitMix64(seed: 5)
        var r = GestureRecognizer()
        var t: Int64 = 0
        var count = 0
        for _ in 0..<20_000 {
            t += Int64(rng.next() % 50_000_000)
            let name = ["a", "b", "c"][Int(rng.next() % 3)]
            let now = LocalTime(nanoseconds: t)
            let events = rng.next() % 4 == 0 ? r.tick(now: now) : r.edge(name, isPressed: rng.next() % 2 == 0, at: now)
            #expect(events.map(\.time) == events.map(\.time).sorted())
            #expect(events.allSatisfy { $0.time <= now })
            count += events.count
        }
        #expect(count > 1_000)
        _ = r.finish(at: LocalTime(nanoseconds: t))
    }
}
