import Glibc
import TuttiCore
import TuttiSystem
import TuttiAuth

/// How a scan behaves.
public struct ScanOptions: Sendable {
    /// Files read between two commits. Each batch is one transaction, so a
    /// crash loses at most the batch in flight and the next scan redoes it.
    public var batchSize = 1_000
    /// A folder that yields no audio files at all while the library holds
    /// tracks under it is most likely an unmounted disk: its tracks (and
    /// their favourites and history) are kept unless this is set.
    public var removeTracksWhenFolderIsEmpty = false

    /// Threads that list folders and read files (tags, length, content
    /// hash) while the scan's own thread writes: one per core, and at least
    /// four, by default. A file or folder not in the page cache leaves its
    /// thread waiting for the disk; more reads in flight keep the disk busy.
    public var readers: Int

    /// A scan that adds at least this many tracks, and more than the
    /// library already holds, is a bulk load (`DeferredIndexes`): the
    /// secondary indexes and the word indexes are built once at its end
    /// instead of row by row. Nil: never.
    public var bulkLoadMinimum: Int?

    /// Asked before each file: true ends the scan there, keeping what was
    /// read (a stopping leader does not wait for a long scan).
    public var shouldStop: (@Sendable () -> Bool)?

    public init(batchSize: Int = 1_000, removeTracksWhenFolderIsEmpty: Bool = false, readers: Int? = nil,
                bulkLoadMinimum: Int? = 2_000) {
        self.batchSize = max(1, batchSize)
        self.bulkLoadMinimum = bulkLoadMinimum
        self.removeTracksWhenFolderIsEmpty = removeTracksWhenFolderIsEmpty
        self.readers = max(1, readers ?? max(4, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
    }
}

/// One audio file found by the walk.
struct FoundFile {
    var path: String
    var size: Int
    var mtimeNanoseconds: Int64
    var format: AudioFormatKind
}

/// What the library already has for a path.
struct KnownFile {
    var id: TrackID
    var size: Int
    var mtimeNanoseconds: Int64
}

/// Walks a folder for audio files: recursive, following symbolic links
/// (each directory once, so a link loop ends), skipping hidden entries and
/// files whose extension is not an audio format. Files come out in the
/// byte order of their paths (SQLite's order), so the scan compares them
/// with the library by walking both lists side by side, not by hashing
/// 100,000 paths. Unreadable folders are reported, not fatal.
///
/// Folders are listed on `threads` threads (a `stat` per file is most of
/// an unchanged rescan, and most of that is the kernel's name lookup),
/// then put together in depth-first order on the caller's: which link to
/// a folder names its files is decided there, as a walk on one thread
/// would (the first in path order), so the paths do not depend on timing.
enum FolderWalker {
    static func walk(root: String, threads: Int = 1) -> (files: [FoundFile], skipped: [ScanSummary.Skipped]) {
        let listings = FolderListing.listAll(root: root, threads: max(1, threads))
        var files: [FoundFile] = []
        var skipped: [ScanSummary.Skipped] = []
        var emitted = [Bool](repeating: false, count: listings.count)
        func emit(_ folder: Int, _ dir: String) {
            guard !emitted[folder] else { return } // a second link to a folder already walked
            emitted[folder] = true
            let listing = listings[folder]
            let prefix = Array((dir.hasSuffix("/") ? dir : dir + "/").utf8)
            for skip in listing.skipped {
                skipped.append(.init(path: skip.name.map { joined(prefix, $0) } ?? dir, reason: skip.reason))
            }
            for e in listing.entries {
                let path = joined(prefix, e.name)
                if let sub = e.folder {
                    emit(sub, path)
                } else {
                    files.append(FoundFile(path: path, size: e.size, mtimeNanoseconds: e.mtime, format: e.format!))
                }
            }
        }
        if !listings.isEmpty { emit(0, root) }
        return (files, skipped)
    }

    /// A folder's path (ending in "/") and an entry's name as one String, in
    /// one allocation (an unchanged rescan makes one per file).
    static func joined(_ prefix: [UInt8], _ name: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: prefix.count + name.count) { buffer in
            let end = buffer.initialize(fromContentsOf: prefix)
            return end + UnsafeMutableBufferPointer(rebasing: buffer[end...]).initialize(fromContentsOf: name)
        }
    }

    /// Byte order of two paths (SQLite's BINARY collation), without Unicode normalisation.
    static func compare(_ a: String, _ y: UnsafeBufferPointer<UInt8>) -> Int {
        var a = a
        return a.withUTF8 { x in
            let n = min(x.count, y.count)
            let c = n == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, n)
            return c != 0 ? Int(c) : x.count - y.count
        }
    }

