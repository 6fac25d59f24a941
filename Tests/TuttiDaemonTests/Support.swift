import Foundation
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

func writeFile(_ path: String, _ bytes: [UInt8]) {
    _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
}

/// 16-bit stereo frames whose values encode their own index, so any frame
/// of the output says exactly which input frame it is. Never zero.
func counterFrames(count: Int, from start: Int = 0) -> [Int16] {
    var out = [Int16](repeating: 0, count: count * 2)
    for k in 0..<count {
        let i = start + k
        out[2 * k] = Int16(1000 + i % 30_000)
        out[2 * k + 1] = Int16(1000 + i / 30_000)
    }
    return out
}

func counterIndex(_ left: Int16, _ right: Int16) -> Int? {
    guard left >= 1000, right >= 1000 else { return nil }
    return Int(right - 1000) * 30_000 + Int(left - 1000)
}

func wavImage(_ samples: [Int16], rate: Int = 48_000, channels: Int = 2) -> [UInt8] {
    var bytes = wavHeader(sampleRate: rate, channels: channels, bitsPerSample: 16, dataBytes: samples.count * 2)
    for s in samples { let v = UInt16(bitPattern: s); bytes.append(UInt8(v & 0xff)); bytes.append(UInt8(v >> 8)) }
    return bytes
}

func quantize(_ samples: [Float]) -> [Int16] { samples.map(sampleToInt16) }

/// Reads an S16LE stereo raw file.
func readRaw(_ path: String) -> [Int16] {
    guard let data = FileManager.default.contents(atPath: path) else { return [] }
    return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
}

/// Reads PATH.timing: (frame index, monotonic ns) per block.
func readTiming(_ path: String) -> [(frame: Int, time: Int64)] {
    guard let text = try? String(contentsOfFile: path + ".timing", encoding: .utf8) else { return [] }
    // The DAC may be mid-line as we read: a last line without its newline is not a record yet.
    var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    lines.removeLast()
    return lines.compactMap { line in
        let parts = line.split(separator: " ")
        guard parts.count == 2, let f = Int(parts[0]), let t = Int64(parts[1]) else { return nil }
        return (f, t)
    }
}

/// When output frame `frame` left the virtual DAC, from its timing log (binary search).
func leaveTime(ofFrame frame: Int, timing: [(frame: Int, time: Int64)], ppm: Double) -> Int64? {
    var lo = 0, hi = timing.count - 1, found = -1
    while lo <= hi {
        let mid = (lo + hi) / 2
        if timing[mid].frame <= frame { found = mid; lo = mid + 1 } else { hi = mid - 1 }
    }
    guard found >= 0 else { return nil }
    let block = timing[found]
    let rate = 48_000 * (1 + ppm * 1e-6)
    return block.time + Int64(Double(frame - block.frame) / rate * 1e9)
}

/// Silent, unless TUTTI_TEST_LOG is set (to debug, info, warning or error): then lines at that level and above go to stderr.
let testLog: Logger = {
    guard let raw = ProcessInfo.processInfo.environment["TUTTI_TEST_LOG"] else { return Logger.silent }
    let least = ["debug": Logger.Level.debug, "info": .info, "warning": .warning, "error": .error][raw] ?? .info
    return Logger(label: "test") { level, label, message in
        guard level >= least else { return }
        FileHandle.standardError.write(Data("\(Monotonic.now() / 1_000_000) ms \(level) \(label): \(message)\n".utf8))
    }
}()

/// A leader on an ephemeral loopback port.
/// Keeps every log line, for tests that check what was logged.
final class CapturingLog: Sendable {
    private let captured = Mutex<[String]>([])
    var lines: [String] { captured.withLock { $0 } }
    var logger: Logger { Logger(label: "test") { [self] level, label, message in record("\(level) \(label): \(message)") } }
    private func record(_ line: String) { captured.withLock { $0.append(line) } }
}

func startLeader(files: [String], codec: Codec = .pcm, loop: Bool = false, buffer: Int = 1_000, log: Logger = testLog,
                 surfaces: any LeaderSurfaces = ControlSurfaces(),
                 configure: (inout LeaderConfiguration) -> Void = { _ in }) throws -> Leader {
    var c = LeaderConfiguration()
    c.listen = Endpoint(host: "127.0.0.1", port: 0)
    c.files = files
    c.codec = codec
    c.loop = loop
    c.bufferMilliseconds = buffer
    configure(&c)
    let leader = try Leader(configuration: c, log: log, surfaces: surfaces)
    try leader.start()
    return leader
}

func startFollower(leader: Endpoint, name: String, output: OutputSpec, steering: Bool = true,
                   configure: (inout FollowerConfiguration) -> Void = { _ in }) throws -> Follower {
    var c = FollowerConfiguration()
    c.leader = leader
    c.name = name
    c.output = output
    c.steering = steering
    // Real-time priority, as in production: the suite runs many tests at
    // once on two cores, and a starved playout thread underruns its DAC.
    c.realtime = true
    configure(&c)
    let follower = try Follower(configuration: c, log: testLog)
    follower.start()
    return follower
}

