import CSQLite
import Glibc

/// A value bound to, or read from, an SQLite statement.
public enum SQLValue: Equatable, Sendable, ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByNilLiteral {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])

    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(_ v: String?) { self = v.map { .text($0) } ?? .null }
    public init(_ v: Int?) { self = v.map { .int(Int64($0)) } ?? .null }
    public init(_ v: Int64?) { self = v.map { .int($0) } ?? .null }
    public init(_ v: Double?) { self = v.map { .double($0) } ?? .null }
    public init(_ v: [UInt8]?) { self = v.map { .blob($0) } ?? .null }
}

/// SQLite copies transient bindings before `sqlite3_bind_*` returns; the C
/// macro `SQLITE_TRANSIENT` (a destructor of -1) is not visible to Swift.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

/// `mpd_title_contains(mpd_text, needle)`: 1 when the folded needle occurs
/// in the first line of `mpd_text` (the folded title, `SearchText.mpdHaystack`),
/// 0 otherwise or for NULL. One call per row where SQL needed two `instr`s
/// and a `length` (MPD's `search title` over a whole library: about half
/// its filtering time). A needle cannot span the line break: MPD arguments
/// hold none.
private func mpdTitleContains(_ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?) {
    guard let values, let haystack = sqlite3_value_text(values[0]), let needle = sqlite3_value_text(values[1]) else {
        sqlite3_result_int(context, 0)
        return
    }
    let needleBytes = Int(sqlite3_value_bytes(values[1]))
    let textBytes = Int(sqlite3_value_bytes(values[0]))
    let lineEnd = memchr(haystack, 0x0A, textBytes).map { UnsafeRawPointer($0) - UnsafeRawPointer(haystack) } ?? textBytes
    sqlite3_result_int(context, Database.occurs(needle, needleBytes, in: haystack, lineEnd) ? 1 : 0)
}

/// `mpd_text_contains(mpd_text, needle)`: `instr(mpd_text, needle) > 0`
/// without counting characters up to the hit (MPD's `search any`).
private func mpdTextContains(_ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?) {
    guard let values, let haystack = sqlite3_value_text(values[0]), let needle = sqlite3_value_text(values[1]) else {
        sqlite3_result_int(context, 0)
        return
    }
    let found = Database.occurs(needle, Int(sqlite3_value_bytes(values[1])), in: haystack, Int(sqlite3_value_bytes(values[0])))
    sqlite3_result_int(context, found ? 1 : 0)
}

/// One SQLite connection.
///
/// Thread contract: not thread-safe. A `Database` belongs to one serial
/// context at a time; `Library` keeps it inside a mutex and is the only
/// user. It is opened with `SQLITE_OPEN_NOMUTEX` because that outer lock
/// already serialises every call, including reads of `sqlite3_errmsg`.
///
/// Durability: WAL journal with `synchronous=FULL`, so a transaction that
/// has committed is on disk (the WAL is fsynced at every commit) and
/// survives a power cut, not only a crash of the process.
public final class Database {
    let handle: OpaquePointer
    public let path: String
    private var cache: [String: Statement] = [:]
    private var savepointDepth = 0

    /// Opens (creating if needed) the database at `path`, with WAL,
    /// foreign keys and a busy timeout so a second process (`sqlite3`, a
    /// backup) waits rather than failing.
    public init(path: String, busyTimeoutMilliseconds: Int32 = 5_000) throws(LibraryError) {
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let reason = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_close_v2(db)
            throw .cannotOpenDatabase(path: path, reason: reason)
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        sqlite3_create_function_v2(db, "mpd_title_contains", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nil,
                                   mpdTitleContains, nil, nil, nil)
        sqlite3_create_function_v2(db, "mpd_text_contains", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, nil,
                                   mpdTextContains, nil, nil, nil)
        do {
            // journal_mode returns a row; a file on a file system without
            // shared memory silently stays in "delete" mode, which is still correct.
            _ = try scalarText("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY")
        } catch {
            throw .cannotOpenDatabase(path: path, reason: error.description)
        }
    }

    /// Whether `needle` (`needleCount` bytes) occurs in the first `count` bytes at `text`; an empty needle does.
    static func occurs(_ needle: UnsafePointer<UInt8>, _ needleCount: Int, in text: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        guard needleCount > 0 else { return true }
        var at = 0
        let first = Int32(needle[0])
        while count - at >= needleCount {
            // memchr to each candidate first byte, memcmp for the rest.
            guard let hit = memchr(text + at, first, count - at - needleCount + 1) else { return false }
            let offset = UnsafeRawPointer(hit) - UnsafeRawPointer(text)
            if memcmp(text + offset, needle, needleCount) == 0 { return true }
            at = offset + 1
        }
        return false
    }

