import FoundationEssentials
import Glibc
import TuttiCore
import TuttiSystem
import TuttiLibrary

/// One MPD command, defined once: its name, how many arguments it takes
/// and what it does. `MPDServer.commandTable` lists them all; a name not
/// there gets `ACK [5@0] {} unknown command "x"`, and a count outside
/// `arguments` MPD's "too few/many arguments" before the handler runs.
struct MPDCommandSpec: Sendable {
    typealias Handler = @Sendable (MPDServer, MPDInvocation, inout MPDResponse) throws(MPDError) -> Void

    let name: String
    let arguments: ClosedRange<Int>
    let run: Handler

    init(_ name: String, _ arguments: ClosedRange<Int>, _ run: @escaping Handler) {
        self.name = name
        self.arguments = arguments
        self.run = run
    }
}

/// A command as a handler sees it: what the client sent, and the client.
struct MPDInvocation {
    let command: MPDCommand
    let client: MPDClient
    var name: String { command.name }
    var args: [String] { command.arguments }
}

extension MPDServer {
    /// Every command the server answers (`idle`, `noidle`, `close` and the
    /// command lists are the session's, `MPDSessionState`).
    static let commandTable: [MPDCommandSpec] =
        statusCommands + playbackCommands + outputCommands + queueCommands + libraryCommands + storedPlaylistCommands

    static let commandsByName: [String: MPDCommandSpec] = {
        var byName: [String: MPDCommandSpec] = [:]
        for spec in commandTable {
            precondition(byName.updateValue(spec, forKey: spec.name) == nil, "MPD command \(spec.name) defined twice")
        }
        return byName
    }()

    /// For `commands`, with the ones the state machine handles itself.
    static let commandNames: [String] =
        (commandTable.map(\.name) + ["idle", "noidle", "close", "command_list_begin", "command_list_ok_begin", "command_list_end"]).sorted()

    func execute(_ command: MPDCommand, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
        guard let spec = Self.commandsByName[command.name] else {
            throw MPDError(.unknown, "unknown command \"\(command.name)\"")
        }
        let count = command.arguments.count
        guard spec.arguments.contains(count) else {
            throw .argument(count < spec.arguments.lowerBound ? "too few arguments for \"\(command.name)\"" : "too many arguments for \"\(command.name)\"")
        }
        try spec.run(self, MPDInvocation(command: command, client: client), &r)
    }

    /// A command that does nothing but accept its arguments.
    private static func accepted(_ name: String, _ arguments: ClosedRange<Int>) -> MPDCommandSpec {
        MPDCommandSpec(name, arguments) { _, _, _ throws(MPDError) in }
    }

    // MARK: Status and connection

    private static let statusCommands: [MPDCommandSpec] = [
        MPDCommandSpec("status", 0...0) { s, _, r throws(MPDError) in s.status(into: &r) },
        MPDCommandSpec("stats", 0...0) { s, _, r throws(MPDError) in s.stats(into: &r) },
        MPDCommandSpec("currentsong", 0...0) { s, c, r throws(MPDError) in
            let now = s.leader.nowPlaying
            if now.track >= 0, let id = now.entryID {
                s.write(s.catalog.song(forQueueURI: now.path), position: now.track, id: id, client: c.client, into: &r)
            }
        },
        accepted("clearerror", 0...0),
        accepted("ping", 0...0),
        accepted("password", 1...1),
        MPDCommandSpec("tagtypes", 0...64) { s, c, r throws(MPDError) in try s.tagTypes(c.args, client: c.client, into: &r) },
        MPDCommandSpec("commands", 0...0) { _, _, r throws(MPDError) in
            for name in MPDServer.commandNames { r.add("command", name) }
        },
        accepted("notcommands", 0...0),
        MPDCommandSpec("urlhandlers", 0...0) { _, _, r throws(MPDError) in r.add("handler", "file://") },
        MPDCommandSpec("decoders", 0...0) { _, _, r throws(MPDError) in
            r.add("plugin", "mpg123"); r.add("suffix", "mp3"); r.add("mime_type", "audio/mpeg")
            r.add("plugin", "wave"); r.add("suffix", "wav"); r.add("mime_type", "audio/wav"); r.add("mime_type", "audio/x-wav")
        },
        MPDCommandSpec("binarylimit", 1...1) { _, c, _ throws(MPDError) in
            let limit = try MPDArguments.unsigned(c.args[0])
            guard limit >= 64 else { throw .argument("Value too small") }
            c.client.binaryLimit = min(limit, 1 << 20)
        },
        MPDCommandSpec("replay_gain_status", 0...0) { _, _, r throws(MPDError) in r.add("replay_gain_mode", "off") },
        MPDCommandSpec("replay_gain_mode", 1...1) { _, c, _ throws(MPDError) in
            guard c.args[0] == "off" else { throw .argument("Replay gain is not supported") }
        },
        accepted("channels", 0...0),
        accepted("readmessages", 0...0),
        accepted("listneighbors", 0...0),
        MPDCommandSpec("listmounts", 0...0) { s, _, r throws(MPDError) in
            r.add("mount", "")
            if let root = s.catalog.root { r.add("storage", root) }
        },
        MPDCommandSpec("config", 0...0) { _, _, _ throws(MPDError) in throw MPDError(.permission, "config is only for local clients") },
    ]