/// A leader and one follower, with the files started only once the follower
/// is connected and has a clock model. A follower that connects late plays
/// from the live position (by design), so on a loaded machine a test that
/// starts the files first can miss their start.
func startPlayback(files: [String], codec: Codec = .pcm, follower name: String, output: OutputSpec,
                   steering: Bool = false) throws -> (Leader, Follower) {
    let leader = try startLeader(files: [], codec: codec) { c in
        c.allowedFolders = files.map { ($0 as NSString).deletingLastPathComponent }
    }
    let follower = try startFollower(leader: leader.endpoint, name: name, output: output, steering: steering)
    let ready = waitUntil(timeout: 20) { follower.connected && follower.clock != nil && leader.followerNames.contains(name) }
    guard ready else {
        follower.stop(); leader.stop()
        throw CommandFailed(description: "follower \(name) did not connect within 20 s: \(follower.lastFailure ?? "no error")")
    }
    _ = try leader.perform(.add(uris: files, next: false))
    _ = try leader.perform(.play)
    return (leader, follower)
}

/// The rooms are joined and each has a clock model good enough to play by,
/// so audio started now is heard from its first frame (a room still
/// converging starts at the live position, by design).
@discardableResult
func waitUntilInStep(_ leader: Leader, _ followers: [Follower], timeout: Double = 10) -> Bool {
    waitUntil(timeout: timeout) { followers.allSatisfy { $0.clock != nil && leader.followerNames.contains($0.configuration.name) } }
}


/// Waits for a non-looping leader to finish and its last chunk to play.
func waitForPlayout(_ leader: Leader, timeout: Double = 30) {
    waitUntil(timeout: timeout) { leader.finished }
    usleep(UInt32(leader.configuration.bufferMilliseconds * 1000 + 400_000))
}

/// Index of the first frame where either channel is non-zero.
func firstSoundingFrame(_ samples: [Int16], from: Int = 0) -> Int? {
    var i = from
    while 2 * i + 1 < samples.count {
        if samples[2 * i] != 0 || samples[2 * i + 1] != 0 { return i }
        i += 1
    }
    return nil
}

/// Runs the `tutti` client (built beside the tests) against a leader's
/// control port: its exit status and what it printed (stdout and stderr).
func runTutti(port: UInt16, _ args: [String]) throws -> (status: Int32, out: String) {
    let binary = URL(fileURLWithPath: DaemonBinaryTests.binary).deletingLastPathComponent().appendingPathComponent("tutti").path
    let (status, output) = try runProcess(binary, ["--port", String(port)] + args)
    return (status, output)
}

/// Connects to 127.0.0.1:`port` from `source` (another loopback address
/// stands for another host), sends `request`, and returns what comes back
/// until the server closes, a `\n` ends the first line (`untilLine`), `until` is in it, or 5 s pass.
func exchange(port: UInt16, from source: String = "127.0.0.1", _ request: [UInt8], untilLine: Bool = false, until: String? = nil) -> String {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return "" }
    defer { close(fd) }
    func address(_ host: String, _ port: UInt16) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &a.sin_addr)
        return a
    }
    var local = address(source, 0), remote = address("127.0.0.1", port)
    let size = socklen_t(MemoryLayout<sockaddr_in>.size)
    guard withUnsafePointer(to: &local, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }) == 0,
          withUnsafePointer(to: &remote, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }) == 0 else { return "" }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        answer += buffer[0..<n]
        if untilLine, answer.contains(UInt8(ascii: "\n")) { break }
        if let until, String(decoding: answer, as: UTF8.self).contains(until) { break }
    }
    return String(decoding: answer, as: UTF8.self)
}

/// One HTTP/1.1 request (the connection closes after it); the whole answer, head and body.
func httpRequest(port: UInt16, from source: String = "127.0.0.1", _ method: String, _ path: String,
                 headers: [(String, String)] = [], body: String = "") -> String {
    var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
    for (n, v) in headers { head += "\(n): \(v)\r\n" }
    if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.utf8.count)\r\n" }
    return exchange(port: port, from: source, Array((head + "\r\n" + body).utf8))
}

/// A header's value in an HTTP answer (case-insensitive name), nil if absent.
func headerValue(_ answer: String, _ name: String) -> String? {
    let head = answer.components(separatedBy: "\r\n\r\n").first ?? ""
    for line in head.components(separatedBy: "\r\n").dropFirst() {
        guard let colon = line.firstIndex(of: ":") else { continue }
        if line[..<colon].lowercased() == name.lowercased() { return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces) }
    }
    return nil
}

/// The body of an HTTP answer.
func httpBody(_ answer: String) -> String {
    guard let r = answer.range(of: "\r\n\r\n") else { return "" }
    return String(answer[r.upperBound...])
}

/// Waits until every virtual DAC output in `paths` has played through
/// `instant` (monotonic ns, read from its timing log), and `timeout` seconds
/// past it at most: what a test that reads the outputs afterwards needs,
/// where a fixed sleep guessed how long that takes on a loaded machine.
@discardableResult
func waitUntilPlayed(_ paths: [String], through instant: Int64, timeout: Double = 10) -> Bool {
    waitUntil(timeout: max(0, Double(instant - Monotonic.now()) / 1e9) + timeout) {
        paths.allSatisfy { (readTiming($0).last?.time ?? .min) >= instant }
    }
}

/// Waits until a leader's list has played out as its rooms hear it, and the
/// virtual DACs in `paths` have played past that moment.
@discardableResult
func waitUntilHeardOut(_ leader: Leader, _ paths: [String], timeout: Double = 20) -> Bool {
    waitUntil(timeout: timeout) { leader.finished && leader.nowPlaying.state == .stopped }
        && waitUntilPlayed(paths, through: Monotonic.now() + 100_000_000)
}
