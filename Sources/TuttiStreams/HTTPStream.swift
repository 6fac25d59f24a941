import Dispatch
import FoundationEssentials
import TuttiCore
import TuttiSystem

/// What the first response said about the resource.
struct ResponseInfo: Sendable {
    var status: Int
    var contentLength: Int64?
    var metaint: Int?
    var contentType: String?
    /// Live: no Content-Length, or ICY metadata (radio). Finite otherwise.
    var isLive: Bool { contentLength == nil || metaint != nil }
}


/// One HTTP(S) resource read as a stream of audio bytes: a `CurlTransfer`
/// at a time, ICY metadata stripped, a bounded buffer with back-pressure,
/// reconnection for live streams.
///
/// Thread contract: `open`, `read`, `restart` and `close` are called by the
/// one consumer thread; transfer callbacks run on the transfer's thread.
/// State crosses between them under one condition lock; a transfer is
/// never started or cancelled with that lock held.
// Sendable because its state is touched only under `lock` (consumer and transfer callbacks alike).
final class HTTPStream: TransferDelegate, @unchecked Sendable {
    enum ReadResult: Equatable {
        case bytes(Int)
        /// The bytes after this point do not continue the ones before (a
        /// reconnect, or dropped data): reset the decoder.
        case discontinuity
        case end
        case failure(StreamError)
    }

    private enum State {
        case idle
        /// A request is out; `restart` when it continues a finite file or reconnects a live one.
        case connecting
        case streaming
        /// Finite file, buffer full: no transfer until the consumer drains it.
        case paused
        /// Live stream: waiting out the backoff before the next attempt.
        case reconnecting
        case ended
        case failed(StreamError)
        case closed
    }

    private enum Action {
        case start(generation: Int, offset: Int64)
        case cancel(any Transfer)
        /// Start the next attempt at `at` (monotonic ns), if nothing has happened since.
        case reconnect(generation: Int, at: Int64)
        case notify(StreamMetadata, @Sendable (StreamMetadata) -> Void)
        /// The whole file arrived: commit the copy to the offline cache.
        case commit(CacheTee)
    }

    let url: URL
    let urlString: String
    let options: NetworkOptions
    private let log: Logger
    private let queue = DispatchQueue(label: "tutti.http")

    // Guarded by `lock`.
    private let lock = Condition()
    private var state = State.idle
    private var generation = 0
    private var task: (any Transfer)?
    private(set) var info: ResponseInfo?
    private var buffer = ByteQueue()
    private var appended: Int64 = 0
    private var consumed: Int64 = 0
    /// Finite file: position in the resource of the next body byte.
    private var resourceOffset: Int64 = 0
    /// Finite file restarted with a Range request that the server ignored:
    /// body bytes before this resource offset are dropped.
    private var skipUntil: Int64 = 0
    private var demuxer: ICYDemuxer?
    private var discontinuities: [Int64] = []
    /// When a live stream tries again (TuttiCore's pure `ReconnectBackoff`, on the monotonic clock).
    private var backoff: ReconnectBackoff
    private var jitter = SystemRandomNumberGenerator()
    private var dropping = false
    private var droppedThisEpisode: Int64 = 0
    private var metadataValue = StreamMetadata()
    private var metadataHandler: (@Sendable (StreamMetadata) -> Void)?
    private var stats = NetworkStatistics()
    /// Where finite files are kept as they arrive (nil: not kept).
    private let cache: StreamCache?
    private var tee: CacheTee?

    init(url string: String, options: NetworkOptions, log: Logger, cache: StreamCache? = nil) throws(StreamError) {
        guard let url = URL(string: string), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              url.host != nil else { throw .unsupportedURL(string) }
        self.url = url
        self.urlString = string
        self.options = options
        self.log = log
        self.cache = cache
        self.backoff = ReconnectBackoff(policy: options.reconnect)
    }

    // MARK: Consumer side

