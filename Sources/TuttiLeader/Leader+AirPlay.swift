import FoundationEssentials
import Glibc
import TuttiCore
import TuttiControlKit
import TuttiSources

/// AirPlay receivers (AirPlayReceivers.swift): started with the leader,
/// following every change of groups, and what now playing shows of them.
extension Leader {
    func startAirPlay() {
        let directory = configuration.airplayDirectory ?? AirPlayReceivers.defaultDirectory()
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
            try AirPlayReceivers.makePrivateDirectory(directory)
        } catch {
            log.error("AirPlay: cannot make \(directory): \(error); no AirPlay receivers")
            return
        }
        let receivers = AirPlayReceivers(host: self, program: program, directory: directory, bufferMilliseconds: configuration.bufferMilliseconds, log: log.with(label: "airplay"))
        airplay = receivers
        events.subscribe { [weak receivers] event in
            if event == .groups { receivers?.update() }
        }
        receivers.update()
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

extension Leader: AirPlayHost {
    public var groupTable: RoomGroups { grouping.withLock { $0 } }
}
