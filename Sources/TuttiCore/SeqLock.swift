import Synchronization

/// Four Int64 values published by one writer and read consistently by any
/// reader without blocking it: the reader retries if a write overlapped.
/// Used to hand the clock model and playout figures to and from the audio
/// thread without a lock.
public final class SeqLockedValues: Sendable {
    private let sequence = Atomic<UInt64>(0)
    private let a = Atomic<Int64>(0), b = Atomic<Int64>(0), c = Atomic<Int64>(0), d = Atomic<Int64>(0)

    public init() {}

    /// Single writer only.
    public func store(_ v0: Int64, _ v1: Int64, _ v2: Int64, _ v3: Int64) {
        sequence.add(1, ordering: .relaxed) // odd: write in progress
        atomicMemoryFence(ordering: .releasing)
        a.store(v0, ordering: .relaxed); b.store(v1, ordering: .relaxed)
        c.store(v2, ordering: .relaxed); d.store(v3, ordering: .relaxed)
        sequence.add(1, ordering: .releasing)
    }

    /// Nil until the first store.
    @inline(__always)
    public func load() -> (Int64, Int64, Int64, Int64)? {
        while true {
            let s1 = sequence.load(ordering: .acquiring)
            if s1 == 0 { return nil }
            if s1 & 1 == 1 { continue }
            let v = (a.load(ordering: .relaxed), b.load(ordering: .relaxed), c.load(ordering: .relaxed), d.load(ordering: .relaxed))
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == s1 { return v }
        }
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
