/// What a room's speaker asked for with its buttons (protocol `roomCommand`,
/// or a snapclient's own mixer), waiting to be done, merged the way a
/// button held down should act.
public enum RoomAction: Sendable, Equatable, CustomStringConvertible {
    /// play, pause, stop, like: doing one twice is doing it once.
    case once(ButtonCommand)
    /// Tracks to skip: `next` +1, `prev` −1 (a `prev` after a `next` takes it back).
    case skip(Int)
    /// Volume steps (`vol+` +1, `vol-` −1); done as one change. Any step unmutes, as a single press does.
    case volume(steps: Int)
    /// toggle, mute, shuffle, party: an even number of presses is none at all.
    case toggle(ButtonCommand, presses: Int)
    /// repeat, eq: each press steps to the next mode or preset.
    case cycle(ButtonCommand, presses: Int)
    /// A snapclient's mixer moved: the latest volume and mute it reported.
    case mixer(volume: UInt8?, muted: Bool?)

    /// What it costs of the rate limit: each track skipped and each step
    /// through a cycle is a press; a volume change is one however many
    /// steps it adds up (it is one change of the room's settings).
    public var cost: Int {
        switch self {
        case .skip(let n): max(1, abs(n))
        case .toggle(_, let n), .cycle(_, let n): max(1, n)
        case .once, .volume, .mixer: 1
        }
    }

    public var description: String {
        switch self {
        case .once(let c): "\(c)"
        case .skip(let n): n >= 0 ? "next ×\(n)" : "prev ×\(-n)"
        case .volume(let n): "volume \(n >= 0 ? "+" : "")\(n) steps"
        case .toggle(let c, let n): "\(c) ×\(n)"
        case .cycle(let c, let n): "\(c) ×\(n)"
        case .mixer(let v, let m): "mixer volume \(v.map(String.init) ?? "-") muted \(m.map(String.init) ?? "-")"
        }
    }
}

/// One speaker's room commands waiting to be done: bounded, merged, and
/// rate-limited. Pure (the caller passes the time); the leader keeps one per
/// speaker connection and one thread does them all, in turn.
///
/// What a user expects from a button held down (a hold repeats every
/// 150 ms, `GestureConfiguration.repeatInterval`; an encoder spun fast
/// sends a step per detent): every press counts, within reason, and the
/// result comes at once. So commands are done as they come while the bucket
/// has tokens (10 at once, then 8 a second: a held button never waits), and
/// those that must wait merge with the one waiting before them:
/// several `next`s become one skip of several tracks (at most 10, and
/// each track skipped costs a token, so a flood skips 8 tracks a second),
/// volume steps add up (at most 20 steps, the whole 0–100 range), toggles
/// in pairs cancel, and a repeated play/pause/stop/like is done once.
/// Different commands keep their order. Beyond 16 different commands
/// waiting, more are dropped and counted: a peer sending 100,000 frames
/// costs 16 entries and 8 actions a second.
public struct RoomCommandInbox: Sendable, Equatable {
    public struct Limits: Sendable, Equatable {
        public var waiting = 16
        public var skip = 10
        public var volumeSteps = 20
        public var presses = 4
        public var burst = 10
        public var perSecond = 8
        public init() {}
    }

    public let limits: Limits
    public private(set) var waiting: [RoomAction] = []
    /// Commands dropped because 16 different ones were already waiting.
    public private(set) var dropped = 0
    private var bucket: TokenBucket

    public init(limits: Limits = Limits()) {
        self.limits = limits
        bucket = TokenBucket(capacity: limits.burst, perSecond: limits.perSecond)
    }

    /// What `receive` did with a command.
    public enum Intake: Sendable, Equatable {
        /// Waits as a new entry.
        case queued
        /// Merged into the entry waiting last (or cancelled it out).
        case merged
        /// Too many different commands waiting: dropped.
        case dropped
    }

    /// A button command from the speaker.
    @discardableResult
    public mutating func receive(_ command: ButtonCommand) -> Intake {
        add(Self.action(for: command))
    }

    /// A snapclient's mixer report: only the latest matters.
    @discardableResult
    public mutating func receiveMixer(volume: UInt8?, muted: Bool?) -> Intake {
        guard volume != nil || muted != nil else { return .merged }
        return add(.mixer(volume: volume, muted: muted))
    }

    static func action(for command: ButtonCommand) -> RoomAction {
        switch command {
        case .play, .pause, .stop, .like: .once(command)
        case .next: .skip(1)
        case .prev: .skip(-1)
        case .volumeUp: .volume(steps: 1)
        case .volumeDown: .volume(steps: -1)
        case .toggle, .mute, .shuffle, .party: .toggle(command, presses: 1)
        case .repeat, .eq: .cycle(command, presses: 1)
        }
    }

    private mutating func add(_ action: RoomAction) -> Intake {
        if let last = waiting.last, let merged = merge(last, action) {
            if let merged { waiting[waiting.count - 1] = merged } else { waiting.removeLast() }
            return .merged
        }
        guard waiting.count < limits.waiting else {
            dropped += 1
            return .dropped
        }
        waiting.append(action)
        return .queued
    }

    /// The entry `a` and `b` make together: nil if they do not merge,
    /// `.some(nil)` if they cancel out.
    private func merge(_ a: RoomAction, _ b: RoomAction) -> RoomAction?? {
        switch (a, b) {
        case (.once(let x), .once(let y)) where x == y:
            return .some(a)
        case (.skip(let x), .skip(let y)):
            let n = max(-limits.skip, min(limits.skip, x + y))
            return .some(n == 0 ? nil : .skip(n))
        case (.volume(let x), .volume(let y)):
            // Kept at 0 steps: the presses still unmute.
            return .some(.volume(steps: max(-limits.volumeSteps, min(limits.volumeSteps, x + y))))
        case (.toggle(let x, let n), .toggle(let y, let m)) where x == y:
            let presses = (n + m) % 2
            return .some(presses == 0 ? nil : .toggle(x, presses: 1))
        case (.cycle(let x, let n), .cycle(let y, let m)) where x == y:
            return .some(.cycle(x, presses: min(limits.presses, n + m)))
        case (.mixer(let v0, let m0), .mixer(let v1, let m1)):
            return .some(.mixer(volume: v1 ?? v0, muted: m1 ?? m0))
        default:
            return nil
        }
    }

    /// What to do next.
    public enum Turn: Sendable, Equatable {
        case run(RoomAction)
        /// Something waits, but not before this time (the rate limit).
        case wait(until: Int64)
        /// Nothing waits.
        case idle
    }

    /// The next action to do now, if the rate allows (`RoomAction.cost`
    /// tokens); it leaves the inbox.
    public mutating func take(now: Int64) -> Turn {
        guard let first = waiting.first else { return .idle }
        guard bucket.take(now: now, count: first.cost) else { return .wait(until: bucket.nextToken(now: now, count: first.cost)) }
        return .run(waiting.removeFirst())
    }

    public var isEmpty: Bool { waiting.isEmpty }
}