    deinit {
        cache.removeAll() // finalize cached statements before closing
        sqlite3_close_v2(handle)
    }

    /// The last error on this connection as a typed error.
    func error(_ operation: String, _ rc: Int32) -> LibraryError {
        .sqlite(operation: operation, code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)))
    }

    /// Runs one or more statements that return no rows (schema, pragmas).
    public func execute(_ sql: String) throws(LibraryError) {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        guard rc == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(message)
            throw .sqlite(operation: "executing \(sql.prefix(60))", code: rc, message: text)
        }
    }

    /// A new prepared statement that the caller owns.
    public func prepare(_ sql: String) throws(LibraryError) -> Statement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw error("preparing \(sql.prefix(60))", rc) }
        return Statement(stmt, sql: sql)
    }

    /// A prepared statement kept for the life of the connection, reset and
    /// with cleared bindings: for statements run many times (the scanner's
    /// inserts, every query of the public API).
    public func cached(_ sql: String) throws(LibraryError) -> Statement {
        if let s = cache[sql] {
            s.reset()
            return s
        }
        let s = try prepare(sql)
        cache[sql] = s
        return s
    }

    /// Runs `body` in a transaction that commits when it returns and rolls
    /// back when it throws. Top level: `BEGIN IMMEDIATE`, so the write lock
    /// is taken up front and a concurrent writer waits (busy timeout)
    /// instead of failing half-way. Nested calls become savepoints.
    @discardableResult
    public func transaction<T>(_ body: () throws(LibraryError) -> T) throws(LibraryError) -> T {
        let nested = sqlite3_get_autocommit(handle) == 0
        let name = "sp\(savepointDepth)"
        try execute(nested ? "SAVEPOINT \(name)" : "BEGIN IMMEDIATE")
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        do {
            let result = try body()
            try execute(nested ? "RELEASE \(name)" : "COMMIT")
            return result
        } catch {
            // The rollback's own failure (e.g. the transaction already ended) would hide the cause.
            if nested {
                try? execute("ROLLBACK TO \(name); RELEASE \(name)")
            } else if sqlite3_get_autocommit(handle) == 0 {
                try? execute("ROLLBACK")
            }
            throw error
        }
    }

    /// Frees this connection's page cache (the pages not in use) and other
    /// memory SQLite can rebuild: after a scan, whose batches filled it.
    public func releaseMemory() {
        sqlite3_db_release_memory(handle)
    }

    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// `PRAGMA user_version`: the schema version (see `Schema`).
    public var userVersion: Int {
        get throws(LibraryError) { Int(try scalarInt("PRAGMA user_version") ?? 0) }
    }

    public func scalarInt(_ sql: String, _ values: [SQLValue] = []) throws(LibraryError) -> Int64? {
        let s = try cached(sql)
        try s.bind(values)
        defer { s.reset() }
        return try s.step() ? s.optionalInt(0) : nil
    }

    public func scalarText(_ sql: String, _ values: [SQLValue] = []) throws(LibraryError) -> String? {
        let s = try prepare(sql)
        try s.bind(values)
        return try s.step() ? s.optionalText(0) : nil
    }

    /// Runs a statement that returns no rows; returns the number of rows changed.
    @discardableResult
    public func run(_ sql: String, _ values: [SQLValue] = []) throws(LibraryError) -> Int {
        let s = try cached(sql)
        try s.bind(values)
        defer { s.reset() }
        while try s.step() {}
        return changes
    }

    /// Runs a query and maps each row.
    public func query<T>(_ sql: String, _ values: [SQLValue] = [], row: (Statement) throws(LibraryError) -> T) throws(LibraryError) -> [T] {
        let s = try cached(sql)
        try s.bind(values)
        defer { s.reset() }
        var out: [T] = []
        while try s.step() { out.append(try row(s)) }
        return out
    }
}

/// A prepared statement; finalized when the last reference goes.
/// Same thread contract as its `Database`.
public final class Statement {
    let stmt: OpaquePointer
    public let sql: String

    init(_ stmt: OpaquePointer, sql: String) {
        self.stmt = stmt
        self.sql = sql
    }

    deinit { sqlite3_finalize(stmt) }

    private func fail(_ operation: String) -> LibraryError {
        let db = sqlite3_db_handle(stmt)
        return .sqlite(operation: "\(operation) \(sql.prefix(60))", code: sqlite3_extended_errcode(db), message: String(cString: sqlite3_errmsg(db)))
    }

