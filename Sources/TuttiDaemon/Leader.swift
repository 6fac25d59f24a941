import Foundation
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiNet

/// How a leader is set up (`tuttid leader …`).
public struct LeaderConfiguration: Sendable {
    public var listen = Endpoint(host: "0.0.0.0", port: 4953)
    public var files: [String] = []
    public var loop = false
    public var codec = Codec.opus
    public var bitrateKbps = 160
    public var frameMilliseconds = 20
    /// Steady-state buffer: how far ahead of its PTS each chunk is sent.
    public var bufferMilliseconds = 1_000
    /// How far ahead the first chunk is scheduled (fast start); the leader
    /// then sends ahead faster than real time until the buffer is full.
    public var startLatencyMilliseconds = 250
    /// Bytes a follower may have queued before it is dropped as too slow.
    public var maximumQueuedBytes = 2 << 20
    /// How long a chunk may wait in a follower's queue before that follower
    /// is dropped as too slow (by then it could no longer play it in time).
    public var maximumQueueDelayMilliseconds = 2_000

    public init() {}

    public var framesPerChunk: Int { StreamFormat.sampleRate * frameMilliseconds / 1000 }
}

/// Decodes the play list, stamps and encodes each chunk once, and fans the
/// chunks out to every connected follower.
///
/// Threads: one source thread (decode, encode, pace), one accept thread,
/// and per follower one reader (hello, clock sync, health) and one writer
/// (drains that follower's bounded queue). No follower can block another
/// or the source.
public final class Leader: @unchecked Sendable {
    public let configuration: LeaderConfiguration
    public let streamID: UInt32
    private let log: Logger
    private let listener: TCPListener
    private let sessions = Mutex<[ObjectIdentifier: FollowerSession]>([:])
    /// Chunks whose PTS is still ahead, for followers that join mid-stream.
    private let backlog = Mutex<[(pts: LeaderTime, bytes: [UInt8])]>([])
    private let running = Atomic<Bool>(true)
    private let sourceFinished = Atomic<Bool>(false)
    private let healthReports = Mutex<[String: HealthReport]>([:])
    private let chunksSent = Atomic<Int>(0)

    public init(configuration: LeaderConfiguration, log: Logger) throws(NetError) {
        self.configuration = configuration
        self.log = log
        self.streamID = UInt32.random(in: 1...UInt32.max)
        listener = try TCPListener(endpoint: configuration.listen)
    }

    /// Where followers connect (the real port when 0 was asked for).
    public var endpoint: Endpoint { listener.endpoint }

    /// True once every file has been played (never with `loop`).
    public var finished: Bool { sourceFinished.load(ordering: .acquiring) }

    public var followerNames: [String] { sessions.withLock { $0.values.compactMap { $0.name } }.sorted() }

    public var health: [String: HealthReport] { healthReports.withLock { $0 } }

    public var chunkCount: Int { chunksSent.load(ordering: .relaxed) }

    public func start() throws(AudioError) {
        // Fail early on an impossible encoder configuration.
        _ = try makeEncoder(configuration.codec, bitrateKbps: configuration.bitrateKbps, frameSize: configuration.framesPerChunk)
        log.info("leader listening on \(listener.endpoint), \(configuration.codec) \(configuration.codec == .opus ? "\(configuration.bitrateKbps) kbps " : "")\(configuration.frameMilliseconds) ms chunks, buffer \(configuration.bufferMilliseconds) ms")
        Thread.detachNewThread { [self] in acceptLoop() }
        let source = Thread { [self] in
            sourceLoop()
            sourceFinished.store(true, ordering: .releasing)
        }
        source.name = "tutti-source"
        source.start()
    }

