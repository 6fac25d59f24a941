import Glibc
import Synchronization
import TuttiCore

// The runtime's shape (docs/architecture.md, "Runtime"): every long-lived
// piece of a daemon is a `Service` that starts what it needs and, when
// stopped, ends it and waits for it; a `ServiceGroup` starts services in
// order and stops them in reverse. The threads a service starts are
// joined: a stopped daemon runs none of its code any more.

/// A long-lived part of a daemon: a listener, a notifier, a player, a web server.
public protocol Service: AnyObject, Sendable {
    /// For the log: what this is ("speaker port", "JSON-RPC", "web app").
    var serviceName: String { get }
    /// Starts it; what it needs to run is ready when this returns.
    func start() throws
    /// Ends it and returns once everything it started has ended (its
    /// threads joined, its connections closed). Called once, after `start`.
    func stop()
}

/// Services started in order and stopped in reverse, as a house is shut
/// for the night: first what lets people in, last what they came for.
public final class ServiceGroup: Sendable {
    private let running = Mutex<[any Service]>([])

    public init() {}

    /// Starts `service` after those already running. When it fails, the
    /// group is unchanged and the error is the caller's.
    public func start(_ service: any Service) throws {
        try service.start()
        running.withLock { $0.append(service) }
    }

    /// Starts every service in order; when one fails, those it started are
    /// stopped again (in reverse) and the error is thrown.
    public func start(_ services: [any Service]) throws {
        var started: [any Service] = []
        do {
            for s in services {
                try s.start()
                started.append(s)
            }
        } catch {
            for s in started.reversed() { s.stop() }
            throw error
        }
        running.withLock { $0 += started }
    }

    /// Stops every service, the last started first, each before the next;
    /// `log` hears how long each took (debug).
    public func stop(log: Logger? = nil) {
        while let service = running.withLock({ $0.popLast() }) {
            let began = Condition.now()
            service.stop()
            log?.debug("\(service.serviceName) stopped in \((Condition.now() - began) / 1_000_000) ms")
        }
    }

    public var names: [String] { running.withLock { $0.map(\.serviceName) } }
}

/// One OS thread that is joined, not detached: who starts it waits for
/// its end with `join`. The pthread handle's one Swift owner.
public final class JoinableThread: Sendable {
    private let handle: pthread_t
    private let joined = Atomic<Bool>(false)
    public let name: String

    /// Starts `body` on a new thread named `name`; throws when the system
    /// refuses one (its limit on threads or memory).
    public init(name: String, stackSize: Int = 512 << 10, _ body: @escaping @Sendable () -> Void) throws(ThreadError) {
        self.name = name
        handle = try spawnThread(name: name, stackSize: stackSize, detached: false, body)
    }

    /// Waits until the thread's body has returned. Only the first call
    /// waits (a pthread is joined once); never call it from the thread itself.
    public func join() {
        guard !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pthread_join(handle, nil)
    }

    deinit {
        // Never joined (its owner forgot, or could not wait): let it end on its own.
        if !joined.load(ordering: .acquiring) { pthread_detach(handle) }
    }
}

/// Threads started for work that comes and goes (one per connection
/// served), counted so that a stopping service waits for the last one:
/// `waitForAll` returns once every body has returned.
public final class ThreadGroup: Sendable {
    private let state = Condition()
    private let count = Atomic<Int>(0)
    public let name: String

    public init(name: String) { self.name = name }

    /// Threads whose body has not returned yet.
    public var running: Int { count.load(ordering: .acquiring) }

    /// Starts `body` on a thread of this group; throws when the system
    /// refuses one, and the body does not run.
    public func start(name: String? = nil, stackSize: Int = 512 << 10, _ body: @escaping @Sendable () -> Void) throws(ThreadError) {
        count.add(1, ordering: .acquiringAndReleasing)
        do {
            _ = try spawnThread(name: name ?? self.name, stackSize: stackSize, detached: true) { [self] in
                body()
                state.withLock {
                    count.subtract(1, ordering: .acquiringAndReleasing)
                    state.broadcast()
                }
            }
        } catch {
            state.withLock {
                count.subtract(1, ordering: .acquiringAndReleasing)
                state.broadcast()
            }
            throw error
        }
    }

