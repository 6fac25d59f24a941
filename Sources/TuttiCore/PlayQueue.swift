/// One entry of a stream's queue. `id` is unique for the queue's lifetime
/// (MPD's songid), so an entry can be addressed while others move.
public struct QueueEntry: Equatable, Sendable {
    public let id: UInt32
    /// A file path or a URL.
    public var uri: String

    public init(id: UInt32, uri: String) { self.id = id; self.uri = uri }
}

public enum RepeatMode: String, Sendable, CaseIterable {
    case off, all, one

    /// off → all → one → off.
    public var next: RepeatMode {
        switch self { case .off: .all; case .all: .one; case .one: .off }
    }
}

/// Stop after the current entry ends (MPD's "single" without repeat):
/// `on` every time, `oneshot` once and then off again.
public enum SingleMode: String, Sendable, CaseIterable {
    case off, on, oneshot
}

/// The rules of a queue as phone music apps apply them, with no I/O.
///
/// `entries` is the user's order (what a queue listing shows); `order` is
/// the play order, a permutation of entry indexes (the identity unless
/// shuffled). Shuffling keeps the current entry current and shuffles the
/// rest after it; turning shuffle off returns to the user's order without
/// changing what plays. The random source is injected (a seed), so tests
/// are exact.
public struct PlayQueue: Sendable, Equatable {
    public private(set) var entries: [QueueEntry] = []
    public private(set) var order: [Int] = []
    /// Index in `entries` of the current entry.
    public private(set) var current: Int?
    public private(set) var shuffle = false
    public var repeatMode = RepeatMode.off
    /// Stop when the current entry ends (repeat one wins: it repeats instead).
    public var single = SingleMode.off
    /// Entries leave the queue once they have been played (or skipped).
    public var consume = false
    private var nextID: UInt32 = 1
    private var random: SplitMix64

    /// What the player should do after a transport decision.
    public enum Step: Equatable, Sendable {
        /// Play entry `index` from the start.
        case play(index: Int)
        /// Restart the current entry.
        case restart(index: Int)
        /// Nothing left to play.
        case stop
    }

    public init(seed: UInt64 = 0x7475_7474_69) { random = SplitMix64(seed: seed) }

