import CTuttiSpawn
import Foundation
import Glibc

// Helpers every test target needs, in one place: a fresh folder per test and
// running a real program (lame, mpc, openssl, tmux, dbus-daemon, the built
// binaries) to its end.

/// A fresh folder under the system temp dir, unique per call.
public func makeTemporaryDirectory(_ name: String = #function) -> String {
    let safe = name.filter { $0.isLetter || $0.isNumber }
    let path = NSTemporaryDirectory() + "tutti-test-\(safe)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

public struct CommandFailed: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// What a program that ran to its end left behind.
public struct ProgramResult: Sendable {
    /// The exit code, or 128 + the signal that ended it (as a shell says).
    public let status: Int32
    public let out: String
    public let err: String
}

/// Runs `path` with `arguments` to its end, at most `timeout` seconds. Then
/// its process group is killed and this throws, or, with `stopAtTimeout`,
/// it gets SIGTERM (SIGKILL 5 s later) and what it did is returned.
///
/// Not Foundation's `Process`: it learns that a child ended from a socket
/// the child inherits, so a daemon the child forks (dbus-daemon --fork,
/// tmux) keeps that socket open and `waitUntilExit` never returns. Here the
/// child gets nothing but stdin, stdout and stderr, and is reaped with
/// `waitpid`.
///
/// - Parameters:
///   - environment: added to this process's own, or the whole environment
///     when `replaceEnvironment` is set.
///   - input: written to the program's stdin (otherwise /dev/null).
///   - mergeErrors: stderr goes into `out`, in order, and `err` is empty.
public func runProgram(_ path: String, _ arguments: [String], environment: [String: String]? = nil,
                       replaceEnvironment: Bool = false, input: String? = nil, mergeErrors: Bool = false,
                       timeout: Double = 300, stopAtTimeout: Bool = false) throws -> ProgramResult {
    let base = NSTemporaryDirectory() + "tutti-run-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    func openFile(_ suffix: String, _ flags: Int32) throws -> Int32 {
        let fd = open(base + suffix, flags | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CommandFailed(description: "cannot open \(base + suffix): \(String(cString: strerror(errno)))") }
        return fd
    }
    defer { for suffix in [".in", ".out", ".err"] { unlink(base + suffix) } }

    let inFD: Int32
    if let input {
        try Data(input.utf8).write(to: URL(fileURLWithPath: base + ".in"))
        inFD = try openFile(".in", O_RDONLY)
    } else {
        inFD = try openFile(".in", O_RDONLY | O_CREAT)
    }
    defer { close(inFD) }
    let outFD = try openFile(".out", O_WRONLY | O_CREAT | O_TRUNC)
    defer { close(outFD) }
    let errFD = mergeErrors ? outFD : try openFile(".err", O_WRONLY | O_CREAT | O_TRUNC)
    defer { if errFD != outFD { close(errFD) } }

    var variables = replaceEnvironment ? [:] : ProcessInfo.processInfo.environment
    if let environment { variables.merge(environment) { $1 } }
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for p in argv + envp { free(p) } }

    var pid: pid_t = 0
    let rc = tutti_spawn(&pid, path, argv, envp, inFD, outFD, errFD)
    guard rc == 0 else { throw CommandFailed(description: "cannot start \(path): \(String(cString: strerror(rc)))") }

    var status: Int32 = 0
    var deadline = Date().addingTimeInterval(timeout)
    var terminated = false
    while true {
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid { break }
        if r < 0 && errno != EINTR { throw CommandFailed(description: "waitpid \(path): \(String(cString: strerror(errno)))") }
        if Date() > deadline {
            if stopAtTimeout && !terminated {
                kill(pid, SIGTERM)
                terminated = true
                deadline = Date().addingTimeInterval(5)
                continue
            }
            kill(-pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            throw CommandFailed(description: "\(([path] + arguments).joined(separator: " ")) did not end within \(timeout) s")
        }
        usleep(2_000)
    }
    // Exit code, or 128 + signal like a shell.
    let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    func text(_ suffix: String) -> String {
        String(decoding: FileManager.default.contents(atPath: base + suffix) ?? Data(), as: UTF8.self)
    }
    return ProgramResult(status: code, out: text(".out"), err: mergeErrors ? "" : text(".err"))
}

/// A program running beside a test (a relay, a server) until `stop()` or
/// deinit: started like `runProgram` (default signals, its own process
/// group, nothing inherited but stdin from /dev/null and stdout/stderr to
/// `log`), so SIGTERM ends it even when the test thread blocks signals.
public final class BackgroundProgram {
    public let pid: pid_t
    private var stopped = false

