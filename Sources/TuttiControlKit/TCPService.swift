import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiNet
import TuttiSystem

/// One listening port: the connection budget that keeps one host from
/// taking it (`ConnectionBudget`), and a thread per connection served. The
/// speaker port, Snapcast's stream port, JSON-RPC, MPD and Snapcast's
/// control port are each one of these; one `AcceptLoop` thread waits on all
/// of them.
///
/// Stopping closes the port, asks the surface to end its connections
/// (`closeConnections`), and waits for the threads serving them, at most
/// `drainSeconds`: a connection thread blocked in a write to a peer that
/// stopped reading ends with its send timeout, which is longer, so the wait
/// is bounded here and what is left is logged.
public final class TCPService: Service {
    public let serviceName: String
    public let listener: TCPListener
    public let budget: ConnectionBudget
    private let loop: AcceptLoop
    private let log: Logger
    private let threadName: String
    private let stackSize: Int
    /// Whether a connection may take a place lent beyond the limit (see `ConnectionBudget.admit`).
    private let mayProvision: @Sendable () -> Bool
    private let serve: @Sendable (TCPConnection, ConnectionBudget.Ticket) -> Void
    private let closeConnections: @Sendable () -> Void
    private let connections: ThreadGroup
    /// Held while connections are taken from the port: `stop` waits for a
    /// round in progress, so none is served after it closed the others.
    private let accepting = Condition()
    private let running = Atomic<Bool>(false)
    public let descriptor: Int32
    public let drainSeconds = 1.0

    /// `serve` runs on a thread of its own for each admitted connection
    /// and returns when that connection is done; its place is given back then.
    public init(_ name: String, listener: TCPListener, loop: AcceptLoop, budget: ConnectionBudget, log: Logger, threadName: String, stackSize: Int = 512 << 10,
         mayProvision: @escaping @Sendable () -> Bool = { false },
         closeConnections: @escaping @Sendable () -> Void,
         serve: @escaping @Sendable (TCPConnection, ConnectionBudget.Ticket) -> Void) {
        serviceName = name
        self.listener = listener
        self.loop = loop
        self.budget = budget
        self.log = log
        self.threadName = threadName
        self.stackSize = stackSize
        self.mayProvision = mayProvision
        self.closeConnections = closeConnections
        self.serve = serve
        connections = ThreadGroup(name: threadName)
        descriptor = listener.pollDescriptor
    }

    public var endpoint: Endpoint { listener.endpoint }
    /// Connections being served now.
    public var serving: Int { connections.running }

    public func start() throws {
        running.store(true, ordering: .releasing)
        loop.add(self)
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        loop.remove(self)
        listener.close()
        accepting.withLock {} // a round of accepts in progress has ended
        closeConnections()
        if !connections.waitForAll(untilNanoseconds: Condition.deadline(afterSeconds: drainSeconds)) {
            log.warning("\(serviceName): \(connections.running) connections still closing after \(drainSeconds) s")
        }
    }

    /// The accept loop saw the port readable: takes what waits (at most 64,
    /// so that a flood on one port does not keep the loop from the others).
    public func acceptWaiting() {
        accepting.lock()
        defer { accepting.unlock() }
        for _ in 0..<64 where running.load(ordering: .acquiring) {
            let connection: TCPConnection
            do {
                switch try listener.acceptIfReady() {
                case .connection(let c): connection = c
                case .none: return
                case .outOfDescriptors:
                    // Refused by the system: the connection waits in the
                    // kernel's queue while others close theirs.
                    log.warning("\(serviceName): no file descriptor left for a new connection")
                    usleep(100_000)
                    return
                }
            } catch {
                if running.load(ordering: .acquiring) { log.error("\(serviceName): accept failed: \(error)") }
                return
            }
            guard let ticket = budget.admit(peer: connection.peer, mayProvision: mayProvision(), log: log, now: Monotonic.now()) else {
                connection.close()
                continue
            }
            do {
                try connections.start(name: threadName, stackSize: stackSize) { [self] in
                    defer { budget.release(ticket) }
                    serve(connection, ticket)
                }
            } catch {
                budget.release(ticket)
                connection.close()
                log.warning("\(serviceName) \(connection.peer) refused: \(error)")
            }
        }
    }
}

/// The one thread that waits for connections on every TCP port of the
/// leader (poll), and hands each to its port's `TCPService`. Ports come and
/// go through a pipe that wakes it (eventfd is not in Swift's Glibc).
public final class AcceptLoop: Service {
    public let serviceName = "accept loop"
    private let ports = Mutex<[TCPService]>([])
    /// The pipe's ends: read by the loop (non-blocking), written by `wake`.
    private let wakeDescriptor: Int32
    private let wakeWriter: Int32
    private let thread = Mutex<JoinableThread?>(nil)
    private let running = Atomic<Bool>(false)
    private let log: Logger

    public init(log: Logger) {
        self.log = log
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) != 0 { fatalError("cannot make a pipe: \(String(cString: strerror(errno)))") } // at start-up: no descriptor at all
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeDescriptor = ends[0]
        wakeWriter = ends[1]
    }

    deinit {
        close(wakeDescriptor)
        close(wakeWriter)
    }

    public func start() throws {
        running.store(true, ordering: .releasing)
        let t = try JoinableThread(name: "tutti-accept", stackSize: 256 << 10) { [self] in run() }
        thread.withLock { $0 = t }
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        wake()
        thread.withLock { $0 }?.join()
    }

    public func add(_ port: TCPService) {
        ports.withLock { $0.append(port) }
        wake()
    }

    public func remove(_ port: TCPService) {
        ports.withLock { $0.removeAll { $0 === port } }
        wake()
    }

    private func wake() {
        var one: UInt8 = 1
        _ = write(wakeWriter, &one, 1) // a full pipe already wakes it
    }

    private func run() {
        while running.load(ordering: .acquiring) {
            let current = ports.withLock { $0 }
            var waiting = [pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
                + current.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            let n = poll(&waiting, nfds_t(waiting.count), -1)
            if n < 0 {
                if errno != EINTR { log.error("accept loop: poll failed: \(String(cString: strerror(errno)))") }
                continue
            }
            if waiting[0].revents != 0 {
                var drained = [UInt8](repeating: 0, count: 64)
                while read(wakeDescriptor, &drained, drained.count) > 0 {}
            }
            for (i, port) in current.enumerated() where waiting[i + 1].revents != 0 { port.acceptWaiting() }
        }
    }
}
