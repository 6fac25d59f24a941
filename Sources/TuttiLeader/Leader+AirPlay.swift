import FoundationEssentials
import Glibc
import TuttiCore
import TuttiControlKit

/// AirPlay receivers (AirPlayReceivers.swift): started with the leader,
/// following every change of groups, and what now playing shows of them.
extension Leader {
    func startAirPlay() {
        let directory = configuration.airplayDirectory ?? Self.defaultAirPlayDirectory()
        // A leader that ended without giving a group back (a crash, a power cut) saved a receiver's pipe in its queue: no phone plays now.
        for group in groups {
            for entry in ((try? queue(group: group.id))?.entries ?? []) where entry.uri.hasPrefix("pipe:\(directory)/") {
                _ = try? perform(.removeEntry(id: entry.id), group: group.id)
            }
        }
        guard let program = AirPlayReceivers.locate(configuration.airplayProgram) else {
            log.warning("airplay is on but \(configuration.airplayProgram) is not installed (apt install shairport-sync): no AirPlay receivers")
            return
        }
        do {
            try Self.makePrivateDirectory(directory)
        } catch {
            log.error("AirPlay: cannot make \(directory): \(error); no AirPlay receivers")
            return
        }
        let receivers = AirPlayReceivers(leader: self, program: program, directory: directory, log: log.with(label: "airplay"))
        airplay = receivers
        events.subscribe { [weak receivers] event in
            if event == .groups { receivers?.update() }
        }
        receivers.update()
    }

    /// A folder of this user's own: under the service's RuntimeDirectory
    /// (/run/tutti), else XDG_RUNTIME_DIR or /tmp. The same each run, so a
    /// crashed run's pipes are found in the queues at the next start.
    static func defaultAirPlayDirectory() -> String {
        if let run = getenv("RUNTIME_DIRECTORY").map({ String(cString: $0) }), !run.isEmpty {
            return "\(run.split(separator: ":").first.map(String.init) ?? run)/airplay"
        }
        if getuid() == 0, access("/run", W_OK) == 0 { return "/run/tutti/airplay" }
        let base = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) } ?? "/tmp"
        return "\(base)/tutti-airplay-\(getuid())"
    }

    /// Makes `path` (mode 0700), or accepts it only if it is a real
    /// directory of this user's that nobody else can write: the receivers'
    /// config and pipes live there, and shairport-sync runs what its config
    /// says (a directory another user made first in /tmp would be theirs).
    static func makePrivateDirectory(_ path: String) throws {
        let parent = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        if !parent.isEmpty { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
        if mkdir(path, 0o700) == 0 { return }
        let made = errno
        var info = stat()
        guard made == EEXIST, lstat(path, &info) == 0 else { throw AirPlayDirectoryError(path: path, reason: String(cString: strerror(made))) }
        guard info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw AirPlayDirectoryError(path: path, reason: "it exists and is not a directory of this user's that only it can write")
        }
    }

    /// What a phone plays to the group (nil: the group plays nothing of a phone's).
    public func airPlayNowPlaying(group: String?) -> AirPlayNowPlaying? {
        guard let airplay, let stream = try? stream(forGroup: group) else { return nil }
        guard let now = airplay.nowPlaying(group: stream.group), airplay.receiver(playing: stream.player.nowPlaying().path) != nil else { return nil }
        return now
    }

    /// The receivers running: group id → (name, RTSP port, pid); empty with AirPlay off.
    public var airPlayReceivers: [String: (name: String, port: Int, pid: Int32?)] { airplay?.running ?? [:] }

    /// Waits until the receivers have followed the last change of groups (tests).
    public func settleAirPlay() { airplay?.settle() }
}

extension Leader {
    /// The artwork of a phone playing to any group, by its id (`AirPlayArtwork`).
    public func airPlayArtwork(id: String) -> [UInt8]? {
        for group in groups.map(\.id) {
            if let now = airPlayNowPlaying(group: group), now.artworkID == id { return now.artwork }
        }
        return nil
    }
}

struct AirPlayDirectoryError: Error, CustomStringConvertible {
    var path: String
    var reason: String
    var description: String { "\(path): \(reason)" }
}
