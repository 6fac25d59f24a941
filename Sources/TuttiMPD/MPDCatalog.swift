import FoundationEssentials
import Glibc
import Synchronization
import TuttiCore
import TuttiDecode
import TuttiLibrary
import TuttiControlKit

/// The library as MPD clients see it: songs addressed by URIs relative to
/// the music folder, and a folder tree derived from their paths.
///
/// Nothing of the library is kept here: every answer is read from SQLite
/// (`Library+Catalog`) in path order, a page at a time, and written to the
/// client as it is read, so a 100,000-song library costs the leader no
/// memory of its own and a 6 MB answer never exists whole. Only `stats`
/// is kept, while `Library.contentVersion` stays (an unchanged rescan keeps it).
/// Without a library, songs are found on the file system and carry no tags.
///
/// Thread contract: `Sendable`; any thread. Methods block on SQLite or the
/// file system.
final class MPDCatalog: Sendable {
    let library: Library?
    /// The music folder with symbolic links resolved, no trailing slash.
    let root: String?
    /// The music folder as configured (queue entries may use this spelling).
    private let configuredRoot: String?
    private let cachedStats = Mutex<(stats: CatalogStats, loadedAt: Int64, version: Int)?>(nil)
    private let log: Logger

    static let audioExtensions = Set(["mp3", "wav", "wave", "flac"]).union(FFmpegFormats.extensions)

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

    /// Songs, artists, albums and play time; when they were counted. Counted
    /// again only when the tracks changed: the count is a pass over every
    /// row (about 40 ms at 100,000 tracks), and clients ask after every
    /// `update` (`mpc -w update`, the benchmark's wait for a rescan).
    func stats() -> (stats: CatalogStats, loadedAt: Int64) {
        // Read before counting: a batch written meanwhile leaves the cache stale, so the next call counts again.
        let version = library?.contentVersion ?? 0
        if let s = cachedStats.withLock({ $0 }), s.version == version { return (s.stats, s.loadedAt) }
        var counted = CatalogStats(songs: 0, artists: 0, albums: 0, totalSeconds: 0)
        if let library {
            do { counted = try library.catalogStats() } catch {
                log.error("counting the library for MPD clients: \(error)")
                return (counted, Int64(time(nil))) // not kept: the next call tries again
            }
        }
        let s = (stats: counted, loadedAt: Int64(time(nil)), version: version)
        cachedStats.withLock { $0 = s }
        return (s.stats, s.loadedAt)
    }

    /// The song a library row is, for filters and single songs.
    func song(_ c: CatalogSong) -> MPDSong {
        var tags: [String: String] = ["Title": c.title]
        if let v = c.artist { tags["Artist"] = v }
        if let v = c.album { tags["Album"] = v }
        if let v = c.albumArtist { tags["AlbumArtist"] = v }
        if let v = c.genre { tags["Genre"] = v }
        if let v = c.trackNumber { tags["Track"] = String(v) }
        if let v = c.discNumber { tags["Disc"] = String(v) }
        if let v = c.year { tags["Date"] = String(v) }
        let duration = c.durationSeconds > 0 ? c.durationSeconds : nil
        let bitrate = duration.map { Int((Double(c.fileSize) * 8 / $0 / 1000).rounded()) }
        return MPDSong(uri: uri(forPath: c.path), tags: tags, durationSeconds: duration, modified: c.modifiedSeconds,
                       path: c.path, coverHash: c.coverHash, bitrateKbps: bitrate)
    }

    /// The library's song at an absolute path, or nil.
    func librarySong(path: String) -> MPDSong? {
        guard let library else { return nil }
        do { return try library.catalogSong(path: path).map(song) } catch {
            log.error("reading \(path) from the library: \(error)")
            return nil
        }
    }

    /// The absolute folder for a client's folder argument ("" is the root).
    func absoluteFolder(_ dir: String) -> String? {
        guard let root else { return nil }
        return dir.isEmpty ? root : root + "/" + dir
    }

    /// Whether the library has songs under this relative folder (the root always exists).
    func hasFolder(_ dir: String) -> Bool {
        guard let library, let folder = absoluteFolder(dir) else { return false }
        return dir.isEmpty || ((try? library.catalogHasFolder(folder)) ?? false)
    }

    // MARK: URIs

