import Glibc
import Synchronization

/// The hand-off from the network side (one producer: decoded chunks) to the
/// audio thread (one consumer: playout). Frames are addressed by their
/// absolute index on the stream's 48 kHz grid, `epoch + index / 48000`.
///
/// Lock-free: the producer publishes `writeEnd` with release ordering, the
/// consumer publishes `readStart` the same way. Storage is allocated once;
/// the first `guardFrames` frames are mirrored past the end so the
/// interpolator always sees contiguous frames.
///
/// A stream uses only the part of the ring its buffer needs (`capacity`,
/// set by `beginStream`), and pages of the allocation that are never
/// written are never made resident: with a 1 s buffer a speaker holds
/// 1 MiB of audio (2.7 s), not the 4 MiB that the longest buffer needs.
// Sendable because it is a single-producer single-consumer ring: each index is an atomic with release/acquire, a frame is written before the index that publishes it, and `overflowedFrames` is the producer's own count.
public final class AudioTimeline: @unchecked Sendable {
    /// Frames allocated (a power of two): the most any stream may use.
    public let maximumCapacity: Int
    public let guardFrames: Int
    @usableFromInline let capacityAtomic: Atomic<Int>
    @usableFromInline let storage: UnsafeMutablePointer<Float>

    /// Frames of the ring the current stream uses: a power of two, at most
    /// `maximumCapacity`. Changes only in `beginStream`.
    public var capacity: Int { capacityAtomic.load(ordering: .relaxed) }

    private let generationAtomic = Atomic<Int>(0)
    private let epochAtomic = Atomic<Int64>(0)
    private let validStartAtomic = Atomic<Int>(0)
    private let writeEndAtomic = Atomic<Int>(0)
    private let readStartAtomic = Atomic<Int>(0)
    private let endOfStreamAtomic = Atomic<Int>(Int.max)

    /// Producer-side counters.
    public private(set) var overflowedFrames = 0

    /// `seconds` of audio; rounded up to a power of two frames.
    public init(seconds: Double = 8, guardFrames: Int = 64) {
        var cap = 1
        while cap < Int(seconds * Double(StreamFormat.sampleRate)) { cap <<= 1 }
        maximumCapacity = cap
        capacityAtomic = Atomic(cap)
        self.guardFrames = guardFrames
        // calloc: zeroed pages that become resident only once written.
        let count = (cap + guardFrames) * 2
        guard let raw = calloc(count, MemoryLayout<Float>.stride) else { fatalError("AudioTimeline: no memory for \(count) samples") }
        storage = raw.bindMemory(to: Float.self, capacity: count)
    }

    deinit { free(storage) }

    /// How far ahead of the reader a new stream begins (at most a quarter of
    /// the ring): clear of the period and resampling taps the reader may be
    /// reading when the stream changes, with room for an ALSA period of 4096.
    public static let clearanceFrames = 8_192
    /// Room for a negative latency trim (the reader that much behind).
    static let trimReserveFrames = StreamFormat.sampleRate
    /// Room for the writer beyond what is kept.
    static let slackFrames = StreamFormat.sampleRate / 2

    /// The ring a stream buffered `bufferNanoseconds` ahead needs: the
    /// buffer, 1 s for a negative latency trim and 0.5 s of slack, ahead of
    /// the clearance where a stream begins. (It was ¾ of the ring ahead of a
    /// quarter's clearance: 2 MiB for a 1 s buffer where 1 MiB holds it.)
    public static func frames(forBuffer bufferNanoseconds: Int64) -> Int {
        let buffer = min(max(bufferNanoseconds, 0), 3_600 * nanosecondsPerSecond)
        let needed = Int(StreamFormat.frames(nanoseconds: buffer).rounded(.up)) + trimReserveFrames + slackFrames + clearanceFrames
        var frames = 1
        while frames < needed { frames <<= 1 }
        return frames
    }

    /// The most frames worth keeping while nothing plays (no clock model
    /// yet: a joiner whose clock is slow to converge): the buffer and the
    /// trim reserve. Older frames are in the past by the time anything plays;
    /// releasing them leaves the writer its slack, so the newest frames are
    /// never the ones dropped.
    public var framesKeptWaiting: Int { max(capacity - Self.clearance(capacity) - Self.slackFrames, capacity / 2) }

    private static func clearance(_ capacity: Int) -> Int { min(capacity / 4, clearanceFrames) }

    // MARK: Producer

    /// Starts a new stream whose frame 0 plays at `epoch`. The consumer
    /// notices the new generation and aligns afresh. With the stream's
    /// buffer, the ring shrinks or grows to what it needs (see
    /// `frames(forBuffer:)`); a change can garble the previous stream's
    /// last unplayed frames, which a new stream replaces anyway.
    public func beginStream(epoch: LeaderTime, bufferNanoseconds: Int64? = nil) {
        if let bufferNanoseconds {
            capacityAtomic.store(min(maximumCapacity, Self.frames(forBuffer: bufferNanoseconds)), ordering: .relaxed)
        }
        // Write the new stream clear of anything the consumer may still read.
        let start = readStartAtomic.load(ordering: .acquiring) + Self.clearance(capacity)
        epochAtomic.store(epoch.nanoseconds, ordering: .relaxed)
        validStartAtomic.store(start, ordering: .relaxed)
        writeEndAtomic.store(start, ordering: .relaxed)
        endOfStreamAtomic.store(Int.max, ordering: .relaxed)
        generationAtomic.add(1, ordering: .releasing)
    }

    public var epoch: LeaderTime { LeaderTime(nanoseconds: epochAtomic.load(ordering: .acquiring)) }
    public var hasStream: Bool { generationAtomic.load(ordering: .acquiring) > 0 }

