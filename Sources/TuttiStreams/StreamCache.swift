import FoundationEssentials
import Glibc
import Synchronization
import TuttiCore

/// Finite remote files downloaded for offline play, with a size cap and
/// least-recently-used eviction.
///
/// Layout of `directory`:
/// * `index.json`: `{"version":1,"entries":[{url,file,size,added,lastUsed}]}`
///   (times in seconds since 1970), replaced atomically (write, fsync, rename).
/// * `<16 hex digits of the URL's hash>.<ext>`: one complete file per entry.
/// * `*.part`: downloads in progress. A download becomes an entry only
///   after its size matched Content-Length, the data was fsynced and the
///   file renamed, so a partial download never masquerades as complete;
///   leftovers from a crash are deleted when the cache is opened.
///
/// Thread contract: every method may be called from any thread; `add`
/// blocks for the whole download (call it off the audio and control paths).
public final class StreamCache: Sendable {
    public struct Entry: Codable, Sendable, Equatable {
        public var url: String
        /// File name inside the cache directory.
        public var file: String
        public var size: Int64
        public var added: Date
        public var lastUsed: Date
    }

    private struct Index: Codable {
        var version = 1
        var entries: [Entry]
    }

    public let directory: String
    public let capacityBytes: Int64
    private let options: NetworkOptions
    fileprivate let log: Logger
    private let entries: Mutex<[String: Entry]>
    private let counter = Atomic<Int>(0)

    /// Opens (creating if needed) the cache in `directory`. Cleans up
    /// leftover `.part` files and entries whose file is missing or has the
    /// wrong size. Throws `.cache` if the directory cannot be created.
    public init(directory: String, capacityBytes: Int64, options: NetworkOptions = NetworkOptions(), log: Logger = .silent) throws(StreamError) {
        self.directory = directory
        self.capacityBytes = capacityBytes
        var options = options
        options.requestMetadata = false
        options.reconnect = .never
        self.options = options
        self.log = log
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .cache(operation: "create", path: directory, reason: "\(error)")
        }
        var loaded: [String: Entry] = [:]
        let indexPath = directory + "/index.json"
        if let data = FileManager.default.contents(atPath: indexPath) {
            do {
                let decoder = JSONDecoder()
                decoder.dateDecodingStrategy = .secondsSince1970
                for e in try decoder.decode(Index.self, from: data).entries { loaded[e.url] = e }
            } catch {
                log.warning("cache index \(indexPath) is unreadable (\(error)); starting empty")
            }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasSuffix(".part") {
            log.info("cache: removing unfinished download \(name)")
            unlink(directory + "/" + name)
        }
        for (url, e) in loaded {
            var st = stat()
            if stat(directory + "/" + e.file, &st) != 0 || Int64(st.st_size) != e.size {
                log.warning("cache: dropping \(url): its file is missing or has the wrong size")
                loaded[url] = nil
            }
        }
        let referenced = Set(loaded.values.map(\.file))
        for name in names where Self.isCacheFileName(name) && !referenced.contains(name) {
            unlink(directory + "/" + name)
        }
        entries = Mutex(loaded)
        entries.withLock { save($0) }
    }

    /// Downloads `url` (a finite file) into the cache unless it is already
    /// there; `progress(received, total)` is called on this thread as bytes
    /// arrive. Evicts least-recently-used entries to stay under the cap.
    /// Throws for live streams, files larger than the cache, HTTP and
    /// network errors and truncated downloads (nothing is left behind).
    @discardableResult
    public func add(_ url: String, progress: ((_ received: Int64, _ total: Int64) -> Void)? = nil) throws(StreamError) -> Entry {
        if let existing = touch(url) { return existing }
        let stream = try HTTPStream(url: url, options: options, log: log)
        try stream.open()
        defer { stream.close() }
        let info = stream.info!
        guard !info.isLive, let total = info.contentLength else {
            throw .liveNotCacheable(url: url)
        }
        guard total <= capacityBytes else {
            throw .largerThanCache(url: url, size: Int64(total), capacity: Int64(capacityBytes))
        }
        let name = Self.fileName(for: url)
        let part = "\(directory)/\(name).\(getpid()).\(counter.wrappingAdd(1, ordering: .relaxed).newValue).part"
        let fd = Glibc.open(part, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .cache(operation: "create", path: part, reason: String(cString: strerror(errno))) }
        var received: Int64 = 0
        var chunk = [UInt8](repeating: 0, count: 65_536)
        func fail(_ e: StreamError) -> StreamError {
            close(fd)
            unlink(part)
            log.warning("cache: download of \(url) failed: \(e)")
            return e
        }
        progress?(0, total)
        loop: while true {
            switch chunk.withUnsafeMutableBytes({ stream.read(into: $0) }) {
            case .bytes(let n):
                // The cap holds on bytes received, not only on the length the server declared.
                guard received + Int64(n) <= total else { throw fail(.overran(url: url, declared: total)) }
                if let e = Self.writeAll(fd, chunk, n) { throw fail(.cache(operation: "write", path: part, reason: e)) }
                received += Int64(n)
                progress?(received, total)
            case .discontinuity: continue
            case .end: break loop
            case .failure(let e): throw fail(e)
            }
        }
        guard received == total else { throw fail(.truncated(url: url, received: received, expected: total)) }
        guard fsync(fd) == 0 else { throw fail(.cache(operation: "fsync", path: part, reason: String(cString: strerror(errno)))) }
        close(fd)
        return try commit(part: part, url: url, size: total)
    }

