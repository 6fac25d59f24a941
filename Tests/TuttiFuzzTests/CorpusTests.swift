import Foundation
import Testing
import TuttiFuzzTargets

/// The committed seed corpus (Fuzz/corpus/TARGET/) through every fuzz
/// target, without libFuzzer or a sanitizer: fast, so a parser change that
/// breaks on a known input (a seed, or a crash the fuzzer once found)
/// fails in CI. scripts/fuzz.sh runs the same targets under libFuzzer.
@Suite struct CorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/corpus").standardized

    static func seeds(_ target: FuzzTarget) throws -> [URL] {
        let folder = corpus.appendingPathComponent(target.rawValue)
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test(arguments: FuzzTarget.allCases)
    func everySeedRuns(_ target: FuzzTarget) throws {
        let seeds = try Self.seeds(target)
        #expect(seeds.count >= 2, "Fuzz/corpus/\(target.rawValue) needs real examples of its format")
        for seed in seeds { target.run(Array(try Data(contentsOf: seed))) }
    }

    /// Inputs every target must take: nothing, one byte, a run of zeros, of 0xFF.
    @Test(arguments: FuzzTarget.allCases)
    func degenerateInputsRun(_ target: FuzzTarget) {
        for input: [UInt8] in [[], [0], [0xFF], Array(repeating: 0, count: 4_096), Array(repeating: 0xFF, count: 4_096)] {
            target.run(input)
        }
    }
}
