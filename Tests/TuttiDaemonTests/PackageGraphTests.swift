import Foundation
import Testing
import TuttiCore
import TuttiTestSupport

/// The package's build graph, as SwiftPM reads Package.swift.
@Suite struct PackageGraphTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Every target lists every Swift or C target it builds on, not only
    /// its direct dependencies. SwiftPM makes a module's compile depend on
    /// the listed modules alone, so a module seen through a third one (tuttid
    /// sees TuttiLeader through TuttiDaemon's `@_exported import`) changed
    /// without the dependant being compiled again: an incremental release
    /// build of tuttid kept allocating the Leader 8 bytes smaller than its
    /// initialiser writes, a heap corruption that aborted the leader.
    @Test func everyTargetListsEveryTargetItBuildsOn() throws {
        let swift = try #require(
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { $0 + "/swift" }
                .first { FileManager.default.isExecutableFile(atPath: $0) },
            "swift is not on PATH")
        // A scratch path of its own: the one of the running `swift test` is locked.
        let scratch = makeTemporaryDirectory()
        let r = try runProgram(swift, ["package", "--package-path", Self.repository, "--scratch-path", scratch, "dump-package"], timeout: 240)
        #expect(r.status == 0, "swift package dump-package failed: \(r.err)")
        let targets = try #require(JSONValue.parsing(r.out)?["targets"]?.array, "no targets in:\n\(r.out.prefix(500))")

        var dependencies: [String: Set<String>] = [:]
        var system: Set<String> = []
        for target in targets {
            let name = try #require(target["name"]?.string)
            if target["type"]?.string == "system" { system.insert(name) }
            // {"byName": ["TuttiCore", null]} or {"target": ["TuttiCore", null]}; products are other packages'.
            dependencies[name] = Set((target["dependencies"]?.array ?? []).compactMap { d in
                (d["byName"] ?? d["target"])?.array?.first?.string
            })
        }
        #expect(dependencies["tuttid"]?.contains("TuttiLeader") == true)
        #expect(dependencies.count > 40)

        var missing: [String] = []
        for (name, direct) in dependencies.sorted(by: { $0.key < $1.key }) {
            var closure = direct
            var pending = Array(direct)
            while let next = pending.popLast() {
                for d in dependencies[next] ?? [] where closure.insert(d).inserted { pending.append(d) }
            }
            let unlisted = closure.subtracting(direct).subtracting(system)
            if !unlisted.isEmpty { missing.append("\(name): \(unlisted.sorted().joined(separator: ", "))") }
        }
        #expect(missing.isEmpty, "targets that do not list what they build on:\n\(missing.joined(separator: "\n"))")
    }
}