    /// The grid index of a PTS in the current stream (relative to `validStart`).
    public func frameIndex(of pts: LeaderTime) -> Int {
        let frames = StreamFormat.frames(nanoseconds: pts - epoch).rounded()
        return validStartAtomic.load(ordering: .relaxed) + Int(frames)
    }

    /// Writes `count` interleaved stereo frames at grid index `index`.
    /// A gap before `index` is filled with silence; an overlap rewrites
    /// (the newer audio wins, as after a flush). Frames that do not fit are
    /// dropped and counted. Returns frames written.
    @discardableResult
    public func write(_ frames: UnsafePointer<Float>, count: Int, at index: Int) -> Int {
        let end = writeEndAtomic.load(ordering: .relaxed)
        let readStart = readStartAtomic.load(ordering: .acquiring)
        let limit = readStart + capacity
        var index = index, source = frames, count = count
        if index > end {
            let gapEnd = min(index, limit)
            fillSilence(from: end, count: gapEnd - end)
            if gapEnd < index { overflowedFrames += count; writeEndAtomic.store(gapEnd, ordering: .releasing); return 0 }
        }
        if index < readStart {
            // Already played past: keep only the part still to come.
            let skip = min(count, readStart - index)
            index += skip; source += 2 * skip; count -= skip
        }
        // Nothing left to write (empty, or entirely in the past): what is buffered stays.
        if count <= 0 { return 0 }
        let fit = max(0, min(count, limit - index))
        overflowedFrames += count - fit
        copyIn(source, count: fit, at: index)
        // The newest write defines the end: an overlap replaces what followed.
        writeEndAtomic.store(index + fit, ordering: .releasing)
        return fit
    }

    /// Drops every frame at or after `index` that has not been played.
    public func flush(from index: Int) {
        let readStart = readStartAtomic.load(ordering: .acquiring)
        let end = writeEndAtomic.load(ordering: .relaxed)
        writeEndAtomic.store(min(end, max(index, readStart)), ordering: .releasing)
    }

    /// Ramps the `count` frames before `index` down to silence (before a
    /// flush point, so a pause or skip does not click). Frames already
    /// released are left alone.
    public func fadeOut(before index: Int, count: Int) {
        let readStart = readStartAtomic.load(ordering: .acquiring)
        let end = min(index, writeEndAtomic.load(ordering: .relaxed))
        let start = max(end - count, readStart)
        guard start < end else { return }
        for i in start..<end {
            let gain = Float(end - i - 1) / Float(count)
            let p = frame(i)
            store(i, p[0] * gain, p[1] * gain)
        }
    }

    /// Marks the end of the stream at grid index `index` (nothing follows).
    public func endStream(at index: Int) { endOfStreamAtomic.store(index, ordering: .releasing) }

    private func fillSilence(from index: Int, count: Int) {
        for i in 0..<count { store(index + i, 0, 0) }
    }

    /// `count` frames (at most the ring) into slots from `index` on: at most
    /// two copies (the ring wraps once) and the mirror of any guard slot
    /// written, instead of a frame at a time.
    private func copyIn(_ source: UnsafePointer<Float>, count: Int, at index: Int) {
        let ring = capacity
        var done = 0
        while done < count {
            let slot = (index + done) & (ring - 1)
            let n = min(count - done, ring - slot)
            (storage + 2 * slot).update(from: source + 2 * done, count: 2 * n)
            if slot < guardFrames {
                let mirrored = min(n, guardFrames - slot)
                (storage + 2 * (ring + slot)).update(from: source + 2 * done, count: 2 * mirrored)
            }
            done += n
        }
    }

    @inline(__always)
    private func store(_ index: Int, _ left: Float, _ right: Float) {
        let ring = capacity
        let slot = index & (ring - 1)
        storage[2 * slot] = left
        storage[2 * slot + 1] = right
        if slot < guardFrames {
            storage[2 * (ring + slot)] = left
            storage[2 * (ring + slot) + 1] = right
        }
    }

    // MARK: Consumer (audio thread: no allocation, no locks)

    public struct Snapshot: Sendable {
        public var generation: Int
        public var epoch: LeaderTime
        public var validStart: Int
        public var writeEnd: Int
        public var endOfStream: Int
    }

    @inline(__always)
    public func snapshot() -> Snapshot {
        let generation = generationAtomic.load(ordering: .acquiring)
        return Snapshot(generation: generation,
                        epoch: LeaderTime(nanoseconds: epochAtomic.load(ordering: .relaxed)),
                        validStart: validStartAtomic.load(ordering: .relaxed),
                        writeEnd: writeEndAtomic.load(ordering: .acquiring),
                        endOfStream: endOfStreamAtomic.load(ordering: .acquiring))
    }

    /// Pointer to frame `index`; frames `index − guardFrames/2 … index + guardFrames/2`
    /// are contiguous from it. Inlinable: the playout loop calls it for every frame.
    @inlinable @inline(__always)
    public func frame(_ index: Int) -> UnsafePointer<Float> {
        // Slot such that reading back guard/2 and forward guard/2 stays inside storage.
        let ring = capacityAtomic.load(ordering: .relaxed)
        var slot = index & (ring - 1)
        if slot < guardFrames / 2 { slot += ring }
        return UnsafePointer(storage + 2 * slot)
    }

    /// Lets the producer reuse every slot before `index`.
    @inline(__always)
    public func release(upTo index: Int) {
        if index > readStartAtomic.load(ordering: .relaxed) {
            readStartAtomic.store(index, ordering: .releasing)
        }
    }

    public var readStart: Int { readStartAtomic.load(ordering: .acquiring) }
    public var writeEnd: Int { writeEndAtomic.load(ordering: .acquiring) }
}
