extension LibraryError {
    /// The file is no database, or a damaged one (SQLITE_NOTADB, SQLITE_CORRUPT):
    /// moving it aside and starting a new one is the way out; nothing else is.
    public var isDamagedDatabase: Bool {
        switch self {
        case .sqlite(_, let code, _): return code & 0xff == 26 || code & 0xff == 11
        case .corruptSchema: return true
        case .cannotOpenDatabase(_, let reason):
            return ["file is not a database", "malformed", "SQLite code 26", "SQLite code 11"].contains { reason.contains($0) }
        default: return false
        }
    }
}
