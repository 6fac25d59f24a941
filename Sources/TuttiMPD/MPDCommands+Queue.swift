import FoundationEssentials
import Glibc
import TuttiCore
import TuttiSystem
import TuttiLibrary
import TuttiControlKit

/// MPD commands: The queue: adding, moving, finding, priorities, changes since a version.
extension MPDServer {
    // MARK: Queue

    static let queueCommands: [MPDCommandSpec] = [
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
            // `to + range.count` would overflow on a peer's Int.max: compare by subtraction (range.count ≤ queue.count here).
            guard range.upperBound <= queue.count, !range.isEmpty, to >= 0, to <= queue.count - range.count else {
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

    func swap(_ a: Int, _ b: Int) throws(MPDError) {
        guard a != b else { return }
        let (low, high) = (min(a, b), max(a, b))
        try perform(.move(from: low, to: high))
        try perform(.move(from: high - 1, to: low))
    }

    /// Priorities only order random mode in MPD; Tutti has none, so only
    /// the default (0) is accepted. Arguments are checked all the same.
    func priority(_ args: [String], byID: Bool) throws(MPDError) {
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
    func changedSince(_ args: [String]) throws(MPDError) -> (PlayQueue, Range<Int>)? {
        let version = try MPDArguments.int(args[0])
        let queue = leader.queue
        guard version != playlistVersion else { return nil }
        var range = 0..<queue.count
        if args.count > 1 { range = try MPDArguments.range(args[1], count: queue.count).clamped(to: 0..<queue.count) }
        return (queue, range)
    }

    func queueFind(_ c: MPDInvocation, foldCase: Bool, into r: inout MPDResponse) throws(MPDError) {
        let filter = try MPDFilter.parse(c.args, exact: !foldCase)
        for (i, entry) in leader.queue.entries.enumerated() {
            let song = catalog.song(forQueueURI: entry.uri)
            if filter.matches(song, foldCase: foldCase) {
                write(song, position: i, id: entry.id, client: c.client, into: &r)
            }
        }
    }
}
