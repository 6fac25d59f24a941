import CTuttiSpawn
import Glibc
import TuttiCore

/// A program run once to completion (espeak-ng for an announcement): its
/// own process group, stdin, stdout and stderr on /dev/null (what it makes
/// goes to a file the caller bounds), killed with its group at the timeout.
/// Blocks the calling thread (never an audio or connection thread).
public enum OneShotProgram {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case notFound(String)
        case cannotStart(program: String, reason: String)
        case timedOut(program: String, seconds: Double)
        case failed(program: String, status: Int32)

        public var description: String {
            switch self {
            case .notFound(let name): "\(name) is not installed (apt install \(name))"
            case .cannotStart(let program, let reason): "cannot start \(program): \(reason)"
            case .timedOut(let program, let seconds): "\(program) did not finish within \(fixedPoint(seconds, decimals: 1)) s"
            case .failed(let program, let status): "\(program) failed (exit status \(status))"
            }
        }
    }

    /// The first executable `name` in $PATH (or the usual system folders).
    public static func find(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        for folder in path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin", "/bin"] where !folder.isEmpty {
            let candidate = folder + "/" + name
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Runs `path` with `arguments`; returns when it exits 0, throws otherwise.
    public static func run(_ path: String, _ arguments: [String], timeoutSeconds: Double) throws(Failure) {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard null >= 0 else { throw .cannotStart(program: path, reason: String(cString: strerror(errno))) }
        defer { close(null) }
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        let rc = tutti_spawn(&child, path, &argv, environ, null, null, null)
        guard rc == 0 else { throw .cannotStart(program: path, reason: String(cString: strerror(rc))) }
        let deadline = Condition.now() + Int64(timeoutSeconds * 1e9)
        var status: Int32 = 0
        // Sleeps until the child exits or the timeout (a pidfd in poll), not in WNOHANG rounds.
        let exitSignal = tutti_pidfd_open(child)
        defer { if exitSignal >= 0 { close(exitSignal) } }
        while true {
            let r = waitpid(child, &status, WNOHANG)
            if r == child { break }
            if r < 0 && errno != EINTR { throw .cannotStart(program: path, reason: String(cString: strerror(errno))) }
            let left = deadline - Condition.now()
            if left <= 0 {
                kill(-child, SIGKILL)
                _ = waitpid(child, &status, 0)
                throw .timedOut(program: path, seconds: timeoutSeconds)
            }
            if exitSignal >= 0 {
                var watch = pollfd(fd: exitSignal, events: Int16(POLLIN), revents: 0)
                _ = poll(&watch, 1, Int32(min(left / 1_000_000 + 1, 60_000)))
            } else {
                usleep(5_000) // a kernel before 5.3 has no pidfd: look every 5 ms
            }
        }
        let exited = (status & 0x7f) == 0
        let code = exited ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        guard code == 0 else { throw .failed(program: path, status: code) }
    }
}
