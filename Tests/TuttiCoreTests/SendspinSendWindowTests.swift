import Testing
import TuttiCore

@Suite struct SendspinSendWindowTests {
    typealias Window = SendspinSendWindow<String>
    static let ms: Int64 = 1_000_000
    static let chunk: Int64 = 20 * ms

    /// Chunk `n` of a stream whose chunk 0 plays at `origin`: (start, end).
    static func times(_ n: Int, origin: Int64 = 1_000 * ms) -> (Int64, Int64) {
        (origin + Int64(n) * chunk, origin + Int64(n + 1) * chunk)
    }

    @Test func aPlayerWithRoomGetsEveryChunkAsItComes() {
        var w = Window(limits: .init(capacity: 1 << 20, maximumEntries: 60))
        for n in 0..<50 {
            let (start, end) = Self.times(n)
            #expect(w.offer("c\(n)", start: start, end: end, bytes: 3_853, now: 0) == ["c\(n)"])
        }
        #expect(w.heldCount == 0 && w.nextRelease == nil)
        #expect(w.countedBytes == 50 * 3_853 && w.peakBytes == 50 * 3_853)
    }

    @Test func whatDoesNotFitWaitsUntilEnoughHasPlayed() {
        var w = Window(limits: .init(capacity: 10_000, maximumEntries: 60))
        var sent: [String] = []
        for n in 0..<4 {
            let (start, end) = Self.times(n)
            sent += w.offer("c\(n)", start: start, end: end, bytes: 3_000, now: 0)
        }
        // 3 × 3,000 = 9,000 fit in 10,000; a fourth would make 12,000.
        #expect(sent == ["c0", "c1", "c2"])
        #expect(w.countedBytes == 9_000 && w.heldCount == 1 && w.heldBytes == 3_000)
        // Room comes when c0 has played (its end) and the 1 ms guard more.
        let due = Self.times(0).1 + Window.defaultReleaseGuard
        #expect(w.nextRelease == due)
        #expect(w.release(now: due - 1).isEmpty)
        #expect(w.countedBytes == 9_000)
        #expect(w.release(now: due) == ["c3"])
        #expect(w.countedBytes == 9_000 && w.heldCount == 0 && w.nextRelease == nil)
        #expect(w.peakBytes == 9_000)
    }

    @Test func aChunkThatFillsTheCapacityExactlyGoes() {
        var w = Window(limits: .init(capacity: 9_000, maximumEntries: 60))
        for n in 0..<3 {
            let (start, end) = Self.times(n)
            #expect(w.offer("c\(n)", start: start, end: end, bytes: 3_000, now: 0) == ["c\(n)"])
        }
        #expect(w.countedBytes == 9_000)
        let (start, end) = Self.times(3)
        #expect(w.offer("c3", start: start, end: end, bytes: 1, now: 0).isEmpty)
    }

    @Test func aLargeChunkWaitsForAsManyAsItNeeds() {
        var w = Window(limits: .init(capacity: 10_000, maximumEntries: 60))
        for n in 0..<5 {
            let (start, end) = Self.times(n)
            _ = w.offer("c\(n)", start: start, end: end, bytes: 2_000, now: 0)
        }
        #expect(w.countedBytes == 10_000)
        // 5,000 bytes need three of the 2,000-byte chunks to have played: c2's end.
        let (start, end) = Self.times(5)
        #expect(w.offer("big", start: start, end: end, bytes: 5_000, now: 0).isEmpty)
        #expect(w.nextRelease == Self.times(2).1 + Window.defaultReleaseGuard)
        #expect(w.release(now: Self.times(1).1 + Window.defaultReleaseGuard).isEmpty)
        #expect(w.countedBytes == 6_000)
        #expect(w.release(now: Self.times(2).1 + Window.defaultReleaseGuard) == ["big"])
        #expect(w.countedBytes == 9_000)
    }

    @Test func aHeldChunkWhoseStartPassedIsDropped() {
        var w = Window(limits: .init(capacity: 6_000, maximumEntries: 60, releaseGuard: 0))
        // c0 and c1 fill it; c2 and c3 wait.
        for n in 0..<4 {
            let (start, end) = Self.times(n)
            _ = w.offer("c\(n)", start: start, end: end, bytes: 3_000, now: 0)
        }
        #expect(w.heldCount == 2)
        // Nobody released at c0's end; at c2's start both c0 and c1 have played: c2 is late, c3 goes.
        #expect(w.release(now: Self.times(2).0) == ["c3"])
        #expect(w.droppedLate == 1)
        #expect(w.countedBytes == 3_000)
    }