    static func mtime(_ s: stat) -> Int64 {
        Int64(s.st_mtim.tv_sec) * 1_000_000_000 + Int64(s.st_mtim.tv_nsec)
    }
}

/// One folder's entries, sorted as the walk emits them (a folder's name
/// with "/" after it, so depth-first order is the byte order of whole
/// paths), and the lists of all folders under a root (`listAll`).
struct FolderListing {
    struct Entry {
        var name: [UInt8]
        /// The listing of the folder this entry is, by index; nil for a file.
        var folder: Int?
        var size = 0
        var mtime: Int64 = 0
        var format: AudioFormatKind?
    }
    var entries: [Entry] = []
    /// Entries that could not be read (nil: the folder itself).
    var skipped: [(name: [UInt8]?, reason: SkipReason)] = []

    /// Every folder under `root`, index 0 being root: each folder (a device
    /// and inode) is listed once, on one of `threads` threads.
    static func listAll(root: String, threads: Int) -> [FolderListing] {
        var st = stat()
        guard stat(root, &st) == 0 else {
            return [FolderListing(skipped: [(nil, .unreadable(String(cString: strerror(errno))))])]
        }
        let work = FolderWork(root: root, device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
        for _ in 1..<threads {
            // Fewer threads (the system refused one) only make the walk slower: this one lists too.
            try? startThread(name: "tutti-scan-walk") {
                lowerThreadPriority(by: 10) // as the scan's readers: commands stay fast
                work.run()
            }
        }
        work.run()
        return work.waitForAll()
    }

    /// Lists one folder: `readdir`, an `fstatat` relative to it per entry.
    /// `folderIndex` gives a subfolder (device, inode) its listing's index.
    static func list(_ dir: String, folderIndex: (UInt64, UInt64, String) -> Int) -> FolderListing {
        var listing = FolderListing()
        let fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let handle = fdopendir(fd) else {
            listing.skipped.append((nil, .unreadable(String(cString: strerror(errno)))))
            if fd >= 0 { close(fd) }
            return listing
        }
        defer { closedir(handle) } // closes fd
        let prefix = dir.hasSuffix("/") ? dir : dir + "/"
        while let entry = readdir(handle) {
            let type = entry.pointee.d_type
            let outcome = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                tuple.withMemoryRebound(to: CChar.self, capacity: 256) { name -> (name: [UInt8], stat: stat?, errno: Int32, format: AudioFormatKind?)? in
                    guard name[0] != 0x2E else { return nil } // ".", "..", and hidden files
                    let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(name).assumingMemoryBound(to: UInt8.self), count: strlen(name))
                    let format = AudioFormatKind(fileName: bytes)
                    // A plain file that is not audio needs no stat (the kernel said what it is).
                    if format == nil && type == UInt8(DT_REG) { return nil }
                    var s = stat()
                    let ok = fstatat(fd, name, &s, 0) == 0
                    let failure = ok ? 0 : errno
                    return (Array(bytes), ok ? s : nil, failure, format)
                }
            }
            guard let outcome else { continue }
            guard let s = outcome.stat else {
                // A dangling link or a file that vanished: only audio files are worth a line.
                if outcome.format != nil { listing.skipped.append((outcome.name, .unreadable(String(cString: strerror(outcome.errno))))) }
                continue
            }
            if (s.st_mode & S_IFMT) == S_IFDIR {
                let index = folderIndex(UInt64(s.st_dev), UInt64(s.st_ino), prefix + String(decoding: outcome.name, as: UTF8.self))
                listing.entries.append(Entry(name: outcome.name, folder: index))
            } else if (s.st_mode & S_IFMT) == S_IFREG, let format = outcome.format {
                listing.entries.append(Entry(name: outcome.name, size: Int(s.st_size), mtime: FolderWalker.mtime(s), format: format))
            }
        }
        listing.entries.sort { a, b in
            // A folder sorts as its name with "/" after it.
            a.name.withUnsafeBufferPointer { x in
                b.name.withUnsafeBufferPointer { y in
                    let n = min(x.count, y.count)
                    let c = n == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, n)
                    if c != 0 { return c < 0 }
                    let nextA: Int = x.count > n ? Int(x[n]) : (a.folder != nil ? 0x2F : -1)
                    let nextB: Int = y.count > n ? Int(y[n]) : (b.folder != nil ? 0x2F : -1)
                    return nextA < nextB
                }
            }
        }
        return listing
    }
}

