import FoundationEssentials
import Glibc
import TuttiCore
import TuttiSystem
import TuttiLibrary
import TuttiControlKit

/// MPD commands: The library: search, find, list, lsinfo and the song blocks they answer with.
extension MPDServer {
    // MARK: Library

    static let libraryCommands: [MPDCommandSpec] = [
        MPDCommandSpec("find", 1...64) { s, c, r throws(MPDError) in try s.findCommand(c.command, client: c.client, into: &r) },
        MPDCommandSpec("search", 1...64) { s, c, r throws(MPDError) in try s.findCommand(c.command, client: c.client, into: &r) },
        MPDCommandSpec("findadd", 1...64) { s, c, r throws(MPDError) in try s.findCommand(c.command, client: c.client, into: &r) },
        MPDCommandSpec("searchadd", 1...64) { s, c, r throws(MPDError) in try s.findCommand(c.command, client: c.client, into: &r) },
        MPDCommandSpec("searchaddpl", 2...64) { s, c, r throws(MPDError) in try s.findCommand(c.command, client: c.client, into: &r) },
        MPDCommandSpec("count", 1...64) { s, c, r throws(MPDError) in try s.findCommand(c.command, client: c.client, into: &r) },
        MPDCommandSpec("list", 1...64) { s, c, r throws(MPDError) in try s.list(c.args, into: &r) },
        MPDCommandSpec("listall", 0...1) { s, c, r throws(MPDError) in
            try s.listAll(c.args.first ?? "", withTags: false, client: c.client, into: &r)
        },
        MPDCommandSpec("listallinfo", 0...1) { s, c, r throws(MPDError) in
            try s.listAll(c.args.first ?? "", withTags: true, client: c.client, into: &r)
        },
        MPDCommandSpec("lsinfo", 0...1) { s, c, r throws(MPDError) in
            try s.lsinfo(c.args.first ?? "", withTags: true, client: c.client, into: &r)
        },
        MPDCommandSpec("listfiles", 0...1) { s, c, r throws(MPDError) in
            try s.lsinfo(c.args.first ?? "", withTags: false, client: c.client, into: &r)
        },
        MPDCommandSpec("update", 0...1) { s, _, r throws(MPDError) in try s.update(into: &r) },
        MPDCommandSpec("rescan", 0...1) { s, _, r throws(MPDError) in try s.update(into: &r) },
        MPDCommandSpec("albumart", 2...2) { s, c, r throws(MPDError) in
            try s.picture(uri: c.args[0], offset: c.args[1], embeddedOnly: false, client: c.client, into: &r)
        },
        MPDCommandSpec("readpicture", 2...2) { s, c, r throws(MPDError) in
            try s.picture(uri: c.args[0], offset: c.args[1], embeddedOnly: true, client: c.client, into: &r)
        },
    ]

    // MARK: Songs

    /// A song block: file, Last-Modified, tags, Time, duration, Pos, Id.
    func write(_ song: MPDSong, position: Int? = nil, id: UInt32? = nil, client: MPDClient, into r: inout MPDResponse) {
        r.add("file", song.uri)
        if let m = song.modified { r.add("Last-Modified", date: m) }
        for tag in MPDTags.all where client.tagTypes.contains(tag) {
            if let v = song.tags[tag] { r.add(tag, v) }
        }
        if let d = song.durationSeconds {
            r.add("Time", Int(d.rounded()))
            r.add("duration", seconds: d)
        }
        if let position { r.add("Pos", position) }
        if let id { r.add("Id", Int(id)) }
    }

    /// The same block as `write(_:)` for a library row, written straight
    /// from its fields (a search answer may hold 100,000 of them).
    func write(_ c: CatalogSong, client: MPDClient, into r: inout MPDResponse) {
        r.add("file", catalog.uri(forPath: c.path))
        r.add("Last-Modified", date: c.modifiedSeconds)
        let t = client.shownTags // MPDTags.all: Artist, AlbumArtist, Title, Album, Track, Disc, Genre, Date
        if let v = c.artist, t[0] { r.add("Artist", v) }
        if let v = c.albumArtist, t[1] { r.add("AlbumArtist", v) }
        if t[2] { r.add("Title", c.title) }
        if let v = c.album, t[3] { r.add("Album", v) }
        if let v = c.trackNumber, t[4] { r.add("Track", v) }
        if let v = c.discNumber, t[5] { r.add("Disc", v) }
        if let v = c.genre, t[6] { r.add("Genre", v) }
        if let v = c.year, t[7] { r.add("Date", v) }
        if c.durationSeconds > 0 {
            r.add("Time", Int(c.durationSeconds.rounded()))
            r.add("duration", seconds: c.durationSeconds)
        }
        r.streamIfLarge()
    }

