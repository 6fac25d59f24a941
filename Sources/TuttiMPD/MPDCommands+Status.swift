import FoundationEssentials
import Glibc
import TuttiCore
import TuttiDecode
import TuttiSystem
import TuttiLibrary
import TuttiControlKit

/// MPD commands: Status and connection: `status`, `stats`, `currentsong`, the repeat, single and volume flags.
extension MPDServer {
    // MARK: Status and connection

    static let statusCommands: [MPDCommandSpec] = [
        MPDCommandSpec("status", 0...0) { s, _, r throws(MPDError) in s.status(into: &r) },
        MPDCommandSpec("stats", 0...0) { s, _, r throws(MPDError) in s.stats(into: &r) },
        MPDCommandSpec("currentsong", 0...0) { s, c, r throws(MPDError) in
            let now = s.leader.nowPlaying
            if now.track >= 0, let id = now.entryID {
                var song = s.catalog.song(forQueueURI: now.path)
                if let phone = s.leader.airPlayNowPlaying(group: nil) {
                    // A phone plays through AirPlay: what it says it plays, and who it is (as a stream's Name).
                    song.tags["Title"] = phone.title ?? phone.source
                    song.tags["Artist"] = phone.artist
                    song.tags["Album"] = phone.album
                    song.durationSeconds = phone.durationSeconds
                    r.add("Name", phone.source)
                }
                s.write(song, position: now.track, id: id, client: c.client, into: &r)
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
            r.add("plugin", "flac"); r.add("suffix", "flac"); r.add("mime_type", "audio/flac")
            r.add("plugin", "ffmpeg")
            for suffix in FFmpegFormats.extensions.sorted() { r.add("suffix", suffix) }
            for mime in ["audio/mp4", "audio/aac", "audio/ogg", "audio/opus", "audio/x-ms-wma", "audio/x-wavpack", "audio/ape", "audio/aiff", "audio/x-dsf"] {
                r.add("mime_type", mime)
            }
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
    func setRepeat(repeat repeatOn: Bool, single: SingleMode) throws(MPDError) {
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
    func mainGroupRooms() -> [String] {
        leader.followerNames.filter { leader.group(ofRoom: $0).id == RoomGroups.mainID }
    }

    /// MPD's volume is the main group's: every room in it, connected or not,
    /// keeps its balance; with no room at all it is kept for the rooms that join.
    func setVolume(_ v: Int) throws(MPDError) {
        leader.setVolume(group: RoomGroups.mainID, UInt8(clamping: v))
    }

    // MARK: Status

    func status(into r: inout MPDResponse) {
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

    func nextIndex(queue: PlayQueue, current: Int, mode: RepeatMode) -> Int? {
        if mode == .one { return current }
        guard let p = queue.order.firstIndex(of: current) else { return nil }
        if p + 1 < queue.order.count { return queue.order[p + 1] }
        return mode == .all ? queue.order.first : nil
    }

    func stats(into r: inout MPDResponse) {
        let (s, loadedAt) = catalog.stats()
        r.add("artists", s.artists)
        r.add("albums", s.albums)
        r.add("songs", s.songs)
        r.add("uptime", Int(Date().timeIntervalSince(startedAt)))
        r.add("db_playtime", Int(s.totalSeconds))
        r.add("db_update", Int(loadedAt))
        r.add("playtime", Int(leader.playedNanoseconds / 1_000_000_000))
    }

    func tagTypes(_ args: [String], client: MPDClient, into r: inout MPDResponse) throws(MPDError) {
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
}
