import Synchronization

/// Four Int64 values published by one writer and read consistently by any
/// reader without blocking it. Used to hand the clock model and playout
/// figures to and from the audio thread without a lock.
///
/// Two slots: the writer fills the one readers are not pointed at, then
/// points them at it. A writer preempted mid-write (on one core, by the
/// SCHED_FIFO reader itself) leaves the published slot whole, so the reader
/// never spins waiting for it; a read retries only if the writer finished
/// two whole stores during it, and gives up (nil) after 64 such retries.
public final class SeqLockedValues: Sendable {
    private struct Slot: ~Copyable {
        let sequence = Atomic<UInt64>(0) // odd: being written
        let a = Atomic<Int64>(0), b = Atomic<Int64>(0), c = Atomic<Int64>(0), d = Atomic<Int64>(0)
    }
    private let slot0 = Slot(), slot1 = Slot()
    /// Stores so far; the latest is in slot `version & 1` (0: nothing yet).
    private let version = Atomic<UInt64>(0)

    public init() {}

    /// Single writer only.
    public func store(_ v0: Int64, _ v1: Int64, _ v2: Int64, _ v3: Int64) {
        let next = version.load(ordering: .relaxed) &+ 1
        func fill(_ slot: borrowing Slot) {
            slot.sequence.add(1, ordering: .relaxed) // odd: write in progress
            atomicMemoryFence(ordering: .releasing)
            slot.a.store(v0, ordering: .relaxed); slot.b.store(v1, ordering: .relaxed)
            slot.c.store(v2, ordering: .relaxed); slot.d.store(v3, ordering: .relaxed)
            slot.sequence.add(1, ordering: .releasing)
        }
        if next & 1 == 0 { fill(slot0) } else { fill(slot1) }
        version.store(next, ordering: .releasing)
    }

    /// Nil until the first store.
    @inline(__always)
    public func load() -> (Int64, Int64, Int64, Int64)? {
        for _ in 0..<64 {
            let v = version.load(ordering: .acquiring)
            if v == 0 { return nil }
            if let values = v & 1 == 0 ? Self.read(slot0) : Self.read(slot1) { return values }
        }
        return nil
    }

    @inline(__always)
    private static func read(_ slot: borrowing Slot) -> (Int64, Int64, Int64, Int64)? {
        let s1 = slot.sequence.load(ordering: .acquiring)
        if s1 & 1 == 1 { return nil }
        let values = (slot.a.load(ordering: .relaxed), slot.b.load(ordering: .relaxed), slot.c.load(ordering: .relaxed), slot.d.load(ordering: .relaxed))
        atomicMemoryFence(ordering: .acquiring)
        return slot.sequence.load(ordering: .relaxed) == s1 ? values : nil
    }
}

/// The clock model as the audio thread sees it.
public final class PublishedClockModel: Sendable {
    private let cell = SeqLockedValues()
    public init() {}

    public func publish(_ model: ClockModel) {
        cell.store(model.reference.nanoseconds, model.offset, Int64(bitPattern: model.skew.bitPattern), 1)
    }

    /// Forgets the model (the leader went away): playout falls silent.
    public func invalidate() { cell.store(0, 0, 0, 0) }

    @inline(__always)
    public func current() -> ClockModel? {
        guard let (r, o, s, valid) = cell.load(), valid == 1 else { return nil }
        return ClockModel(reference: LocalTime(nanoseconds: r), offset: o, skew: Double(bitPattern: UInt64(bitPattern: s)))
    }
}