    // MARK: Playback

    private static let playbackCommands: [MPDCommandSpec] = [
        MPDCommandSpec("play", 0...1) { s, c, _ throws(MPDError) in
            if let a = c.args.first {
                let index = try MPDArguments.int(a)
                if index < 0 { try s.perform(.play, settling: c.client) } else { try s.perform(.playIndex(try s.queueIndex(index)), settling: c.client) }
            } else if !s.leader.queue.isEmpty {
                try s.perform(.play, settling: c.client)
            }
        },
        MPDCommandSpec("playid", 0...1) { s, c, _ throws(MPDError) in
            if let a = c.args.first, a != "-1" {
                try s.perform(.playIndex(try s.indexOf(id: a)), settling: c.client)
            } else if !s.leader.queue.isEmpty {
                try s.perform(.play, settling: c.client)
            }
        },
        MPDCommandSpec("pause", 0...1) { s, c, _ throws(MPDError) in
            if let a = c.args.first {
                if try MPDArguments.bool(a) {
                    try s.perform(.pause, settling: c.client)
                } else if s.leader.nowPlaying.state == .paused {
                    try s.perform(.play, settling: c.client)
                }
            } else {
                try s.perform(.toggle, settling: c.client)
            }
        },
        MPDCommandSpec("stop", 0...0) { s, c, _ throws(MPDError) in try s.perform(.stop, settling: c.client) },
        MPDCommandSpec("next", 0...0) { s, c, _ throws(MPDError) in
            do throws(MPDError) { try s.perform(.next, settling: c.client) } catch where error.message == "already at the last track" {
                try s.perform(.stop, settling: c.client) // MPD stops after the last song
            }
        },
        MPDCommandSpec("previous", 0...0) { s, c, _ throws(MPDError) in try s.perform(.previous, settling: c.client) },
        MPDCommandSpec("seek", 2...2) { s, c, _ throws(MPDError) in
            let index = try s.queueIndex(try MPDArguments.int(c.args[0]))
            try s.seek(index: index, to: try MPDArguments.seconds(c.args[1]), client: c.client)
        },
        MPDCommandSpec("seekid", 2...2) { s, c, _ throws(MPDError) in
            try s.seek(index: try s.indexOf(id: c.args[0]), to: try MPDArguments.seconds(c.args[1]), client: c.client)
        },
        MPDCommandSpec("seekcur", 1...1) { s, c, _ throws(MPDError) in
            let text = c.args[0]
            let value = try MPDArguments.seconds(text)
            if text.hasPrefix("+") || text.hasPrefix("-") {
                try s.perform(.seekBy(seconds: value), settling: c.client)
            } else {
                guard value >= 0 else { throw .argument("Negative position") }
                try s.perform(.seek(seconds: value), settling: c.client)
            }
        },
        MPDCommandSpec("random", 1...1) { s, c, _ throws(MPDError) in try s.perform(.shuffle(try MPDArguments.bool(c.args[0]))) },
        MPDCommandSpec("repeat", 1...1) { s, c, _ throws(MPDError) in
            try s.setRepeat(repeat: try MPDArguments.bool(c.args[0]), single: s.currentRepeatFlags().single)
        },
        MPDCommandSpec("single", 1...1) { s, c, _ throws(MPDError) in
            let single: SingleMode
            if c.args[0] == "oneshot" { single = .oneshot } else { single = try MPDArguments.bool(c.args[0]) ? .on : .off }
            try s.setRepeat(repeat: s.currentRepeatFlags().repeat, single: single)
        },
        // MPD 0.24 also has consume oneshot; 0.23's on/off is what clients send.
        MPDCommandSpec("consume", 1...1) { s, c, _ throws(MPDError) in try s.perform(.consume(try MPDArguments.bool(c.args[0]))) },
        MPDCommandSpec("crossfade", 1...1) { _, c, _ throws(MPDError) in
            if try MPDArguments.unsigned(c.args[0]) != 0 { throw .system("crossfade is not supported") }
        },
        MPDCommandSpec("mixrampdb", 1...1) { _, c, _ throws(MPDError) in _ = try MPDArguments.seconds(c.args[0]) },
        MPDCommandSpec("mixrampdelay", 1...1) { _, c, _ throws(MPDError) in _ = try MPDArguments.seconds(c.args[0]) },
        MPDCommandSpec("setvol", 1...1) { s, c, _ throws(MPDError) in
            let v = try MPDArguments.int(c.args[0])
            guard (0...100).contains(v) else { throw .argument("Invalid volume value") }
            try s.setVolume(v)
        },
        MPDCommandSpec("volume", 1...1) { s, c, _ throws(MPDError) in
            let delta = try MPDArguments.int(c.args[0])
            guard (-100...100).contains(delta) else { throw .argument("Invalid volume value") }
            try s.setVolume(max(0, min(100, (s.groupVolume() ?? 100) + delta)))
        },
        MPDCommandSpec("getvol", 0...0) { s, _, r throws(MPDError) in
            if let v = s.groupVolume() { r.add("volume", v) }
        },
    ]

