import Synchronization
import TuttiAudio
import TuttiCore
import TuttiGestures
import TuttiSystem
import TuttiControlKit

/// Where speakers' room commands (a button's `roomCommand`, a snapclient's
/// own mixer) wait and are done: one bounded inbox per speaker connection
/// (`RoomCommandInbox`: merged, rate-limited) and one thread for all of
/// them, which takes one action from each speaker with work in turn. A
/// command may wait for the player, so it is never done on the speaker's
/// reader thread (that thread answers clock requests); and never on a thread
/// of its own: a peer sending 100,000 frames made 30,639 threads, then
/// stopped the leader.
///
/// A speaker's inbox (its rate limit with it) lives as long as its
/// connection, so the entries are bounded by the speaker port's budget.
///
/// Thread contract: `submit` and `forget` from any thread, without blocking
/// on the player. `perform` runs on the desk's thread only.
// Sendable because `entries`, `ready`, `delayed`, `running` and `stopped` are touched only under `condition`; `perform` is immutable.
final class RoomCommandDesk: @unchecked Sendable {
    typealias Perform = @Sendable (RoomAction, _ room: String) -> Void

    private struct Entry {
        var room: String
        var inbox: RoomCommandInbox
        /// In `ready` or `delayed` (each entry at most once, so both are bounded by the speakers).
        var scheduled = false
    }

    private let condition = Condition()
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var ready: [ObjectIdentifier] = []
    private var delayed: [(id: ObjectIdentifier, at: Int64)] = []
    private var running = false
    private var stopped = false
    /// Set once by `attach` (the leader's start), before any speaker connects.
    private var perform: Perform?
    private var log: Logger?
    private let limits: RoomCommandInbox.Limits
    private let lastDropLog = Atomic<Int64>(0)
    /// Actions done since start (tests and logs).
    let done = Atomic<Int>(0)
    /// Commands dropped since start: a speaker had 16 different ones waiting.
    let dropped = Atomic<Int>(0)

    init(limits: RoomCommandInbox.Limits = .init()) {
        self.limits = limits
    }

    /// What the desk does with an action (the leader's `perform(_:room:)`).
    func attach(log: Logger, perform: @escaping Perform) {
        condition.withLock {
            self.log = log
            self.perform = perform
        }
    }

    /// A command from the speaker `session` (of room `room`).
    func submit(_ command: ButtonCommand, from session: ObjectIdentifier, room: String) {
        enqueue(session, room: room) { $0.receive(command) }
    }

    /// A snapclient reported its own volume or mute.
    func submitMixer(volume: UInt8?, muted: Bool?, from session: ObjectIdentifier, room: String) {
        enqueue(session, room: room) { $0.receiveMixer(volume: volume, muted: muted) }
    }

    private func enqueue(_ id: ObjectIdentifier, room: String, _ add: (inout RoomCommandInbox) -> RoomCommandInbox.Intake) {
        condition.lock()
        if stopped { condition.unlock(); return }
        var entry = entries[id] ?? Entry(room: room, inbox: RoomCommandInbox(limits: limits))
        let intake = add(&entry.inbox)
        if !entry.scheduled && !entry.inbox.isEmpty {
            entry.scheduled = true
            ready.append(id)
        }
        entries[id] = entry
        let start = !running
        running = true
        condition.signal()
        condition.unlock()
        if intake == .dropped { noteDropped(room: room) }
        if start {
            do { try startThread(name: "tutti-room-cmds", stackSize: 512 << 10) { [self] in work() } } catch {
                // The system refused the thread: these commands wait for the next, which tries again.
                let log = condition.withLock { running = false; return self.log }
                log?.warning("room \(room)'s button: \(error)")
            }
        }
    }

    private func noteDropped(room: String) {
        let n = dropped.add(1, ordering: .relaxed).newValue
        let now = Monotonic.now(), last = lastDropLog.load(ordering: .relaxed)
        if now - last > 5 * nanosecondsPerSecond, lastDropLog.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged {
            condition.withLock { log }?.warning("room \(room) sends button commands faster than they can be done: \(n) dropped so far")
        }
    }

    /// The speaker's connection is gone: what it left waiting is not done.
    func forget(_ id: ObjectIdentifier) {
        condition.withLock {
            entries.removeValue(forKey: id)
            ready.removeAll { $0 == id }
            delayed.removeAll { $0.id == id }
        }
    }

    func stop() {
        condition.withLock {
            stopped = true
            entries.removeAll()
            ready.removeAll()
            delayed.removeAll()
            condition.broadcast()
        }
    }

    /// Commands waiting (all speakers): for tests and status.
    var waiting: Int { condition.withLock { entries.values.reduce(0) { $0 + $1.inbox.waiting.count } } }

    private func work() {
        condition.lock()
        defer { condition.unlock() }
        while !stopped {
            let now = Monotonic.now()
            // Speakers whose rate limit has passed go back in turn.
            delayed.removeAll { d in
                guard d.at <= now else { return false }
                ready.append(d.id)
                return true
            }
            guard !ready.isEmpty else {
                // The thread stays once started (one for the leader): ending it
                // when idle would cost a thread start per burst of presses.
                if let soonest = delayed.map(\.at).min() { condition.wait(untilNanoseconds: soonest) } else { condition.wait() }
                continue
            }
            let id = ready.removeFirst()
            guard var entry = entries[id] else { continue }
            let turn = entry.inbox.take(now: now)
            switch turn {
            case .idle:
                entry.scheduled = false
                entries[id] = entry
            case .wait(let until):
                delayed.append((id, until))
                entries[id] = entry
            case .run(let action):
                // Back in line behind the others if more waits: one speaker cannot hold the desk.
                if entry.inbox.isEmpty { entry.scheduled = false } else { ready.append(id) }
                entries[id] = entry
                let room = entry.room, perform = self.perform
                condition.unlock()
                perform?(action, room)
                done.add(1, ordering: .relaxed)
                condition.lock()
            }
        }
    }
}
