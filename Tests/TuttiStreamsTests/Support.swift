import Foundation
import Synchronization
import Testing
import TuttiAudio
import TuttiCore
import TuttiDecode
@testable import TuttiStreams
import TuttiTestSupport

/// The test MP3: 6 s of generated music at 44.1 kHz, 128 kbit/s CBR, made
/// once per test process with lame (which writes the LAME/Info header that
/// makes decoding gapless).
let fixtureMP3: String = {
    let dir = makeTemporaryDirectory("fixture")
    let wav = dir + "/music.wav", mp3 = dir + "/music.mp3"
    _ = FileManager.default.createFile(atPath: wav, contents: Data(TestSignal.wav16(TestSignal.music(seconds: 6, rate: 44_100), rate: 44_100)))
    try! runTool(["lame", "--quiet", "-b", "128", "--cbr", wav, mp3])
    return mp3
}()

let fixtureBytes: [UInt8] = [UInt8](FileManager.default.contents(atPath: fixtureMP3)!)

/// Decodes the fixture from disk with `MP3Decoder`: the reference.
let fixtureSamples: [Float] = {
    let d = try! MP3Decoder(path: fixtureMP3)
    return try! decodeAll(d)
}()

func decodeAll(_ d: any AudioDecoder, maxFrames: Int = 4_096) throws -> [Float] {
    var out: [Float] = []
    while try d.read(into: &out, maxFrames: maxFrames) > 0 {}
    return out
}

/// The Python test server on 127.0.0.1, serving `file`; stopped on deinit.
final class TestServer {
    let process = Process()
    let stdin = Pipe()
    let port: Int

    convenience init(file: String = fixtureMP3) throws {
        let script = NSTemporaryDirectory() + "tutti-streams-server-\(getpid()).py"
        if !FileManager.default.fileExists(atPath: script) {
            try testServerScript.write(toFile: script, atomically: true, encoding: .utf8)
        }
        try self.init(script: script, arguments: [file])
    }

    /// Another Python server that prints its port and exits when stdin closes.
    init(script: String, arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-u", script] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = stdin // the server exits when this closes
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let more = out.fileHandleForReading.availableData
            if more.isEmpty { throw CommandFailed(description: "the test server did not start") }
            line.append(more)
        }
        port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))!
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    func stop() {
        // SIGKILL: the child may inherit a signal mask that blocks SIGTERM.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// How many connections each path has had.
    func connections(_ path: String) throws -> Int {
        // Python fetches it: the test process links no HTTP client of Foundation's.
        let fetched = try runProgram("/usr/bin/python3", ["-c", "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())", url("/stats")])
        guard fetched.status == 0 else { throw CommandFailed(description: "GET /stats: \(fetched.err)") }
        let data = Data(fetched.out.utf8)
        let json = try JSONSerialization.jsonObject(with: data) as! [String: [String: Int]]
        return json["connections"]?[path] ?? 0
    }

    /// Body bytes the server wrote on `path` (/liar and /endless).
    func sentBytes(_ path: String) throws -> Int {
        let fetched = try runProgram("/usr/bin/python3", ["-c", "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())", url("/stats")])
        guard fetched.status == 0 else { throw CommandFailed(description: "GET /stats: \(fetched.err)") }
        let json = try JSONSerialization.jsonObject(with: Data(fetched.out.utf8)) as! [String: [String: Int]]
        return json["sent"]?[path] ?? 0
    }

    deinit { stop() }
}

/// Collects values from callbacks on other threads.
final class Collector<T: Sendable>: Sendable {
    private let values = Mutex<[T]>([])
    func append(_ v: T) { values.withLock { $0.append(v) } }
    var all: [T] { values.withLock { $0 } }
}

/// Options for tests: short timeouts, and local streams allowed (the test
/// servers listen on 127.0.0.1, which the default refuses).
func testOptions(stall: Double = 5, reconnect: ReconnectPolicy = .never) -> NetworkOptions {
    var o = NetworkOptions()
    o.destinations = StreamDestinationPolicy(allowsLocal: true)
    o.connectTimeout = 5
    o.stallTimeout = stall
    o.reconnect = reconnect
    return o
}

/// CPU seconds used by the calling thread.
func threadCPUSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

func maxAbsDifference(_ a: [Float], _ b: [Float]) -> Float {
    zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
}