    // MARK: Outputs = rooms

    private static let outputCommands: [MPDCommandSpec] = [
        // Each room is an output; enabled means it plays the main group (the one MPD controls).
        MPDCommandSpec("outputs", 0...0) { s, _, r throws(MPDError) in
            for (i, name) in s.leader.knownRooms.enumerated() {
                r.add("outputid", i)
                r.add("outputname", name)
                r.add("plugin", "tutti")
                r.add("outputenabled", s.leader.group(ofRoom: name).id == RoomGroups.mainID ? 1 : 0)
            }
        },
        MPDCommandSpec("enableoutput", 1...1) { s, c, _ throws(MPDError) in try s.setOutput(c.args[0]) { _ in true } },
        MPDCommandSpec("disableoutput", 1...1) { s, c, _ throws(MPDError) in try s.setOutput(c.args[0]) { _ in false } },
        MPDCommandSpec("toggleoutput", 1...1) { s, c, _ throws(MPDError) in try s.setOutput(c.args[0]) { inMain in !inMain } },
    ]

    /// Puts the room of output `id` in the main group or takes it out,
    /// as `enable` says from whether it is in the main group now.
    private func setOutput(_ id: String, enable: (_ inMain: Bool) -> Bool) throws(MPDError) {
        let index = try MPDArguments.unsigned(id)
        let rooms = leader.knownRooms
        guard index < rooms.count else { throw .noExist("No such audio output") }
        let room = rooms[index]
        let inMain = leader.group(ofRoom: room).id == RoomGroups.mainID
        let wanted = enable(inMain)
        do {
            if wanted && !inMain { _ = try leader.moveRooms([room], to: RoomGroups.mainID) }
            if !wanted && inMain { _ = try leader.separate(room: room) }
        } catch {
            throw .system("\(error)")
        }
    }

    // MARK: Queue

