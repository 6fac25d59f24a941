// The music library: SQLite store, scanner, search, playlists (issue 4).
import Glibc
import Synchronization
import TuttiCore
import TuttiSystem

/// The music library of one leader: tracks found by scanning folders,
/// cover art, full-text search, playlists, favourites, play history and
/// recent searches, in one SQLite file.
///
/// Thread contract: `Sendable`; every method may be called from any thread
/// or task. Calls are serialised on one internal lock around a single
/// connection, so each is atomic. Methods block while they run; from async
/// code call them off the cooperative pool for long work (`scan`). A scan
/// reads files without holding the lock and takes it once per batch, so
/// searches and edits made during a scan are answered between batches.
///
/// Durability: every mutating method returns only after its transaction
/// has committed with `synchronous=FULL` (WAL fsynced), so an acknowledged
/// like, play, playlist edit or recent search survives a killed process and
/// a power cut. Scans commit every `ScanOptions.batchSize` files.
///
/// Errors: methods throw `LibraryError`; the message names the object and
/// what SQLite or the file system said.
public final class Library: Sendable {
    public let path: String
    let logger: Logger
    private let database: Mutex<Database>
    /// A second connection for queries (search, browsing, the MPD port):
    /// WAL lets it read while a scan writes, so a batch being committed
    /// never holds up a search.
    private let reader: Mutex<Database>
    /// A third for the MPD port's reads of every row (`search any`, `list`,
    /// `listall`), with a small page cache: a pass over 100,000 rows gains
    /// nothing from a cache, and on `reader` it evicted the pages ranked
    /// search and browsing use again and again (and the release after a long
    /// answer emptied them).
    private let bulkReader: Mutex<Database>
    private let scanning = Atomic<Bool>(false)
    /// A bulk load is writing rows without their indexes (`DeferredIndexes`).
    let bulkLoading = Atomic<Bool>(false)
    private let version = Atomic<Int>(0)
    /// Recently listed folders' subfolders and songs (`catalogFolder`), good while `contentVersion` stays.
    let folderListings = Mutex(FolderListings())
    /// Whole columns' distinct values (`catalogValues`), good while `contentVersion` stays.
    let valueLists = Mutex(ValueLists())

    /// Opens the library at `path`, creating it (and upgrading an older
    /// schema) if needed. Throws `.databaseTooNew` for a database written
    /// by a newer Tutti, `.cannotOpenDatabase` when the file is not SQLite.
    public init(path: String, logger: Logger = .silent) throws(LibraryError) {
        let db = try Database(path: path)
        let before = try db.userVersion
        try Schema.migrate(db)
        if before != Schema.latestVersion {
            logger.info("library \(path): schema \(before) → \(Schema.latestVersion)")
        }
        if before > 0 && before < 4 { try TrackStore.fillSearchColumns(db) }
        if try DeferredIndexes.pending(db) {
            // A bulk load was cut short (the process killed): build what it deferred.
            logger.warning("library \(path): building the indexes an interrupted scan deferred")
            try DeferredIndexes.resume(db)
        }
        let readOnly = try Database(path: path)
        try readOnly.execute("PRAGMA query_only=ON")
        let bulk = try Database(path: path)
        try bulk.execute("PRAGMA query_only=ON; PRAGMA cache_size=-\(Self.bulkCacheKiB)")
        self.path = path
        self.logger = logger
        self.database = Mutex(db)
        self.reader = Mutex(readOnly)
        self.bulkReader = Mutex(bulk)
    }

    /// `bulkReader`'s page cache: enough for the B-tree's upper levels.
    static let bulkCacheKiB = 512

    /// Where the library lives by default: `/var/lib/tutti/library.db` for
    /// the system service, else `$XDG_DATA_HOME/tutti/library.db`
    /// (`~/.local/share/tutti/library.db`).
    public static func defaultDatabasePath(asService: Bool) -> String {
        if asService { return "/var/lib/tutti/library.db" }
        if let xdg = getenv("XDG_DATA_HOME").map({ String(cString: $0) }), xdg.hasPrefix("/") { return xdg + "/tutti/library.db" }
        let home = getenv("HOME").map { String(cString: $0) } ?? "/tmp"
        return home + "/.local/share/tutti/library.db"
    }

    /// Runs `body` with the connection, holding the lock.
    @discardableResult
    func locked<T: Sendable>(_ body: (Database) throws(LibraryError) -> T) throws(LibraryError) -> T {
        try database.withLock { (db: inout Database) throws(LibraryError) -> T in try body(db) }
    }

    /// Runs `body` with the query connection (read only), holding its lock.
    @discardableResult
    func reading<T: Sendable>(_ body: (Database) throws(LibraryError) -> T) throws(LibraryError) -> T {
        try reader.withLock { (db: inout Database) throws(LibraryError) -> T in try body(db) }
    }

    /// Runs `body` with the connection for reads of many rows (`bulkReader`), holding its lock.
    @discardableResult
    func readingInBulk<T: Sendable>(_ body: (Database) throws(LibraryError) -> T) throws(LibraryError) -> T {
        try bulkReader.withLock { (db: inout Database) throws(LibraryError) -> T in try body(db) }
    }

    /// Goes up whenever tracks were added, changed or removed (each batch
    /// of a scan): a cache of something derived from the tracks is good
    /// while this stays the same.
    public var contentVersion: Int { version.load(ordering: .acquiring) }

    /// Whether a scan is running now (MPD's `updating_db`).
    public var isScanning: Bool { scanning.load(ordering: .acquiring) }

    // MARK: Scanning