    /// Moves a complete, fsynced `.part` file of `size` bytes into place and
    /// records it; evicts least-recently-used entries to stay under the cap.
    func commit(part: String, url: String, size total: Int64) throws(StreamError) -> Entry {
        let name = Self.fileName(for: url)
        let final = directory + "/" + name
        guard rename(part, final) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(part)
            throw .cache(operation: "rename", path: part, reason: reason)
        }
        syncDirectory()
        let now = Date()
        let entry = Entry(url: url, file: name, size: total, added: now, lastUsed: now)
        let evicted: [Entry] = entries.withLock { all in
            all[url] = entry
            var out: [Entry] = []
            var size = all.values.reduce(0) { $0 + $1.size }
            for victim in all.values.sorted(by: { $0.lastUsed < $1.lastUsed }) where size > capacityBytes && victim.url != url {
                all[victim.url] = nil
                size -= victim.size
                out.append(victim)
            }
            save(all)
            return out
        }
        for e in evicted {
            unlink(directory + "/" + e.file)
            log.info("cache: evicted \(e.url) (\(e.size) bytes, last used \(e.lastUsed))")
        }
        log.info("cache: added \(url) (\(total) bytes)")
        return entry
    }

    /// Starts keeping `url` (a finite file of `size` bytes) as its bytes
    /// arrive from playback; nil when it is already cached, larger than the
    /// cache or the `.part` file cannot be made.
    func beginTee(url: String, size: Int64) -> CacheTee? {
        guard size > 0, size <= capacityBytes, entries.withLock({ $0[url] == nil }) else { return nil }
        let part = "\(directory)/\(Self.fileName(for: url)).\(getpid()).\(counter.wrappingAdd(1, ordering: .relaxed).newValue).part"
        let fd = Glibc.open(part, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            log.warning("cache: cannot create \(part): \(String(cString: strerror(errno)))")
            return nil
        }
        return CacheTee(cache: self, url: url, part: part, fd: fd, expected: size)
    }

    fileprivate static func writeRaw(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> String? {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 { offset += n; continue }
            if n < 0 && errno == EINTR { continue }
            return String(cString: strerror(errno))
        }
        return nil
    }

    /// The local file of `url` if it is completely cached (marks it used).
    public func cachedPath(for url: String) -> String? {
        touch(url).map { directory + "/" + $0.file }
    }

    private func touch(_ url: String) -> Entry? {
        entries.withLock { all in
            guard var e = all[url] else { return nil }
            var st = stat()
            guard stat(directory + "/" + e.file, &st) == 0, Int64(st.st_size) == e.size else {
                log.warning("cache: \(url) disappeared from disk; dropping the entry")
                all[url] = nil
                save(all)
                return nil
            }
            e.lastUsed = Date()
            all[url] = e
            save(all)
            return e
        }
    }

    /// Every entry, most recently used first.
    public func list() -> [Entry] {
        entries.withLock { $0.values.sorted { $0.lastUsed > $1.lastUsed } }
    }

    /// Bytes of all complete entries.
    public var totalSize: Int64 { entries.withLock { $0.values.reduce(0) { $0 + $1.size } } }

    /// Removes `url`'s entry and file; returns whether it was cached.
    @discardableResult
    public func remove(_ url: String) -> Bool {
        let removed: Entry? = entries.withLock { all in
            guard let e = all.removeValue(forKey: url) else { return nil }
            save(all)
            return e
        }
        if let removed { unlink(directory + "/" + removed.file) }
        return removed != nil
    }

    /// Removes every entry and file; returns how many bytes were freed.
    @discardableResult
    public func clear() -> Int64 {
        let all: [Entry] = entries.withLock { all in
            let list = Array(all.values)
            all.removeAll()
            save(all)
            return list
        }
        for e in all { unlink(directory + "/" + e.file) }
        return all.reduce(0) { $0 + $1.size }
    }

    // MARK: Files

    /// Under the entries lock: writes the index durably (temp, fsync, rename).
    private func save(_ all: [String: Entry]) {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        guard let data = try? encoder.encode(Index(entries: all.values.sorted { $0.added < $1.added })) else { return }
        let tmp = directory + "/index.json.tmp"
        let fd = Glibc.open(tmp, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { log.error("cache: cannot write \(tmp): \(String(cString: strerror(errno)))"); return }
        let bytes = [UInt8](data)
        let failure = Self.writeAll(fd, bytes, bytes.count)
        let synced = fsync(fd) == 0
        close(fd)
        guard failure == nil, synced, rename(tmp, directory + "/index.json") == 0 else {
            log.error("cache: cannot save the index: \(failure ?? String(cString: strerror(errno)))")
            unlink(tmp)
            return
        }
        syncDirectory()
    }

    private func syncDirectory() {
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 { fsync(fd); close(fd) }
    }

    /// Writes `count` bytes, retrying short writes and EINTR; returns an error text or nil.
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8], _ count: Int) -> String? {
        var done = 0
        while done < count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                return String(cString: strerror(errno))
            }
            done += n
        }
        return nil
    }

    /// `<16 hex digits of FNV-1a(url)>.<extension of the URL's path, if short>`.
    static func fileName(for url: String) -> String {
        let name = FNV1a.hex(url.utf8)
        let ext = URL(string: url).map { $0.pathExtension.lowercased() } ?? ""
        let ok = !ext.isEmpty && ext.count <= 5 && ext.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        return ok ? name + "." + ext : name
    }

    static func isCacheFileName(_ name: String) -> Bool {
        let stem = name.split(separator: ".", maxSplits: 1).first ?? ""
        return stem.count == 16 && stem.allSatisfy { $0.isHexDigit } && !name.hasSuffix(".json")
    }
}