    private static let queueCommands: [MPDCommandSpec] = [
        MPDCommandSpec("add", 1...2) { s, c, _ throws(MPDError) in
            let found = try s.resolveConfined(c.args[0])
            _ = try s.add(found.map(\.path), at: c.args.count > 1 ? c.args[1] : nil)
        },
        MPDCommandSpec("addid", 1...2) { s, c, r throws(MPDError) in
            let found = try s.resolveConfined(c.args[0])
            guard found.count == 1 else { throw .noExist("addid needs one song, not a folder") }
            let ids = try s.add(found.map(\.path), at: c.args.count > 1 ? c.args[1] : nil)
            if let id = ids.first { r.add("Id", Int(id)) }
        },
        MPDCommandSpec("delete", 1...1) { s, c, _ throws(MPDError) in
            let queue = s.leader.queue
            let range = try MPDArguments.range(c.args[0], count: queue.count)
            guard range.upperBound <= queue.count, !range.isEmpty else { throw .argument("Bad song index") }
            for i in range.reversed() { try s.perform(.remove(index: i), settling: c.client) }
        },
        MPDCommandSpec("deleteid", 1...1) { s, c, _ throws(MPDError) in
            try s.perform(.remove(index: try s.indexOf(id: c.args[0])), settling: c.client)
        },
        MPDCommandSpec("move", 2...2) { s, c, _ throws(MPDError) in
            let queue = s.leader.queue
            let range = try MPDArguments.range(c.args[0], count: queue.count)
            let to = try MPDArguments.int(c.args[1])
            guard range.upperBound <= queue.count, !range.isEmpty, to >= 0, to + range.count <= queue.count else {
                throw .argument("Bad song index")
            }
            try s.moveBlock(range, to: to)
        },
        MPDCommandSpec("moveid", 2...2) { s, c, _ throws(MPDError) in
            let from = try s.indexOf(id: c.args[0])
            let to = try MPDArguments.int(c.args[1])
            guard to >= 0, to < s.leader.queue.count else { throw .argument("Bad song index") }
            try s.perform(.move(from: from, to: to))
        },
        MPDCommandSpec("swap", 2...2) { s, c, _ throws(MPDError) in
            try s.swap(try s.queueIndex(try MPDArguments.int(c.args[0])), try s.queueIndex(try MPDArguments.int(c.args[1])))
        },
        MPDCommandSpec("swapid", 2...2) { s, c, _ throws(MPDError) in
            try s.swap(try s.indexOf(id: c.args[0]), try s.indexOf(id: c.args[1]))
        },
        // ncmpcpp's `Z`: shuffles the queue's order itself (not random mode).
        MPDCommandSpec("shuffle", 0...1) { s, c, _ throws(MPDError) in
            let count = s.leader.queue.count
            var range = 0..<count
            if let a = c.args.first {
                range = try MPDArguments.range(a, count: count)
                guard range.upperBound <= count else { throw .argument("Bad song index") }
            }
            try s.shuffle(range)
        },
        MPDCommandSpec("prio", 2...64) { s, c, _ throws(MPDError) in try s.priority(c.args, byID: false) },
        MPDCommandSpec("prioid", 2...64) { s, c, _ throws(MPDError) in try s.priority(c.args, byID: true) },
        MPDCommandSpec("clear", 0...0) { s, c, _ throws(MPDError) in try s.perform(.clear, settling: c.client) },
        MPDCommandSpec("playlist", 0...0) { s, _, r throws(MPDError) in
            for (i, entry) in s.leader.queue.entries.enumerated() { r.add("\(i):file", s.catalog.uri(forPath: entry.uri)) }
        },
        MPDCommandSpec("playlistinfo", 0...1) { s, c, r throws(MPDError) in
            let queue = s.leader.queue
            var range = 0..<queue.count
            if let a = c.args.first {
                range = try MPDArguments.range(a, count: queue.count)
                if !a.contains(":") && range.lowerBound >= queue.count { throw .argument("Bad song index") }
                range = range.clamped(to: 0..<queue.count)
            }
            s.writeQueue(queue, range: range, client: c.client, into: &r)
        },
        MPDCommandSpec("playlistid", 0...1) { s, c, r throws(MPDError) in
            let queue = s.leader.queue
            if let a = c.args.first {
                let i = try s.indexOf(id: a, in: queue)
                s.writeQueue(queue, range: i..<(i + 1), client: c.client, into: &r)
            } else {
                s.writeQueue(queue, range: 0..<queue.count, client: c.client, into: &r)
            }
        },
        MPDCommandSpec("plchanges", 1...2) { s, c, r throws(MPDError) in
            guard let (queue, range) = try s.changedSince(c.args) else { return }
            s.writeQueue(queue, range: range, client: c.client, into: &r)
        },
        MPDCommandSpec("plchangesposid", 1...2) { s, c, r throws(MPDError) in
            guard let (queue, range) = try s.changedSince(c.args) else { return }
            for i in range { r.add("cpos", i); r.add("Id", Int(queue.entries[i].id)) }
        },
        MPDCommandSpec("playlistfind", 1...64) { s, c, r throws(MPDError) in try s.queueFind(c, foldCase: false, into: &r) },
        MPDCommandSpec("playlistsearch", 1...64) { s, c, r throws(MPDError) in try s.queueFind(c, foldCase: true, into: &r) },
    ]