    /// Rebuilds a saved queue. An `order` that is not a permutation of the
    /// entries (a damaged save) falls back to the user's order; a `current`
    /// out of range is dropped.
    public init(entries: [QueueEntry], order: [Int], current: Int?, shuffle: Bool, repeatMode: RepeatMode,
                single: SingleMode = .off, consume: Bool = false, seed: UInt64) {
        self.single = single
        self.consume = consume
        self.entries = entries
        let valid = order.count == entries.count && Set(order) == Set(entries.indices)
        self.order = valid ? order : Array(entries.indices)
        self.shuffle = shuffle && valid
        self.current = current.flatMap { entries.indices.contains($0) ? $0 : nil }
        self.repeatMode = repeatMode
        self.nextID = (entries.map(\.id).max() ?? 0) &+ 1
        self.random = SplitMix64(seed: seed)
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    public var currentEntry: QueueEntry? { current.map { entries[$0] } }

    public func index(ofID id: UInt32) -> Int? { entries.firstIndex { $0.id == id } }

    /// Where the current entry sits in play order.
    private var playPosition: Int? { current.flatMap { c in order.firstIndex(of: c) } }

    // MARK: Editing

    /// Appends; while shuffled, each new entry lands at a random place among
    /// the entries still to play, so it is heard in this round.
    @discardableResult
    public mutating func add(_ uris: [String]) -> [UInt32] {
        var ids: [UInt32] = []
        for uri in uris {
            let entry = QueueEntry(id: nextID, uri: uri)
            nextID &+= 1
            entries.append(entry)
            let index = entries.count - 1
            if shuffle {
                let low = (playPosition ?? -1) + 1
                order.insert(index, at: low + random.below(order.count - low + 1))
            } else {
                order.append(index)
            }
            ids.append(entry.id)
        }
        return ids
    }

    /// Puts entries right after the current one, in the user's order and in
    /// play order alike.
    @discardableResult
    public mutating func insertNext(_ uris: [String]) -> [UInt32] {
        guard let c = current else { return add(uris) }
        // In one pass (an insert per entry cost the queue's length each, on the player's thread).
        let at = c + 1, playAt = (playPosition ?? -1) + 1
        let new = uris.map { uri -> QueueEntry in
            defer { nextID &+= 1 }
            return QueueEntry(id: nextID, uri: uri)
        }
        entries.insert(contentsOf: new, at: at)
        order = order.map { $0 >= at ? $0 + new.count : $0 }
        order.insert(contentsOf: at..<(at + new.count), at: playAt)
        return new.map(\.id)
    }

    /// Removes entry `index`. Removing the current entry leaves no current
    /// entry; the caller decides what plays next (see `stepAfterRemovingCurrent`).
    public mutating func remove(at index: Int) {
        precondition(entries.indices.contains(index))
        entries.remove(at: index)
        order = order.compactMap { $0 == index ? nil : ($0 > index ? $0 - 1 : $0) }
        if let c = current {
            if c == index { current = nil } else if c > index { current = c - 1 }
        }
    }

    /// Moves entry `from` to position `to` in the user's order (play order
    /// follows when not shuffled; while shuffled it is left as it was).
    public mutating func move(from: Int, to: Int) {
        precondition(entries.indices.contains(from) && entries.indices.contains(to))
        guard from != to else { return }
        let entry = entries.remove(at: from)
        entries.insert(entry, at: to)
        func remap(_ i: Int) -> Int {
            if i == from { return to }
            if from < to, i > from, i <= to { return i - 1 }
            if to < from, i >= to, i < from { return i + 1 }
            return i
        }
        order = shuffle ? order.map(remap) : Array(entries.indices)
        current = current.map(remap)
    }

    public mutating func clear() {
        entries.removeAll()
        order.removeAll()
        current = nil
    }

    /// Makes entry `index` current (play at index).
    public mutating func select(_ index: Int) {
        precondition(entries.indices.contains(index))
        current = index
    }

    public mutating func setShuffle(_ on: Bool) {
        guard on != shuffle else { return }
        shuffle = on
        if on {
            var rest = entries.indices.filter { $0 != current }
            for i in stride(from: rest.count - 1, to: 0, by: -1) {
                rest.swapAt(i, random.below(i + 1))
            }
            order = (current.map { [$0] } ?? []) + rest
        } else {
            order = Array(entries.indices)
        }
    }

    // MARK: Transport

    /// After the current entry ends (`manual == false`) or on "next".
    /// Repeat one repeats at the end, but a manual next still moves on.
    public func stepForward(manual: Bool) -> Step {
        guard !entries.isEmpty else { return .stop }
        guard let c = current, let p = playPosition else { return .play(index: order[0]) }
        if repeatMode == .one && !manual { return .restart(index: c) }
        if single != .off && !manual { return .stop }
        if p + 1 < order.count { return .play(index: order[p + 1]) }
        return repeatMode == .off ? .stop : .play(index: order[0])
    }

    /// "Previous": restarts the current entry when more than 3 s in,
    /// otherwise goes back one (wrapping with repeat all).
    public func stepBack(elapsedSeconds: Double) -> Step {
        guard !entries.isEmpty else { return .stop }
        guard let c = current, let p = playPosition else { return .play(index: order[0]) }
        if elapsedSeconds > 3 { return .restart(index: c) }
        if p > 0 { return .play(index: order[p - 1]) }
        return repeatMode == .all ? .play(index: order[order.count - 1]) : .restart(index: c)
    }

    /// Applies a step's choice of current entry (`.stop` clears it).
    public mutating func apply(_ step: Step) {
        switch step {
        case .play(let i), .restart(let i): current = i
        case .stop: current = nil
        }
    }

}

/// What a stream's player must find again after a restart or power cut
/// (kept by `PlayerStateStore`, TuttiLibrary).
public struct PlayerSnapshot: Equatable, Sendable {
    public var queue: PlayQueue
    /// The entry heard (id) and the position in it, milliseconds.
    public var entryID: UInt32?
    public var positionMilliseconds: Int64
    public var wasPlaying: Bool
    /// The group's speed and pitch (an audiobook keeps its 1.25× over a restart).
    public var tempo: PlaybackTempo

    public init(queue: PlayQueue, entryID: UInt32?, positionMilliseconds: Int64, wasPlaying: Bool, tempo: PlaybackTempo = .normal) {
        self.queue = queue; self.entryID = entryID; self.positionMilliseconds = positionMilliseconds; self.wasPlaying = wasPlaying
        self.tempo = tempo
    }
}
