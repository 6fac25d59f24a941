import FoundationEssentials
import Glibc
import TuttiCore
import TuttiSystem
import TuttiLibrary
import TuttiControlKit

/// MPD commands: Stored playlists.
extension MPDServer {
    // MARK: Stored playlists

    static let storedPlaylistCommands: [MPDCommandSpec] = [
        MPDCommandSpec("listplaylists", 0...0) { s, _, r throws(MPDError) in
            for p in try s.libraryCall({ l throws(LibraryError) in try l.playlists() }) {
                r.add("playlist", p.name)
                r.add("Last-Modified", MPDServer.iso8601(p.updatedAt / 1000))
            }
        },
        MPDCommandSpec("listplaylist", 1...2) { s, c, r throws(MPDError) in
            for e in try s.playlistEntries(c.args) { r.add("file", s.songForLibraryTrack(e.track).uri) }
        },
        MPDCommandSpec("listplaylistinfo", 1...2) { s, c, r throws(MPDError) in
            for e in try s.playlistEntries(c.args) { s.write(s.songForLibraryTrack(e.track), client: c.client, into: &r) }
        },
        MPDCommandSpec("load", 1...3) { s, c, _ throws(MPDError) in
            let paths = try s.playlistEntries(c.args).map(\.track.path)
            if !paths.isEmpty { _ = try s.add(paths, at: c.args.count > 2 ? c.args[2] : nil) }
        },
        MPDCommandSpec("save", 1...2) { s, c, _ throws(MPDError) in try s.save(c.args) },
        MPDCommandSpec("rm", 1...1) { s, c, _ throws(MPDError) in
            try s.editPlaylists { l throws(LibraryError) in try l.deletePlaylist(try s.playlistID(c.args[0], l)) }
        },
        MPDCommandSpec("rename", 2...2) { s, c, _ throws(MPDError) in
            try s.editPlaylists { l throws(LibraryError) in
                guard try s.findPlaylist(c.args[1], l) == nil else { throw LibraryError.invalidArgument("exists") }
                try l.renamePlaylist(try s.playlistID(c.args[0], l), to: c.args[1])
            }
        },
        MPDCommandSpec("playlistadd", 2...3) { s, c, _ throws(MPDError) in
            let found = try s.resolveConfined(c.args[1])
            var tracks: [TrackID] = []
            for item in found { if let id = try s.libraryTrackID(path: item.path) { tracks.append(id) } }
            guard !tracks.isEmpty else { throw .noExist("Only library songs can be saved in a playlist") }
            let position = try c.args.count > 2 ? MPDArguments.unsigned(c.args[2]) : nil
            try s.editPlaylists { l throws(LibraryError) in
                let id = try s.playlistCreatingIfNeeded(c.args[0], l)
                try l.addToPlaylist(id, tracks: tracks, at: position)
            }
        },
        MPDCommandSpec("playlistclear", 1...1) { s, c, _ throws(MPDError) in
            try s.editPlaylists { l throws(LibraryError) in
                let id = try s.playlistID(c.args[0], l)
                for i in (0..<(try l.entries(of: id).count)).reversed() { try l.removeFromPlaylist(id, at: i) }
            }
        },
        MPDCommandSpec("playlistdelete", 2...2) { s, c, _ throws(MPDError) in
            let count = try s.libraryCall { l throws(LibraryError) in try l.entries(of: try s.playlistID(c.args[0], l)).count }
            let range = try MPDArguments.range(c.args[1], count: count)
            guard range.upperBound <= count, !range.isEmpty else { throw .argument("Bad song index") }
            try s.editPlaylists { l throws(LibraryError) in
                let id = try s.playlistID(c.args[0], l)
                for i in range.reversed() { try l.removeFromPlaylist(id, at: i) }
            }
        },
        MPDCommandSpec("playlistmove", 3...3) { s, c, _ throws(MPDError) in
            let from = try MPDArguments.unsigned(c.args[1]), to = try MPDArguments.unsigned(c.args[2])
            try s.editPlaylists { l throws(LibraryError) in try l.moveInPlaylist(try s.playlistID(c.args[0], l), from: from, to: to) }
        },
    ]

    /// A stored playlist's entries, `[START:END]` of them when `args[1]` says.
    func playlistEntries(_ args: [String]) throws(MPDError) -> [PlaylistEntry] {
        let entries = try libraryCall { l throws(LibraryError) in try l.entries(of: try self.playlistID(args[0], l)) }
        guard args.count > 1 else { return entries }
        let range = try MPDArguments.range(args[1], count: entries.count).clamped(to: 0..<entries.count)
        return Array(entries[range])
    }

    /// A change to the stored playlists, announced to idle clients.
    func editPlaylists(_ body: (Library) throws(LibraryError) -> Void) throws(MPDError) {
        try libraryCall(body)
        leader.events.emit(.playlists)
    }

    // MARK: Stored playlists

    func libraryCall<T>(_ body: (Library) throws(LibraryError) -> T) throws(MPDError) -> T {
        guard let library = catalog.library else { throw .system("No library: start the leader with a music folder") }
        do { return try body(library) } catch {
            switch error {
            case .notFound: throw .noExist("No such playlist")
            case .invalidArgument(let what) where what == "exists": throw MPDError(.exist, "Playlist already exists")
            case .invalidArgument(let what): throw .argument(what)
            case .refused(let message): throw .argument(message.description)
            default: throw .system(error.description)
            }
        }
    }

    func findPlaylist(_ name: String, _ library: Library) throws(LibraryError) -> Playlist? {
        try library.playlists().first { $0.name == name }
    }

    func playlistCreatingIfNeeded(_ name: String, _ library: Library) throws(LibraryError) -> PlaylistID {
        if let p = try findPlaylist(name, library) { return p.id }
        return try library.createPlaylist(named: name).id
    }

    func playlistID(_ name: String, _ library: Library) throws(LibraryError) -> PlaylistID {
        guard let p = try findPlaylist(name, library) else { throw .notFound("playlist \(name)") }
        return p.id
    }

    func libraryTrackID(path: String) throws(MPDError) -> TrackID? {
        try libraryCall { l throws(LibraryError) in try l.track(atPath: path)?.id }
    }

    func songForLibraryTrack(_ track: Track) -> MPDSong {
        if let s = catalog.librarySong(path: track.path) { return s }
        return MPDSong(uri: catalog.uri(forPath: track.path), tags: ["Title": track.title], durationSeconds: track.durationSeconds, path: track.path)
    }

    /// `save NAME [create|append|replace]`: the queue's library songs
    /// (entries that are not library tracks cannot be stored and are left out).
    func save(_ args: [String]) throws(MPDError) {
        let mode = args.count > 1 ? args[1] : "create"
        guard ["create", "append", "replace"].contains(mode) else { throw .argument("Unrecognized save mode: \(mode)") }
        var tracks: [TrackID] = []
        for entry in leader.queue.entries {
            let song = catalog.song(forQueueURI: entry.uri)
            if let p = song.path, let id = try libraryTrackID(path: p) { tracks.append(id) }
        }
        try libraryCall { l throws(LibraryError) in
            let existing = try self.findPlaylist(args[0], l)
            if existing != nil && mode == "create" { throw LibraryError.invalidArgument("exists") }
            if existing == nil && mode == "append" { throw LibraryError.notFound("playlist") }
            if let existing, mode == "replace" { try l.deletePlaylist(existing.id) }
            let id = mode == "append" ? existing!.id : try l.createPlaylist(named: args[0]).id
            if !tracks.isEmpty { try l.addToPlaylist(id, tracks: tracks) }
        }
        leader.events.emit(.playlists)
    }
}