    /// Sends the request and waits for the response headers.
    /// Throws on a transport failure, a non-2xx status or `connectTimeout`.
    func open() throws(StreamError) {
        var actions: [Action] = []
        lock.lock()
        if case .closed = state {
            lock.unlock()
            throw .network(url: urlString, reason: "cancelled")
        }
        precondition(isIdle, "HTTPStream.open called twice")
        state = .connecting
        generation += 1
        actions.append(.start(generation: generation, offset: 0))
        lock.unlock()
        perform(actions)

        lock.lock()
        let deadline = Condition.deadline(afterSeconds: options.connectTimeout)
        var result: StreamError? = nil
        while true {
            // A response arrived: opened, even if the transfer already ended or
            // failed (the buffered bytes come first, then the error, from `read`).
            if info != nil { break }
            if case .failed(let e) = state { result = e; break }
            if case .closed = state { result = .network(url: urlString, reason: "closed"); break }
            if !lock.wait(untilNanoseconds: deadline) && info == nil {
                if case .failed(let e) = state { result = e } else { result = .timedOut(url: urlString, seconds: options.connectTimeout, waitingFor: .responseHeaders) }
                break
            }
        }
        lock.unlock()
        if let result {
            close()
            throw result
        }
    }

    private var isIdle: Bool { if case .idle = state { true } else { false } }

    /// Copies buffered audio bytes into `destination`, waiting up to
    /// `stallTimeout` for some to arrive. Buffered bytes are delivered
    /// before an end or an error.
    func read(into destination: UnsafeMutableRawBufferPointer) -> ReadResult {
        var actions: [Action] = []
        defer { perform(actions) }
        lock.lock()
        defer { lock.unlock() }
        let deadline = Condition.deadline(afterSeconds: options.stallTimeout)
        while true {
            if let d = discontinuities.first, d <= consumed {
                discontinuities.removeFirst()
                return .discontinuity
            }
            if buffer.count > 0 {
                var n = min(destination.count, buffer.count)
                if let d = discontinuities.first { n = min(n, Int(d - consumed)) }
                buffer.read(into: destination, count: n)
                consumed += Int64(n)
                if case .paused = state, buffer.count <= options.bufferCapacity / 2 {
                    state = .connecting
                    generation += 1
                    actions.append(.start(generation: generation, offset: resourceOffset))
                    log.debug("\(urlString): resuming at byte \(resourceOffset)")
                }
                return .bytes(n)
            }
            switch state {
            case .ended, .closed: return .end
            case .failed(let e): return .failure(e)
            default: break
            }
            if !lock.wait(untilNanoseconds: deadline) && buffer.count == 0 && Condition.now() >= deadline {
                if case .failed(let e) = state { return .failure(e) }
                if case .ended = state { return .end }
                let what: StreamError.Awaited = if case .reconnecting = state { .audioAfterReconnect } else { .audioData }
                return .failure(.timedOut(url: urlString, seconds: options.stallTimeout, waitingFor: what))
            }
        }
    }

    /// Finite files: drops what is buffered and continues from `offset`
    /// in the resource (a Range request). Used by seeking.
    func restart(at offset: Int64) throws(StreamError) {
        var actions: [Action] = []
        lock.lock()
        guard let info, !info.isLive else {
            lock.unlock()
            throw .notSeekable(url: urlString, reason: "it is a live stream")
        }
        if let length = info.contentLength, offset > length {
            lock.unlock()
            throw .notSeekable(url: urlString, reason: "offset \(offset) is past the end (\(length) bytes)")
        }
        if let task { actions.append(.cancel(task)) }
        task = nil
        buffer.removeAll()
        discontinuities.removeAll()
        appended = 0
        consumed = 0
        resourceOffset = offset
        skipUntil = 0
        if let length = info.contentLength, offset == length {
            state = .ended
        } else {
            state = .connecting
            generation += 1
            actions.append(.start(generation: generation, offset: offset))
        }
        lock.unlock()
        perform(actions)
    }