    private func swap(_ a: Int, _ b: Int) throws(MPDError) {
        guard a != b else { return }
        let (low, high) = (min(a, b), max(a, b))
        try perform(.move(from: low, to: high))
        try perform(.move(from: high - 1, to: low))
    }

    /// Priorities only order random mode in MPD; Tutti has none, so only
    /// the default (0) is accepted. Arguments are checked all the same.
    private func priority(_ args: [String], byID: Bool) throws(MPDError) {
        let priority = try MPDArguments.unsigned(args[0])
        guard priority <= 255 else { throw .argument("Priority out of range: \(args[0])") }
        let queue = leader.queue
        for a in args.dropFirst() {
            if byID {
                _ = try indexOf(id: a, in: queue)
            } else {
                let range = try MPDArguments.range(a, count: queue.count)
                guard range.upperBound <= queue.count else { throw .argument("Bad song index") }
            }
        }
        if priority != 0 { throw .system("song priorities are not supported") }
    }

    /// `plchanges VERSION [START:END]`: the queue and the range to show, nil
    /// when nothing changed. Versions are not kept per song: any other
    /// version means "everything changed".
    private func changedSince(_ args: [String]) throws(MPDError) -> (PlayQueue, Range<Int>)? {
        let version = try MPDArguments.int(args[0])
        let queue = leader.queue
        guard version != playlistVersion else { return nil }
        var range = 0..<queue.count
        if args.count > 1 { range = try MPDArguments.range(args[1], count: queue.count).clamped(to: 0..<queue.count) }
        return (queue, range)
    }

    private func queueFind(_ c: MPDInvocation, foldCase: Bool, into r: inout MPDResponse) throws(MPDError) {
        let filter = try MPDFilter.parse(c.args, exact: !foldCase)
        for (i, entry) in leader.queue.entries.enumerated() {
            let song = catalog.song(forQueueURI: entry.uri)
            if filter.matches(song, foldCase: foldCase) {
                write(song, position: i, id: entry.id, client: c.client, into: &r)
            }
        }
    }

    // MARK: Library

