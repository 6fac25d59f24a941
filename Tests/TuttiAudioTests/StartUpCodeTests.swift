import Foundation
import Testing
import TuttiSystem

@Suite struct StartUpCodeTests {
    /// Resident KiB of this test program's own code mapping (smaps `Rss:` of its r-xp lines).
    static func residentCodeKiB() throws -> Int {
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var inCode = false, total = 0
        for line in try String(contentsOfFile: "/proc/self/smaps", encoding: .utf8).split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), fields.count >= 6 {
                inCode = fields[1] == "r-xp" && String(fields[5]) == exe
            } else if inCode, fields.first == "Rss:", fields.count >= 2, let kib = Int(fields[1]) {
                total += kib
            }
        }
        return total
    }

    @Test func releasingStartUpCodeUnmapsItAndCodeStillRuns() throws {
        let before = try Self.residentCodeKiB()
        let released = try #require(releaseStartUpCode())
        let after = try Self.residentCodeKiB()
        #expect(released > 1 << 20)             // the test program's code segment is megabytes
        #expect(after < before)
        // Code runs on: what it needs faults back in from the page cache.
        #expect((1...1000).reduce(0, +) == 500_500)
        #expect(try Self.residentCodeKiB() > 0)
    }
}
