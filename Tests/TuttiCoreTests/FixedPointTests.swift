import Testing
import TuttiCore

struct FixedPointTests {
    @Test func writesWhatPrintfWrites() {
        #expect(fixedPoint(1.5, decimals: 3) == "1.500")
        #expect(fixedPoint(0.0004, decimals: 3) == "0.000")
        #expect(fixedPoint(-0.0004, decimals: 3) == "0.000")
        #expect(fixedPoint(-2.25, decimals: 1) == "-2.2")
        #expect(fixedPoint(12.049, decimals: 2) == "12.05")
        #expect(fixedPoint(3, decimals: 0) == "3")
        #expect(fixedPoint(0.5, decimals: 1, plus: true) == "+0.5")
        #expect(fixedPoint(-7.26, decimals: 1, plus: true) == "-7.3")
        #expect(fixedPoint(1.05, decimals: 2, plus: true) == "+1.05")
        #expect(fixedPoint(48_000.0 / 48_000, decimals: 3) == "1.000")
        #expect(fixedPoint(.infinity, decimals: 1) == "inf")
    }
}