    /// Cancels the transfer and any reconnection; later reads return `.end`.
    func close() {
        var actions: [Action] = []
        lock.lock()
        if case .closed = state { lock.unlock(); return }
        state = .closed
        tee?.discard()
        tee = nil
        generation += 1
        if let task { actions.append(.cancel(task)) }
        task = nil
        buffer.removeAll()
        lock.broadcast()
        lock.unlock()
        perform(actions)
    }

    var metadata: StreamMetadata { lock.withLock { metadataValue } }

    /// Finite file: the share of it that has arrived so far (the download
    /// frontier), 0…1; nil for a live stream or before the response.
    var downloadedFraction: Double? {
        lock.withLock {
            guard let info, !info.isLive, let length = info.contentLength, length > 0 else { return nil }
            if case .ended = state { return 1 }
            return min(1, Double(resourceOffset) / Double(length))
        }
    }
    var statistics: NetworkStatistics { lock.withLock { var s = stats; s.bufferedBytes = buffer.count; return s } }

    /// Sets the metadata callback (called on the network queue) and calls
    /// it at once with what is already known.
    func setMetadataHandler(_ handler: (@Sendable (StreamMetadata) -> Void)?) {
        let current: StreamMetadata = lock.withLock { metadataHandler = handler; return metadataValue }
        if let handler, current != StreamMetadata() { queue.async { handler(current) } }
    }

    // MARK: Performing actions (never under the lock)

