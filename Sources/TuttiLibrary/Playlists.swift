import Glibc
import TuttiCore
import TuttiSystem

/// Playlists: ordered lists of library tracks (a track may appear more
/// than once). Entries are addressed by 0-based index. A track whose file
/// leaves the library leaves its playlists too. Every mutating call
/// returns after its transaction has committed.
extension Library {
    public func createPlaylist(named name: String) throws(LibraryError) -> Playlist {
        let name = try Self.validName(name)
        return try locked { db throws(LibraryError) in
            let now = WallClock.unixMilliseconds()
            try db.run("INSERT INTO playlists(name, created_at, updated_at) VALUES (?, ?, ?)", [.text(name), .int(now), .int(now)])
            return Playlist(id: PlaylistID(db.lastInsertRowID), name: name, entryCount: 0, createdAt: now, updatedAt: now)
        }
    }

    public func renamePlaylist(_ id: PlaylistID, to name: String) throws(LibraryError) {
        let name = try Self.validName(name)
        try locked { db throws(LibraryError) in
            try db.run("UPDATE playlists SET name = ?, updated_at = ? WHERE id = ?", [.text(name), .int(WallClock.unixMilliseconds()), .int(id.rawValue)])
            guard db.changes == 1 else { throw .notFound(id.description) }
        }
    }