    /// The leader's source sends a chunk every 20 ms, 1 s ahead; the window
    /// is released at each `nextRelease`. The player (40,000 bytes: ten
    /// 3,849-byte chunks, 16-bit stereo PCM with a 9-byte header) never
    /// holds more than that, and every chunk after the first ten goes 179 ms
    /// before its time: nine chunks, less the guard.
    @Test func inSteadyStateEachChunkGoesAsSoonAsThereIsRoom() {
        var w = Window(limits: .init(capacity: 40_000, bufferAheadNanoseconds: 1_000 * Self.ms, chunkNanoseconds: Self.chunk))
        #expect(w.limits.maximumEntries == 66)
        let origin: Int64 = 1_100 * Self.ms // the first chunk is offered 1.1 s before it plays, at 0
        var sentAt: [String: Int64] = [:]
        var margins: [Int64] = []
        var now: Int64 = 0
        var n = 0
        var nextOffer: Int64 = 0
        while now < 10_000 * Self.ms {
            if now >= nextOffer {
                let (start, end) = Self.times(n, origin: origin)
                for item in w.offer("c\(n)", start: start, end: end, bytes: 3_849, now: now) { sentAt[item] = now }
                n += 1
                nextOffer = Self.times(n, origin: origin).0 - 1_000 * Self.ms
            }
            #expect(w.countedBytes <= 40_000)
            let release = w.nextRelease ?? Int64.max
            now = max(now, min(nextOffer, release))
            for item in w.release(now: now) { sentAt[item] = now }
        }
        for i in 10..<(n - 60) {
            let start = Self.times(i, origin: origin).0
            margins.append(start - (sentAt["c\(i)"] ?? Int64.max))
        }
        #expect(w.peakBytes == 38_490)
        #expect(w.droppedLate == 0 && w.droppedOverflow == 0)
        #expect(Set(margins) == [179 * Self.ms], "\(Set(margins).map { $0 / 1_000 }) µs")
        #expect(w.heldCount <= 66)
    }

    @Test func aClearSendsAgainWhatPlaysBeforeTheCutAndDropsTheRest() {
        var w = Window(limits: .init(capacity: 9_000, maximumEntries: 60))
        var sent: [String] = []
        for n in 0..<8 {
            let (start, end) = Self.times(n)
            sent += w.offer("c\(n)", start: start, end: end, bytes: 3_000, now: 0)
        }
        #expect(sent == ["c0", "c1", "c2"] && w.heldCount == 5)
        // At c0's middle, a cut at c4's start: the player drops c0…c2. c1, c2 (sent, still to start) and
        // c3 (held) play before the cut and go (again), as they fit; c4… are dropped.
        let now = Self.times(0).0 + 10 * Self.ms
        #expect(w.clear(cut: Self.times(4).0, now: now) == ["c1", "c2", "c3"])
        #expect(w.countedBytes == 9_000 && w.heldCount == 0)
        // Nothing was held past the cut; new chunks after it queue as before.
        let (start, end) = Self.times(20)
        #expect(w.offer("n0", start: start, end: end, bytes: 3_000, now: now).isEmpty)
        #expect(w.nextRelease == Self.times(1).1 + Window.defaultReleaseGuard)
    }

    @Test func markersKeepTheirPlaceAndStreamEndEmptiesThePlayer() {
        var w = Window(limits: .init(capacity: 6_000, maximumEntries: 60))
        var sent: [String] = []
        for n in 0..<3 {
            let (start, end) = Self.times(n)
            sent += w.offer("c\(n)", start: start, end: end, bytes: 3_000, now: 0)
        }
        // A format change: the in-place stream/start waits behind c2, and the new format's chunk behind it.
        sent += w.mark("start flac", emptiesPlayer: false, now: 0)
        let (s3, e3) = Self.times(3)
        sent += w.offer("f3", start: s3, end: e3, bytes: 1_000, now: 0)
        sent += w.mark("end", emptiesPlayer: true, now: 0)
        #expect(sent == ["c0", "c1"])
        let due = Self.times(0).1 + Window.defaultReleaseGuard
        #expect(w.nextRelease == due)
        // c2 goes, then the marker, then f3 (3,000 + 3,000 + 1,000 > 6,000 until c1 plays too).
        #expect(w.release(now: due) == ["c2", "start flac"])
        #expect(w.countedBytes == 6_000)
        let due2 = Self.times(1).1 + Window.defaultReleaseGuard
        #expect(w.release(now: due2) == ["f3", "end"])
        // stream/end: the player holds nothing; a new stream starts from empty.
        #expect(w.countedBytes == 0)
        let (s9, e9) = Self.times(9)
        #expect(w.offer("n", start: s9, end: e9, bytes: 6_000, now: due2) == ["n"])
    }