    private func perform(_ actions: [Action]) {
        for action in actions {
            switch action {
            case .cancel(let task):
                task.cancel()
            case .notify(let value, let handler):
                handler(value)
            case .commit(let tee):
                if tee.finish() { log.info("\(urlString): kept in the offline cache (\(tee.expected) bytes)") }
            case .reconnect(let gen, let at):
                // Dispatch's clock is the monotonic one on Linux, like `Condition.now()`.
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, at - Condition.now())))) { [weak self] in
                    guard let self else { return }
                    let go: Bool = self.lock.withLock {
                        guard gen == self.generation, case .reconnecting = self.state else { return false }
                        self.state = .connecting
                        return true
                    }
                    if go { self.perform([.start(generation: gen, offset: 0)]) }
                }
            case .start(let gen, let offset):
                startTransfer(offset: offset, generation: gen)
            }
        }
    }

    /// The request headers for a transfer starting at `offset`.
    private func requestHeaders(offset: Int64) -> [(String, String)] {
        var headers = [("User-Agent", options.userAgent), ("Accept-Encoding", "identity")]
        if options.requestMetadata { headers.append(("Icy-MetaData", "1")) }
        if offset > 0 { headers.append(("Range", "bytes=\(offset)-")) }
        return headers
    }

    private func startTransfer(offset: Int64, generation gen: Int) {
        let request = HTTPRequest(url: urlString, headers: requestHeaders(offset: offset),
                                  connectTimeout: options.connectTimeout, stallTimeout: options.stallTimeout, caFile: options.caFile,
                                  destinations: options.destinations)
        let transfer = CurlTransfer(request, delegate: self)
        let current: Bool = lock.withLock {
            guard gen == generation, case .connecting = state else { return false }
            task = transfer
            return true
        }
        if current { transfer.start() }
    }

    private func isCurrent(_ t: any Transfer) -> Bool { task.map { $0 === t } ?? false }

    // MARK: Transfer events (on the transfer's thread)

    func transfer(_ dataTask: any Transfer, didReceiveStatus status: Int, headers: [String: String]) -> Bool {
        var actions: [Action] = []
        var disposition = true
        lock.lock()
        if !isCurrent(dataTask) {
            disposition = false
        } else {
            if info == nil {
                // First response.
                if status == 200 || status == 206 {
                    let metaint = options.requestMetadata ? ICYText.metaint(headers) : nil
                    let length = status == 200 ? ResponseHead.contentLength(headers) : nil
                    info = ResponseInfo(status: status, contentLength: length, metaint: metaint, contentType: headers["content-type"])
                    demuxer = metaint.map(ICYDemuxer.init)
                    state = .streaming
                    if let cache, let length, metaint == nil { tee = cache.beginTee(url: urlString, size: length) }
                    let station = StreamMetadata(headers: headers)
                    metadataValue.stationName = station.stationName
                    metadataValue.genre = station.genre
                    metadataValue.stationURL = station.stationURL
                    metadataValue.bitrateKbps = station.bitrateKbps
                    if let h = metadataHandler, metadataValue != StreamMetadata() { actions.append(.notify(metadataValue, h)) }
                    log.info("\(urlString): HTTP \(status), \(info!.isLive ? "live stream" : "file of \(length!) bytes")\(metaint.map { ", ICY metadata every \($0) bytes" } ?? "")\(station.stationName.map { ", station '\($0)'" } ?? "")")
                } else {
                    state = .failed(.httpStatus(url: urlString, status: status))
                    disposition = false
                    task = nil
                }
            } else if info!.isLive {
                // A reconnect attempt.
                if status == 200 {
                    let metaint = options.requestMetadata ? ICYText.metaint(headers) : nil
                    demuxer = metaint.map(ICYDemuxer.init)
                    discontinuities.append(appended)
                    stats.reconnects += 1
                    backoff.connected()
                    state = .streaming
                    log.info("\(urlString): reconnected (HTTP \(status))")
                } else {
                    log.warning("\(urlString): reconnect attempt answered HTTP \(status)")
                    disposition = false
                    task = nil
                    actions += scheduleReconnect(reason: "HTTP \(status)")
                }
            } else {
                // A finite file continued after a pause or a seek.
                if status == 206, let range = headers["content-range"], let start = Self.rangeStart(range), start == resourceOffset {
                    skipUntil = 0
                    state = .streaming
                } else if status == 200 {
                    log.warning("\(urlString): the server ignored the Range request; skipping \(resourceOffset) bytes")
                    skipUntil = resourceOffset
                    resourceOffset = 0
                    state = .streaming
                } else {
                    state = .failed(status == 206 ? .notSeekable(url: urlString, reason: "the server sent the wrong range (\(headers["content-range"] ?? "none"))")
                                                  : .httpStatus(url: urlString, status: status))
                    disposition = false
                    task = nil
                }
            }
            lock.broadcast()
        }
        lock.unlock()
        perform(actions)
        return disposition
    }

    /// `bytes 100-199/1000` → 100.
    static func rangeStart(_ header: String) -> Int64? {
        let parts = header.trimmingWhitespace().split(whereSeparator: { $0 == " " || $0 == "-" || $0 == "/" })
        guard parts.count >= 2, parts[0].lowercased() == "bytes" else { return nil }
        return Int64(parts[1])
    }

    func transfer(_ dataTask: any Transfer, didReceive raw: UnsafeRawBufferPointer) {
        var actions: [Action] = []
        lock.lock()
        guard isCurrent(dataTask), case .streaming = state, let info else { lock.unlock(); return }
        do {
            var body = raw
            if !info.isLive, let t = tee, !t.write(raw, at: resourceOffset) {
                tee = nil
                log.debug("\(urlString): not kept in the cache (the bytes did not arrive in order)")
            }
            if !info.isLive {
                if resourceOffset < skipUntil {
                    let n = Int(min(Int64(body.count), skipUntil - resourceOffset))
                    body = UnsafeRawBufferPointer(rebasing: body[n...])
                    resourceOffset += Int64(n)
                }
                resourceOffset += Int64(body.count)
            }
            if demuxer != nil {
                demuxer!.process(body, audio: { append($0, live: info.isLive) }, metadata: { block in
                    if ICYText.apply(block, to: &metadataValue) {
                        log.info("\(urlString): now playing '\(metadataValue.title ?? "")'")
                        if let h = metadataHandler { actions.append(.notify(metadataValue, h)) }
                    }
                })
            } else {
                append(body, live: info.isLive)
            }
        }
        if !info.isLive, buffer.count >= options.bufferCapacity, let task {
            // Back-pressure: stop this transfer; `read` resumes it with a Range request.
            state = .paused
            stats.pauses += 1
            self.task = nil
            actions.append(.cancel(task))
            log.debug("\(urlString): buffer full (\(buffer.count) bytes), pausing at byte \(resourceOffset)")
        }
        lock.broadcast()
        lock.unlock()
        perform(actions)
    }

    /// Under the lock.
    private func append(_ bytes: UnsafeRawBufferPointer, live: Bool) {
        guard !bytes.isEmpty else { return }
        stats.receivedBytes += Int64(bytes.count)
        if live { backoff.received(bytes: bytes.count) }
        if live && buffer.count + bytes.count > options.bufferCapacity {
            if !dropping {
                dropping = true
                droppedThisEpisode = 0
                discontinuities.append(appended)
                log.warning("\(urlString): the player is not keeping up; dropping audio (buffer of \(buffer.count) bytes full)")
            }
            droppedThisEpisode += Int64(bytes.count)
            stats.droppedBytes += Int64(bytes.count)
            return
        }
        if dropping {
            dropping = false
            log.warning("\(urlString): dropped \(droppedThisEpisode) bytes of audio")
        }
        buffer.append(bytes)
        appended += Int64(bytes.count)
        stats.peakBufferedBytes = max(stats.peakBufferedBytes, buffer.count)
    }

    func transfer(_ completed: any Transfer, didCompleteWith error: TransferFailure?) {
        var actions: [Action] = []
        lock.lock()
        defer {
            lock.broadcast()
            lock.unlock()
            perform(actions)
        }
        guard isCurrent(completed) else { return }
        task = nil
        let reason: String? = error?.reason
        if let refusal = error?.refusal {
            // Refused by address (after a redirect, or a name that now resolves elsewhere): never retried.
            tee?.discard()
            tee = nil
            state = .failed(.refused(url: urlString, refusal))
            return
        }
        guard let info else {
            // The first request failed before any response.
            if case .failed = state { return }
            state = .failed(.network(url: urlString, reason: reason ?? "the connection closed without a response"))
            return
        }
        if let declared = error?.overran {
            tee?.discard()
            tee = nil
            state = .failed(.overran(url: urlString, declared: declared))
            return
        }
        if info.isLive {
            actions += scheduleReconnect(reason: reason ?? "the server closed the connection")
            return
        }
        let expected = info.contentLength ?? 0
        if error == nil && resourceOffset == expected {
            state = .ended
            if let t = tee { actions.append(.commit(t)) }
            tee = nil
        } else if let error, error.timedOut {
            state = .failed(.timedOut(url: urlString, seconds: options.stallTimeout, waitingFor: .audioData))
        } else {
            if let reason { log.warning("\(urlString): transfer failed at byte \(resourceOffset) of \(expected): \(reason)") }
            state = .failed(.truncated(url: urlString, received: resourceOffset, expected: expected))
        }
    }

    /// Under the lock: a live connection dropped or an attempt failed.
    private func scheduleReconnect(reason: String) -> [Action] {
        switch backoff.failed(now: Condition.now(), using: &jitter) {
        case .giveUp(let attempts):
            if options.reconnect.maxAttempts == 0 {
                log.info("\(urlString): stream ended (\(reason))")
                state = .ended
            } else {
                log.error("\(urlString): giving up after \(attempts) reconnect attempts (\(reason))")
                state = .failed(.network(url: urlString, reason: "\(reason); gave up after \(attempts) reconnect attempts"))
            }
            return []
        case .retry(let attempt, let at, let delay):
            stats.reconnectAttempts += 1
            state = .reconnecting
            generation += 1
            log.warning("\(urlString): connection lost (\(reason)); reconnect attempt \(attempt) in \(fixedPoint(Double(delay) / 1e9, decimals: 3)) s")
            return [.reconnect(generation: generation, at: at)]
        }
    }
}
