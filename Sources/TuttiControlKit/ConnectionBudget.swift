import Synchronization
import TuttiCore
import TuttiNet
import TuttiSystem

/// How many connections one port serves at once, counted per source
/// address first (`ConnectionShares`: one host gets at most a quarter of
/// the port, and never more than 16), then for the port. A peer that opens
/// more (a thousand at once, say) has the rest closed as they arrive, so a
/// flood costs bounded threads and memory, the clients already served keep
/// their latency, and a client from another address still gets in. A few
/// places beyond the port's limit stay for this machine and, on the speaker
/// port with a room key, for speakers that go on to prove it. Refusals are
/// logged at most once every 5 s.
///
/// Once a surge has drained (the port back to an eighth of the most it held
/// since, and that was at least 64), the memory freed by its connections'
/// threads is given back: glibc keeps it in its arenas otherwise, and a
/// leader stayed 14 MiB larger after a thousand connections had come and
/// gone (bench/hostile).
public final class ConnectionBudget: Sendable {
    public let name: String
    public let limits: ConnectionShares.Limits
    private let shares: Mutex<ConnectionShares>
    private let mostSinceTrim = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)
    private let lastLog = Atomic<Int64>(0)

    /// A connection's places, given back with `release` (once).
    public struct Ticket: Sendable, Equatable {
        let address: SourceAddress
        public let place: ConnectionShares.Place
    }

    public init(name: String, limit: Int, provisionalReserve: Int = 0) {
        self.name = name
        limits = ConnectionShares.Limits(port: limit, provisionalReserve: provisionalReserve)
        shares = Mutex(ConnectionShares(limits: limits))
    }

    public var limit: Int { limits.port }

    /// Takes a place for a connection from `peer` (`HOST:PORT`); nil: refused (close it).
    /// `mayProvision`: a place beyond the limit may be lent until the room key is proved.
    public func admit(peer: String, mayProvision: Bool = false, log: Logger, now: Int64) -> Ticket? {
        let address = SourceAddress.parse(peer) ?? .unknown
        let outcome = shares.withLock { s in s.admit(address, mayProvision: mayProvision).map { ($0, s.total) } }
        switch outcome {
        case .success(let (place, n)):
            var most = mostSinceTrim.load(ordering: .relaxed)
            while n > most {
                let (done, seen) = mostSinceTrim.compareExchange(expected: most, desired: n, ordering: .relaxed)
                if done { break }
                most = seen
            }
            return Ticket(address: address, place: place)
        case .failure(let refusal):
            let refusals = refused.add(1, ordering: .relaxed).newValue
            let last = lastLog.load(ordering: .relaxed)
            if now - last > 5 * nanosecondsPerSecond, lastLog.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged {
                log.warning("\(name): refused \(peer): \(refusal); refused \(refusals) so far")
            }
            return nil
        }
    }

    public func release(_ ticket: Ticket) {
        let n = shares.withLock { s in
            s.release(ticket.address, place: ticket.place)
            return s.total
        }
        let most = mostSinceTrim.load(ordering: .relaxed)
        // One closing connection wins the exchange; the trim (milliseconds
        // with a big heap) runs on a thread of its own, as `release` may be
        // called from a stream's fan-out.
        if most >= 64, n * 8 <= most, mostSinceTrim.compareExchange(expected: most, desired: n, ordering: .relaxed).exchanged {
            try? startThread(name: "tutti-trim", stackSize: 128 << 10) { returnFreedMemory() } // refused: the memory stays in the arenas
        }
    }

    public var current: Int { shares.withLock { $0.total } }
    /// Connections open from `peer`'s address.
    public func held(byPeer peer: String) -> Int { shares.withLock { $0.held(by: SourceAddress.parse(peer) ?? .unknown) } }
}

/// What a line-based control client may get wrong before it is closed:
/// a run of requests that are not requests at all (random bytes) costs a
/// parse each, so it ends after a few; a half line left hanging (one byte a
/// second, slowloris) ends after a while, as does a connection that asks
/// nothing at all in its first seconds (it only holds a place).
public struct LineDiscipline {
    public static let maxConsecutiveMalformed = 8
    /// A client that may do nothing until it logs in (a password is set
    /// and it is not on this machine) and has not within this: closed.
    public static let loginMilliseconds = 10_000
    public static let partialLineMilliseconds = 10_000
    public static let firstRequestMilliseconds = 10_000

    /// How long the line being read has been unfinished. Checked after every
    /// read as well as when reads time out: one byte a second never lets a
    /// read time out, and would hold its half line for hours.
    public struct PartialLineClock {
        public private(set) var since: Int64?
        public var limitNanoseconds = Int64(LineDiscipline.partialLineMilliseconds) * 1_000_000

        public init() {}

        /// After a read: whether a line is left unfinished, and whether one ended in it.
        public mutating func update(unfinished: Bool, lineEnded: Bool, now: Int64) {
            if !unfinished { since = nil } else if since == nil || lineEnded { since = now }
        }

        public func expired(now: Int64) -> Bool { since.map { now - $0 > limitNanoseconds } ?? false }
    }

    /// When a reader must look at its connection again although nothing
    /// came: the soonest of its deadlines that still applies (a half line,
    /// the login, the first request); nil: none, it may wait for bytes as
    /// long as they take. Readers block until then, not in fixed ticks.
    public static func nextDeadline(connectedAt: Int64, requests: Int, loggedIn: Bool, partial: PartialLineClock) -> Int64? {
        var soonest: Int64?
        func consider(_ at: Int64) { soonest = min(soonest ?? at, at) }
        if let since = partial.since { consider(since + partial.limitNanoseconds + 1) }
        if !loggedIn { consider(connectedAt + Int64(loginMilliseconds) * 1_000_000 + 1) }
        if requests == 0 { consider(connectedAt + Int64(firstRequestMilliseconds) * 1_000_000 + 1) }
        return soonest
    }

    /// Sets `connection`'s receive timeout to end at `deadline` (none: no
    /// timeout), when it differs from the one set (`armed`).
    public static func arm(_ connection: TCPConnection, until deadline: Int64?, now: Int64, armed: inout Int64?) {
        guard deadline != armed else { return }
        armed = deadline
        connection.setReceiveTimeout(milliseconds: deadline.map { max(1, Int(($0 - now + 999_999) / 1_000_000)) } ?? 0)
    }
}