    public func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        listener.close()
        let all = sessions.withLock { Array($0.values) }
        for s in all { s.close(reason: "leader stopping") }
    }

    // MARK: Followers

    private func acceptLoop() {
        while running.load(ordering: .relaxed) {
            let connection: TCPConnection
            do { connection = try listener.accept() } catch {
                if running.load(ordering: .relaxed) { log.error("accept failed: \(error)") }
                return
            }
            let session = FollowerSession(connection: connection, leader: self, log: log)
            sessions.withLock { $0[ObjectIdentifier(session)] = session }
            session.start()
        }
    }

    fileprivate func describeStream() -> StreamDescription {
        StreamDescription(streamID: streamID, codec: configuration.codec, framesPerChunk: UInt32(configuration.framesPerChunk),
                          bufferNanoseconds: Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond)
    }

    /// Called by a session once its follower is welcomed: it gets the
    /// chunks still ahead of now (the live position) then everything new.
    fileprivate func join(_ session: FollowerSession) {
        let now = LeaderTime(nanoseconds: Monotonic.now())
        backlog.withLock { chunks in
            for chunk in chunks where chunk.pts > now { session.enqueue(chunk.bytes) }
            session.joined = true
        }
    }

    fileprivate func remove(_ session: FollowerSession) {
        sessions.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(session)) }
        if let name = session.name { healthReports.withLock { _ = $0.removeValue(forKey: name) } }
    }

    fileprivate func record(health: HealthReport, from name: String) {
        healthReports.withLock { $0[name] = health }
    }

    private func broadcast(_ message: Message, pts: LeaderTime) {
        let bytes = message.encoded()
        let now = LeaderTime(nanoseconds: Monotonic.now())
        // Under the backlog lock so a joining follower sees each chunk exactly once.
        let targets: [FollowerSession] = backlog.withLock { chunks in
            chunks.removeAll { $0.pts <= now }
            chunks.append((pts, bytes))
            return sessions.withLock { Array($0.values) }.filter { $0.joined }
        }
        for session in targets { session.enqueue(bytes) }
        chunksSent.add(1, ordering: .relaxed)
    }

    // MARK: Source

    private func sourceLoop() {
        let frames = configuration.framesPerChunk
        let encoder: any ChunkEncoder
        do {
            encoder = try makeEncoder(configuration.codec, bitrateKbps: configuration.bitrateKbps, frameSize: frames)
        } catch {
            log.error("\(error)"); return
        }
        let buffer = Int64(configuration.bufferMilliseconds) * nanosecondsPerMillisecond
        let epoch = LeaderTime(nanoseconds: Monotonic.now() + Int64(min(configuration.startLatencyMilliseconds, configuration.bufferMilliseconds)) * nanosecondsPerMillisecond)
        // Decoded Opus lags its input by the encoder's look-ahead: stamp the
        // decoded position, so every codec plays the same sample at the same time.
        let codecDelay = StreamFormat.nanoseconds(frames: encoder.delayFrames)
        var streamFrame = 0
        var sequence: UInt64 = 0
        var pending: [Float] = []
        pending.reserveCapacity(frames * 4)

        func emit(_ samples: UnsafePointer<Float>, count: Int) -> Bool {
            let pts = epoch + StreamFormat.nanoseconds(frames: streamFrame) - codecDelay
            // Pace: send each chunk `buffer` ahead of its PTS.
            let sendAt = pts.nanoseconds - buffer
            while running.load(ordering: .relaxed) {
                let wait = sendAt - Monotonic.now()
                if wait <= 0 { break }
                Monotonic.sleep(nanoseconds: min(wait, 50 * nanosecondsPerMillisecond))
            }
            guard running.load(ordering: .relaxed) else { return false }
            do {
                let payload = try encoder.encode(samples, count: count)
                broadcast(.chunk(Chunk(streamID: streamID, sequence: sequence, pts: pts, frames: UInt32(count), payload: payload)), pts: pts)
            } catch {
                log.error("\(error)")
            }
            sequence += 1
            streamFrame += count
            return true
        }

        func drain(final: Bool) -> Bool {
            var offset = 0
            while pending.count - offset >= frames * 2 {
                let ok = pending.withUnsafeBufferPointer { emit($0.baseAddress! + offset, count: frames) }
                if !ok { return false }
                offset += frames * 2
            }
            pending.removeFirst(offset)
            if final && !pending.isEmpty {
                let count = pending.count / 2
                if configuration.codec == .opus { pending += [Float](repeating: 0, count: (frames - count) * 2) }
                let ok = pending.withUnsafeBufferPointer { emit($0.baseAddress!, count: pending.count / 2) }
                pending.removeAll()
                return ok
            }
            return true
        }

        repeat {
            var producedThisPass = false
            for path in configuration.files {
                guard running.load(ordering: .relaxed) else { return }
                let decoder: any AudioDecoder
                do { decoder = try AudioFile.open(path) } catch {
                    log.error("skipping \(path): \(error)")
                    continue
                }
                log.info("playing \(path) (\(decoder.sampleRate) Hz)")
                var resampler: SoxrResampler?
                if decoder.sampleRate != StreamFormat.sampleRate {
                    do { resampler = try SoxrResampler(inputRate: decoder.sampleRate) } catch {
                        log.error("skipping \(path): \(error)"); continue
                    }
                }
                var decoded: [Float] = []
                decoded.reserveCapacity(8192 * 2)
                while running.load(ordering: .relaxed) {
                    decoded.removeAll(keepingCapacity: true)
                    let n: Int
                    do { n = try decoder.read(into: &decoded, maxFrames: 4096) } catch {
                        log.error("\(path): \(error); going on with the next file")
                        break
                    }
                    if n == 0 { break }
                    producedThisPass = true
                    if let resampler {
                        do {
                            try decoded.withUnsafeBufferPointer { (p) throws(AudioError) in
                                try resampler.process(p.baseAddress!, frames: n, into: &pending)
                            }
                        } catch { log.error("\(path): \(error)"); break }
                    } else {
                        pending.append(contentsOf: decoded)
                    }
                    if !drain(final: false) { return }
                }
                if let resampler { try? resampler.finish(into: &pending) }
            }
            if !producedThisPass {
                log.error("nothing playable in the play list; stopping the stream")
                break
            }
        } while configuration.loop && running.load(ordering: .relaxed)
        _ = drain(final: true)
        let end = epoch + StreamFormat.nanoseconds(frames: streamFrame) - codecDelay
        broadcast(.streamEnd(streamID: streamID, at: end), pts: end)
        log.info("end of play list")
    }
}