    public init(_ path: String, _ arguments: [String], log: String = "/dev/null") throws {
        let inFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        let outFD = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        defer { close(inFD); close(outFD) }
        guard inFD >= 0, outFD >= 0 else { throw CommandFailed(description: "cannot open /dev/null or \(log): \(String(cString: strerror(errno)))") }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in argv + envp { free(p) } }
        var pid: pid_t = 0
        let rc = tutti_spawn(&pid, path, argv, envp, inFD, outFD, outFD)
        guard rc == 0 else { throw CommandFailed(description: "cannot start \(path): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    /// SIGTERM to its process group, SIGKILL after `graceSeconds`; reaped.
    public func stop(graceSeconds: Double = 5) {
        guard !stopped else { return }
        stopped = true
        kill(-pid, SIGTERM)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(graceSeconds)
        while waitpid(pid, &status, WNOHANG) == 0 {
            if Date() > deadline { kill(-pid, SIGKILL); _ = waitpid(pid, &status, 0); return }
            usleep(10_000)
        }
    }

    deinit { stop() }
}

/// Runs `path` with `arguments` to its end: its exit status and what it
/// printed (stdout and stderr together). `environment` is added to this
/// process's own.
public func runProcess(_ path: String, _ arguments: [String], environment: [String: String]? = nil,
                       timeout: Double = 300) throws -> (status: Int32, output: String) {
    let r = try runProgram(path, arguments, environment: environment, mergeErrors: true, timeout: timeout)
    return (r.status, r.out)
}

/// Runs a tool found on PATH (lame, flac, metaflac, id3v2, …); a non-zero
/// exit throws with the command line and its output.
public func runTool(_ arguments: [String]) throws {
    let (status, output) = try runProcess("/usr/bin/env", arguments)
    guard status == 0 else { throw CommandFailed(description: "\(arguments.joined(separator: " ")) → exit \(status): \(output)") }
}

/// Ends a program started with Foundation's `Process`: SIGTERM, then SIGKILL
/// if it is still running `graceSeconds` later, and waits for it. A child
/// can inherit a blocked or ignored SIGTERM from the test thread that
/// started it, so `terminate(); waitUntilExit()` alone may wait for ever.
public func stopProcess(_ process: Process, graceSeconds: Double = 10) {
    guard process.isRunning else { return }
    kill(process.processIdentifier, SIGTERM)
    let deadline = Date().addingTimeInterval(graceSeconds)
    while process.isRunning && Date() < deadline { usleep(10_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
}

/// Python's http.server behind TLS: `python3 -u SCRIPT FOLDER CERT KEY`
/// serves FOLDER (no Range requests), prints its port and exits when the
/// test closes its stdin.
public let httpsFileServerScript = #"""
import http.server, ssl, sys, os, threading
os.chdir(sys.argv[1])
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Quiet)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
def exit_with_parent():
    sys.stdin.buffer.read(); os._exit(0)
threading.Thread(target=exit_with_parent, daemon=True).start()
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
"""#

/// Waits up to `timeout` seconds for `condition`, looking every 20 ms; true
/// once it holds. What a test waits for, instead of a fixed sleep.
@discardableResult
public func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1_000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// Python's http.server on 127.0.0.1 serving a folder, on a port the kernel
/// chooses (a random fixed port can be taken by another test or program),
/// and `/to?URL` answering 302 to URL. Its request log is in `log`. Killed
/// with SIGKILL by `stop()` or deinit.
public final class LocalFileServer {
    private static let script = #"""
        import http.server, os, sys
        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):
                if self.path.startswith("/to?"):
                    self.send_response(302)
                    self.send_header("Location", self.path[4:])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    super().do_GET()
        handler = lambda *a, **k: Handler(*a, directory=sys.argv[1], **k)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        with open(sys.argv[2] + ".tmp", "w") as f: f.write(str(server.server_address[1]))
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        server.serve_forever()
        """#
    private let program: BackgroundProgram
    public let port: Int
    public let log: String

    /// Waits up to 30 s for the server to listen (Python starts slowly on a loaded machine).
    public init(folder: String, log: String) throws {
        self.log = log
        let portFile = log + ".port"
        program = try BackgroundProgram("/usr/bin/env", ["python3", "-c", Self.script, folder, portFile], log: log)
        var port = 0
        _ = waitUntil(timeout: 30) {
            port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) } ?? 0
            return port > 0
        }
        guard port > 0 else { throw CommandFailed(description: "the HTTP server on \(folder) did not start in 30 s: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")") }
        self.port = port
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// The request lines the server logged (each "GET /path").
    public var requests: [String] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in line.range(of: "\"GET ").map { String(line[$0.lowerBound...].dropFirst()) } }
    }

    /// Gone at once, as a server that crashes or loses power.
    public func stop() { program.stop(graceSeconds: 0) }
}
