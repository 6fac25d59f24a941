import Synchronization
import TuttiCore
import TuttiNet
import TuttiSystem

/// How many connections one port serves at once. A peer that opens more
/// (a thousand at once, say) has the rest closed as they arrive, so a flood
/// costs bounded threads and memory and the clients already served keep
/// their latency. Refusals are logged at most once every 5 s.
///
/// Once a surge has drained (the port back to an eighth of the most it held
/// since, and that was at least 64), the memory freed by its connections'
/// threads is given back: glibc keeps it in its arenas otherwise, and a
/// leader stayed 14 MiB larger after a thousand connections had come and
/// gone (bench/hostile).
final class ConnectionBudget: Sendable {
    let name: String
    let limit: Int
    private let count = Atomic<Int>(0)
    private let mostSinceTrim = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)
    private let lastLog = Atomic<Int64>(0)

    init(name: String, limit: Int) {
        self.name = name
        self.limit = limit
    }

    /// Takes a place for a new connection; false: the port is full (close it).
    func admit(log: Logger, now: Int64) -> Bool {
        let n = count.add(1, ordering: .acquiringAndReleasing).newValue
        if n <= limit {
            var most = mostSinceTrim.load(ordering: .relaxed)
            while n > most {
                let (done, seen) = mostSinceTrim.compareExchange(expected: most, desired: n, ordering: .relaxed)
                if done { break }
                most = seen
            }
            return true
        }
        count.subtract(1, ordering: .acquiringAndReleasing)
        let refusals = refused.add(1, ordering: .relaxed).newValue
        let last = lastLog.load(ordering: .relaxed)
        if now - last > 5 * nanosecondsPerSecond, lastLog.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged {
            log.warning("\(name): \(limit) connections already; refused \(refusals) more so far")
        }
        return false
    }

    func release() {
        let n = count.subtract(1, ordering: .acquiringAndReleasing).newValue
        let most = mostSinceTrim.load(ordering: .relaxed)
        // One closing connection wins the exchange; the trim (milliseconds
        // with a big heap) runs on a thread of its own, as `release` may be
        // called from a stream's fan-out.
        if most >= 64, n * 8 <= most, mostSinceTrim.compareExchange(expected: most, desired: n, ordering: .relaxed).exchanged {
            startThread(name: "tutti-trim", stackSize: 128 << 10) { returnFreedMemory() }
        }
    }

    var current: Int { count.load(ordering: .relaxed) }
}

/// What a line-based control client may get wrong before it is closed:
/// a run of requests that are not requests at all (random bytes) costs a
/// parse each, so it ends after a few; a half line left hanging (one byte a
/// second, slowloris) ends after a while, as does a connection that asks
/// nothing at all in its first seconds (it only holds a place).
struct LineDiscipline {
    static let maxConsecutiveMalformed = 8
    static let partialLineMilliseconds = 10_000
    static let firstRequestMilliseconds = 10_000

    /// How long the line being read has been unfinished. Checked after every
    /// read as well as when reads time out: one byte a second never lets a
    /// read time out, and would hold its half line for hours.
    struct PartialLineClock {
        private(set) var since: Int64?
        var limitNanoseconds = Int64(LineDiscipline.partialLineMilliseconds) * 1_000_000

        /// After a read: whether a line is left unfinished, and whether one ended in it.
        mutating func update(unfinished: Bool, lineEnded: Bool, now: Int64) {
            if !unfinished { since = nil } else if since == nil || lineEnded { since = now }
        }

        func expired(now: Int64) -> Bool { since.map { now - $0 > limitNanoseconds } ?? false }
    }
}
