import FoundationEssentials
import TuttiCore
import TuttiSystem
import TuttiLibrary
import TuttiControlKit

/// JSON-RPC methods for the library: scan, search, recent searches,
/// favourites, history, playlists; and what `queue.add` can take from it.
extension ControlServer {
    func library() throws -> Library {
        guard let library = leader.library else {
            throw RPCError(code: -32000, UserMessage(.libraryNone))
        }
        return library
    }

    static func trackObject(_ t: Track) -> [String: JSONValue] {
        var o: [String: JSONValue] = ["id": .int(t.id.rawValue), "path": .string(t.path), "title": .string(t.title),
                                      "duration": .number((t.durationSeconds * 1000).rounded() / 1000), "format": .string(t.format.rawValue)]
        if let v = t.artist { o["artist"] = .string(v) }
        if let v = t.album { o["album"] = .string(v) }
        if let v = t.albumArtist { o["albumArtist"] = .string(v) }
        if let v = t.genre { o["genre"] = .string(v) }
        if let v = t.trackNumber { o["trackNumber"] = .int(v) }
        if let v = t.discNumber { o["discNumber"] = .int(v) }
        if let v = t.year { o["year"] = .int(v) }
        if let v = t.coverHash { o["coverHash"] = .string(v) }
        return o
    }

