import Glibc
import Synchronization
import TuttiSystem

/// Bytes for files, handed from the playout thread to a thread of their
/// own that writes them: the virtual DAC's audio and timing files.
///
/// A real DAC does no file I/O, and the playout thread must not either: a
/// write(2) blocked behind the disk (another process syncing gigabytes, a
/// whole test suite writing databases) held the thread past the 30 ms the
/// DAC holds, and it underran. Here the playout thread copies into a ring
/// per file and wakes the writer once `wakeBytes` have gathered (a
/// `sem_post`, no lock); the writer also wakes every `maximumDelay`, so
/// what was played reaches the files soon after. Only a disk that stalls
/// longer than a ring holds makes `append` wait, and then nothing is lost.
final class FileSpool: @unchecked Sendable {
    // @unchecked: one producer (the sink's writer) and one consumer (the
    // spool thread); each ring byte is owned by one side at a time, as the
    // rings' `appended` and `drained` counters (release/acquire) say.
    // @unchecked: its bytes are shared as the spool's comment says.
    private final class Ring: @unchecked Sendable {
        let descriptor: Int32
        let bytes: UnsafeMutablePointer<UInt8>
        let capacity: Int
        let appended = Atomic<Int>(0)
        let drained = Atomic<Int>(0)
        init(descriptor: Int32, capacity: Int) {
            self.descriptor = descriptor; self.capacity = capacity
            bytes = .allocate(capacity: capacity)
        }
        deinit { bytes.deallocate() }
    }

    private let rings: [Ring]
    private let wakeBytes: Int
    private let maximumDelay: Int64
    private let stopping = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    // Semaphores at fixed addresses: both threads use them at once, which
    // `&property` would check as overlapping access.
    private let wake = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    private let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
    /// Producer side: bytes appended since the writer was last woken.
    private var gathered = 0
    private var closed = false

    /// One ring per file: (open descriptor, ring bytes). The spool owns the descriptors.
    init(files: [(descriptor: Int32, capacity: Int)], wakeBytes: Int, maximumDelay: Int64, name: String) {
        rings = files.map { Ring(descriptor: $0.descriptor, capacity: $0.capacity) }
        self.wakeBytes = wakeBytes
        self.maximumDelay = maximumDelay
        sem_init(wake, 0, 0)
        sem_init(done, 0, 0)
        startEssentialThread(name: name, stackSize: 128 << 10) { [self] in
            drainUntilStopped()
            finished.store(true, ordering: .releasing)
            sem_post(done)
        }
    }

    deinit {
        close()
        wake.deallocate()
        done.deallocate()
    }

    /// Copies `count` bytes for file `file` (the playout thread; allocates nothing).
    func append(_ source: UnsafeRawPointer, count: Int, to file: Int) {
        let ring = rings[file]
        var offset = 0
        while offset < count {
            let start = ring.appended.load(ordering: .relaxed)
            let room = ring.capacity - (start - ring.drained.load(ordering: .acquiring))
            guard room > 0 else {
                // The disk is further behind than the ring holds: wait for it (rare; nothing dropped).
                sem_post(wake)
                usleep(2_000)
                continue
            }
            let n = min(room, count - offset)
            var copied = 0
            while copied < n {
                let at = (start + copied) % ring.capacity
                let piece = min(n - copied, ring.capacity - at)
                (ring.bytes + at).initialize(from: (source + offset + copied).assumingMemoryBound(to: UInt8.self), count: piece)
                copied += piece
            }
            ring.appended.store(start + n, ordering: .releasing)
            offset += n
        }
        gathered += count
        if gathered >= wakeBytes {
            gathered = 0
            sem_post(wake)
        }
    }

    /// Writes what is left, stops the thread and closes the files (the producer's side; idempotent).
    func close() {
        guard !closed else { return }
        closed = true
        stopping.store(true, ordering: .releasing)
        sem_post(wake)
        while !finished.load(ordering: .acquiring) { sem_wait(done) }
        for ring in rings { Glibc.close(ring.descriptor) }
        sem_destroy(wake)
        sem_destroy(done)
    }

    private func drainUntilStopped() {
        while true {
            let last = stopping.load(ordering: .acquiring)
            for ring in rings { drain(ring) }
            if last { return }
            var deadline = timespec()
            clock_gettime(CLOCK_REALTIME, &deadline)
            let ns = Int64(deadline.tv_nsec) + maximumDelay
            deadline.tv_sec += Int(ns / 1_000_000_000)
            deadline.tv_nsec = Int(ns % 1_000_000_000)
            while sem_timedwait(wake, &deadline) != 0 && errno == EINTR {}
        }
    }

    private func drain(_ ring: Ring) {
        let end = ring.appended.load(ordering: .acquiring)
        var start = ring.drained.load(ordering: .relaxed)
        while start < end {
            let at = start % ring.capacity
            let n = Glibc.write(ring.descriptor, ring.bytes + at, min(end - start, ring.capacity - at))
            if n <= 0 {
                if n < 0 && errno == EINTR { continue }
                // A file that cannot be written (the disk full): that much is dropped; the DAC plays on.
                start = end
            } else {
                start += n
            }
            ring.drained.store(start, ordering: .releasing)
        }
    }
}