/// The folders of a walk waiting to be listed, shared by its threads.
// Sendable because every field is touched only with `condition` held.
private final class FolderWork: @unchecked Sendable {
    private let condition = Condition()
    private var paths: [String]
    private var listings: [FolderListing?]
    private var index: [[UInt64]: Int]
    private var next = 0
    private var busy = 0

    init(root: String, device: UInt64, inode: UInt64) {
        paths = [root]
        listings = [nil]
        index = [[device, inode]: 0]
    }

    /// Lists folders until none is left to list and no thread is listing one.
    func run() {
        condition.lock()
        while true {
            while next == paths.count && busy > 0 { condition.wait() }
            guard next < paths.count else { break }
            let folder = next
            next += 1
            busy += 1
            let path = paths[folder]
            condition.unlock()
            let listing = FolderListing.list(path) { device, inode, path in
                self.condition.withLock {
                    if let known = self.index[[device, inode]] { return known }
                    self.paths.append(path)
                    self.listings.append(nil)
                    self.index[[device, inode]] = self.paths.count - 1
                    self.condition.broadcast()
                    return self.paths.count - 1
                }
            }
            condition.lock()
            listings[folder] = listing
            busy -= 1
            condition.broadcast()
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Every listing, once `run` has returned on the caller's thread (the
    /// others may still be leaving theirs: they find nothing more to do).
    func waitForAll() -> [FolderListing] {
        condition.withLock { listings.map { $0 ?? FolderListing() } }
    }
}

/// Reads one file: size and mtime from the open descriptor, content hash,
/// then tags and length by format. Never throws: a file that cannot be
/// used comes back as a skip reason.
enum FileReader {
    struct Read {
        var file: FoundFile
        var metadata: FileMetadata
        var contentHash: String
        /// Computed here, on the reader threads, not by the writer.
        var search: TrackStore.SearchColumns
    }

    static func read(_ found: FoundFile) -> Result<Read, SkipReason> {
        let fd = open(found.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
        var file = found
        file.size = Int(st.st_size)
        file.mtimeNanoseconds = FolderWalker.mtime(st)
        guard file.size > 0 else { return .failure(.corrupt("file is empty")) }
        let hash: String
        do { hash = try ContentHash.compute(fd: fd, size: file.size) } catch {
            return .failure(.unreadable(error.description))
        }
        let result: Result<FileMetadata, SkipReason>
        switch found.format {
        case .mp3: result = MP3Tags.read(path: found.path, fileSize: file.size)
        case .flac: result = FLACTags.read(path: found.path)
        case .wav: result = WAVTags.read(fd: fd, fileSize: file.size)
        case .mp4, .aac, .ogg, .opus, .wma, .wavpack, .ape, .aiff, .dsd: result = FFmpegTags.read(path: found.path, format: found.format)
        }
        return result.map { metadata in
            var metadata = metadata
            // Files without a title get one from their name ("03 - Song.mp3").
            if metadata.tags.title == nil {
                let guess = TagText.fromFileName(found.path)
                metadata.tags.title = guess.title
                metadata.tags.trackNumber = metadata.tags.trackNumber ?? guess.trackNumber
            }
            return Read(file: file, metadata: metadata, contentHash: hash, search: TrackStore.searchColumns(metadata.tags))
        }
    }
}

/// Reads files on worker threads, at most `window` files ahead of the
/// consumer, who takes the results in order (`take(0)`, `take(1)`, …).
// Sendable because `results`, `claimed`, `taken`, `cancelled` and `running` are touched only with `mutex` held, and `files` is immutable.
final class ReadAhead: @unchecked Sendable {
    typealias Outcome = Result<FileReader.Read, SkipReason>
    private let files: [FoundFile]
    private var results: [Outcome?]
    private var claimed = 0
    private var taken = 0
    private var cancelled = false
    private let window = 256
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let changed: UnsafeMutablePointer<pthread_cond_t>
    private var running: Int

    init(files: [FoundFile], workers: Int) {
        self.files = files
        results = Array(repeating: nil, count: files.count)
        mutex = .allocate(capacity: 1)
        changed = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(changed, nil)
        let count = files.isEmpty ? 0 : max(1, workers)
        running = count
        for _ in 0..<count {
            do {
                try startThread(name: "tutti-scan-read") { [self] in
                    // Below the control threads, so commands stay fast while a scan uses every core.
                    lowerThreadPriority(by: 10)
                    work()
                }
            } catch {
                // The system refused a thread: fewer readers; with none, `take` reads on the caller's thread.
                pthread_mutex_lock(mutex)
                running -= 1
                pthread_mutex_unlock(mutex)
            }
        }
    }

    deinit {
        pthread_cond_destroy(changed)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        changed.deallocate()
    }

    private func work() {
        pthread_mutex_lock(mutex)
        while true {
            while !cancelled && claimed < files.count && claimed >= taken + window { pthread_cond_wait(changed, mutex) }
            guard !cancelled, claimed < files.count else { break }
            let index = claimed
            claimed += 1
            pthread_mutex_unlock(mutex)
            let outcome = FileReader.read(files[index])
            pthread_mutex_lock(mutex)
            results[index] = outcome
            pthread_cond_broadcast(changed)
        }
        running -= 1
        pthread_cond_broadcast(changed)
        pthread_mutex_unlock(mutex)
    }

    /// The result for file `index`, waiting for it; indices in order.
    func take(_ index: Int) -> Outcome {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while results[index] == nil {
            if running == 0 && claimed <= index {
                // No reader thread could be started: read it here.
                claimed = index + 1
                results[index] = FileReader.read(files[index])
                break
            }
            pthread_cond_wait(changed, mutex)
        }
        let outcome = results[index]!
        results[index] = nil
        taken = index + 1
        pthread_cond_broadcast(changed)
        return outcome
    }

    /// Stops the workers (a failed write ends the scan early) and waits for them.
    func cancel() {
        pthread_mutex_lock(mutex)
        cancelled = true
        pthread_cond_broadcast(changed)
        while running > 0 { pthread_cond_wait(changed, mutex) }
        pthread_mutex_unlock(mutex)
    }
}

/// The scan: walk, compare with the library, read what changed, write in
/// batches. File reading happens outside the library's lock; each batch
/// takes the lock for one transaction, so searches and other calls carry
/// on during a long scan.
struct Scan {
    let root: String
    let options: ScanOptions
    let logger: Logger
    let withDatabase: (_ body: (Database) throws(LibraryError) -> Void) throws(LibraryError) -> Void
    /// Called after each transaction that changed tracks.
    let didWrite: () -> Void
    /// Called with true when a bulk load starts, false when its indexes are built.
    let bulkLoading: (Bool) -> Void
    let progress: ((ScanProgress) -> Void)?

    private enum Write {
        case insert(FileReader.Read)
        case update(TrackID, FileReader.Read)
    }

    func run() throws(LibraryError) -> ScanSummary {
        let started = ContinuousClock.now
        var summary = ScanSummary(root: root)
        let walk = FolderWalker.walk(root: root, threads: options.readers)
        summary.skipped = walk.skipped

        // The library's tracks under root, in path order beside the walk's
        // files (also in path order): each file gets its row, if any; rows
        // left over are tracks whose file is gone.
        var known = [KnownFile?](repeating: nil, count: walk.files.count)
        var missing: [(id: TrackID, path: String)] = []
        var libraryTracks = 0
        try withDatabase { db throws(LibraryError) in
            libraryTracks = Int(try db.scalarInt("SELECT count(*) FROM tracks") ?? 0)
            // Everything under root: paths in [root + "/", root + "0"), "0" being "/" + 1.
            let prefix = root.hasSuffix("/") ? String(root.dropLast()) : root
            // From tracks_mpd alone (it holds the size and mtime beside each path): no lookup of each row in the table.
            let s = try db.cached("""
                SELECT path, id, file_size, mtime_ns FROM tracks INDEXED BY tracks_mpd WHERE path >= ? AND path < ? ORDER BY path
                """)
            try s.bind([.text(prefix + "/"), .text(prefix + "0")])
            defer { s.reset() }
            var i = 0
            while try s.step() {
                // The row's path compared where SQLite holds it: a String only for a track whose file is gone.
                guard let path = s.unsafeTextBytes(0) else { continue } // path is NOT NULL
                var order = 1
                while i < walk.files.count {
                    order = FolderWalker.compare(walk.files[i].path, path)
                    if order >= 0 { break }
                    i += 1
                }
                if i < walk.files.count, order == 0 {
                    known[i] = KnownFile(id: TrackID(s.int(1)), size: Int(s.int(2)), mtimeNanoseconds: s.int(3))
                    i += 1
                } else {
                    missing.append((TrackID(s.int(1)), String(decoding: path, as: UTF8.self)))
                }
            }
        }

        // Tracks whose path is gone are either moved (their content turns up
        // under a new path below) or removed at the end. Only their hashes are read.
        var missingByHash: [String: [TrackID]] = [:]
        var missingPaths: [TrackID: String] = [:]
        if !missing.isEmpty {
            try withDatabase { db throws(LibraryError) in
                for m in missing {
                    missingPaths[m.id] = m.path
                    if let hash = try db.scalarText("SELECT content_hash FROM tracks WHERE id = ?", [.int(m.id.rawValue)]) {
                        missingByHash[hash, default: []].append(m.id)
                    }
                }
            }
        }

        var batch: [Write] = []
        func flush() throws(LibraryError) {
            guard !batch.isEmpty else { return }
            let writes = batch
            batch.removeAll(keepingCapacity: true)
            try withDatabase { db throws(LibraryError) in
                try db.transaction { () throws(LibraryError) in
                    for write in writes {
                        switch write {
                        case .insert(let read): try TrackStore.insert(read, into: db)
                        case .update(let id, let read): try TrackStore.update(id, read, in: db)
                        }
                    }
                }
            }
            didWrite()
        }

        // Unchanged files (same size and mtime) are not opened; the others
        // are read on every core, ahead of the writer and in order.
        var toRead: [Int] = []
        for (index, file) in walk.files.enumerated() {
            if let old = known[index], old.size == file.size, old.mtimeNanoseconds == file.mtimeNanoseconds {
                summary.unchanged += 1
            } else {
                toRead.append(index)
            }
        }
        let newFiles = toRead.count { known[$0] == nil }
        if let minimum = options.bulkLoadMinimum, newFiles >= minimum, newFiles > libraryTracks {
            try withDatabase { db throws(LibraryError) in try DeferredIndexes.suspend(db) }
            summary.bulkLoad = true
            bulkLoading(true)
        }
        // However the batches end, the indexes are built again (a failed
        // write first, then the error); a killed process builds them at the next open.
        func resumeIndexes() throws(LibraryError) {
            guard summary.bulkLoad else { return }
            defer { bulkLoading(false) }
            try withDatabase { db throws(LibraryError) in try DeferredIndexes.resume(db) }
            didWrite()
        }
        let readAhead = ReadAhead(files: toRead.map { walk.files[$0] }, workers: options.readers)
        defer { readAhead.cancel() }
        do throws(LibraryError) {
            for (n, index) in toRead.enumerated() {
                if options.shouldStop?() == true {
                    summary.stopped = true
                    break
                }
                let file = walk.files[index]
                progress?(ScanProgress(done: index, total: walk.files.count, currentPath: file.path))
                let old = known[index]
                summary.filesRead += 1
                switch readAhead.take(n) {
                case .failure(let reason):
                    summary.skipped.append(.init(path: file.path, reason: reason))
                    logger.warning("skipped \(file.path): \(reason)")
                case .success(let read):
                    if let old {
                        batch.append(.update(old.id, read))
                        summary.updated += 1
                    } else if var candidates = missingByHash[read.contentHash], !candidates.isEmpty {
                        let id = candidates.removeFirst()
                        missingByHash[read.contentHash] = candidates
                        logger.info("moved \(missingPaths[id] ?? "?") → \(file.path)")
                        missingPaths[id] = nil
                        batch.append(.update(id, read))
                        summary.moved += 1
                    } else {
                        batch.append(.insert(read))
                        summary.added += 1
                    }
                }
                if batch.count >= options.batchSize { try flush() }
            }
            try flush()
        } catch {
            try? resumeIndexes()
            throw error
        }
        readAhead.cancel()
        try resumeIndexes()
        // Stopped: files not read yet are not gone, so nothing is removed.
        if summary.stopped { return summary }
        progress?(ScanProgress(done: walk.files.count, total: walk.files.count, currentPath: ""))

        let gone = missingPaths.sorted { $0.value < $1.value }
        if !gone.isEmpty && walk.files.isEmpty && !options.removeTracksWhenFolderIsEmpty {
            let warning = "\(root) has no audio files but the library has \(gone.count) tracks there; keeping them (is a disk unmounted?)"
            logger.warning(warning)
            summary.warnings.append(warning)
        } else if !gone.isEmpty {
            try withDatabase { db throws(LibraryError) in
                try db.transaction { () throws(LibraryError) in
                    for (id, _) in gone { try db.run("DELETE FROM tracks WHERE id = ?", [.int(id.rawValue)]) }
                }
            }
            didWrite()
            for (id, path) in gone {
                logger.info("removed \(path): the file is gone")
                summary.removedTrackIDs.append(id)
            }
            summary.removed = gone.count
        }
        if summary.updated + summary.moved + summary.removed > 0 {
            try withDatabase { db throws(LibraryError) in try TrackStore.deleteUnusedCovers(db) }
        }
        let elapsed = ContinuousClock.now - started
        summary.elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        logger.info("scan of \(root): \(summary)")
        return summary
    }
}

/// Track rows: the SQL the scanner and the benchmarks share.
enum TrackStore {
    static let columns = "id, path, format, title, artist, album, album_artist, genre, track_no, disc_no, year, duration_frames, sample_rate, file_size, mtime_ns, content_hash, cover_hash"

    /// `columns` qualified with a table alias, for joins.
    static func columns(_ alias: String) -> String {
        columns.split(separator: ",").map { alias + "." + $0.trimmingSpaces() }.joined(separator: ", ")
    }

    /// Reads a row selected with `columns` starting at column `first`.
    static func track(_ s: Statement, first: Int32 = 0) -> Track {
        Track(id: TrackID(s.int(first)), path: s.text(first + 1), format: AudioFormatKind(rawValue: s.text(first + 2)) ?? .mp3,
              title: s.text(first + 3), artist: s.optionalText(first + 4), album: s.optionalText(first + 5),
              albumArtist: s.optionalText(first + 6), genre: s.optionalText(first + 7),
              trackNumber: s.optionalInt(first + 8).map(Int.init), discNumber: s.optionalInt(first + 9).map(Int.init),
              year: s.optionalInt(first + 10).map(Int.init), durationFrames: Int(s.int(first + 11)), sampleRate: Int(s.int(first + 12)),
              fileSize: Int(s.int(first + 13)), modifiedNanoseconds: s.int(first + 14), contentHash: s.text(first + 15),
              coverHash: s.optionalText(first + 16))
    }

    private static func values(_ read: FileReader.Read, coverHash: String?) -> [SQLValue] {
        let t = read.metadata.tags
        let title = t.title ?? "Untitled"
        let search = read.search
        return [.text(read.file.path), .text(read.metadata.format.rawValue), .text(title),
                SQLValue(t.artist), SQLValue(t.album), SQLValue(t.albumArtist), SQLValue(t.genre),
                SQLValue(t.trackNumber), SQLValue(t.discNumber), SQLValue(t.year),
                .int(Int64(read.metadata.durationFrames)), .int(Int64(read.metadata.sampleRate)),
                .int(Int64(read.file.size)), .int(read.file.mtimeNanoseconds), .text(read.contentHash), SQLValue(coverHash),
                .text(search.mpdText), SQLValue(search.grams), .text(search.titleKey), SQLValue(search.artistKey),
                SQLValue(search.albumArtistKey)]
    }

    /// The derived search columns (schema 4): the MPD port's folded text
    /// (every value it shows as a tag), the CJK grams of the word index, and
    /// the whole-text keys of ranking's exact tiers (`SearchText.wordFold`).
    struct SearchColumns: Sendable {
        var mpdText: String
        var grams: String?
        var titleKey: String
        var artistKey: String?
        var albumArtistKey: String?
    }

    static func searchColumns(title: String, artist: String?, album: String?, albumArtist: String?, genre: String?,
                              track: Int?, disc: Int?, year: Int?) -> SearchColumns {
        let mpd = SearchText.mpdHaystack([title, artist, album, albumArtist, genre, track.map(String.init),
                                          disc.map(String.init), year.map(String.init)])
        return SearchColumns(mpdText: mpd, grams: SearchText.cjkGrams([title, artist, album, albumArtist]),
                             titleKey: SearchText.wordFold(title), artistKey: artist.map(SearchText.wordFold),
                             albumArtistKey: albumArtist.map(SearchText.wordFold))
    }

    static func searchColumns(_ t: TagSet) -> SearchColumns {
        searchColumns(title: t.title ?? "Untitled", artist: t.artist, album: t.album, albumArtist: t.albumArtist, genre: t.genre,
                      track: t.trackNumber, disc: t.discNumber, year: t.year)
    }

    /// Fills the derived columns of rows written before schema 4, in one transaction.
    static func fillSearchColumns(_ db: Database) throws(LibraryError) {
        let rows = try db.query("""
            SELECT id, title, artist, album, album_artist, genre, track_no, disc_no, year FROM tracks WHERE mpd_text IS NULL
            """) { s in
            (s.int(0), searchColumns(title: s.text(1), artist: s.optionalText(2), album: s.optionalText(3), albumArtist: s.optionalText(4),
                                     genre: s.optionalText(5), track: s.optionalInt(6).map(Int.init), disc: s.optionalInt(7).map(Int.init),
                                     year: s.optionalInt(8).map(Int.init)))
        }
        guard !rows.isEmpty else { return }
        try db.transaction { () throws(LibraryError) in
            for (id, search) in rows {
                try db.run("UPDATE tracks SET mpd_text = ?, grams = ?, title_key = ?, artist_key = ?, album_artist_key = ? WHERE id = ?",
                           [.text(search.mpdText), SQLValue(search.grams), .text(search.titleKey), SQLValue(search.artistKey),
                            SQLValue(search.albumArtistKey), .int(id)])
            }
        }
    }

    /// Stores the picture once per distinct image; returns its hash.
    private static func storeCover(_ read: FileReader.Read, _ db: Database) throws(LibraryError) -> String? {
        guard let picture = read.metadata.tags.picture else { return nil }
        let hash = SHA256.hash(picture.bytes)
        try db.run("INSERT OR IGNORE INTO covers(hash, mime, bytes) VALUES (?, ?, ?)", [.text(hash), .text(picture.mime), .blob(picture.bytes)])
        return hash
    }

    static func insert(_ read: FileReader.Read, into db: Database) throws(LibraryError) {
        let cover = try storeCover(read, db)
        try db.run("""
            INSERT INTO tracks(path, format, title, artist, album, album_artist, genre, track_no, disc_no, year,
                               duration_frames, sample_rate, file_size, mtime_ns, content_hash, cover_hash, mpd_text, grams,
                               title_key, artist_key, album_artist_key, added_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, values(read, coverHash: cover) + [.int(WallClock.unixMilliseconds())])
    }

    static func update(_ id: TrackID, _ read: FileReader.Read, in db: Database) throws(LibraryError) {
        let cover = try storeCover(read, db)
        try db.run("""
            UPDATE tracks SET path = ?, format = ?, title = ?, artist = ?, album = ?, album_artist = ?, genre = ?,
                track_no = ?, disc_no = ?, year = ?, duration_frames = ?, sample_rate = ?, file_size = ?, mtime_ns = ?,
                content_hash = ?, cover_hash = ?, mpd_text = ?, grams = ?, title_key = ?, artist_key = ?, album_artist_key = ?
            WHERE id = ?
            """, values(read, coverHash: cover) + [.int(id.rawValue)])
    }

    static func deleteUnusedCovers(_ db: Database) throws(LibraryError) {
        try db.run("DELETE FROM covers WHERE NOT EXISTS (SELECT 1 FROM tracks WHERE tracks.cover_hash = covers.hash)")
    }
}

/// The wall clock, for the times stored with likes, plays and edits.
public enum WallClock {
    public static func unixMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
