import Foundation
import Glibc
import Synchronization
import TuttiCore
import TuttiLibrary

/// The library as MPD clients see it: songs addressed by URIs relative to
/// the music folder, and a folder tree derived from their paths.
///
/// Reads every track in one query through its own read-only connection to
/// the library's SQLite file (WAL lets it read beside the scanner), and
/// keeps the result until the library changes (`invalidate`, called on
/// `LeaderEvent.library`). Without a library, songs are found on the file
/// system and carry no tags.
///
/// Thread contract: `Sendable`; any thread. Methods block on SQLite or the
/// file system.
final class MPDCatalog: Sendable {
    struct Snapshot: Sendable {
        /// Sorted by URI.
        var songs: [MPDSong] = []
        var byPath: [String: Int] = [:]
        var byURI: [String: Int] = [:]
        /// Every folder that holds a song, relative ("" is the root).
        var directories: Set<String> = [""]
        /// When this snapshot was read (seconds since 1970).
        var loadedAt: Int64 = 0
    }

    let library: Library?
    /// The music folder with symbolic links resolved, no trailing slash.
    let root: String?
    /// The music folder as configured (queue entries may use this spelling).
    private let configuredRoot: String?
    private let connection = Mutex<Database?>(nil)
    private let cache = Mutex<Snapshot?>(nil)
    private let log: Logger

    static let audioExtensions: Set<String> = ["mp3", "wav", "wave", "flac"]

    init(library: Library?, musicDirectory: String?, log: Logger) {
        self.library = library
        self.log = log
        if let dir = musicDirectory {
            let trimmed = dir.count > 1 && dir.hasSuffix("/") ? String(dir.dropLast()) : dir
            configuredRoot = trimmed
            if let resolved = realpath(trimmed, nil) {
                root = String(cString: resolved)
                free(resolved)
            } else {
                root = trimmed
            }
        } else {
            configuredRoot = nil
            root = nil
        }
    }

    func invalidate() { cache.withLock { $0 = nil } }

    func snapshot() -> Snapshot {
        if let s = cache.withLock({ $0 }) { return s }
        let s = load()
        cache.withLock { $0 = s }
        return s
    }

    private func load() -> Snapshot {
        var snapshot = Snapshot()
        snapshot.loadedAt = Int64(time(nil))
        guard let library else { return snapshot }
        let rows: [MPDSong]
        do {
            rows = try connection.withLock { (db: inout Database?) throws(LibraryError) -> [MPDSong] in
                if db == nil {
                    let opened = try Database(path: library.path)
                    try opened.execute("PRAGMA query_only=ON")
                    db = opened
                }
                return try db!.query("""
                    SELECT path, title, artist, album, album_artist, genre, track_no, disc_no, year,
                           duration_frames, sample_rate, file_size, mtime_ns, cover_hash
                    FROM tracks
                    """) { s in
                    let path = s.text(0)
                    var tags: [String: String] = [:]
                    tags["Title"] = s.text(1)
                    if let v = s.optionalText(2) { tags["Artist"] = v }
                    if let v = s.optionalText(3) { tags["Album"] = v }
                    if let v = s.optionalText(4) { tags["AlbumArtist"] = v }
                    if let v = s.optionalText(5) { tags["Genre"] = v }
                    if let v = s.optionalInt(6) { tags["Track"] = String(v) }
                    if let v = s.optionalInt(7) { tags["Disc"] = String(v) }
                    if let v = s.optionalInt(8) { tags["Date"] = String(v) }
                    let rate = s.int(10)
                    let duration = rate > 0 ? Double(s.int(9)) / Double(rate) : nil
                    let bitrate = duration.flatMap { $0 > 0 ? Int((Double(s.int(11)) * 8 / $0 / 1000).rounded()) : nil }
                    return MPDSong(uri: self.uri(forPath: path), tags: tags, durationSeconds: duration,
                                   modified: s.int(12) / 1_000_000_000, path: path, coverHash: s.optionalText(13), bitrateKbps: bitrate)
                }
            }
        } catch {
            log.error("reading the library for MPD clients: \(error)")
            return snapshot
        }
        snapshot.songs = rows.sorted { $0.uri < $1.uri }
        for (i, song) in snapshot.songs.enumerated() {
            if let p = song.path { snapshot.byPath[p] = i }
            snapshot.byURI[song.uri] = i
            var dir = song.uri
            while let slash = dir.lastIndex(of: "/") {
                dir = String(dir[..<slash])
                if !snapshot.directories.insert(dir).inserted { break }
            }
        }
        return snapshot
    }