    /// Waits until every thread of the group has returned, or until
    /// `deadline` (CLOCK_MONOTONIC ns); true when none is left.
    @discardableResult
    public func waitForAll(untilNanoseconds deadline: Int64 = .max) -> Bool {
        state.lock()
        defer { state.unlock() }
        while count.load(ordering: .acquiring) > 0 {
            if deadline == .max { state.wait() } else if !state.wait(untilNanoseconds: deadline) {
                return count.load(ordering: .acquiring) == 0
            }
        }
        return true
    }
}

/// A service that is one loop on one thread: `stop` calls `wake` (the
/// loop, which checks its owner's running flag, then returns) and joins it.
public final class LoopService: Service {
    public let serviceName: String
    private let threadName: String
    private let stackSize: Int
    private let loop: @Sendable () -> Void
    private let wake: @Sendable () -> Void
    private let thread = Mutex<JoinableThread?>(nil)

    public init(_ name: String, threadName: String, stackSize: Int = 512 << 10,
                wake: @escaping @Sendable () -> Void, loop: @escaping @Sendable () -> Void) {
        serviceName = name
        self.threadName = threadName
        self.stackSize = stackSize
        self.wake = wake
        self.loop = loop
    }

    public func start() throws {
        let t = try JoinableThread(name: threadName, stackSize: stackSize, loop)
        thread.withLock { $0 = t }
    }

    public func stop() {
        wake()
        thread.withLock { $0 }?.join()
    }
}

/// A piece with start and stop of its own (a publisher, a child process's
/// supervisor) in a `ServiceGroup`'s order.
public final class CallbackService: Service {
    public let serviceName: String
    private let starting: @Sendable () throws -> Void
    private let stopping: @Sendable () -> Void

    public init(_ name: String, start: @escaping @Sendable () throws -> Void = {}, stop: @escaping @Sendable () -> Void) {
        serviceName = name
        starting = start
        stopping = stop
    }

    public func start() throws { try starting() }
    public func stop() { stopping() }
}

/// Work that comes rarely (an announcement's blocks, paced out ahead of
/// their time): its thread runs only while there is work, and lingers a
/// moment after, so an idle process keeps no thread for it. `round` does
/// what is due and returns when it wants its next round (CLOCK_MONOTONIC
/// ns, as `Condition.now()`), or nil when nothing waits; whoever queues
/// work calls `poke`. `stop` refuses new rounds, wakes the thread and
/// joins it.
// Sendable because `running`, `poked` and `stopping` are touched only under `condition`; the rest is immutable.
public final class OnDemandWorker: Service, @unchecked Sendable {
    public let serviceName: String
    private let threadName: String
    private let lingerSeconds: Double
    private let round: @Sendable () -> Int64?
    private let log: Logger?
    private let condition = Condition()
    private let threads: ThreadGroup
    private var running = false
    private var poked = false
    private var stopping = false

    public init(_ name: String, threadName: String, lingerSeconds: Double = 2, log: Logger? = nil,
                round: @escaping @Sendable () -> Int64?) {
        serviceName = name
        self.threadName = threadName
        self.lingerSeconds = lingerSeconds
        self.log = log
        self.round = round
        threads = ThreadGroup(name: threadName)
    }

    /// Whether its thread runs now (for tests and the thread count).
    public var isRunning: Bool { condition.withLock { running } }

    public func start() {}

    /// There is work: a round runs soon, on the running thread or a new one.
    public func poke() {
        condition.lock()
        guard !stopping else { condition.unlock(); return }
        poked = true
        if running {
            condition.signal()
            condition.unlock()
            return
        }
        // Started under the lock, so a stop() that comes next waits for this thread too.
        do {
            try threads.start { [self] in run() }
            running = true
            condition.unlock()
        } catch {
            condition.unlock()
            log?.error("\(serviceName): \(error); its work waits for the next poke")
        }
    }

    private func run() {
        condition.lock()
        while !stopping {
            poked = false
            condition.unlock()
            let next = round()
            condition.lock()
            if poked || stopping { continue }
            if let next {
                condition.wait(untilNanoseconds: next)
            } else if !condition.wait(untilNanoseconds: Condition.deadline(afterSeconds: lingerSeconds)) && !poked {
                break // nothing came while it lingered: the next poke starts a thread again
            }
        }
        running = false
        condition.unlock()
    }

    public func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
        threads.waitForAll()
    }
}
