import TuttiAudio
import TuttiCore
import TuttiSystem

/// Runs checks at deadlines, on one thread for all of them (started with
/// the first): "has this page logged in 10 s after it opened?". A check
/// must be quick and must not block (it closes a connection at most).
/// Entries are bounded by the connections that add them (a web port's
/// workers), each dropped once its check ran.
// Sendable because `entries` and `started` are touched only under `condition`.
public final class DeadlineWatch: @unchecked Sendable {
    private let condition = Condition()
    private var entries: [(at: Int64, check: @Sendable () -> Void)] = []
    private var started = false
    private var stopped = false
    private let name: String

    public init(name: String) { self.name = name }

    /// Runs `check` `milliseconds` from now. False: the watch could not start
    /// its thread (the caller decides: closing at once is the safe answer).
    @discardableResult
    public func after(milliseconds: Int, _ check: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        if stopped { condition.unlock(); return true }
        entries.append((Monotonic.now() + Int64(milliseconds) * nanosecondsPerMillisecond, check))
        let start = !started
        started = true
        condition.signal()
        condition.unlock()
        guard start else { return true }
        do { try startThread(name: name, stackSize: 256 << 10) { [self] in run() } } catch {
            condition.withLock { started = false; entries.removeLast() }
            return false
        }
        return true
    }

    public func stop() {
        condition.withLock { stopped = true; entries.removeAll(); condition.signal() }
    }

    private func run() {
        condition.lock()
        while !stopped {
            let now = Monotonic.now()
            let due = entries.filter { $0.at <= now }
            if !due.isEmpty {
                entries.removeAll { $0.at <= now }
                condition.unlock()
                for entry in due { entry.check() }
                condition.lock()
                continue
            }
            if let soonest = entries.map(\.at).min() { condition.wait(untilNanoseconds: soonest) } else { condition.wait() }
        }
        condition.unlock()
    }
}