    public func deletePlaylist(_ id: PlaylistID) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            try db.run("DELETE FROM playlists WHERE id = ?", [.int(id.rawValue)])
            guard db.changes == 1 else { throw .notFound(id.description) }
        }
    }

    /// All playlists by name.
    public func playlists() throws(LibraryError) -> [Playlist] {
        try locked { db throws(LibraryError) in
            try db.query("""
                SELECT p.id, p.name, p.created_at, p.updated_at, (SELECT count(*) FROM playlist_entries e WHERE e.playlist_id = p.id)
                FROM playlists p ORDER BY p.name COLLATE NOCASE, p.id
                """) { Self.playlist($0) }
        }
    }

    public func playlist(_ id: PlaylistID) throws(LibraryError) -> Playlist? {
        try locked { db throws(LibraryError) in try Self.playlist(id, db) }
    }

    /// The playlist's entries in order.
    public func entries(of id: PlaylistID) throws(LibraryError) -> [PlaylistEntry] {
        try locked { db throws(LibraryError) in
            guard try Self.playlist(id, db) != nil else { throw .notFound(id.description) }
            var index = 0
            return try db.query("""
                SELECT e.id, \(TrackStore.columns("t")) FROM playlist_entries e JOIN tracks t ON t.id = e.track_id
                WHERE e.playlist_id = ? ORDER BY e.position, e.id
                """, [.int(id.rawValue)]) { s in
                defer { index += 1 }
                return PlaylistEntry(id: PlaylistEntryID(s.int(0)), index: index, track: TrackStore.track(s, first: 1))
            }
        }
    }

    /// Adds tracks at `index` (nil: at the end), in the order given.
    public func addToPlaylist(_ id: PlaylistID, tracks: [TrackID], at index: Int? = nil) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) in try Self.insert(tracks, into: id, at: index, db) }
        }
    }

    public func removeFromPlaylist(_ id: PlaylistID, at index: Int) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) in
                let ids = try Self.entryIDs(id, db)
                guard ids.indices.contains(index) else { throw .refused(UserMessage(.playlistNoEntry, ["index": "\(index)", "id": "\(id.rawValue)", "count": "\(ids.count)"])) }
                try db.run("DELETE FROM playlist_entries WHERE id = ?", [.int(ids[index])])
                try Self.touch(id, db)
            }
        }
    }

    /// Moves the entry at `from` so that it ends up at index `to`.
    public func moveInPlaylist(_ id: PlaylistID, from: Int, to: Int) throws(LibraryError) {
        try locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) in
                var ids = try Self.entryIDs(id, db)
                guard ids.indices.contains(from), ids.indices.contains(to) else {
                    throw .refused(UserMessage(.playlistCannotMove, ["from": "\(from)", "to": "\(to)", "id": "\(id.rawValue)", "count": "\(ids.count)"]))
                }
                ids.insert(ids.remove(at: from), at: to)
                try Self.renumber(ids, db)
                try Self.touch(id, db)
            }
        }
    }

    // MARK: M3U

    /// Imports an M3U/M3U8 file as a new playlist named `name` (default:
    /// the file's name). Relative locations are taken from the file's
    /// folder. Entries that are not library tracks (missing files, files
    /// outside the library, network URLs) are reported, not fatal.
    ///
    /// The file must be a playlist (`M3U.isPlaylist`: every entry a stream
    /// URL or an audio file); anything else is refused as "not a playlist"
    /// with none of its content, so import cannot be used to read files.
    public func importM3U(path: String, name: String? = nil) throws(LibraryError) -> M3UImportReport {
        let bytes = try Self.readFile(path)
        guard M3U.isPlaylist(M3U.parse(bytes: bytes)) else {
            throw .refused(UserMessage(.playlistNotM3U, ["path": path]))
        }
        let base = M3U.normalize(path.hasPrefix("/") ? path : Self.currentDirectory() + "/" + path)
        let directory = String(base[..<(base.lastIndex(of: "/") ?? base.startIndex)])
        var fileName = String(base.split(separator: "/").last ?? "Playlist")
        if let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex { fileName = String(fileName[..<dot]) }
        return try importM3U(contents: bytes, baseDirectory: directory, name: name ?? fileName)
    }

    /// Imports M3U/M3U8 text (uploaded from a phone, say) as a new playlist;
    /// relative locations are taken from `baseDirectory`.
    public func importM3U(contents bytes: [UInt8], baseDirectory directory: String, name: String) throws(LibraryError) -> M3UImportReport {
        let items = M3U.parse(bytes: bytes)
        let playlistName = try Self.validName(name)

        return try locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) -> M3UImportReport in
                let now = WallClock.unixMilliseconds()
                try db.run("INSERT INTO playlists(name, created_at, updated_at) VALUES (?, ?, ?)", [.text(playlistName), .int(now), .int(now)])
                let id = PlaylistID(db.lastInsertRowID)
                var found: [TrackID] = []
                var unresolved: [UnresolvedEntry] = []
                for item in items {
                    guard let resolved = M3U.resolve(item.location, baseDirectory: directory.isEmpty ? "/" : directory) else {
                        unresolved.append(.init(line: item.line, entry: item.location, reason: "network streams are not library tracks"))
                        continue
                    }
                    if let track = try Self.trackID(atPath: resolved, db) {
                        found.append(track)
                    } else {
                        let exists = access(resolved, F_OK) == 0
                        unresolved.append(.init(line: item.line, entry: item.location,
                                                reason: exists ? "\(resolved) is not in the library (scan its folder first)" : "\(resolved) does not exist"))
                    }
                }
                try Self.insert(found, into: id, at: nil, db)
                guard let playlist = try Self.playlist(id, db) else { throw .notFound(id.description) }
                return M3UImportReport(playlist: playlist, added: found.count, unresolved: unresolved)
            }
        }
    }

    /// Writes the playlist as extended M3U (UTF-8) to `path`, replacing it
    /// atomically. Paths are relative to the file's folder unless
    /// `relativePaths` is false.
    public func exportM3U(_ id: PlaylistID, to path: String, relativePaths: Bool = true) throws(LibraryError) {
        let absolute = M3U.normalize(path.hasPrefix("/") ? path : Self.currentDirectory() + "/" + path)
        let directory = String(absolute[..<(absolute.lastIndex(of: "/") ?? absolute.startIndex)])
        let text = try m3u(id, relativeTo: relativePaths ? (directory.isEmpty ? "/" : directory) : nil)
        try Self.writeFileAtomically(absolute, Array(text.utf8))
    }

    /// Writes the playlist as `name` (`party.m3u`, `party.m3u8`: no folder)
    /// in `folder` (the playlist folder), paths relative to it. Refuses a
    /// name with a separator or another extension, and a destination that
    /// is a symbolic link, not a regular file, or a file that is not a
    /// playlist (it never follows a link nor overwrites a track); writes a
    /// new file beside it (O_EXCL, O_NOFOLLOW) and renames it into place.
    /// Returns the path written.
    @discardableResult
    public func exportM3U(_ id: PlaylistID, intoFolder folder: String, name: String) throws(LibraryError) -> String {
        guard Self.isPlaylistFileName(name) else {
            throw .invalidArgument("\(name) is not a playlist file name: give a name ending in .m3u or .m3u8, with no folder (it is written in the playlist folder)")
        }
        let path = (folder.hasSuffix("/") ? folder : folder + "/") + name
        var st = stat()
        if lstat(path, &st) == 0 {
            guard st.st_mode & S_IFMT != S_IFLNK else { throw .invalidArgument("\(path) is a symbolic link: not replaced") }
            guard st.st_mode & S_IFMT == S_IFREG else { throw .invalidArgument("\(path) is not a regular file: not replaced") }
            guard Self.isPlaylistFile(path) else { throw .invalidArgument("\(path) exists and is not a playlist (#EXTM3U): not replaced") }
        }
        let text = try m3u(id, relativeTo: folder)
        try Self.writeFileAtomically(path, Array(text.utf8))
        return path
    }

    /// `party.m3u`, `Road Trip.M3U8`: a plain file name with a playlist extension.
    public static func isPlaylistFileName(_ name: String) -> Bool {
        let lower = name.lowercased()
        return (lower.hasSuffix(".m3u") || lower.hasSuffix(".m3u8")) && !name.hasPrefix(".") && name.utf8.count <= 255
            && !name.contains(where: { $0 == "/" || $0 == "\\" || $0 == "\0" || $0.isNewline })
    }

    /// An existing file that is empty or starts with `#EXTM3U` (what exports write).
    private static func isPlaylistFile(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 10)
        let n = head.withUnsafeMutableBytes { read(fd, $0.baseAddress!, 10) }
        guard n >= 0 else { return false }
        var bytes = head.prefix(n)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        return n == 0 || bytes.starts(with: Array("#EXTM3U".utf8))
    }

    /// The playlist as extended M3U text, with paths relative to `folder` when given.
    public func m3u(_ id: PlaylistID, relativeTo folder: String?) throws(LibraryError) -> String {
        let rows = try entries(of: id).map { e in
            M3U.Row(path: e.track.path, title: [e.track.artist, e.track.title].compactMap { $0 }.joined(separator: " - "),
                    durationSeconds: Int(e.track.durationSeconds.rounded()))
        }
        return M3U.render(rows, relativeTo: folder)
    }

    // MARK: Helpers (run with the lock held)

    private static func validName(_ name: String) throws(LibraryError) -> String {
        guard let clean = TagText.clean(name) else { throw .refused(UserMessage(.playlistNeedsName)) }
        return clean
    }

    private static func playlist(_ s: Statement) -> Playlist {
        Playlist(id: PlaylistID(s.int(0)), name: s.text(1), entryCount: Int(s.int(4)), createdAt: s.int(2), updatedAt: s.int(3))
    }

    private static func playlist(_ id: PlaylistID, _ db: Database) throws(LibraryError) -> Playlist? {
        try db.query("""
            SELECT p.id, p.name, p.created_at, p.updated_at, (SELECT count(*) FROM playlist_entries e WHERE e.playlist_id = p.id)
            FROM playlists p WHERE p.id = ?
            """, [.int(id.rawValue)]) { playlist($0) }.first
    }

    private static func entryIDs(_ id: PlaylistID, _ db: Database) throws(LibraryError) -> [Int64] {
        guard try playlist(id, db) != nil else { throw .notFound(id.description) }
        return try db.query("SELECT id FROM playlist_entries WHERE playlist_id = ? ORDER BY position, id", [.int(id.rawValue)]) { $0.int(0) }
    }

    private static func renumber(_ ids: [Int64], _ db: Database) throws(LibraryError) {
        for (position, entry) in ids.enumerated() {
            try db.run("UPDATE playlist_entries SET position = ? WHERE id = ?", [.int(Int64(position)), .int(entry)])
        }
    }

    private static func touch(_ id: PlaylistID, _ db: Database) throws(LibraryError) {
        try db.run("UPDATE playlists SET updated_at = ? WHERE id = ?", [.int(WallClock.unixMilliseconds()), .int(id.rawValue)])
    }

    private static func insert(_ tracks: [TrackID], into id: PlaylistID, at index: Int?, _ db: Database) throws(LibraryError) {
        var ids = try entryIDs(id, db)
        let at = index ?? ids.count
        guard at >= 0, at <= ids.count else { throw .refused(UserMessage(.playlistCannotInsert, ["at": "\(at)", "id": "\(id.rawValue)", "count": "\(ids.count)"])) }
        var added: [Int64] = []
        for track in tracks {
            guard try db.scalarInt("SELECT 1 FROM tracks WHERE id = ?", [.int(track.rawValue)]) != nil else { throw .notFound(track.description) }
            try db.run("INSERT INTO playlist_entries(playlist_id, position, track_id) VALUES (?, ?, ?)",
                       [.int(id.rawValue), .int(Int64(ids.count + added.count)), .int(track.rawValue)])
            added.append(db.lastInsertRowID)
        }
        if at < ids.count {
            ids.insert(contentsOf: added, at: at)
            try renumber(ids, db)
        }
        try touch(id, db)
    }

    private static func trackID(atPath path: String, _ db: Database) throws(LibraryError) -> TrackID? {
        if let id = try db.scalarInt("SELECT id FROM tracks WHERE path = ?", [.text(path)]) { return TrackID(id) }
        // The library stores paths with symbolic links resolved.
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        return try db.scalarInt("SELECT id FROM tracks WHERE path = ?", [.text(String(cString: real))]).map(TrackID.init)
    }

    static func currentDirectory() -> String {
        guard let cwd = getcwd(nil, 0) else { return "/" }
        defer { free(cwd) }
        return String(cString: cwd)
    }

    static func readFile(_ path: String) throws(LibraryError) -> [UInt8] {
        do { return try readWholeFile(path, limit: 16 << 20) } catch {
            switch error {
            case .unreadable(_, let reason): throw .io(path: path, reason: reason)
            case .tooLarge(_, let bytes, _): throw .io(path: path, reason: "too large for a playlist (\(bytes) bytes)")
            }
        }
    }

    /// Writes to a new temporary file beside `path` (never through a link
    /// left there: O_EXCL, O_NOFOLLOW), fsyncs (when `durable`), renames
    /// (which replaces a link at `path` rather than writing where it points).
    /// Also the leader's list of paired speakers (`mode` 0600).
    public static func writeFileAtomically(_ path: String, _ bytes: [UInt8], durable: Bool = true, mode: mode_t = 0o644) throws(LibraryError) {
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary) // a leftover of a crash, or a link someone placed
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .io(path: path, reason: String(cString: strerror(errno))) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let reason = String(cString: strerror(errno))
                close(fd); unlink(temporary)
                throw .io(path: path, reason: reason)
            }
            written += n
        }
        if durable { fsync(fd) }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .io(path: path, reason: reason)
        }
    }
}
