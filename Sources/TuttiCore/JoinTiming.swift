/// The join handshake's timing, both ends, on injected time. The leader's
/// side (`JoinDeadlines`) says by when a connection must have joined and
/// which connections the handshake watch closes; the speaker's side
/// (`SpeakerJoinTimer`) how long it listens for the leader's next word and
/// when it gives up waiting for a person, and `ReconnectPolicy.speaker` how
/// it connects again (through `ReconnectBackoff`). No I/O: the shells
/// (`Leader.speakerGuards`, `Follower.handshake`, `Follower.connectLoop`)
/// give the time and act.

/// The leader's handshake deadlines: a speaker connection that has not
/// joined by then is closed.
public enum JoinDeadlines {
    /// To say hello and finish the handshake: 10 s.
    public static let handshake: Int64 = 10 * nanosecondsPerSecond
    /// On a place lent beyond the port's limit (to a speaker that is to prove
    /// it is paired or has the room key): 2 s.
    public static let lentPlace: Int64 = 2 * nanosecondsPerSecond
    /// A pairing request waits for its person as long as it lives
    /// (`PairingRequests`, 5 min), with half a minute to spare; never on a lent place.
    public static let awaitingPerson: Int64 = 330 * nanosecondsPerSecond

    /// By when a connection made at `connectedAt` must have joined.
    public static func deadline(connectedAt: Int64, lentPlace: Bool, awaitingPerson: Bool) -> Int64 {
        connectedAt + (lentPlace ? Self.lentPlace : awaitingPerson ? Self.awaitingPerson : handshake)
    }

    /// One look by the watch at `now` over the connections not yet joined
    /// (their deadlines): those to close, and when to look next (nil: not
    /// until a connection comes). A deadline at `now` has passed.
    public static func sweep<ID>(_ waiting: [(id: ID, deadline: Int64)], now: Int64) -> (close: [ID], nextLook: Int64?) {
        var close: [ID] = []
        var next: Int64?
        for w in waiting {
            if w.deadline <= now { close.append(w.id) } else { next = min(next ?? w.deadline, w.deadline) }
        }
        return (close, next)
    }
}

/// A speaker's handshake timing: each reply of the leader is awaited
/// `replyTimeout`; once it asked a person to allow it (the leader sends
/// nothing meanwhile), it looks again every `personRecheck` (it may have
/// been paired some other way) and gives up `personWait` after the request
/// began; a joined session ends after `sessionSilence` without a word from
/// the leader.
public struct SpeakerJoinTimer: Sendable, Equatable {
    public static let replyTimeout: Int64 = 5 * nanosecondsPerSecond
    public static let personRecheck: Int64 = 5 * nanosecondsPerSecond
    public static let personWait: Int64 = 330 * nanosecondsPerSecond
    public static let sessionSilence: Int64 = 10 * nanosecondsPerSecond

    public enum Phase: Equatable, Sendable {
        case handshake
        /// Since `since` (monotonic ns), a person is to allow this speaker.
        case waitingForPerson(since: Int64)
        case joined
    }

    /// What a receive that timed out means.
    public enum Silence: Equatable, Sendable {
        /// The leader is silent longer than it may be: the connection is over.
        case giveUp
        /// Still waiting for a person: look whether pairing happened meanwhile, then listen again.
        case lookAgain
    }

    public private(set) var phase: Phase = .handshake
    public init() {}

    /// How long a receive waits (ns) in this phase.
    public var receiveTimeout: Int64 {
        switch phase {
        case .handshake: Self.replyTimeout
        case .waitingForPerson: Self.personRecheck
        case .joined: Self.sessionSilence
        }
    }

    /// The leader said it waits for a person (again, after a wrong code: the wait runs from the first).
    public mutating func waitingForPerson(now: Int64) {
        if case .waitingForPerson = phase { return }
        phase = .waitingForPerson(since: now)
    }

    public mutating func joined() { phase = .joined }

    /// A receive timed out at `now`.
    public func silence(now: Int64) -> Silence {
        guard case .waitingForPerson(let since) = phase, now - since <= Self.personWait else { return .giveUp }
        return .lookAgain
    }
}

extension ReconnectPolicy {
    /// A speaker's reconnects to its leader: 100 ms after a session that
    /// ended, doubling while attempts keep failing, to at most 2 s (a leader
    /// restarting is found again within 2 s); never giving up, no jitter.
    public static let speaker = ReconnectPolicy(initialDelay: 0.1, maxDelay: 2, maxAttempts: nil, jitter: 0)
}