    // MARK: URIs

    /// The URI an MPD client sees for a path or URL held in the queue.
    func uri(forPath path: String) -> String {
        for base in [root, configuredRoot].compactMap({ $0 }) where path.hasPrefix(base + "/") {
            return String(path.dropFirst(base.count + 1))
        }
        return path
    }

    /// The absolute path for a URI from a client (`file:///x` and absolute
    /// paths stay absolute).
    func path(forURI uri: String) -> String {
        if uri.hasPrefix("file://") { return String(uri.dropFirst(7)) }
        if uri.hasPrefix("/") || uri.contains("://") { return uri }
        guard let root else { return uri }
        return uri.isEmpty ? root : root + "/" + uri
    }

    /// Normalises a folder argument: no leading or trailing slash, "/" is the root.
    static func folder(_ uri: String) -> String {
        var s = Substring(uri)
        while s.hasPrefix("/") { s = s.dropFirst() }
        while s.hasSuffix("/") { s = s.dropLast() }
        return String(s)
    }

    /// The song for a queue entry (tags when the library has it).
    func song(forQueueURI entry: String) -> MPDSong {
        let s = snapshot()
        if let i = s.byPath[entry] { return s.songs[i] }
        if let resolved = realpath(entry, nil) {
            let path = String(cString: resolved)
            free(resolved)
            if let i = s.byPath[path] { return s.songs[i] }
        }
        return MPDSong(uri: uri(forPath: entry), tags: [:], path: nil)
    }

    /// Resolves a client's URI to the songs it names: one song, or every
    /// song under a folder (sorted). Falls back to the file system when the
    /// library does not know the path. Throws `.noExist` when nothing is there.
    func resolve(_ uri: String) throws(MPDError) -> [(path: String, song: MPDSong)] {
        let s = snapshot()
        let isAbsolute = uri.hasPrefix("/") || uri.hasPrefix("file://")
        if !isAbsolute {
            if let i = s.byURI[uri] { return [(s.songs[i].path ?? path(forURI: uri), s.songs[i])] }
            let dir = Self.folder(uri)
            if s.directories.contains(dir) {
                let found = s.songs.filter { dir.isEmpty || $0.uri.hasPrefix(dir + "/") }
                if !found.isEmpty { return found.map { ($0.path ?? path(forURI: $0.uri), $0) } }
            }
        }
        if uri.contains("://"), !uri.hasPrefix("file://") { throw .noExist("Unsupported URI scheme") }
        // The file system: a folder not yet scanned, or no library.
        if !isAbsolute, root == nil { throw .noExist("No such song (no music folder configured)") }
        let target = path(forURI: isAbsolute ? uri : Self.folder(uri))
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory) else { throw .noExist("No such song or folder") }
        if !isDirectory.boolValue {
            if let i = s.byPath[target] { return [(target, s.songs[i])] }
            return [(target, MPDSong(uri: self.uri(forPath: target)))]
        }
        var found: [String] = []
        if let walker = FileManager.default.enumerator(atPath: target) {
            while let item = walker.nextObject() as? String {
                let ext = (item as NSString).pathExtension.lowercased()
                if Self.audioExtensions.contains(ext) { found.append(target + "/" + item) }
            }
        }
        guard !found.isEmpty else { throw .noExist("No songs in that folder") }
        return found.sorted().map { p in (p, s.byPath[p].map { s.songs[$0] } ?? MPDSong(uri: self.uri(forPath: p))) }
    }
}
