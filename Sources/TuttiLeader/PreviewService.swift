import Synchronization
import TuttiCore
import TuttiDecode
import TuttiLibrary
import TuttiSystem

/// Previews made on demand (GET /preview/ID on the web app, issue 34): one
/// worker thread, `tutti-preview`, that runs only while previews wait (an
/// `OnDemandWorker`), never a thread per request. Each request that has to
/// wait holds a place (`PreviewWaiting`: 2 per address, 4 in all, counted
/// as `ConnectionShares` counts connections), since it holds a web server
/// lane meanwhile; beyond its address's share it is refused at once
/// (`addressBusy`), beyond the total too (`busy`), and at most `queueLimit`
/// previews are queued. Each encoded preview is kept a minute in a bounded
/// `PreviewCache` (a hit holds no place), and a request for a track already
/// being made waits for that one. Nothing here touches a player, a queue,
/// the history or a room.
///
/// Threads: `preview` is called on the web server's handler lanes and
/// blocks its caller until its preview is made (at most `waitSeconds`).
// Sendable because `cache`, `places`, `queue`, `running` and `stopping` are touched only under `condition`; `worker` is set once in init.
final class PreviewService: Service, @unchecked Sendable {
    let serviceName = "previews"
    static let queueLimit = 4
    static let waitSeconds = 60.0

    private final class Job {
        let track: TrackID
        var result: Result<TrackPreview, PreviewError>?
        init(_ track: TrackID) { self.track = track }
    }

    private let library: Library
    private let log: Logger
    private let condition = Condition()
    private var cache: PreviewCache
    private var places = ConnectionShares(limits: PreviewWaiting.limits)
    private var queue: [Job] = []
    private var running: Job?
    private var stopping = false
    private var worker: OnDemandWorker!
    /// Previews encoded since start (a cache hit adds none): for tests and the log.
    let encodes = Atomic<Int>(0)
    /// The most places one address has held at once since start: for tests.
    let mostHeldByOneAddress = Atomic<Int>(0)

    init(library: Library, limits: PreviewCache.Limits = PreviewCache.Limits(), log: Logger) {
        self.library = library
        self.log = log
        cache = PreviewCache(limits: limits)
        worker = OnDemandWorker("previews", threadName: "tutti-preview", log: log) { [unowned self] in round() }
    }

    func start() {}

    func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
        worker.stop()
    }

    /// The preview of `track` for a client at `address`: from the cache, or
    /// made on the worker while the caller waits, in a place of its address's share.
    func preview(_ track: TrackID, for address: SourceAddress) -> Result<TrackPreview, PreviewError> {
        condition.lock()
        if stopping { condition.unlock(); return .failure(.stopping) }
        if let hit = cache.lookup(track.rawValue, now: Condition.now()) { condition.unlock(); return .success(hit) }
        let place: ConnectionShares.Place
        switch places.admit(address) {
        case .success(let p): place = p
        case .failure(.addressFull(_, let share)): condition.unlock(); return .failure(.addressBusy(address, share: share))
        case .failure(.portFull): condition.unlock(); return .failure(.busy)
        }
        let job: Job
        if let same = queue.first(where: { $0.track == track }) ?? running.flatMap({ $0.track == track ? $0 : nil }) {
            job = same
        } else {
            guard queue.count < Self.queueLimit else {
                places.release(address, place: place)
                condition.unlock()
                return .failure(.busy)
            }
            job = Job(track)
            queue.append(job)
        }
        let held = places.held(by: address)
        if held > mostHeldByOneAddress.load(ordering: .relaxed) { mostHeldByOneAddress.store(held, ordering: .relaxed) }
        condition.unlock()
        worker.poke()
        condition.lock()
        defer {
            places.release(address, place: place)
            condition.unlock()
        }
        let deadline = Condition.deadline(afterSeconds: Self.waitSeconds)
        while job.result == nil && !stopping {
            if !condition.wait(untilNanoseconds: deadline) && job.result == nil { break }
        }
        return job.result ?? .failure(stopping ? .stopping : .busy)
    }

    /// Places held now by `address`, and by all: for tests.
    func waiting(from address: SourceAddress) -> (address: Int, total: Int) {
        condition.withLock { (places.held(by: address), places.total) }
    }

    /// The worker's round: makes the first waiting preview; asks for another round at once while more wait.
    private func round() -> Int64? {
        condition.lock()
        guard !stopping, !queue.isEmpty else { condition.unlock(); return nil }
        let job = queue.removeFirst()
        running = job
        condition.unlock()
        let result = make(job.track)
        condition.lock()
        if case .success(let preview) = result { cache.store(job.track.rawValue, preview, now: Condition.now()) }
        job.result = result
        running = nil
        condition.broadcast()
        let more = !queue.isEmpty
        condition.unlock()
        return more ? Condition.now() : nil
    }

    private func make(_ id: TrackID) -> Result<TrackPreview, PreviewError> {
        let track: Track?
        do { track = try library.track(id) } catch { return .failure(.undecodable(id.rawValue, reason: error.description)) }
        guard let track else { return .failure(.unknownTrack(id.rawValue)) }
        let began = Condition.now()
        do {
            let bytes = try PreviewEncoder.encode(path: track.path, knownFrames: track.durationFrames)
            let ms = (Condition.now() - began) / 1_000_000
            encodes.add(1, ordering: .relaxed)
            log.info("preview of \(id) (\(track.title)): \(bytes.count) bytes in \(ms) ms")
            return .success(TrackPreview(bytes: bytes, cached: false, encodeMilliseconds: ms))
        } catch {
            log.info("preview of \(id): \(error)")
            return .failure(.undecodable(id.rawValue, reason: error.description))
        }
    }
}
