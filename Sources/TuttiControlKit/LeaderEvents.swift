import Synchronization
import TuttiCore

/// What changed in the leader, for every control surface to pass on
/// (JSON-RPC notifications, MPD `idle`, `tutti watch`). A change made
/// through any surface is announced to all of them.
public enum LeaderEvent: Sendable, Hashable, CaseIterable {
    /// Play state, current track or position jumped (play, pause, skip, seek).
    case player
    /// Queue contents or order.
    case queue
    /// Shuffle or repeat.
    case options
    /// A room's volume, mute or latency trim.
    case mixer
    /// Rooms joined or left.
    case rooms
    /// Groups created, renamed or deleted, rooms moved between them, party
    /// mode, or a change in what a group other than the main one plays.
    case groups
    /// The library changed (a scan finished).
    case library
    /// Stored playlists changed.
    case playlists
    /// Rooms reported their sync health (at most once a second).
    case health
    /// A speaker asks to pair, or a pairing request was decided or ended.
    case speakers
}

/// Fan-out of `LeaderEvent`s to subscribers. Callbacks run on the thread
/// that caused the change and must not block.
public final class LeaderEventHub: Sendable {
    public typealias Subscriber = @Sendable (LeaderEvent) -> Void
    private let subscribers = Mutex<[Int: Subscriber]>([:])
    private let nextToken = Atomic<Int>(1)

    public init() {}

    /// Returns a token for `unsubscribe`.
    @discardableResult
    public func subscribe(_ subscriber: @escaping Subscriber) -> Int {
        let token = nextToken.add(1, ordering: .relaxed).oldValue
        subscribers.withLock { $0[token] = subscriber }
        return token
    }

    public func unsubscribe(_ token: Int) {
        subscribers.withLock { _ = $0.removeValue(forKey: token) }
    }

    public func emit(_ event: LeaderEvent) {
        for s in subscribers.withLock({ Array($0.values) }) { s(event) }
    }
}