    /// A chunk that plays long after those sent around it (FLAC's encoder
    /// gives back a block it held across a seek's cut) keeps only its own
    /// bytes counted: the ones that end before it free theirs at their end.
    @Test func aChunkOutOfOrderDoesNotHoldBackThoseThatEndBeforeIt() {
        var w = Window(limits: .init(capacity: 9_000, maximumEntries: 60))
        var sent: [String] = []
        let (s0, e0) = Self.times(0)
        sent += w.offer("c0", start: s0, end: e0, bytes: 3_000, now: 0)
        let (s50, e50) = Self.times(50)
        sent += w.offer("stray", start: s50, end: e50, bytes: 3_000, now: 0)
        for n in 1..<4 {
            let (start, end) = Self.times(n)
            sent += w.offer("c\(n)", start: start, end: end, bytes: 3_000, now: 0)
        }
        #expect(sent == ["c0", "stray", "c1"] && w.heldCount == 2)
        // c0 ends first: room for c2, then c1's end for c3; the stray stays counted to its own end.
        let due0 = e0 + Window.defaultReleaseGuard
        #expect(w.nextRelease == due0)
        #expect(w.release(now: due0) == ["c2"])
        let due1 = Self.times(1).1 + Window.defaultReleaseGuard
        #expect(w.nextRelease == due1)
        #expect(w.release(now: due1) == ["c3"])
        #expect(w.countedBytes == 9_000 && w.countedCount == 3)
        // A clear sends again, in play order, what starts before the cut and after now (c2 is playing).
        #expect(w.clear(cut: Self.times(60).0, now: due1) == ["c3", "stray"])
    }

    @Test func itHoldsAndCountsNoMoreThanItsBound() {
        var w = Window(limits: .init(capacity: 3_000, maximumEntries: 4))
        for n in 0..<10 {
            let (start, end) = Self.times(n)
            _ = w.offer("c\(n)", start: start, end: end, bytes: 3_000, now: 0)
        }
        // c0 sent; c1…c5 offered past the bound of four held: the oldest held went.
        #expect(w.heldCount == 4 && w.droppedOverflow == 5)
        #expect(w.release(now: Self.times(0).1 + Window.defaultReleaseGuard) == ["c6"])
        // Counted: at most four, however large the capacity.
        var big = Window(limits: .init(capacity: 1 << 30, maximumEntries: 4))
        var sent: [String] = []
        for n in 0..<6 {
            let (start, end) = Self.times(n)
            sent += big.offer("c\(n)", start: start, end: end, bytes: 100, now: 0)
        }
        #expect(sent == ["c0", "c1", "c2", "c3"] && big.countedCount == 4 && big.heldCount == 2)
        #expect(big.nextRelease == Self.times(0).1 + Window.defaultReleaseGuard)
        // A chunk larger than the capacity can never go: dropped, counted.
        var small = Window(limits: .init(capacity: 1_000, maximumEntries: 4))
        #expect(small.offer("huge", start: 10, end: 20, bytes: 1_001, now: 0).isEmpty)
        #expect(small.droppedOversize == 1 && small.heldCount == 0)
    }

    @Test func aCapacityTooSmallForTwoChunksOfEveryFormatIsRefused() {
        let pcm = SendspinAudioFormat(codec: .pcm)
        let flac = SendspinAudioFormat(codec: .flac)
        let pcm24 = SendspinAudioFormat(codec: .pcm, bitDepth: 24)
        // 20 ms at 48 kHz, 16-bit stereo: 3,840 bytes and the 13-byte header.
        #expect(Sendspin.largestChunkBytes(pcm, frames: 960) == 3_853)
        #expect(Sendspin.largestChunkBytes(pcm24, frames: 960) == 5_773)
        #expect(Sendspin.largestChunkBytes(flac, frames: 960) == 3_917)
        #expect(Sendspin.leastBufferCapacity(pcm, frames: 960) == 7_706)
        #expect(Sendspin.chooseFormat(offered: [pcm], opusAvailable: false, capacity: 7_706, frames: 960) == .success(pcm))
        #expect(Sendspin.chooseFormat(offered: [pcm], opusAvailable: false, capacity: 7_705, frames: 960)
                == .failure(.bufferTooSmall(capacity: 7_705, least: 7_706, format: pcm)))
        // The first offered that fits: 24-bit PCM does not fit 10,000 bytes, 16-bit does.
        #expect(Sendspin.chooseFormat(offered: [pcm24, pcm], opusAvailable: false, capacity: 10_000, frames: 960) == .success(pcm))
        // Opus (1,275-byte packets at most) fits where PCM does not, from an Opus leader only.
        let opus = SendspinAudioFormat(codec: .opus)
        #expect(Sendspin.chooseFormat(offered: [pcm, opus], opusAvailable: true, capacity: 3_000, frames: 960) == .success(opus))
        #expect(Sendspin.chooseFormat(offered: [pcm, opus], opusAvailable: false, capacity: 3_000, frames: 960)
                == .failure(.bufferTooSmall(capacity: 3_000, least: 7_706, format: pcm)))
        #expect(Sendspin.chooseFormat(offered: [SendspinAudioFormat(codec: .pcm, sampleRate: 44_100)], opusAvailable: true, capacity: 1 << 20,
                                      frames: 960) == .failure(.noFormat))
        let refusal = SendspinFormatRefusal.bufferTooSmall(capacity: 3_000, least: 7_706, format: pcm)
        #expect(refusal.description.contains("3000 bytes") && refusal.description.contains("7706"), "\(refusal)")
    }
}