    /// Scans `folder` recursively (see `ScanSummary` for what it reports).
    /// Blocks the calling thread until done; `progress` is called on that
    /// thread before each file and once at the end. Throws
    /// `.scanInProgress` if another scan is running, `.musicFolder` when the
    /// folder is missing; unreadable or corrupt files never stop a scan,
    /// they are listed in `skipped`.
    public func scan(folder: String, options: ScanOptions = ScanOptions(),
                     progress: ((ScanProgress) -> Void)? = nil) throws(LibraryError) -> ScanSummary {
        guard let resolved = realpath(folder, nil) else {
            throw .musicFolder(path: folder, reason: String(cString: strerror(errno)))
        }
        let root = String(cString: resolved)
        free(resolved)
        var st = stat()
        guard stat(root, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { throw .musicFolder(path: folder, reason: "not a folder") }
        // An empty mount point (a USB disk not plugged in) would otherwise
        // remove every track, and with them favourites and playlists' entries.
        if Self.folderIsEmpty(root) {
            let held = try reading { db throws(LibraryError) in
                // Every path under root/: from "root/" up to "root0" ("0" follows "/").
                let base = root.hasSuffix("/") ? String(root.dropLast()) : root
                return try db.scalarInt("SELECT count(*) FROM tracks WHERE path >= ? AND path < ?", [.text(base + "/"), .text(base + "0")]) ?? 0
            }
            if held > 0 {
                throw .musicFolder(path: folder, reason: "it is empty but the library holds \(held) tracks from it (is its disk unplugged?); nothing was removed")
            }
        }
        guard scanning.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw .scanInProgress
        }
        defer { scanning.store(false, ordering: .releasing) }
        let scan = Scan(root: root, options: options, logger: logger, withDatabase: { body throws(LibraryError) in
            try self.locked { db throws(LibraryError) in try body(db) }
        }, didWrite: { self.version.add(1, ordering: .releasing) },
        bulkLoading: { self.bulkLoading.store($0, ordering: .releasing) }, progress: progress)
        var stopped = false
        defer {
            // The music folder's own listing (`lsinfo` of the root, what an
            // MPD client asks first), ready before anyone asks; not for a
            // scan stopped because the leader is stopping.
            if !stopped {
                try? catalogFolder(root) { _ in }
                // And the artist lists MPD clients open with (`list artist`, `list albumartist`).
                _ = try? catalogValues(.artist)
                _ = try? catalogValues(.albumArtistOrArtist)
            }
            // The writer's page cache (full after the batches and the index
            // builds) and the reader's, refilled by the next queries; then a
            // scan's lists and dictionaries (100,000 paths), freed in the
            // arenas of the threads that made them: give the pages back.
            releaseMemory()
        }
        let summary = try scan.run()
        stopped = summary.stopped
        return summary
    }

    /// Whether folder `path` can be read and holds nothing (an unmounted mount point).
    public static func folderIsEmpty(_ path: String) -> Bool {
        guard let dir = opendir(path) else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { return false }
        }
        return true
    }

    /// Frees both connections' page caches and hands freed memory back
    /// to the kernel (after a scan; after a large answer).
    /// After a long answer of the MPD port: its connection's cache and the
    /// freed memory handed back; the query connection keeps the pages ranked
    /// search and browsing use.
    public func releaseBulkReadMemory() {
        bulkReader.withLock { $0.releaseMemory() }
        returnFreedMemory()
    }

    public func releaseMemory() {
        database.withLock { $0.releaseMemory() }
        reader.withLock { $0.releaseMemory() }
        bulkReader.withLock { $0.releaseMemory() }
        returnFreedMemory()
    }

    // MARK: Tracks

    public func track(_ id: TrackID) throws(LibraryError) -> Track? {
        try reading { db throws(LibraryError) in
            try db.query("SELECT \(TrackStore.columns) FROM tracks WHERE id = ?", [.int(id.rawValue)]) { TrackStore.track($0) }.first
        }
    }

    /// The track at an absolute path (as stored: symbolic links resolved).
    public func track(atPath path: String) throws(LibraryError) -> Track? {
        try reading { db throws(LibraryError) in
            try db.query("SELECT \(TrackStore.columns) FROM tracks WHERE path = ?", [.text(path)]) { TrackStore.track($0) }.first
        }
    }

    public func trackCount() throws(LibraryError) -> Int {
        try reading { db throws(LibraryError) in Int(try db.scalarInt("SELECT count(*) FROM tracks") ?? 0) }
    }

    /// All tracks of an album in disc and track order.
    public func albumTracks(album: String, albumArtist: String? = nil) throws(LibraryError) -> [Track] {
        try reading { db throws(LibraryError) in
            try db.query("""
                SELECT \(TrackStore.columns) FROM tracks
                WHERE album = ? AND (?2 IS NULL OR coalesce(album_artist, artist) = ?2)
                ORDER BY coalesce(disc_no, 1), coalesce(track_no, 0), path
                """, [.text(album), SQLValue(albumArtist)]) { TrackStore.track($0) }
        }
    }

    /// The cover image with this hash (from `Track.coverHash`), or nil.
    public func cover(hash: String) throws(LibraryError) -> Cover? {
        try reading { db throws(LibraryError) in
            try db.query("SELECT hash, mime, bytes FROM covers WHERE hash = ?", [.text(hash)]) {
                Cover(hash: $0.text(0), mime: $0.text(1), bytes: $0.blob(2))
            }.first
        }
    }

    public func coverCount() throws(LibraryError) -> Int {
        try locked { db throws(LibraryError) in Int(try db.scalarInt("SELECT count(*) FROM covers") ?? 0) }
    }

    func requireTrack(_ id: TrackID, _ db: Database) throws(LibraryError) {
        guard try db.scalarInt("SELECT 1 FROM tracks WHERE id = ?", [.int(id.rawValue)]) != nil else { throw .notFound(id.description) }
    }
}