    public func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    /// Binds `values` to parameters 1…n.
    public func bind(_ values: [SQLValue]) throws(LibraryError) {
        for (i, v) in values.enumerated() { try bind(v, at: Int32(i + 1)) }
    }

    public func bind(_ value: SQLValue, at index: Int32) throws(LibraryError) {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(stmt, index)
        case .int(let v): rc = sqlite3_bind_int64(stmt, index, v)
        case .double(let v): rc = sqlite3_bind_double(stmt, index, v)
        case .text(let v): rc = sqlite3_bind_text(stmt, index, v, -1, transient)
        case .blob(let v):
            rc = v.withUnsafeBytes { raw in
                // A zero-length blob with a nil pointer would bind NULL.
                raw.count == 0 ? sqlite3_bind_zeroblob(stmt, index, 0) : sqlite3_bind_blob(stmt, index, raw.baseAddress, Int32(raw.count), transient)
            }
        }
        guard rc == SQLITE_OK else { throw fail("binding parameter \(index) of") }
    }

    /// Binds UTF-8 bytes as text (a path read from a row, without making a String of it).
    public func bind(textBytes v: [UInt8], at index: Int32) throws(LibraryError) {
        let rc = v.isEmpty ? sqlite3_bind_text(stmt, index, "", 0, transient) : v.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { c in sqlite3_bind_text(stmt, index, c.baseAddress!, Int32(c.count), transient) }
        }
        guard rc == SQLITE_OK else { throw fail("binding parameter \(index) of") }
    }

    /// Advances; true when a row is available.
    public func step() throws(LibraryError) -> Bool {
        let rc = sqlite3_step(stmt)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let error = fail("running")
        sqlite3_reset(stmt)
        throw error
    }

    /// Binds, runs to completion and resets.
    public func run(_ values: [SQLValue]) throws(LibraryError) {
        reset()
        try bind(values)
        defer { sqlite3_reset(stmt) }
        while try step() {}
    }

    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }
    public func int(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }
    public func optionalInt(_ column: Int32) -> Int64? { isNull(column) ? nil : int(column) }
    public func double(_ column: Int32) -> Double { sqlite3_column_double(stmt, column) }
    public func text(_ column: Int32) -> String {
        guard let p = sqlite3_column_text(stmt, column) else { return "" }
        let n = Int(sqlite3_column_bytes(stmt, column))
        return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
    }
    public func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }
    /// The column's UTF-8 bytes as SQLite holds them, valid during `body` only; nil for NULL.
    public func withTextBytes<R>(_ column: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R? {
        guard !isNull(column), let p = sqlite3_column_text(stmt, column) else { return nil }
        return body(UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, column))))
    }
    /// The column's UTF-8 bytes as SQLite holds them, nil for NULL: valid
    /// until the statement steps or resets (the caller must not keep them).
    public func unsafeTextBytes(_ column: Int32) -> UnsafeBufferPointer<UInt8>? {
        // NULL is a null pointer (an empty text is not): no sqlite3_column_type call.
        guard let p = sqlite3_column_text(stmt, column) else { return nil }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_column_bytes(stmt, column)))
    }
    /// As `unsafeTextBytes` and `optionalInt` of the statement `handle`,
    /// through the column's value (`sqlite3_column_value`: one API call,
    /// then `sqlite3_value_*`, which skip the mutex and error bookkeeping
    /// each `sqlite3_column_*` call makes): for the dozen columns of each
    /// song of a long MPD answer. SQLite calls such a value unprotected: it
    /// is safe while nothing else uses the connection, which the `Library`'s
    /// lock around each connection guarantees.
    @inline(__always)
    static func valueText(_ handle: OpaquePointer, _ column: Int32) -> UnsafeBufferPointer<UInt8>? {
        let value = sqlite3_column_value(handle, column)
        guard let p = sqlite3_value_text(value) else { return nil }
        return UnsafeBufferPointer(start: p, count: Int(sqlite3_value_bytes(value)))
    }
    @inline(__always)
    static func valueInt(_ handle: OpaquePointer, _ column: Int32) -> Int64? {
        let value = sqlite3_column_value(handle, column)
        return sqlite3_value_type(value) == SQLITE_NULL ? nil : sqlite3_value_int64(value)
    }

    public func blob(_ column: Int32) -> [UInt8] {
        guard let p = sqlite3_column_blob(stmt, column) else { return [] }
        let n = Int(sqlite3_column_bytes(stmt, column))
        return Array(UnsafeRawBufferPointer(start: p, count: n))
    }
}
