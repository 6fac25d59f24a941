import Testing
import TuttiCore
import TuttiGestures

private func c(_ events: [ButtonCommandEvent]) -> [String] {
    events.map { "\($0.command) \($0.source) \($0.trigger) \($0.time.nanoseconds / nanosecondsPerMillisecond)" }
}

@Suite("Gesture router: edges and turns to commands")
struct GestureRouterTests {
    @Test("Volume key: a step on the way down, then a ramp while held")
    func volumeRamp() {
        var r = GestureRouter(mapping: ButtonMapping())
        var out = r.button("KEY_VOLUMEUP", isPressed: true, at: atMs(0))
        out += r.tick(now: atMs(20))
        #expect(c(out) == ["vol+ KEY_VOLUMEUP down 0"])
        out += r.button("KEY_VOLUMEUP", isPressed: false, at: atMs(1_000))
        out += r.tick(now: atMs(2_000))
        #expect(c(out) == ["vol+ KEY_VOLUMEUP down 0", "vol+ KEY_VOLUMEUP hold#1 600", "vol+ KEY_VOLUMEUP hold#2 750", "vol+ KEY_VOLUMEUP hold#3 900"])
    }

    @Test("Press, double and long on one button; unbound buttons are ignored")
    func gestures() throws {
        let m = try ButtonMapping.parse("button b gpio=chip0:1\non b press toggle\non b double next\non b long party")
        var r = GestureRouter(mapping: m)
        var out: [ButtonCommandEvent] = []
        for (down, t) in [(true, 0), (false, 100), (true, 1_000), (false, 1_100), (true, 1_200), (false, 1_300), (true, 2_000), (false, 3_000)] {
            out += r.button("b", isPressed: down, at: atMs(Int64(t)))
        }
        out += r.button("other", isPressed: true, at: atMs(3_100))
        out += r.tick(now: atMs(5_000))
        #expect(c(out) == ["toggle b press 400", "next b double 1200", "party b long 2600"])
        #expect(r.nextDeadline == nil)
    }

    @Test("GPIO encoder lines and relative steps become turns; a corrupt step count is capped")
    func encoders() throws {
        let m = try ButtonMapping.parse("encoder vol gpio=chip0:1,2\nencoder dial rel=REL_DIAL\non dial cw next\non dial ccw prev")
        var r = GestureRouter(mapping: m)
        r.startEncoder("vol", a: false, b: false)
        var out: [ButtonCommandEvent] = []
        var t: Int64 = 0
        for (a, b) in [(true, false), (true, true), (false, true), (false, false), (false, true), (true, true), (true, false), (false, false)] {
            t += 5
            out += r.encoderLevels("vol", a: a, b: b, at: atMs(t))
        }
        #expect(c(out) == ["vol+ vol cw 20", "vol- vol ccw 40"])
        #expect(c(r.encoderSteps("dial", steps: -2, at: atMs(50))) == ["prev dial ccw 50", "prev dial ccw 50"])
        #expect(r.encoderSteps("dial", steps: Int(Int32.max), at: atMs(60)).count == GestureRouter.maxStepsPerEvent)
        #expect(r.encoderSteps("dial", steps: 0, at: atMs(70)).isEmpty)
    }
}