/// One connected follower, seen from the leader.
final class FollowerSession: @unchecked Sendable {
    let connection: TCPConnection
    unowned let leader: Leader
    private let log: Logger
    private let queue = NSCondition()
    private var queued: [(bytes: [UInt8], at: Int64)] = []
    private var queuedBytes = 0
    private var closed = false
    private(set) var name: String?
    /// Set under the leader's backlog lock once the backlog was queued.
    var joined = false

    init(connection: TCPConnection, leader: Leader, log: Logger) {
        self.connection = connection
        self.leader = leader
        self.log = log
    }

    func start() {
        Thread.detachNewThread { [self] in readLoop() }
        Thread.detachNewThread { [self] in writeLoop() }
    }

    /// Queues bytes for this follower without ever blocking the caller; a
    /// follower that falls too far behind is disconnected.
    func enqueue(_ bytes: [UInt8]) {
        queue.lock()
        if closed { queue.unlock(); return }
        let now = Monotonic.now()
        let waited = queued.first.map { now - $0.at } ?? 0
        if queuedBytes + bytes.count > leader.configuration.maximumQueuedBytes
            || waited > Int64(leader.configuration.maximumQueueDelayMilliseconds) * nanosecondsPerMillisecond {
            let reason = "too slow: \(queuedBytes) bytes waiting to be sent, oldest for \(waited / nanosecondsPerMillisecond) ms"
            queue.unlock()
            close(reason: reason)
            return
        }
        queued.append((bytes, now))
        queuedBytes += bytes.count
        queue.signal()
        queue.unlock()
    }

    func close(reason: String) {
        queue.lock()
        let wasOpen = !closed
        closed = true
        queued.removeAll()
        queuedBytes = 0
        queue.broadcast()
        queue.unlock()
        guard wasOpen else { return }
        log.info("follower \(name ?? connection.peer) disconnected: \(reason)")
        leader.remove(self)
        // Saying goodbye may block on a peer that stopped reading: never on the caller's thread.
        let connection = self.connection
        Thread.detachNewThread {
            connection.setSendTimeout(milliseconds: 200)
            try? connection.send(Message.bye(reason: reason).encoded())
            connection.close()
        }
    }

    private func writeLoop() {
        connection.setSendTimeout(milliseconds: 2_000)
        // A bounded kernel buffer, so a stalled follower shows up in our queue.
        connection.setSendBuffer(bytes: 128 * 1024)
        while true {
            queue.lock()
            while queued.isEmpty && !closed { queue.wait() }
            if closed { queue.unlock(); return }
            let bytes = queued.removeFirst().bytes
            queuedBytes -= bytes.count
            queue.unlock()
            do { try connection.send(bytes) } catch {
                close(reason: "\(error)")
                return
            }
        }
    }

    private func readLoop() {
        let reader = MessageReader(connection: connection)
        connection.setReceiveTimeout(milliseconds: 5_000)
        do {
            guard case .hello(let version, let peerName)? = try reader.next() else {
                close(reason: "did not start with hello"); return
            }
            guard version == WireProtocol.version else {
                let reason = "protocol version mismatch: follower speaks v\(version), leader speaks v\(WireProtocol.version)"
                try? connection.send(Message.reject(version: WireProtocol.version, reason: reason).encoded())
                close(reason: reason)
                return
            }
            name = peerName.isEmpty ? connection.peer : peerName
            try connection.send(Message.welcome(version: WireProtocol.version, stream: leader.describeStream()).encoded())
            log.info("follower \(name!) joined from \(connection.peer)")
            leader.join(self)
            connection.setReceiveTimeout(milliseconds: 30_000)
            while let (message, arrival) = try reader.nextTimed() {
                switch message {
                case .timeRequest(let id, let t1):
                    let t2 = LeaderTime(nanoseconds: arrival ?? Monotonic.now())
                    // t3 is stamped under the send lock, right before the write.
                    try connection.send {
                        Message.timeResponse(id: id, t1: t1, t2: t2, t3: LeaderTime(nanoseconds: Monotonic.now())).encoded()
                    }
                case .health(let report):
                    leader.record(health: report, from: name!)
                case .bye(let reason):
                    close(reason: "follower said bye: \(reason)")
                    return
                default:
                    close(reason: "unexpected \(message.type) message from a follower")
                    return
                }
            }
            close(reason: "connection closed")
        } catch {
            close(reason: "\(error)")
        }
    }
}