    private static let libraryCommands: [MPDCommandSpec] = [
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

    // MARK: Stored playlists

    private static let storedPlaylistCommands: [MPDCommandSpec] = [
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
    private func playlistEntries(_ args: [String]) throws(MPDError) -> [PlaylistEntry] {
        let entries = try libraryCall { l throws(LibraryError) in try l.entries(of: try self.playlistID(args[0], l)) }
        guard args.count > 1 else { return entries }
        let range = try MPDArguments.range(args[1], count: entries.count).clamped(to: 0..<entries.count)
        return Array(entries[range])
    }

    /// A change to the stored playlists, announced to idle clients.
    private func editPlaylists(_ body: (Library) throws(LibraryError) -> Void) throws(MPDError) {
        try libraryCall(body)
        leader.events.emit(.playlists)
    }
}

extension MPDServer {
    // MARK: Player helpers

    /// Runs a player command. Transport changes are heard a start latency
    /// later; `settle` (set for those) is when, so the reply can wait for it
    /// and a `status` right after shows the new state, as with MPD.
    func perform(_ command: PlayerCommand, settling client: MPDClient? = nil) throws(MPDError) {
        do {
            let outcome = try leader.perform(command)
            switch command {
            case .add, .move, .shuffle, .repeatMode: break
            default: if let client { client.settleUntil = max(client.settleUntil, outcome.effectiveAt) }
            }
        } catch {
            switch error {
            case .invalid(let what): throw MPDError(.argument, what)
            case .busy: throw MPDError(.playerSync, error.description)
            }
        }
    }

    private func queueIndex(_ i: Int) throws(MPDError) -> Int {
        guard i >= 0, i < leader.queue.count else { throw .argument("Bad song index") }
        return i
    }

    private func indexOf(id text: String, in queue: PlayQueue? = nil) throws(MPDError) -> Int {
        guard let id = UInt32(text) else { throw .argument("Integer expected: \(text)") }
        guard let index = (queue ?? leader.queue).index(ofID: id) else { throw .noExist("No such song") }
        return index
    }

    private func seek(index: Int, to seconds: Double, client: MPDClient) throws(MPDError) {
        guard seconds >= 0 else { throw .argument("Negative position") }
        let now = leader.nowPlaying
        if now.track != index || now.state == .stopped || now.state == .error {
            try perform(.playIndex(index), settling: client)
        }
        try perform(.seek(seconds: seconds), settling: client)
    }

    /// What a client's URI names, as `MPDCatalog.resolve`, but only inside
    /// the music folder, the cache and the playlist folder (`..` and links
    /// that lead out of them are refused).
    private func resolveConfined(_ uri: String) throws(MPDError) -> [(path: String, song: MPDSong)] {
        let found = try catalog.resolve(uri)
        for f in found {
            do { _ = try leader.confine(f.path) } catch { throw MPDError(.permission, "Access denied: \(uri) is outside the music folder") }
        }
        return found
    }

    /// Appends paths, or inserts them at an MPD position: `N` (absolute),
    /// `+N` (N after the current song), `-N` (N before it).
    private func add(_ paths: [String], at position: String?) throws(MPDError) -> [UInt32] {
        guard let position else {
            do { return try leader.perform(.add(uris: paths, next: false)).added } catch { throw MPDError(.argument, error.description) }
        }
        let queue = leader.queue
        let current = leader.nowPlaying.track
        let target: Int
        if position.hasPrefix("+") || position.hasPrefix("-") {
            guard current >= 0 else { throw .argument("No current song") }
            guard let n = Int(position.dropFirst()), n >= 0 else { throw .argument("Integer expected: \(position)") }
            if position == "+0" {
                do { return try leader.perform(.add(uris: paths, next: true)).added } catch { throw MPDError(.argument, error.description) }
            }
            target = position.hasPrefix("+") ? current + 1 + n : current - n
        } else {
            target = try MPDArguments.unsigned(position)
        }
        guard target >= 0, target <= queue.count else { throw .argument("Bad position") }
        let added: [UInt32]
        do { added = try leader.perform(.add(uris: paths, next: false)).added } catch { throw MPDError(.argument, error.description) }
        let first = queue.count
        if target != first {
            for j in 0..<added.count { try perform(.move(from: first + j, to: target + j)) }
        }
        return added
    }

    private func moveBlock(_ range: Range<Int>, to: Int) throws(MPDError) {
        if to < range.lowerBound {
            for j in 0..<range.count { try perform(.move(from: range.lowerBound + j, to: to + j)) }
        } else if to > range.lowerBound {
            for _ in 0..<range.count { try perform(.move(from: range.lowerBound, to: to + range.count - 1)) }
        }
    }

    /// Puts the entries in `range` in a random order, one `move` at a time
    /// (the player has no bulk reorder; queues are short).
    private func shuffle(_ range: Range<Int>) throws(MPDError) {
        guard range.count > 1 else { return }
        let entries = leader.queue.entries
        let wanted = entries[range].map(\.id).shuffled()
        for (offset, id) in wanted.enumerated() {
            let target = range.lowerBound + offset
            guard let from = leader.queue.index(ofID: id) else { throw .noExist("The queue changed while shuffling") }
            if from != target { try perform(.move(from: from, to: target)) }
        }
    }

    // MARK: Repeat, single, volume

    /// MPD's repeat and single flags from Tutti's repeat mode and single (stop after the current entry).
    func currentRepeatFlags() -> (repeat: Bool, single: SingleMode) {
        let now = leader.nowPlaying
        switch now.repeatMode {
        case .off: return (false, now.single)
        case .all: return (true, now.single)
        case .one: return (true, .on)
        }
    }

    /// repeat+single → Tutti: repeat with single is "repeat one"; single
    /// without repeat is "stop after the current entry" (once with oneshot).
    private func setRepeat(repeat repeatOn: Bool, single: SingleMode) throws(MPDError) {
        let mode: RepeatMode = repeatOn ? (single == .off ? .all : .one) : .off
        try perform(.repeatMode(mode))
        try perform(.single(repeatOn ? .off : single))
    }

    /// The mean volume of the main group's connected rooms, nil when none is connected.
    /// The main group's volume as `setvol` set it: its loudest connected room
    /// (`GroupVolume`); with none connected, the group's (nil: nothing to say).
    func groupVolume() -> Int? {
        let rooms = mainGroupRooms()
        guard !rooms.isEmpty else { return leader.volume(ofGroup: RoomGroups.mainID).map(Int.init) }
        return Int(GroupVolume.of(rooms.map { leader.settings(of: $0).volume }))
    }

    /// The connected rooms MPD controls: those in the main group.
    private func mainGroupRooms() -> [String] {
        leader.followerNames.filter { leader.group(ofRoom: $0).id == RoomGroups.mainID }
    }

    /// MPD's volume is the main group's: every room in it, connected or not,
    /// keeps its balance; with no room at all it is kept for the rooms that join.
    private func setVolume(_ v: Int) throws(MPDError) {
        leader.setVolume(group: RoomGroups.mainID, UInt8(clamping: v))
    }

    // MARK: Status

    private func status(into r: inout MPDResponse) {
        let now = leader.nowPlaying
        let queue = leader.queue
        let flags = currentRepeatFlags()
        r.add("volume", groupVolume() ?? -1)
        r.add("repeat", flags.repeat ? 1 : 0)
        r.add("random", now.shuffle ? 1 : 0)
        r.add("single", flags.single == .oneshot ? "oneshot" : flags.single == .on ? "1" : "0")
        r.add("consume", now.consume ? 1 : 0)
        r.add("playlist", playlistVersion)
        r.add("playlistlength", queue.count)
        r.add("mixrampdb", "0.000000")
        // An empty queue plays nothing, whatever the player last published.
        let state = now.isIdle ? PlayerState.stopped : now.state
        // Loading and buffering are playing (waiting for the network); an error has stopped.
        r.add("state", state.isActive ? "play" : state == .paused ? "pause" : "stop")
        if now.track >= 0, let id = now.entryID {
            r.add("song", now.track)
            r.add("songid", Int(id))
            if let next = nextIndex(queue: queue, current: now.track, mode: now.repeatMode) {
                r.add("nextsong", next)
                r.add("nextsongid", Int(queue.entries[next].id))
            }
            if state != .stopped && state != .error {
                let song = catalog.song(forQueueURI: now.path)
                let duration = now.durationSeconds ?? song.durationSeconds
                r.add("time", "\(Int(now.positionSeconds)):\(Int((duration ?? 0).rounded()))")
                r.add("elapsed", seconds: now.positionSeconds)
                if let duration { r.add("duration", seconds: duration) }
                r.add("bitrate", song.bitrateKbps ?? 0)
                r.add("audio", "48000:f:2")
            }
        }
        let job = updateJob.load(ordering: .relaxed)
        if job > 0 {
            r.add("updating_db", job)
        } else if catalog.library?.isScanning == true {
            r.add("updating_db", 1) // the start-up scan or a JSON-RPC library.scan
        }
    }

    private func nextIndex(queue: PlayQueue, current: Int, mode: RepeatMode) -> Int? {
        if mode == .one { return current }
        guard let p = queue.order.firstIndex(of: current) else { return nil }
        if p + 1 < queue.order.count { return queue.order[p + 1] }
        return mode == .all ? queue.order.first : nil
    }

    private func stats(into r: inout MPDResponse) {
        let (s, loadedAt) = catalog.stats()
        r.add("artists", s.artists)
        r.add("albums", s.albums)
        r.add("songs", s.songs)
        r.add("uptime", Int(Date().timeIntervalSince(startedAt)))
        r.add("db_playtime", Int(s.totalSeconds))
        r.add("db_update", Int(loadedAt))
        r.add("playtime", Int(leader.playedNanoseconds / 1_000_000_000))
    }

    private func tagTypes(_ args: [String], client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
        guard let sub = args.first else {
            for t in MPDTags.all where client.tagTypes.contains(t) { r.add("tagtype", t) }
            return
        }
        let names = try args.dropFirst().map { name throws(MPDError) -> String in
            guard let t = MPDTags.canonical(name) else { throw .argument("Unknown tag type: \(name)") }
            return t
        }
        switch sub.lowercased() {
        case "clear": client.tagTypes = []
        case "all": client.tagTypes = Set(MPDTags.all)
        case "enable": client.tagTypes.formUnion(names)
        case "disable": client.tagTypes.subtract(names)
        case "reset": client.tagTypes = Set(names)
        default: throw .argument("Unknown sub command: \(sub)")
        }
    }

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

    private func writeQueue(_ queue: PlayQueue, range: Range<Int>, client: MPDClient, into r: inout MPDResponse) {
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
    private func splitModifiers(_ args: [String]) -> (filter: [String], sort: String?, window: String?, groups: [String]) {
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
    private func findCommand(_ command: MPDCommand, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
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
    private func list(_ args: [String], into r: inout MPDResponse) throws(MPDError) {
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

    private func lsinfo(_ uri: String, withTags: Bool, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
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
    private func listAll(_ uri: String, withTags: Bool, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
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

    private func update(into r: inout MPDResponse) throws(MPDError) {
        guard let library = catalog.library, let folder = leader.configuration.musicDirectory else {
            throw .system("No music folder configured")
        }
        let running = updateJob.load(ordering: .relaxed)
        if running > 0 { r.add("updating_db", running); return }
        let job = nextUpdateJob.add(1, ordering: .relaxed).oldValue
        updateJob.store(job, ordering: .relaxed)
        r.add("updating_db", job)
        notify([.update])
        startThread(name: "tutti-mpd-update") { [self] in
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

    private func picture(uri: String, offset text: String, embeddedOnly: Bool, client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
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
        if embeddedOnly { r.add("type", image.mime) }
        let end = min(image.bytes.count, offset + client.binaryLimit)
        r.addBinary(image.bytes[offset..<end])
    }

    // MARK: Stored playlists

    private func libraryCall<T>(_ body: (Library) throws(LibraryError) -> T) throws(MPDError) -> T {
        guard let library = catalog.library else { throw .system("No library: start the leader with a music folder") }
        do { return try body(library) } catch {
            switch error {
            case .notFound: throw .noExist("No such playlist")
            case .invalidArgument(let what) where what == "exists": throw MPDError(.exist, "Playlist already exists")
            case .invalidArgument(let what): throw .argument(what)
            default: throw .system(error.description)
            }
        }
    }

    private func findPlaylist(_ name: String, _ library: Library) throws(LibraryError) -> Playlist? {
        try library.playlists().first { $0.name == name }
    }

    private func playlistCreatingIfNeeded(_ name: String, _ library: Library) throws(LibraryError) -> PlaylistID {
        if let p = try findPlaylist(name, library) { return p.id }
        return try library.createPlaylist(named: name).id
    }

    private func playlistID(_ name: String, _ library: Library) throws(LibraryError) -> PlaylistID {
        guard let p = try findPlaylist(name, library) else { throw .notFound("playlist \(name)") }
        return p.id
    }

    private func libraryTrackID(path: String) throws(MPDError) -> TrackID? {
        try libraryCall { l throws(LibraryError) in try l.track(atPath: path)?.id }
    }

    private func songForLibraryTrack(_ track: Track) -> MPDSong {
        if let s = catalog.librarySong(path: track.path) { return s }
        return MPDSong(uri: catalog.uri(forPath: track.path), tags: ["Title": track.title], durationSeconds: track.durationSeconds, path: track.path)
    }

    /// `save NAME [create|append|replace]`: the queue's library songs
    /// (entries that are not library tracks cannot be stored and are left out).
    private func save(_ args: [String]) throws(MPDError) {
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