    /// The URI an MPD client sees for a path or URL held in the queue.
    func uri(forPath path: String) -> String {
        // Bytes, not Characters: called once per song of an answer.
        for base in [root, configuredRoot] {
            guard let base else { continue }
            let b = base.utf8, p = path.utf8
            if p.count > b.count + 1, p.starts(with: b), p[p.index(p.startIndex, offsetBy: b.count)] == UInt8(ascii: "/") {
                return String(decoding: p.dropFirst(b.count + 1), as: UTF8.self)
            }
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
        if let s = librarySong(path: entry) { return s }
        if let resolved = realpath(entry, nil) {
            let path = String(cString: resolved)
            free(resolved)
            if path != entry, let s = librarySong(path: path) { return s }
        }
        return MPDSong(uri: uri(forPath: entry), tags: [:], path: nil)
    }

    /// Resolves a client's URI to the songs it names: one song, or every
    /// song under a folder (sorted). Falls back to the file system when the
    /// library does not know the path. Throws `.noExist` when nothing is there.
    func resolve(_ uri: String) throws(MPDError) -> [(path: String, song: MPDSong)] {
        let isAbsolute = uri.hasPrefix("/") || uri.hasPrefix("file://")
        if !isAbsolute, let library, root != nil {
            if !uri.isEmpty, let s = librarySong(path: path(forURI: uri)) { return [(s.path ?? path(forURI: uri), s)] }
            let dir = Self.folder(uri)
            if let folder = absoluteFolder(dir) {
                var found: [(path: String, song: MPDSong)] = []
                do {
                    try library.catalogSongs(CatalogPrefilter([.under(folder)])) { c in
                        found.append((c.path, song(c)))
                        return true
                    }
                } catch {
                    throw .system(error.description)
                }
                if !found.isEmpty { return found }
            }
        }
        if uri.contains("://"), !uri.hasPrefix("file://") { throw .noExist("Unsupported URI scheme") }
        // The file system: a folder not yet scanned, or no library.
        if !isAbsolute, root == nil { throw .noExist("No such song (no music folder configured)") }
        let target = path(forURI: isAbsolute ? uri : Self.folder(uri))
        var isDirectory = false
        guard FileManager.default.fileExists(atPath: target, isDirectory: &isDirectory) else { throw .noExist("No such song or folder") }
        if !isDirectory {
            if let s = librarySong(path: target) { return [(target, s)] }
            return [(target, MPDSong(uri: self.uri(forPath: target)))]
        }
        let found = ((try? FileManager.default.subpathsOfDirectory(atPath: target)) ?? [])
            .filter { Self.audioExtensions.contains(PathText.fileExtension($0).lowercased()) }
            .map { target + "/" + $0 }
        guard !found.isEmpty else { throw .noExist("No songs in that folder") }
        return found.sorted().map { p in (p, librarySong(path: p) ?? MPDSong(uri: self.uri(forPath: p))) }
    }

    // MARK: Filters in SQL

    /// The part of `filter` SQLite can apply, and whether it is all of it
    /// (then no song needs checking again). `foldCase`: search (MPD's case
    /// folding), else find (exact).
    func prefilter(_ filter: MPDFilter, foldCase: Bool) -> (prefilter: CatalogPrefilter, exact: Bool) {
        var conditions: [CatalogPrefilter.Condition] = []
        var exact = true
        func add(_ f: MPDFilter) {
            switch f {
            case .all:
                break
            case .and(let parts):
                parts.forEach(add)
            case .base(let folder):
                let trimmed = Self.folder(folder)
                if let absolute = absoluteFolder(trimmed) {
                    if !trimmed.isEmpty { conditions.append(.under(absolute)) }
                } else {
                    exact = false
                }
            case .tag(nil, .contains, let value):
                // Every value a song shows, folded as MPD folds: exactly `any`.
                conditions.append(.foldedTextContains(SearchText.mpdFold(value)))
                if !foldCase { exact = false } // a case-sensitive `contains`: the fold only narrows
            case .tag("Title", .contains, let value) where foldCase:
                // Exactly MPD's `search title`, for any text, from the index alone.
                let folded = SearchText.mpdFold(value)
                conditions.append(.foldedTitleContains(folded))
            case .tag(let tag?, .contains, let value):
                conditions.append(.foldedTextContains(SearchText.mpdFold(value)))
                if let column = Self.column(tag), foldCase, value.utf8.allSatisfy({ $0 < 0x80 }) {
                    // SQLite's LIKE folds ASCII, which is all an ASCII needle can meet.
                    conditions.append(.columnLike(column, value))
                } else {
                    exact = false
                }
            case .tag(let tag?, .equals, let value) where !foldCase && !value.isEmpty:
                if let column = Self.column(tag) {
                    conditions.append(.equals(column, value))
                } else {
                    exact = false
                }
            case .tag(_, .equals, let value), .tag(_, .startsWith, let value):
                // Narrowed by the fold (an empty value matches songs without the tag: nothing to narrow by).
                if !value.isEmpty { conditions.append(.foldedTextContains(SearchText.mpdFold(value))) }
                exact = false
            default:
                exact = false
            }
        }
        add(filter)
        return (CatalogPrefilter(conditions), exact)
    }

    /// The library column of an MPD tag, nil for tags Tutti does not keep.
    static func column(_ tag: String) -> CatalogColumn? {
        switch tag {
        case "Title": .title
        case "Artist": .artist
        case "Album": .album
        case "AlbumArtist": .albumArtist
        case "Genre": .genre
        case "Track": .trackNumber
        case "Disc": .discNumber
        case "Date": .year
        default: nil
        }
    }
}