    /// The same block again, straight from a row's bytes: for answers of
    /// every matching song (`find`, `search`), where it is most of the work.
    func write(_ row: CatalogRow, rootPrefix: [UInt8], client: MPDClient, into r: inout MPDResponse) {
        guard let path = row.unsafeBytes(.path) else { return }
        let inRoot = !rootPrefix.isEmpty && path.count > rootPrefix.count
            && rootPrefix.withUnsafeBufferPointer { memcmp($0.baseAddress!, path.baseAddress!, $0.count) == 0 }
        let file = UnsafeBufferPointer(rebasing: path[(inRoot ? rootPrefix.count : 0)...])
        let bits = client.shownTagBits // MPDTags.all: Artist, AlbumArtist, Title, Album, Track, Disc, Genre, Date
        func t(_ i: UInt8) -> Bool { bits & (1 << i) != 0 }
        let artist = t(0) ? row.unsafeBytes(.artist) : nil
        let albumArtist = t(1) ? row.unsafeBytes(.albumArtist) : nil
        let title = t(2) ? row.unsafeBytes(.title) : nil
        let album = t(3) ? row.unsafeBytes(.album) : nil
        let genre = t(6) ? row.unsafeBytes(.genre) : nil
        let texts = file.count + (artist?.count ?? 0) + (albumArtist?.count ?? 0) + (title?.count ?? 0) + (album?.count ?? 0) + (genre?.count ?? 0)
        // Twelve lines at most, each with a key of at most 16 bytes and a value (text, or a number of at most numberBytes).
        r.compose(capacity: texts + 12 * (16 + LineComposer.lineBytes + LineComposer.numberBytes)) { l in
            l.line("file", file)
            l.line("Last-Modified", date: row.modifiedSeconds)
            if let artist { l.line("Artist", artist) }
            if let albumArtist { l.line("AlbumArtist", albumArtist) }
            if let title { l.line("Title", title) }
            if let album { l.line("Album", album) }
            if t(4), let v = row.trackNumber { l.line("Track", v) }
            if t(5), let v = row.discNumber { l.line("Disc", v) }
            if let genre { l.line("Genre", genre) }
            if t(7), let v = row.year { l.line("Date", v) }
            let d = row.durationSeconds
            if d > 0 {
                l.line("Time", Int(d.rounded()))
                l.line("duration", seconds: d)
            }
        }
    }

    func writeQueue(_ queue: PlayQueue, range: Range<Int>, client: MPDClient, into r: inout MPDResponse) {
        for i in range where queue.entries.indices.contains(i) {
            write(catalog.song(forQueueURI: queue.entries[i].uri), position: i, id: queue.entries[i].id, client: client, into: &r)
        }
    }

