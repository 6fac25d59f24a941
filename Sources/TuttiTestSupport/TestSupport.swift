import Foundation

// Helpers every test target needs, in one place: a fresh folder per test and
// running a real program (lame, mpc, openssl, the built binaries) to its end.

/// A fresh folder under the system temp dir, unique per call.
public func makeTemporaryDirectory(_ name: String = #function) -> String {
    let safe = name.filter { $0.isLetter || $0.isNumber }
    let path = NSTemporaryDirectory() + "tutti-test-\(safe)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs `path` with `arguments` to its end: its exit status and what it
/// printed (stdout and stderr together). `environment` is added to this
/// process's own.
public func runProcess(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = arguments
    if let environment { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = pipe
    try p.run()
    // Read before waiting: a full pipe would block the program forever.
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

public struct CommandFailed: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// Runs a tool found on PATH (lame, flac, metaflac, id3v2, …); a non-zero
/// exit throws with the command line and its output.
public func runTool(_ arguments: [String]) throws {
    let (status, output) = try runProcess("/usr/bin/env", arguments)
    guard status == 0 else { throw CommandFailed(description: "\(arguments.joined(separator: " ")) → exit \(status): \(output)") }
}