/// A copy of a finite network file made from the bytes playback downloads
/// anyway (no second download): bytes must arrive in order from offset 0;
/// `finish` commits it to the cache when all `expected` bytes were written,
/// anything else discards the `.part` file.
///
/// Thread contract: one thread at a time (HTTPStream calls it under its lock).
final class CacheTee {
    let url: String
    let expected: Int64
    private(set) var written: Int64 = 0
    private let cache: StreamCache
    private let part: String
    private var fd: Int32

    fileprivate init(cache: StreamCache, url: String, part: String, fd: Int32, expected: Int64) {
        self.cache = cache; self.url = url; self.part = part; self.fd = fd; self.expected = expected
    }

    deinit { discard() }

    /// Body bytes of the resource at `offset`: the part that continues what
    /// was written is kept (a re-read after an ignored Range repeats bytes).
    /// Returns false when a gap makes the copy impossible (it is then discarded).
    @discardableResult
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) -> Bool {
        guard fd >= 0 else { return false }
        let end = offset + Int64(bytes.count)
        if offset > written { discard(); return false }
        guard end > written else { return true }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[Int(written - offset)...])
        guard Int64(slice.count) + written <= expected else { discard(); return false }
        if let failure = StreamCache.writeRaw(fd, slice) {
            // A full disk: playback has its own copy of the bytes and goes on uncached.
            cache.log.warning("not keeping \(url): writing \(part) failed: \(failure)")
            discard()
            return false
        }
        written += Int64(slice.count)
        return true
    }

    /// Commits when complete, else discards. Returns whether it was committed.
    @discardableResult
    func finish() -> Bool {
        guard fd >= 0 else { return false }
        guard written == expected, fsync(fd) == 0 else { discard(); return false }
        close(fd)
        fd = -1
        do {
            _ = try cache.commit(part: part, url: url, size: expected)
            return true
        } catch {
            unlink(part)
            return false
        }
    }

    func discard() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
        unlink(part)
    }
}