    /// `2024-05-01T12:00:00Z` (`MPDResponse.appendISO8601`).
    static func iso8601(_ seconds: Int64) -> String {
        var out: [UInt8] = []
        MPDResponse.appendISO8601(seconds, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Library helpers

    /// Splits trailing `sort TAG`, `window START:END` and `group TAG` off a filter's arguments.
    func splitModifiers(_ args: [String]) -> (filter: [String], sort: String?, window: String?, groups: [String]) {
        var filter: [String] = []
        var sort: String?, window: String?
        var groups: [String] = []
        var i = 0
        while i < args.count {
            let a = args[i].lowercased()
            if i + 1 < args.count, !args[i].hasPrefix("(") && (a == "sort" || a == "window" || a == "group") {
                switch a {
                case "sort": sort = args[i + 1]
                case "window": window = args[i + 1]
                default: groups.append(args[i + 1])
                }
                i += 2
            } else if args[i].hasPrefix("(") {
                filter.append(args[i]); i += 1
            } else {
                filter.append(args[i])
                if i + 1 < args.count { filter.append(args[i + 1]) }
                i += 2
            }
        }
        return (filter, sort, window, groups)
    }

    /// find, search, count, findadd, searchadd, searchaddpl: the filter
    /// goes to SQLite as far as it can (`MPDCatalog.prefilter`), songs come
    /// back in path order and are written as they come. A window is applied
    /// by SQLite when the prefilter is the whole filter, and otherwise stops
    /// the reading at its end: `window 0:50` reads 50 songs, not all.
    func findCommand(_ command: MPDCommand, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
        var args = command.arguments
        var playlistName: String?
        if command.name == "searchaddpl" { playlistName = args.removeFirst() }
        let parts = splitModifiers(args)
        let exact = command.name.hasPrefix("find") || command.name == "count"
        let filter = try MPDFilter.parse(parts.filter, exact: exact)
        guard let library = catalog.library, catalog.root != nil else {
            if command.name == "count" { r.add("songs", 0); r.add("playtime", 0) }
            return
        }
        let (prefilter, complete) = catalog.prefilter(filter, foldCase: !exact)
        var window: Range<Int>?
        if let w = parts.window {
            window = try MPDArguments.range(w, count: Int.max)
        }
        func libraryError(_ e: LibraryError) -> MPDError { .system(e.description) }

        if command.name == "count" {
            if complete {
                let n: (songs: Int, seconds: Double)
                do { n = try library.catalogCount(prefilter) } catch { throw libraryError(error) }
                r.add("songs", n.songs)
                r.add("playtime", Int(n.seconds))
            } else {
                var songs = 0
                var seconds = 0.0
                do {
                    try library.catalogSongs(prefilter) { c in
                        if filter.matches(catalog.song(c), foldCase: !exact) { songs += 1; seconds += c.durationSeconds }
                        return true
                    }
                } catch { throw libraryError(error) }
                r.add("songs", songs)
                r.add("playtime", Int(seconds))
            }
            return
        }

        // Songs in order, window applied; `body` returns false to stop.
        func each(_ body: (CatalogSong) -> Bool) throws(MPDError) {
            do {
                if complete {
                    let offset = window?.lowerBound ?? 0
                    let limit = window.map { $0.upperBound - $0.lowerBound }
                    try library.catalogSongs(prefilter, offset: offset, limit: limit, visit: body)
                } else {
                    var index = 0
                    try library.catalogSongs(prefilter) { c in
                        guard filter.matches(catalog.song(c), foldCase: !exact) else { return true }
                        defer { index += 1 }
                        if let window {
                            if index < window.lowerBound { return true }
                            if index >= window.upperBound { return false }
                        }
                        return body(c)
                    }
                }
            } catch { throw libraryError(error) }
        }

        func finish(_ paths: [String], songs: [MPDSong]) throws(MPDError) {
            switch command.name {
            case "find", "search":
                for song in songs { write(song, client: client, into: &r); r.streamIfLarge() }
            case "findadd", "searchadd":
                if !paths.isEmpty { _ = try add(paths, at: nil) }
            default:
                var tracks: [TrackID] = []
                for p in paths { if let id = try libraryTrackID(path: p) { tracks.append(id) } }
                try libraryCall { l throws(LibraryError) in
                    let id = try self.playlistCreatingIfNeeded(playlistName!, l)
                    if !tracks.isEmpty { try l.addToPlaylist(id, tracks: tracks) }
                }
                leader.events.emit(.playlists)
            }
        }

        if let sortTag = parts.sort {
            // Sorting needs every match first (as in MPD).
            let descending = sortTag.hasPrefix("-")
            let name = descending ? String(sortTag.dropFirst()) : sortTag
            guard let tag = MPDTags.canonical(name) else { throw .argument("Unknown sort tag: \(name)") }
            var songs: [MPDSong] = []
            let sortWindow = window
            window = nil
            try each { c in songs.append(catalog.song(c)); return true }
            songs.sort { a, b in
                let x = a.tags[tag] ?? "", y = b.tags[tag] ?? ""
                if tag == "Track" || tag == "Disc" || tag == "Date", let i = Int(x), let j = Int(y), i != j { return descending ? i > j : i < j }
                return descending ? x > y : x < y
            }
            if let w = sortWindow { songs = Array(songs[w.clamped(to: 0..<songs.count)]) }
            try finish(songs.compactMap(\.path), songs: songs)
            return
        }

        let writesEverySong = command.name == "find" || command.name == "search"
        switch command.name {
        case _ where writesEverySong && complete:
            // The common case, and the largest answers: rows written as bytes, sent between pages.
            let rootPrefix = Array(((catalog.root ?? "") + "/").utf8)
            do {
                try library.catalogRows(prefilter, offset: window?.lowerBound ?? 0, limit: window.map { $0.upperBound - $0.lowerBound },
                                        row: { row in write(row, rootPrefix: rootPrefix, client: client, into: &r) },
                                        afterPage: { r.streamIfLarge() })
            } catch { throw libraryError(error) }
        case "find", "search":
            try each { c in write(c, client: client, into: &r); return true }
        default:
            var paths: [String] = []
            try each { c in paths.append(c.path); return true }
            try finish(paths, songs: [])
        }
    }

    /// `list TYPE [FILTER…] [group TAG…]`; the legacy `list album ARTIST` too.
    /// Distinct values come from SQLite's indexes when the filter is one it
    /// applies whole; `list albumartist` falls back to the artist, as MPD's does.
    func list(_ args: [String], into r: inout MPDResponse) throws(MPDError) {
        let typeName = args[0]
        var rest = Array(args.dropFirst())
        let isFile = typeName.lowercased() == "file"
        guard isFile || MPDTags.canonical(typeName) != nil else { throw .argument("Unknown tag type: \(typeName)") }
        let type = isFile ? "file" : MPDTags.canonical(typeName)!
        if type == "Album", rest.count == 1, !rest[0].hasPrefix("(") { rest = ["artist", rest[0]] }
        let parts = splitModifiers(rest)
        let filter = try MPDFilter.parse(parts.filter, exact: true)
        let groups = try parts.groups.map { g throws(MPDError) -> String in
            guard let t = MPDTags.canonical(g) else { throw .argument("Unknown tag type: \(g)") }
            return t
        }
        guard let library = catalog.library, catalog.root != nil else { return }
        let (prefilter, complete) = catalog.prefilter(filter, foldCase: false)
        func column(_ tag: String) -> CatalogColumn? { tag == "AlbumArtist" ? .albumArtistOrArtist : MPDCatalog.column(tag) }
        let group = groups.first
        if type != "file", let valueColumn = column(type), complete, group.map({ column($0) != nil }) ?? true {
            let rows: [(group: String?, value: String)]
            do { rows = try library.catalogValues(valueColumn, group: group.flatMap(column), prefilter) } catch { throw .system(error.description) }
            var lastGroup: String?
            for row in rows {
                if let group, let g = row.group, g != lastGroup { r.add(group, g); lastGroup = g }
                r.add(type, row.value)
                r.streamIfLarge()
            }
            return
        }
        // Tags Tutti does not keep, or a filter SQLite cannot apply whole: song by song.
        func value(_ song: MPDSong, _ tag: String) -> String? {
            if tag == "file" { return song.uri }
            if tag == "AlbumArtist" { return song.tags["AlbumArtist"] ?? song.tags["Artist"] }
            return song.tags[tag]
        }
        var byGroup: [String: Set<String>] = [:]
        var plain = Set<String>()
        do {
            try library.catalogSongs(prefilter) { c in
                let s = catalog.song(c)
                guard complete || filter.matches(s, foldCase: false), let v = value(s, type) else { return true }
                if let group { byGroup[value(s, group) ?? "", default: []].insert(v) } else { plain.insert(v) }
                return true
            }
        } catch { throw .system(error.description) }
        if let group {
            for g in byGroup.keys.sorted() {
                r.add(group, g)
                for v in byGroup[g]!.sorted() { r.add(type, v) }
            }
        } else {
            for v in plain.sorted() where !v.isEmpty { r.add(type, v) }
        }
    }

    func lsinfo(_ uri: String, withTags: Bool, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
        if !uri.isEmpty, let library = catalog.library, let c = try? library.catalogSong(path: catalog.path(forURI: uri)) {
            if withTags { write(c, client: client, into: &r) } else { r.add("file", uri) }
            return
        }
        let dir = MPDCatalog.folder(uri)
        guard catalog.hasFolder(dir), let library = catalog.library, let folder = catalog.absoluteFolder(dir) else {
            throw .noExist("No such directory")
        }
        let prefix = dir.isEmpty ? "" : dir + "/"
        do {
            if withTags {
                // Songs written from the rows' bytes, sent between pages.
                let rootPrefix = Array(((catalog.root ?? "") + "/").utf8)
                try library.catalogFolderRows(folder, subfolder: { r.add("directory", prefix + $0) },
                                              row: { write($0, rootPrefix: rootPrefix, client: client, into: &r) },
                                              afterPage: { r.streamIfLarge() })
            } else {
                try library.catalogFolder(folder) { entry in
                    switch entry {
                    case .folder(let name): r.add("directory", prefix + name)
                    case .song(let c): r.add("file", String(catalog.uri(forPath: c.path).dropFirst(prefix.count)))
                    }
                }
            }
        } catch { throw .system(error.description) }
        if dir.isEmpty && withTags, let playlists = try? library.playlists() {
            for p in playlists {
                r.add("playlist", p.name)
                r.add("Last-Modified", Self.iso8601(p.updatedAt / 1000))
            }
        }
    }

    /// `listall`/`listallinfo`: every song under a folder, each folder named once before its songs.
    func listAll(_ uri: String, withTags: Bool, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
        if !uri.isEmpty, let library = catalog.library, let c = try? library.catalogSong(path: catalog.path(forURI: uri)) {
            if withTags { write(c, client: client, into: &r) } else { r.add("file", catalog.uri(forPath: c.path)) }
            return
        }
        let dir = MPDCatalog.folder(uri)
        guard catalog.hasFolder(dir), let library = catalog.library, let folder = catalog.absoluteFolder(dir) else {
            throw .noExist("No such directory")
        }
        var lastFolder = dir
        do {
            try library.catalogSongs(dir.isEmpty ? CatalogPrefilter() : CatalogPrefilter([.under(folder)])) { c in
                let songURI = catalog.uri(forPath: c.path)
                let parent = songURI.lastIndex(of: "/").map { String(songURI[..<$0]) } ?? ""
                if parent != lastFolder {
                    // The folders between the last one shown and this one (path order: parents come first).
                    var parents: [String] = []
                    var d = parent
                    while d.count > dir.count, !(lastFolder == d || lastFolder.hasPrefix(d + "/")) {
                        parents.append(d)
                        guard let slash = d.lastIndex(of: "/") else { break }
                        d = String(d[..<slash])
                    }
                    for p in parents.reversed() { r.add("directory", p) }
                    lastFolder = parent
                }
                if withTags { write(c, client: client, into: &r) } else { r.add("file", songURI); r.streamIfLarge() }
                return true
            }
        } catch { throw .system(error.description) }
    }

    func update(into r: inout MPDResponse) throws(MPDError) {
        guard let library = catalog.library, let folder = leader.surfaceSettings.musicDirectory else {
            throw .system("No music folder configured")
        }
        let running = updateJob.load(ordering: .relaxed)
        if running > 0 { r.add("updating_db", running); return }
        let job = nextUpdateJob.add(1, ordering: .relaxed).oldValue
        // One update at a time, however many clients ask at once: each would be a thread.
        let (claimed, other) = updateJob.compareExchange(expected: 0, desired: job, ordering: .relaxed)
        if !claimed { r.add("updating_db", other); return }
        do {
            try startUpdate(library: library, folder: folder)
        } catch {
            updateJob.store(0, ordering: .relaxed)
            throw .system("cannot update now: \(error)")
        }
        r.add("updating_db", job)
        notify([.update])
    }

    private func startUpdate(library: Library, folder: String) throws(ThreadError) {
        try startThread(name: "tutti-mpd-update") { [self] in
            do {
                let summary = try library.scan(folder: folder)
                log.info("MPD update of \(folder): \(summary)")
            } catch {
                log.error("MPD update of \(folder): \(error)")
            }
            updateJob.store(0, ordering: .relaxed)
            leader.events.emit(.library)
        }
    }

    func picture(uri: String, offset text: String, embeddedOnly: Bool, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
        let offset = try MPDArguments.unsigned(text)
        let found = try resolveConfined(uri)
        guard found.count == 1, let item = found.first else { throw .noExist("No such song") }
        var image: (mime: String, bytes: [UInt8])?
        if let hash = item.song.coverHash, let library = catalog.library, let cover = try? library.cover(hash: hash) {
            image = (cover.mime, cover.bytes)
        }
        if image == nil, !embeddedOnly {
            // MPD's albumart reads cover files beside the song.
            let folder = PathText.parent(item.path)
            for name in ["cover.png", "cover.jpg", "cover.jpeg", "cover.webp", "folder.png", "folder.jpg", "folder.jpeg"] {
                if let data = FileManager.default.contents(atPath: folder + "/" + name) {
                    image = (name.hasSuffix("png") ? "image/png" : name.hasSuffix("webp") ? "image/webp" : "image/jpeg", Array(data))
                    break
                }
            }
        }
        guard let image else {
            if embeddedOnly { return } // readpicture: an empty answer means "no picture"
            throw .noExist("No file exists")
        }
        guard offset <= image.bytes.count else { throw .argument("Bad file offset") }
        r.add("size", image.bytes.count)
        // The type the bytes show, never what a tag declared (which could hold any text, even a line break).
        if embeddedOnly, let type = ImageType.sniff(image.bytes) { r.add("type", type.mime) }
        let end = min(image.bytes.count, offset + client.binaryLimit)
        r.addBinary(image.bytes[offset..<end])
    }
}
