import CTuttiSpawn
import Glibc
import TuttiCore

/// A program the daemon runs and owns (a shairport-sync per group): started
/// with `posix_spawn` in a process group of its own, every other descriptor
/// closed; started again when it dies (`RestartBackoff`: at once, then
/// doubling while it keeps dying young); ended with SIGTERM, then SIGKILL,
/// by `stop`. One supervising thread per child waits on it (`waitpid` on its
/// pid only, so other children are nobody's business here).
///
/// Thread contract: any method from any thread. `onStart` and `onExit` run
/// on the supervising thread and must not block for long.
// Sendable because `pid`, `stopping`, `finished`, `startCount`, `startTime` and `backoff` are touched only under `lock`.
public final class ChildProcess: @unchecked Sendable {
    public let path: String
    public let arguments: [String]
    /// Where the program's stdout and stderr go (truncated at each start), or /dev/null.
    public let outputPath: String?
    private let log: Logger
    private let lock = Condition()
    private var pid: pid_t = 0
    private var stopping = false
    private var finished = false
    private var startCount = 0
    private var startTime: Int64 = 0
    private var backoff: RestartBackoff
    private let onStart: @Sendable (pid_t) -> Void
    private let onExit: @Sendable (_ status: Int32) -> Void

    public init(path: String, arguments: [String], outputPath: String? = nil, log: Logger, backoff: RestartBackoff = RestartBackoff(),
                onStart: @escaping @Sendable (pid_t) -> Void = { _ in }, onExit: @escaping @Sendable (Int32) -> Void = { _ in }) {
        self.path = path
        self.arguments = arguments
        self.outputPath = outputPath
        self.log = log
        self.backoff = backoff
        self.onStart = onStart
        self.onExit = onExit
    }

    /// The running program's pid (nil between a death and its restart, and after `stop`).
    public var processID: pid_t? { lock.withLock { pid > 0 ? pid : nil } }
    /// Times it was started (1 after the first start).
    public var starts: Int { lock.withLock { startCount } }

    /// Starts it, and the thread that keeps it running. Throws when it
    /// cannot be started at all (the program is missing, no thread).
    public func start() throws(ChildProcessError) {
        try spawnOnce()
        do {
            try startThread(name: "tutti-child", stackSize: 128 << 10) { [self] in supervise() }
        } catch {
            // No thread to wait on it: ended here.
            let child: pid_t = lock.withLock { stopping = true; finished = true; defer { pid = 0 }; return pid }
            if child > 0 { kill(-child, SIGKILL); var status: Int32 = 0; _ = waitpid(child, &status, 0) }
            throw .cannotStart(program: path, reason: error.description)
        }
    }

    /// Ends it (SIGTERM; SIGKILL after `grace` seconds) and waits until it
    /// has exited and its thread has let go. It is not started again.
    public func stop(grace: Double = 2) {
        let target: pid_t = lock.withLock {
            stopping = true
            lock.broadcast()
            return pid
        }
        if target > 0 { kill(-target, SIGTERM) }
        lock.withLock {
            let deadline = Condition.deadline(afterSeconds: grace)
            while !finished && pid > 0 && Condition.now() < deadline { lock.wait(untilNanoseconds: deadline) }
            if !finished && pid > 0 { kill(-pid, SIGKILL) }
            let hard = Condition.deadline(afterSeconds: 2)
            while !finished && Condition.now() < hard { lock.wait(untilNanoseconds: hard) }
        }
    }

    private func spawnOnce() throws(ChildProcessError) {
        let output = outputPath.map { open($0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) } ?? open("/dev/null", O_WRONLY | O_CLOEXEC)
        let input = open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if output >= 0 { close(output) }; if input >= 0 { close(input) } }
        guard output >= 0, input >= 0 else { throw .cannotStart(program: path, reason: String(cString: strerror(errno))) }
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        let rc = tutti_spawn(&child, path, &argv, environ, input, output, output)
        guard rc == 0 else { throw .cannotStart(program: path, reason: String(cString: strerror(rc))) }
        let stoppedMeanwhile: Bool = lock.withLock {
            pid = child
            startTime = Condition.now()
            startCount += 1
            // `stop` ran between the supervisor's decision and this spawn: it
            // saw no child to signal. Ended here; the supervisor reaps it and stops.
            if stopping { kill(-child, SIGKILL) }
            return stopping
        }
        if !stoppedMeanwhile { onStart(child) }
    }

    private func supervise() {
        var ranFor: Int64 = 0
        while true {
            let (child, startedAt) = lock.withLock { (pid, startTime) }
            if child > 0 {
                var status: Int32 = 0
                while waitpid(child, &status, 0) < 0 && errno == EINTR {}
                ranFor = Condition.now() - startedAt
                let exit = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
                let stopped = lock.withLock { pid = 0; lock.broadcast(); return stopping }
                onExit(exit)
                if !stopped { log.warning("\(path) exited (\(exit)) after \(fixedPoint(Double(ranFor) / 1e9, decimals: 1)) s") }
            }
            // Started again after the backoff's delay, unless stopped meanwhile.
            let go: Bool = lock.withLock {
                guard !stopping else { return false }
                let deadline = Condition.now() + backoff.delay(afterRunning: ranFor)
                while !stopping && Condition.now() < deadline { lock.wait(untilNanoseconds: deadline) }
                return !stopping
            }
            guard go else { break }
            do { try spawnOnce() } catch {
                log.error("\(error)") // missing now (uninstalled?): tried again after a longer delay
                ranFor = 0
            }
        }
        lock.withLock {
            finished = true
            lock.broadcast()
        }
    }
}

public enum ChildProcessError: Error, CustomStringConvertible, Equatable {
    case cannotStart(program: String, reason: String)
    public var description: String {
        switch self {
        case .cannotStart(let program, let reason): "cannot start \(program): \(reason)"
        }
    }
}