    /// Tracks as `trackObject` encodes them (keys in byte order), written
    /// straight into bytes: a search's page without a dictionary per track
    /// and the sorting of its keys, which were half of a ranked search's CPU.
    static func encodeTracks(_ tracks: [Track]) -> EncodedJSON {
        var out: [UInt8] = []
        out.reserveCapacity(64 + tracks.count * 400)
        out.append(UInt8(ascii: "["))
        for (i, t) in tracks.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            var first = true
            func key(_ name: StaticString) {
                out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
                first = false
                out.append(UInt8(ascii: "\""))
                out.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
                out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
            }
            func text(_ name: StaticString, _ v: String?) {
                guard let v else { return }
                key(name)
                JSONValue.appendString(v, to: &out)
            }
            func number(_ name: StaticString, _ v: Int?) {
                guard let v else { return }
                key(name)
                JSONValue.appendInteger(Int64(v), to: &out)
            }
            text("album", t.album)
            text("albumArtist", t.albumArtist)
            text("artist", t.artist)
            text("coverHash", t.coverHash)
            number("discNumber", t.discNumber)
            key("duration")
            let duration = (t.durationSeconds * 1000).rounded() / 1000
            JSONValue.appendNumber(duration.isFinite ? duration : 0, to: &out)
            text("format", t.format.rawValue)
            text("genre", t.genre)
            number("id", Int(t.id.rawValue))
            text("path", t.path)
            text("title", t.title)
            number("trackNumber", t.trackNumber)
            number("year", t.year)
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: "]"))
        return EncodedJSON(bytes: out)
    }

    private func string(_ params: [String: JSONValue], _ key: String, method: String, max: Int = 4_096) throws -> String {
        guard let s = params[key]?.string, !s.isEmpty, s.utf8.count <= max else {
            throw RPCError(code: -32602, message: "\(method) needs \"\(key)\": a non-empty string of at most \(max) bytes")
        }
        return s
    }

    private func integer(_ params: [String: JSONValue], _ key: String, method: String, default value: Int? = nil, range: ClosedRange<Int> = 0...Int(Int32.max)) throws -> Int {
        guard let raw = params[key] else {
            if let value { return value }
            throw RPCError(code: -32602, message: "\(method) needs \"\(key)\" (an integer)")
        }
        guard let n = raw.integer, range.contains(n) else {
            throw RPCError(code: -32602, message: "\(key) must be an integer in \(range.lowerBound)…\(range.upperBound)")
        }
        return n
    }

    private func wrap<T>(_ body: () throws(LibraryError) -> T) throws -> T {
        do { return try body() } catch { throw RPCError(code: -32000, error.message) }
    }

    /// The track heard now, for like/unlike without an id.
    private func currentTrack(_ library: Library) throws -> Track {
        let path = leader.nowPlaying.path
        guard !path.isEmpty, let track = try wrap({ () throws(LibraryError) in try library.track(atPath: path) }) else {
            throw RPCError(code: -32000, UserMessage(.libraryNothingPlaying))
        }
        return track
    }

    /// Resolves what `queue.add` was given into URIs: `uris`, `trackIds`,
    /// `album` (+ `albumArtist`), `playlist` (id) or `search` (query).
    func urisToAdd(_ params: [String: JSONValue]) throws -> [String]? {
        if let uris = params["uris"] { return uris.strings }
        if params["trackIds"] != nil || params["album"] != nil || params["playlist"] != nil || params["search"] != nil {
            let library = try library()
            if let ids = params["trackIds"]?.integers {
                return try ids.map { id in
                    guard let t = try wrap({ () throws(LibraryError) in try library.track(TrackID(Int64(id))) }) else {
                        throw RPCError(code: -32000, UserMessage(.libraryNoTrack, ["id": "\(id)"]))
                    }
                    return t.path
                }
            }
            if let album = params["album"]?.string {
                let artist = params["albumArtist"]?.string
                return try wrap { () throws(LibraryError) in try library.albumTracks(album: album, albumArtist: artist) }.map(\.path)
            }
            if params["playlist"] != nil {
                let id = PlaylistID(Int64(try integer(params, "playlist", method: "queue.add")))
                return try wrap { () throws(LibraryError) in try library.entries(of: id) }.map(\.track.path)
            }
            if let query = params["search"]?.string {
                return try wrap { () throws(LibraryError) in try library.search(query, limit: 500) }.tracks.map(\.path)
            }
            throw RPCError(code: -32602, message: "trackIds must be a list of integers")
        }
        return nil
    }

    private func artistsObject(_ lib: Library) throws -> JSONValue {
        ["artists": .array(try wrap { () throws(LibraryError) in try lib.artists() }.map {
            ["name": .string($0.name), "albums": .int($0.albums), "tracks": .int($0.tracks)]
        })]
    }

    private func genresObject(_ lib: Library) throws -> JSONValue {
        ["genres": .array(try wrap { () throws(LibraryError) in try lib.genres() }.map {
            ["name": .string($0.name), "albums": .int($0.albums), "tracks": .int($0.tracks)]
        })]
    }

    private func albumsObject(_ lib: Library, artist: String?, genre: String? = nil) throws -> JSONValue {
        ["albums": .array(try wrap { () throws(LibraryError) in try lib.albums(artist: artist, genre: genre) }.map { a -> JSONValue in
            var o: [String: JSONValue] = ["name": .string(a.name), "tracks": .int(a.tracks)]
            if let v = a.artist { o["artist"] = .string(v) }
            if let v = a.year { o["year"] = .int(v) }
            if let v = a.coverHash { o["coverHash"] = .string(v) }
            return .object(o)
        })]
    }

    /// A whole-library list, encoded once per library version: with
    /// 100,000 tracks reading and encoding it takes a few hundred
    /// milliseconds, answering it again a copy.
    private func browseList(_ key: String, _ lib: Library, _ make: () throws -> JSONValue) throws -> EncodedJSON {
        let version = lib.contentVersion
        if let hit = browseCache.withLock({ $0[key] }), hit.version == version { return hit.json }
        let json = EncodedJSON(try make())
        browseCache.withLock { $0[key] = (version, json) }
        return json
    }

    /// Makes the lists again after the library changed, so the web app's
    /// next look at them is a copy.
    func warmBrowseCache() {
        guard let lib = leader.library else { return }
        // One warming thread at a time: changes while it works make it go round once more.
        guard browseWarming.add(1, ordering: .acquiringAndReleasing).oldValue == 0 else { return }
        do {
            try startThread(name: "tutti-browse") { [self] in
                while true {
                    let seen = browseWarming.load(ordering: .acquiring)
                    _ = try? browseList("artists", lib) { try self.artistsObject(lib) }
                    _ = try? browseList("albums", lib) { try self.albumsObject(lib, artist: nil) }
                    _ = try? browseList("genres", lib) { try self.genresObject(lib) }
                    if browseWarming.compareExchange(expected: seen, desired: 0, ordering: .acquiringAndReleasing).exchanged { return }
                }
            }
        } catch {
            browseWarming.store(0, ordering: .releasing) // the lists are made on the next look instead
        }
    }

    /// Library methods; nil if `method` is not one of them.
    func dispatchLibrary(_ method: String, _ params: [String: JSONValue]) throws -> RPCResult? {
        let prefixes = ["library.", "searches.", "favourites.", "history.", "playlists."]
        guard prefixes.contains(where: method.hasPrefix) else { return nil }
        let lib = try library()
        switch method {
        case "library.scan":
            let library = lib
            guard let folder = params["folder"]?.string ?? leader.surfaceSettings.musicDirectory else {
                throw RPCError(code: -32602, message: "library.scan needs \"folder\" (no --music folder was given)")
            }
            try confined(folder)
            // Progress goes out as `library.scanProgress` notifications, at most ten a second.
            var lastSent: Int64 = 0
            let summary = try wrap { () throws(LibraryError) in
                try library.scan(folder: folder) { progress in
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    guard now - lastSent >= 100 || progress.done == progress.total else { return }
                    lastSent = now
                    self.notify("library.scanProgress", ["done": .int(progress.done), "total": .int(progress.total), "path": .string(progress.currentPath)])
                }
            }
            leader.events.emit(.library)
            leader.dropMissingFilesFromQueue()
            return .value(["added": .int(summary.added), "updated": .int(summary.updated), "unchanged": .int(summary.unchanged),
                           "removed": .int(summary.removed), "moved": .int(summary.moved),
                           "skipped": .array(summary.skipped.map { ["path": .string($0.path), "reason": "\($0.reason)"] }),
                           "seconds": .number((summary.elapsedSeconds * 1000).rounded() / 1000), "summary": .string(summary.description)])
        case "library.stats":
            let library = lib
            return .value(["tracks": .int(try wrap { () throws(LibraryError) in try library.trackCount() }),
                           "covers": .int(try wrap { () throws(LibraryError) in try library.coverCount() })])
        case "library.search":
            let library = lib
            let query = try string(params, "query", method: method, max: 1_024)
            let limit = try integer(params, "limit", method: method, default: 50, range: 1...500)
            let offset = try integer(params, "offset", method: method, default: 0, range: 0...1_000_000)
            let results = try wrap { () throws(LibraryError) in try library.search(query, limit: limit, offset: offset) }
            if params["record"]?.bool ?? params["record"]?.number.map({ $0 != 0 }) ?? false {
                try wrap { () throws(LibraryError) in try library.recordSearch(query) }
            }
            return .object(["query": .string(query), "offset": .int(offset), "hasMore": .bool(results.hasMore)],
                           encoded: ["tracks": Self.encodeTracks(results.tracks)])
        case "library.track":
            let library = lib
            let track: Track?
            if let path = params["path"]?.string { track = try wrap { () throws(LibraryError) in try library.track(atPath: path) } } else {
                let id = TrackID(Int64(try integer(params, "id", method: method)))
                track = try wrap { () throws(LibraryError) in try library.track(id) }
            }
            guard let track else { throw RPCError(code: -32000, UserMessage(.libraryNoSuchTrack)) }
            var o = Self.trackObject(track)
            o["liked"] = .bool(try wrap { () throws(LibraryError) in try library.isLiked(track.id) })
            return .value(.object(o))
        case "searches.recent":
            return .value(["searches": .strings(try wrap { () throws(LibraryError) in try lib.recentSearches() })])
        case "searches.record":
            let library = lib
            let query = try string(params, "query", method: method, max: 1_024)
            try wrap { () throws(LibraryError) in try library.recordSearch(query) }
            return .value(["searches": .strings(try wrap { () throws(LibraryError) in try library.recentSearches() })])
        case "searches.clear":
            try wrap { () throws(LibraryError) in try lib.clearRecentSearches() }
            return .value(["searches": []])
        case "favourites.like", "favourites.unlike":
            let library = lib
            let track: Track
            if params["id"] == nil { track = try currentTrack(library) } else {
                let id = TrackID(Int64(try integer(params, "id", method: method)))
                guard let t = try wrap({ () throws(LibraryError) in try library.track(id) }) else {
                    throw RPCError(code: -32000, UserMessage(.libraryNoTrack, ["id": "\(id.rawValue)"]))
                }
                track = t
            }
            if method == "favourites.like" { try wrap { () throws(LibraryError) in try library.like(track.id) } } else {
                try wrap { () throws(LibraryError) in try library.unlike(track.id) }
            }
            return .value(["id": .int(track.id.rawValue), "title": .string(track.title), "liked": .bool(method == "favourites.like")])
        case "favourites.list":
            let library = lib
            return .value(["favourites": .array(try wrap { () throws(LibraryError) in try library.favourites() }.map { f -> JSONValue in
                var o = Self.trackObject(f.track); o["likedAt"] = .int(f.likedAt); return .object(o)
            })])
        case "history.list":
            let library = lib
            let limit = try integer(params, "limit", method: method, default: 100, range: 1...10_000)
            return .value(["plays": .array(try wrap { () throws(LibraryError) in try library.history(limit: limit) }.map { p -> JSONValue in
                var o = Self.trackObject(p.track); o["startedAt"] = .int(p.startedAt); o["playedMs"] = .int(p.playedMilliseconds); return .object(o)
            })])
        case "playlists.list":
            return .value(["playlists": .array(try wrap { () throws(LibraryError) in try lib.playlists() }.map {
                ["id": .int($0.id.rawValue), "name": .string($0.name), "entries": .int($0.entryCount)]
            })])
        case "playlists.create":
            let name = try string(params, "name", method: method, max: 256)
            let p = try wrap { () throws(LibraryError) in try lib.createPlaylist(named: name) }
            leader.events.emit(.playlists)
            return .value(["id": .int(p.id.rawValue), "name": .string(p.name)])
        case "playlists.rename":
            let id = PlaylistID(Int64(try integer(params, "id", method: method)))
            let name = try string(params, "name", method: method, max: 256)
            try wrap { () throws(LibraryError) in try lib.renamePlaylist(id, to: name) }
            leader.events.emit(.playlists)
            return .value(["id": .int(id.rawValue), "name": .string(name)])
        case "playlists.delete":
            let id = PlaylistID(Int64(try integer(params, "id", method: method)))
            try wrap { () throws(LibraryError) in try lib.deletePlaylist(id) }
            leader.events.emit(.playlists)
            return .value(["id": .int(id.rawValue), "deleted": true])
        case "playlists.entries":
            let id = PlaylistID(Int64(try integer(params, "id", method: method)))
            return .value(["entries": .array(try wrap { () throws(LibraryError) in try lib.entries(of: id) }.map { e -> JSONValue in
                var o = Self.trackObject(e.track); o["index"] = .int(e.index); return .object(o)
            })])
        case "playlists.add":
            let library = lib
            let id = PlaylistID(Int64(try integer(params, "id", method: method)))
            guard let ids = params["trackIds"]?.integers, !ids.isEmpty else {
                throw RPCError(code: -32602, message: "playlists.add needs \"trackIds\": a non-empty list of track ids")
            }
            let at = params["at"] == nil ? nil : try integer(params, "at", method: method)
            try wrap { () throws(LibraryError) in try library.addToPlaylist(id, tracks: ids.map { TrackID(Int64($0)) }, at: at) }
            leader.events.emit(.playlists)
            return .value(["id": .int(id.rawValue), "added": .int(ids.count)])
        case "playlists.remove":
            let id = PlaylistID(Int64(try integer(params, "id", method: method)))
            let index = try integer(params, "index", method: method)
            try wrap { () throws(LibraryError) in try lib.removeFromPlaylist(id, at: index) }
            leader.events.emit(.playlists)
            return .value(["id": .int(id.rawValue), "removed": .int(index)])
        case "playlists.move":
            let id = PlaylistID(Int64(try integer(params, "id", method: method)))
            let from = try integer(params, "from", method: method), to = try integer(params, "to", method: method)
            try wrap { () throws(LibraryError) in try lib.moveInPlaylist(id, from: from, to: to) }
            leader.events.emit(.playlists)
            return .value(["id": .int(id.rawValue), "from": .int(from), "to": .int(to)])
        case "playlists.saveQueue":
            let library = lib
            let name = try string(params, "name", method: method, max: 256)
            let group = params["group"]?.string
            let queue: PlayQueue
            do { queue = try group.map { g throws(PlayerError) in try leader.queue(group: g) } ?? leader.queue } catch {
                throw RPCError(code: -32602, error.message)
            }
            let paths = queue.entries.map(\.uri)
            var ids: [TrackID] = []
            var notInLibrary: [String] = []
            for path in paths {
                if let t = try wrap({ () throws(LibraryError) in try library.track(atPath: path) }) { ids.append(t.id) } else { notInLibrary.append(path) }
            }
            let p = try wrap { () throws(LibraryError) in try library.createPlaylist(named: name) }
            if !ids.isEmpty { try wrap { () throws(LibraryError) in try library.addToPlaylist(p.id, tracks: ids) } }
            leader.events.emit(.playlists)
            return .value(["id": .int(p.id.rawValue), "name": .string(name), "entries": .int(ids.count), "notInLibrary": .strings(notInLibrary)])
        case "playlists.import":
            let report: M3UImportReport
            if let content = params["content"]?.string {
                // Uploaded text (the web app): relative entries are taken from the music folder.
                guard content.utf8.count <= 1 << 20 else { throw RPCError(code: -32602, message: "content is over 1 MiB; an M3U of that size is not a playlist") }
                let name = try string(params, "name", method: method, max: 256)
                let base = leader.surfaceSettings.musicDirectory ?? "/"
                report = try wrap { () throws(LibraryError) in try lib.importM3U(contents: Array(content.utf8), baseDirectory: base, name: name) }
            } else {
                guard params["path"] != nil else { throw RPCError(code: -32602, message: "playlists.import needs \"path\" (an M3U file on the leader) or \"content\" (M3U text) and \"name\"") }
                let path = try string(params, "path", method: method)
                // A file on the leader, never a URL: the leader does not fetch a page to report its lines.
                guard !path.contains("://") else {
                    throw RPCError(code: -32602, message: "playlists.import reads an M3U file on the leader (\"path\") or uploaded text (\"content\"); it does not fetch URLs")
                }
                try confined(path)
                report = try wrap { () throws(LibraryError) in try lib.importM3U(path: path, name: params["name"]?.string) }
            }
            leader.events.emit(.playlists)
            return .value(["id": .int(report.playlist.id.rawValue), "name": .string(report.playlist.name), "added": .int(report.added),
                           "unresolved": .array(report.unresolved.map { ["line": .int($0.line), "entry": .string($0.entry)] })])
        case "playlists.m3u":
            let id = PlaylistID(Int64(try integer(params, "id", method: method)))
            let folder = leader.surfaceSettings.musicDirectory
            let text = try wrap { () throws(LibraryError) in try lib.m3u(id, relativeTo: folder) }
            let name = try wrap { () throws(LibraryError) in try lib.playlist(id) }?.name ?? "Playlist"
            return .value(["id": .int(id.rawValue), "name": .string(name), "m3u": .string(text)])
        case "library.artists":
            return .encoded(try browseList("artists", lib) { try self.artistsObject(lib) })
        case "library.albums":
            let artist = params["artist"] == nil ? nil : try string(params, "artist", method: method, max: 1_024)
            let genre = params["genre"] == nil ? nil : try string(params, "genre", method: method, max: 1_024)
            if artist != nil || genre != nil { return .value(try albumsObject(lib, artist: artist, genre: genre)) }
            return .encoded(try browseList("albums", lib) { try self.albumsObject(lib, artist: nil) })
        case "library.genres":
            return .encoded(try browseList("genres", lib) { try self.genresObject(lib) })
        case "library.albumTracks":
            let album = try string(params, "album", method: method, max: 1_024)
            let artist = params["artist"] == nil ? nil : try string(params, "artist", method: method, max: 1_024)
            return .object([:], encoded: ["tracks": Self.encodeTracks(try wrap { () throws(LibraryError) in try lib.albumTracks(album: album, albumArtist: artist) })])
        case "playlists.export":
            let id = PlaylistID(Int64(try integer(params, "id", method: method)))
            let given = try string(params, "path", method: method, max: 4_096)
            guard let folder = leader.playlistFolder.map({ PathText.canonical($0) ?? $0 }) else {
                throw RPCError(code: -32000, message: "no playlist folder: start the leader with --playlists DIR, --music DIR or --db PATH")
            }
            // Only into the playlist folder: a bare name, or a path whose folder is that one.
            var name = given
            if given.contains("/") {
                guard PathText.canonical(PathText.parent(given)) == folder else {
                    throw RPCError(code: -32602, message: "playlists are exported only into the playlist folder \(folder): give a file name such as party.m3u")
                }
                name = PathText.lastComponent(given)
            }
            let written = try wrap { () throws(LibraryError) in try lib.exportM3U(id, intoFolder: folder, name: name) }
            return .value(["id": .int(id.rawValue), "path": .string(written)])
        default:
            return nil
        }
    }

    /// A path a client named must lie in the music folder, the cache or the
    /// playlist folder, and a URL's host be one the leader fetches from; the
    /// refusal in the asker's language.
    func confined(_ path: String) throws {
        do { _ = try leader.confine(path) } catch { throw RPCError(code: -32602, error.message) }
    }
}
