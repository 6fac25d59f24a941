import FoundationEssentials
import Glibc
import TuttiCore
import TuttiSystem
import TuttiLibrary
import TuttiControlKit

/// MPD commands: Playback and outputs (an output is a room), and the player commands they run.
extension MPDServer {
    // MARK: Playback

    static let playbackCommands: [MPDCommandSpec] = [
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

    static let outputCommands: [MPDCommandSpec] = [
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
    func setOutput(_ id: String, enable: (_ inMain: Bool) -> Bool) throws(MPDError) {
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
            case .invalid(let what): throw MPDError(.argument, what.description)
            case .busy: throw MPDError(.playerSync, error.description)
            }
        }
    }

    func queueIndex(_ i: Int) throws(MPDError) -> Int {
        guard i >= 0, i < leader.queue.count else { throw .argument("Bad song index") }
        return i
    }

    func indexOf(id text: String, in queue: PlayQueue? = nil) throws(MPDError) -> Int {
        guard let id = UInt32(text) else { throw .argument("Integer expected: \(text)") }
        guard let index = (queue ?? leader.queue).index(ofID: id) else { throw .noExist("No such song") }
        return index
    }

    func seek(index: Int, to seconds: Double, client: MPDClient) throws(MPDError) {
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
    func resolveConfined(_ uri: String) throws(MPDError) -> [(path: String, song: MPDSong)] {
        // An absolute path is judged before anything is read: `add "/"` walked the whole file system, then refused it.
        if uri.hasPrefix("/") || uri.hasPrefix("file://") {
            do { _ = try leader.confine(catalog.path(forURI: uri)) } catch { throw MPDError(.permission, "Access denied: \(uri) is outside the music folder") }
        }
        let found = try catalog.resolve(uri)
        for f in found {
            do { _ = try leader.confine(f.path) } catch {
                if let refusal = error.refusal { throw MPDError(.permission, "Access denied: \(refusal)") }
                throw MPDError(.permission, "Access denied: \(uri) is outside the music folder")
            }
        }
        return found
    }

    /// Appends paths, or inserts them at an MPD position: `N` (absolute),
    /// `+N` (N after the current song), `-N` (N before it).
    func add(_ paths: [String], at position: String?) throws(MPDError) -> [UInt32] {
        guard let position else {
            do { return try leader.perform(.add(uris: paths, next: false)).added } catch { throw MPDError(.argument, error.description) }
        }
        let queue = leader.queue
        let current = leader.nowPlaying.track
        let target: Int
        if position.hasPrefix("+") || position.hasPrefix("-") {
            guard current >= 0 else { throw .argument("No current song") }
            guard let n = Int(position.dropFirst()), n >= 0 else { throw .argument("Integer expected: \(position)") }
            // Beyond the queue whatever the current song (and `current + 1 + n` would overflow on a peer's Int.max).
            guard n <= queue.count else { throw .argument("Bad position") }
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

    func moveBlock(_ range: Range<Int>, to: Int) throws(MPDError) {
        if to < range.lowerBound {
            for j in 0..<range.count { try perform(.move(from: range.lowerBound + j, to: to + j)) }
        } else if to > range.lowerBound {
            for _ in 0..<range.count { try perform(.move(from: range.lowerBound, to: to + range.count - 1)) }
        }
    }

    /// Puts the entries in `range` in a random order, one `move` at a time
    /// (the player has no bulk reorder; queues are short).
    func shuffle(_ range: Range<Int>) throws(MPDError) {
        guard range.count > 1 else { return }
        let entries = leader.queue.entries
        let wanted = entries[range].map(\.id).shuffled()
        for (offset, id) in wanted.enumerated() {
            let target = range.lowerBound + offset
            guard let from = leader.queue.index(ofID: id) else { throw .noExist("The queue changed while shuffling") }
            if from != target { try perform(.move(from: from, to: target)) }
        }
    }
}
