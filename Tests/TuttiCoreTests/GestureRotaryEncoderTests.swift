import Testing
import TuttiCore
import TuttiGestures

/// Feeds states written as "AB" strings ("00", "10", …) and returns the
/// steps reported, with "x" for each rejected transition.
private func decode(_ states: [String], from start: String = "00", perDetent: Int = 4) -> (String, RotaryDecoder) {
    func bits(_ s: String) -> (Bool, Bool) { (s.first == "1", s.last == "1") }
    let (a0, b0) = bits(start)
    var d = RotaryDecoder(a: a0, b: b0, transitionsPerDetent: perDetent)
    var out = ""
    for s in states {
        let (a, b) = bits(s)
        switch d.update(a: a, b: b) {
        case .none: break
        case .step(let n): out += n > 0 ? "+" : "-"
        case .invalid: out += "x"
        }
    }
    return (out, d)
}

private let cwCycle = ["10", "11", "01", "00"]
private let ccwCycle = ["01", "11", "10", "00"]

@Suite("Rotary encoder: quadrature decoding")
struct GestureRotaryEncoderTests {
    @Test("One clockwise cycle is one step, reported on reaching the detent")
    func forward() {
        let (out, d) = decode(cwCycle)
        #expect(out == "+")
        #expect(d.invalidTransitions == 0)
        var e = RotaryDecoder(a: false, b: false)
        #expect(e.update(a: true, b: false) == .none)
        #expect(e.update(a: true, b: true) == .none)
        #expect(e.update(a: false, b: true) == .none)
        #expect(e.update(a: false, b: false) == .step(1))
    }

    @Test("Backward, and three detents each way")
    func backward() {
        #expect(decode(ccwCycle).0 == "-")
        #expect(decode(cwCycle + cwCycle + cwCycle + ccwCycle + ccwCycle + ccwCycle).0 == "+++---")
    }

    @Test("Bounce on one line moves back and forth and adds nothing")
    func bounce() {
        let bouncy = ["10", "00", "10", "00", "10", "11", "10", "11", "01", "11", "01", "00", "01", "00"]
        #expect(decode(bouncy).0 == "+")
    }

    @Test("Turning back before the detent gives no step")
    func halfTurnBack() {
        #expect(decode(["10", "11", "10", "00"]).0 == "")
    }

    @Test("A jump of both lines is rejected and its detent dropped; the next detent counts")
    func invalid() {
        let (out, d) = decode(["10", "01", "00"] + cwCycle)
        #expect(out == "x+")
        #expect(d.invalidTransitions == 1)
        // Repeating a state is not a transition at all.
        #expect(decode(["00", "00", "10", "10", "11", "01", "00"]).0 == "+")
    }

    @Test("Two and one transitions per detent")
    func finerEncoders() {
        #expect(decode(["10", "11", "01", "00"], perDetent: 2).0 == "++")
        #expect(decode(["01", "11", "10", "00"], perDetent: 2).0 == "--")
        #expect(decode(["10", "11", "01", "00", "01"], perDetent: 1).0 == "++++-")
    }

    @Test("Detent at the resting state of the start, whatever it is (pull-ups without active-low rest at 11)")
    func restAtOnes() {
        #expect(decode(["01", "00", "10", "11"], from: "11").0 == "+")
        #expect(decode(["10", "00", "01", "11"], from: "11").0 == "-")
    }

    @Test("Random line noise never traps")
    func fuzz() {
        var rng = SplitMix64(seed: 9)
        var d = RotaryDecoder(a: false, b: false)
        var steps = 0
        for _ in 0..<100_000 {
            if case .step(let n) = d.update(a: rng.next() % 2 == 0, b: rng.next() % 2 == 0) { steps += abs(n) }
        }
        #expect(d.invalidTransitions > 0 && steps > 0)
    }
}
