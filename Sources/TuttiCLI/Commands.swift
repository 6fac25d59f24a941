import TuttiCore

/// What one `tutti` command does, read from its words before anything is
/// connected (pure). Positions are 0-based here (`queue del 1` is index 0);
/// relative paths are already made absolute.
public enum CLICommand: Equatable, Sendable {
    case status
    /// `player.play`, `.pause`, `.toggle`, `.stop`, `.next`, `.previous`.
    case player(method: String)
    case seek(Double, relative: Bool)
    /// nil: show the current one.
    case speed(Double?), pitch(Double?)
    /// nil: the other one (read from `player.status`).
    case shuffle(Bool?), consume(Bool?)
    /// nil: the next mode (the leader cycles).
    case repeatMode(String?), single(String?)
    case queue(Queue)
    case search(String)
    case searches(clear: Bool)
    /// nil: the current track.
    case like(trackID: Int?), unlike(trackID: Int?)
    case favourites, history
    case libraryScan(folder: String?)
    case playlist(Playlist)
    case cache(Cache)
    case podcast(Podcast)
    case rooms
    case speakers(Speakers)
    case roomVolume(room: String, Int), roomMute(room: String, Bool), roomLatency(room: String, milliseconds: Double)
    case groupVolume(group: String, Int), groupMute(group: String, Bool)
    case eq(Equalizer)
    /// Neither preset nor mix: show the room's reverb.
    case reverb(room: String, preset: String?, mix: Double?)
    /// nil map: show the room's channels.
    case channels(room: String, map: String?)
    case pair(left: String, right: String, name: String?), unpair(String), swapPair(String)
    case announce(Announce)
    case group(Group)
    case party(Party)
    case watch
    case calibrate(Calibrate)
    case leaders(seconds: Double)
    /// Handed to `tutti-follower doctor` with these arguments.
    case doctor([String])

    /// `tutti calibrate`: play a plan in rooms, or analyse a recording of one (docs/sound.md "Tuning rooms").
    public enum Calibrate: Equatable, Sendable {
        case play(rooms: [String], slotMilliseconds: Double?)
        /// The plan: from a file `calibrate --play --json` wrote, else these rooms (and slot).
        /// `apply`: set the trims; `equalise`: save each room's correction as a preset "Tuned DATE ROOM" and select it.
        case analyse(recording: String, plan: String?, rooms: [String]?, slotMilliseconds: Double?, apply: Bool, equalise: Bool = false)
    }

    public enum Queue: Equatable, Sendable {
        case list
        case add(uris: [String], next: Bool)
        case addSearch(String), addAlbum(String), addPlaylist(Int)
        case remove(index: Int), move(from: Int, to: Int), clear, play(index: Int)
    }

    public enum Playlist: Equatable, Sendable {
        case list, show(id: Int), create(name: String), delete(id: Int), rename(id: Int, name: String)
        case load(id: Int), save(name: String), importFile(path: String, name: String?), export(id: Int, path: String)
    }

    public enum Cache: Equatable, Sendable {
        case add(url: String), list, size, remove(url: String), clear
    }

    public enum Podcast: Equatable, Sendable {
        case subscribe(url: String), list, episodes(podcast: String)
        /// nil episode: the newest unplayed.
        case play(podcast: String, episode: String?)
        case refresh(podcast: String?), unsubscribe(podcast: String)
        case setPlayed(podcast: String, episode: String, Bool)
        /// nil speed: none of its own (`none`); a word that is no number is sent as -1, for the leader to refuse.
        case setSpeed(podcast: String, Double?)
        case download(podcast: String, episode: String)
    }

    /// `tutti announce`: who hears what (docs/sound.md "Announcements").
    public struct Announce: Equatable, Sendable {
        public var rooms: [String] = []
        public var all = false
        public var group: String? = nil
        public var text: String? = nil
        public var url: String? = nil
        public var language: String? = nil
        /// 0–100 (nil: the leader's default, 70).
        public var volume: Int? = nil
        public var duckDecibels: Double? = nil
        public init() {}
    }
    public enum Speakers: Equatable, Sendable {
        case list
        /// `allow`, `deny` or `forget` (`speakers.<verb>`) a speaker by name.
        case decide(verb: String, name: String)
        case pair(code: String)
        /// A Sendspin player's pairing code (`speakers.sendspinCode`), for the one named when several wait.
        case sendspinCode(code: String, name: String?)
    }

    public enum Equalizer: Equatable, Sendable {
        case show(room: String), presets, delete(name: String)
        case save(name: String, from: Source)
        case set(room: String, Change)

        public enum Source: Equatable, Sendable { case gains([Double]), room(String) }

        /// What `eq ROOM …` changes; a later word overrides an earlier one.
        public struct Change: Equatable, Sendable {
            public var preset: String? = nil
            public var gains: [Double]? = nil
            public var bass: Double? = nil
            public var treble: Double? = nil
            public var preamp: Preamp? = nil
            public init() {}
        }

        public enum Preamp: Equatable, Sendable { case auto, decibels(Double) }
    }

    public enum Group: Equatable, Sendable {
        case list, create(name: String, rooms: [String]), add(group: String, rooms: [String])
        case leave(room: String), rename(group: String, name: String), delete(group: String)
    }

    public enum Party: Equatable, Sendable {
        /// nil: the main group.
        case on(group: String?), off, status
    }
}

extension CLICommand {
    /// Reads `options.command` and its operands; `workingDirectory` makes
    /// relative file names absolute (the leader has its own). An unknown
    /// command or a bad operand is a `UsageError` (exit 64).
    public init(_ options: CLIOptions, workingDirectory: String) throws(UsageError) {
        let words = CommandWords(word: options.command, operands: options.operands, group: options.group, workingDirectory: workingDirectory)
        guard let entry = CLICommandTable.entry(named: options.command), let parse = entry.parse else {
            throw UsageError(UserMessage(.cliUnknownCommand, ["command": options.command]))
        }
        self = try parse(words)
    }
}

/// A command's word and what follows it, for its entry's `parse`.
struct CommandWords: Sendable {
    let word: String
    let operands: [String]
    /// `--group GROUP`: `vol`, `mute` and `unmute` then act on a group.
    let group: String?
    let workingDirectory: String

    var first: String? { operands.first }
    /// The operands after the first (a subcommand's own).
    var rest: [String] { Array(operands.dropFirst()) }

    /// `path` as the leader must see it: relative to the directory tutti runs in.
    func absolute(_ path: String) -> String { path.hasPrefix("/") ? path : workingDirectory + "/" + path }

    /// A queue position from 1, as a 0-based index.
    static func queueIndex(_ text: String?) throws(UsageError) -> Int {
        guard let text, let n = Int(text), n >= 1 else { throw UsageError(UserMessage(.cliQueuePositions)) }
        return n - 1
    }

    /// Ten comma-separated gains in dB (`eq ROOM g1,…,g10`), nil when it is not that.
    static func gains(_ text: String) -> [Double]? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Double(trimmingSpaces($0)) }
        guard parts.count == 10, parts.allSatisfy({ $0 != nil }) else { return nil }
        return parts.map { $0! }
    }

    private static func trimmingSpaces(_ s: Substring) -> Substring {
        let space: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        return s.drop(while: space).reversed().drop(while: space).reversed().reduce(into: Substring()) { $0.append($1) }
    }
}

/// One row of the command table: the words that name a command, its lines
/// in the help, and how its operands are read. The help text and the
/// parser both come from here (`CLICommandTable.rows`).
struct CLICommandEntry: Sendable {
    /// The words that run it (the first is the one the help shows).
    let names: [String]
    /// Usage and summary, a help line each (a summary may run on, `\n`-separated):
    /// the usage is syntax, the same in every language; the summary is the catalogue's.
    let help: [(usage: String, summary: MessageKey?)]
    /// nil: a line of the help that is no command (`--version`).
    let parse: (@Sendable (CommandWords) throws(UsageError) -> CLICommand)?
}

enum CLICommandTable {
    static func entry(named word: String) -> CLICommandEntry? { rows.first { $0.names.contains(word) } }

    private typealias Words = CommandWords
    private static func usage(_ message: String) -> UsageError { UsageError(message) }
    private static func usage(_ message: UserMessage) -> UsageError { UsageError(message) }

    private static func calibrate(_ w: Words) throws(UsageError) -> CLICommand {
        var play: [String]?, recording: String?, plan: String?, rooms: [String]?, slot: Double?, apply = false, equalise = false
        var args = w.operands[...]
        func value(_ flag: String) throws(UsageError) -> String {
            guard let v = args.popFirst(), !v.isEmpty else { throw usage(UserMessage(.cliOptionNeedsValue, ["flag": flag])) }
            return v
        }
        func roomList(_ text: String) -> [String] {
            text.split(separator: ",").map { String(String($0.drop { $0 == " " }.reversed()).drop { $0 == " " }.reversed()) }.filter { !$0.isEmpty }
        }
        while let a = args.popFirst() {
            switch a {
            case "--play": play = roomList(try value("--play"))
            case "--analyse", "--analyze": recording = w.absolute(try value("--analyse"))
            case "--plan": plan = w.absolute(try value("--plan"))
            case "--rooms": rooms = roomList(try value("--rooms"))
            case "--slot-ms":
                guard let v = Double(try value("--slot-ms")), v >= 1_500, v <= 10_000 else { throw usage(UserMessage(.cliCalibrateSlotRange)) }
                slot = v
            case "--apply": apply = true
            case "--eq": equalise = true
            default: throw usage(UserMessage(.cliCalibrateUnknownArgument, ["argument": a]))
            }
        }
        if let play, recording == nil {
            guard !play.isEmpty else { throw usage(UserMessage(.cliCalibratePlayNeedsRooms)) }
            return .calibrate(.play(rooms: play, slotMilliseconds: slot))
        }
        guard let recording, play == nil else { throw usage(UserMessage(.cliCalibrateNeeds)) }
        guard plan != nil || rooms?.isEmpty == false else { throw usage(UserMessage(.cliCalibrateAnalyseNeeds)) }
        return .calibrate(.analyse(recording: recording, plan: plan, rooms: rooms, slotMilliseconds: slot, apply: apply, equalise: equalise))
    }

    static let rows: [CLICommandEntry] = [
        .init(names: ["status"], help: [("status", .cliHelpStatus)]) { _ in .status },
        .init(names: ["play", "pause", "toggle", "stop"], help: [("play | pause | toggle | stop", nil)]) { w in .player(method: "player." + w.word) },
        .init(names: ["next", "prev", "previous"], help: [("next | prev", .cliHelpSkip)]) { w in
            .player(method: w.word == "next" ? "player.next" : "player.previous")
        },
        .init(names: ["seek"], help: [("seek SECONDS | +S | -S", .cliHelpSeek)]) { w throws(UsageError) in
            guard let text = w.first, let value = Double(text), value.isFinite else { throw usage(UserMessage(.cliSeekNeeds)) }
            return .seek(value, relative: text.hasPrefix("+") || text.hasPrefix("-"))
        },
        .init(names: ["speed"], help: [("speed [0.5-2.0]", .cliHelpSpeed)]) { w throws(UsageError) in
            guard let text = w.first else { return .speed(nil) }
            guard let value = Double(text), value.isFinite else { throw usage(UserMessage(.cliSpeedNeeds)) }
            return .speed(value)
        },
        .init(names: ["pitch"], help: [("pitch [-12..+12]", .cliHelpPitch)]) { w throws(UsageError) in
            guard let text = w.first else { return .pitch(nil) }
            guard let value = Double(text), value.isFinite else { throw usage(UserMessage(.cliPitchNeeds)) }
            return .pitch(value)
        },
        .init(names: ["shuffle"], help: [("shuffle [on|off]", .cliHelpShuffle)]) { w throws(UsageError) in .shuffle(try onOff(w)) },
        .init(names: ["repeat"], help: [("repeat [off|all|one]", .cliHelpRepeat)]) { w throws(UsageError) in
            guard let mode = w.first else { return .repeatMode(nil) }
            guard ["off", "all", "one"].contains(mode) else { throw usage(UserMessage(.cliRepeatTakes)) }
            return .repeatMode(mode)
        },
        .init(names: ["single"], help: [("single [on|off|oneshot]", .cliHelpSingle)]) { w throws(UsageError) in
            guard let mode = w.first else { return .single(nil) }
            guard ["off", "on", "oneshot", "once"].contains(mode) else { throw usage(UserMessage(.cliSingleTakes)) }
            return .single(mode == "once" ? "oneshot" : mode) // mpc says "once"
        },
        .init(names: ["consume"], help: [("consume [on|off]", .cliHelpConsume)]) { w throws(UsageError) in .consume(try onOff(w)) },
        .init(names: ["queue"], help: [
            ("queue", .cliHelpQueue),
            ("queue add URI...", .cliHelpQueueAdd),
            ("queue add-search TEXT", .cliHelpQueueAddSearch),
            ("queue del N | move FROM TO | clear | play N", nil),
        ], parse: queue),
        .init(names: ["search"], help: [("search TEXT", .cliHelpSearch)]) { w throws(UsageError) in
            guard !w.operands.isEmpty else { throw usage(UserMessage(.cliSearchNeedsText)) }
            return .search(w.operands.joined(separator: " "))
        },
        .init(names: ["searches"], help: [("searches [clear]", .cliHelpSearches)]) { w in .searches(clear: w.first == "clear") },
        .init(names: ["like", "unlike", "favorites", "favourites"], help: [("like [ID] | unlike [ID] | favorites", nil)]) { w throws(UsageError) in
            if w.word == "favorites" || w.word == "favourites" { return .favourites }
            var id: Int? = nil
            if let text = w.first {
                guard let n = Int(text) else { throw usage(UserMessage(.cliTakesTrackID, ["command": w.word])) }
                id = n
            }
            return w.word == "like" ? .like(trackID: id) : .unlike(trackID: id)
        },
        .init(names: ["history"], help: [("history", .cliHelpHistory)]) { _ in .history },
        .init(names: ["library"], help: [("library scan [DIR]", .cliHelpLibraryScan)]) { w throws(UsageError) in
            guard w.first == "scan" else { throw usage("library scan [DIR]") }
            return .libraryScan(folder: w.operands.count > 1 ? w.operands[1] : nil)
        },
        .init(names: ["playlist", "playlists"], help: [
            ("playlist [list]", .cliHelpPlaylists),
            ("playlist show ID | create NAME | delete ID | rename ID NAME | load ID | save NAME", nil),
            ("playlist import FILE.m3u [NAME] | export ID FILE.m3u", nil),
        ], parse: playlist),
        .init(names: ["cache"], help: [("cache add URL | list | size | remove URL | clear", .cliHelpCache)], parse: cache),
        .init(names: ["podcast", "podcasts"], help: [
            ("podcast add URL", .cliHelpPodcastAdd),
            ("podcast list | episodes NAME | refresh [NAME] | remove NAME", nil),
            ("podcast play NAME [EPISODE]", .cliHelpPodcastPlay),
            ("podcast played|unplayed NAME EPISODE | speed NAME 0.5-2.0|none | download NAME EPISODE", nil),
        ], parse: podcast),
        .init(names: ["rooms"], help: [("rooms", .cliHelpRooms)]) { _ in .rooms },
        .init(names: ["speakers"], help: [
            ("speakers", .cliHelpSpeakers),
            ("speakers allow NAME | deny NAME", .cliHelpSpeakersAllow),
            ("speakers pair CODE", .cliHelpSpeakersPair),
            ("speakers code CODE [NAME]", .cliHelpSpeakersCode),
            ("speakers forget NAME", .cliHelpSpeakersForget),
        ], parse: speakers),
        .init(names: ["vol"], help: [
            ("vol ROOM 0-100", .cliHelpVolume),
            ("vol --group GROUP 0-100", .cliHelpGroupVolume),
        ]) { w throws(UsageError) in
            if let group = w.group {
                guard let text = w.first, let v = Int(text), (0...100).contains(v) else { throw usage(UserMessage(.cliGroupVolumeNeeds)) }
                return .groupVolume(group: group, v)
            }
            let room = try needRoom(w)
            guard w.operands.count > 1, let v = Int(w.operands[1]), (0...100).contains(v) else { throw usage(UserMessage(.cliVolumeNeeds)) }
            return .roomVolume(room: room, v)
        },
        .init(names: ["mute", "unmute"], help: [("mute ROOM | unmute ROOM", .cliHelpMute)]) { w throws(UsageError) in
            if let group = w.group { return .groupMute(group: group, w.word == "mute") }
            return .roomMute(room: try needRoom(w), w.word == "mute")
        },
        .init(names: ["eq"], help: [
            ("eq ROOM", .cliHelpEq),
            ("eq ROOM PRESET", .cliHelpEqPreset),
            ("eq ROOM g1,g2,…,g10", .cliHelpEqGains),
            ("eq ROOM bass DB | treble DB | preamp auto|DB", .cliHelpEqShelves),
            ("eq presets", .cliHelpEqPresets),
            ("eq save NAME ROOM|g1,…,g10 | eq delete NAME", .cliHelpEqSave),
        ], parse: equalizer),
        .init(names: ["reverb"], help: [
            ("reverb ROOM [PRESET] [MIX]", .cliHelpReverb),
            ("reverb ROOM off", .cliHelpReverbOff),
        ]) { w throws(UsageError) in
            let room = try needRoom(w)
            var words = Array(w.operands.dropFirst())
            // The last word is the mix when it is a number; the words before it name the preset ("Large hall").
            var mix: Double? = nil
            if let last = words.last, let n = Double(last.hasSuffix("%") ? String(last.dropLast()) : last) {
                guard n.isFinite else { throw usage(UserMessage(.cliReverbNeeds)) }
                mix = n
                words.removeLast()
            }
            return .reverb(room: room, preset: words.isEmpty ? nil : words.joined(separator: " "), mix: mix)
        },
        .init(names: ["channels"], help: [
            ("channels ROOM stereo|left|right|mono|swap", .cliHelpChannels),
        ]) { w throws(UsageError) in
            let room = try needRoom(w)
            guard w.operands.count <= 2 else { throw usage("channels ROOM stereo|left|right|mono|swap") }
            return .channels(room: room, map: w.operands.count > 1 ? w.operands[1] : nil)
        },
        .init(names: ["pair"], help: [
            ("pair LEFT RIGHT [NAME]", .cliHelpPair),
            ("pair swap NAME", .cliHelpPairSwap),
        ]) { w throws(UsageError) in
            let ops = w.operands
            if ops.first == "swap" {
                guard ops.count == 2 else { throw usage("pair swap NAME") }
                return .swapPair(ops[1])
            }
            guard ops.count == 2 || ops.count == 3 else { throw usage("pair LEFT RIGHT [NAME]") }
            return .pair(left: ops[0], right: ops[1], name: ops.count == 3 ? ops[2] : nil)
        },
        .init(names: ["announce"], help: [
            ("announce --rooms R1,R2 TEXT", .cliHelpAnnounceText),
            ("announce --rooms R1,R2 --url URL|FILE", .cliHelpAnnounceURL),
            ("announce --all … | --group GROUP …", .cliHelpAnnounceAll),
        ], parse: announce),
        .init(names: ["unpair"], help: [("unpair NAME", .cliHelpUnpair)]) { w throws(UsageError) in
            guard w.operands.count == 1 else { throw usage(UserMessage(.cliUnpairNeeds)) }
            return .unpair(w.operands[0])
        },
        .init(names: ["latency"], help: [("latency ROOM MS", .cliHelpLatency)]) { w throws(UsageError) in
            let room = try needRoom(w)
            guard w.operands.count > 1, let ms = Double(w.operands[1]), ms.isFinite else { throw usage(UserMessage(.cliLatencyNeeds)) }
            return .roomLatency(room: room, milliseconds: ms)
        },
        .init(names: ["group", "groups"], help: [
            ("group [list]", .cliHelpGroup),
            ("group new NAME [ROOM...] | add GROUP ROOM... | leave ROOM | rename GROUP NAME | delete GROUP", nil),
        ], parse: group),
        .init(names: ["party"], help: [("party [on [GROUP]|off|status]", .cliHelpParty)]) { w throws(UsageError) in
            switch w.first ?? "on" {
            case "on": return .party(.on(group: w.operands.count > 1 ? w.operands[1] : nil))
            case "off": return .party(.off)
            case "status": return .party(.status)
            default: throw usage("party [on [GROUP]|off|status]")
            }
        },
        .init(names: ["watch"], help: [("watch", .cliHelpWatch)]) { _ in .watch },
        .init(names: ["calibrate"], help: [
            ("calibrate --play ROOM,ROOM... [--slot-ms MS]", .cliHelpCalibratePlay),
            ("calibrate --analyse REC.wav --rooms ROOM,ROOM... | --plan PLAN.json [--apply] [--eq]", .cliHelpCalibrateAnalyse),
        ], parse: calibrate),
        .init(names: ["leaders", "discover"], help: [("leaders [SECONDS]", .cliHelpLeaders)]) { w in
            .leaders(seconds: w.first.flatMap { Double($0) }.map { min(max($0, 0.1), 60) } ?? 2)
        },
        .init(names: ["doctor"], help: [("doctor [--config FILE]", .cliHelpDoctor)]) { w in .doctor(w.operands) },
        .init(names: ["--version"], help: [("--version", .cliHelpVersion)], parse: nil),
    ]

    private static func onOff(_ w: Words) throws(UsageError) -> Bool? {
        guard let arg = w.first else { return nil }
        guard arg == "on" || arg == "off" else { throw usage(UserMessage(.cliOnOrOff, ["command": w.word])) }
        return arg == "on"
    }

    private static func needRoom(_ w: Words) throws(UsageError) -> String {
        guard let room = w.first else { throw usage(UserMessage(.cliNeedsRoom, ["command": w.word])) }
        return room
    }

    private static func queue(_ w: Words) throws(UsageError) -> CLICommand {
        let rest = w.rest
        switch w.first ?? "list" {
        case "list": return .queue(.list)
        case "add":
            let uris = rest.filter { $0 != "--next" }.map { $0.contains("://") ? $0 : w.absolute($0) }
            guard !uris.isEmpty else { throw usage(UserMessage(.cliQueueAddNeeds)) }
            return .queue(.add(uris: uris, next: rest.first == "--next"))
        case let sub where ["add-search", "add-album", "add-playlist"].contains(sub):
            guard !rest.isEmpty else { throw usage(UserMessage(.cliNeedsArgument, ["command": sub])) }
            switch sub {
            case "add-search": return .queue(.addSearch(rest.joined(separator: " ")))
            case "add-album": return .queue(.addAlbum(rest.joined(separator: " ")))
            default: return .queue(.addPlaylist(Int(rest[0]) ?? -1)) // the leader refuses -1
            }
        case "del": return .queue(.remove(index: try Words.queueIndex(rest.first)))
        case "move":
            guard rest.count == 2 else { throw usage("queue move FROM TO") }
            return .queue(.move(from: try Words.queueIndex(rest[0]), to: try Words.queueIndex(rest[1])))
        case "clear": return .queue(.clear)
        case "play": return .queue(.play(index: try Words.queueIndex(rest.first)))
        case let sub: throw usage(UserMessage(.cliUnknownSubcommand, ["command": "queue", "sub": sub]))
        }
    }

    private static func playlist(_ w: Words) throws(UsageError) -> CLICommand {
        let sub = w.first ?? "list", rest = w.rest
        func id() throws(UsageError) -> Int {
            guard let t = rest.first, let n = Int(t) else { throw usage(UserMessage(.cliPlaylistNeedsID, ["sub": sub])) }
            return n
        }
        switch sub {
        case "list": return .playlist(.list)
        case "show": return .playlist(.show(id: try id()))
        case "create":
            guard !rest.isEmpty else { throw usage("playlist create NAME") }
            return .playlist(.create(name: rest.joined(separator: " ")))
        case "delete": return .playlist(.delete(id: try id()))
        case "rename":
            guard rest.count >= 2 else { throw usage("playlist rename ID NAME") }
            return .playlist(.rename(id: try id(), name: rest.dropFirst().joined(separator: " ")))
        case "load": return .playlist(.load(id: try id()))
        case "save":
            guard !rest.isEmpty else { throw usage("playlist save NAME") }
            return .playlist(.save(name: rest.joined(separator: " ")))
        case "import":
            guard let file = rest.first else { throw usage("playlist import FILE.m3u [NAME]") }
            return .playlist(.importFile(path: w.absolute(file), name: rest.count > 1 ? rest.dropFirst().joined(separator: " ") : nil))
        case "export":
            guard rest.count == 2 else { throw usage("playlist export ID FILE.m3u") }
            // A bare name goes to the leader's playlist folder (the only place it writes playlists).
            return .playlist(.export(id: try id(), path: rest[1].contains("/") ? w.absolute(rest[1]) : rest[1]))
        default: throw usage(UserMessage(.cliUnknownSubcommand, ["command": "playlist", "sub": sub]))
        }
    }

    private static func cache(_ w: Words) throws(UsageError) -> CLICommand {
        switch w.first ?? "list" {
        case "add":
            guard w.operands.count == 2 else { throw usage("cache add URL") }
            return .cache(.add(url: w.operands[1]))
        case "list": return .cache(.list)
        case "size": return .cache(.size)
        case "remove":
            guard w.operands.count == 2 else { throw usage("cache remove URL") }
            return .cache(.remove(url: w.operands[1]))
        case "clear": return .cache(.clear)
        case let sub: throw usage(UserMessage(.cliUnknownSubcommand, ["command": "cache", "sub": sub]))
        }
    }

    private static func podcast(_ w: Words) throws(UsageError) -> CLICommand {
        let rest = w.rest
        switch w.first ?? "list" {
        case "add", "subscribe":
            guard rest.count == 1 else { throw usage("podcast add URL") }
            return .podcast(.subscribe(url: rest[0]))
        case "list": return .podcast(.list)
        case "episodes":
            guard !rest.isEmpty else { throw usage("podcast episodes NAME") }
            return .podcast(.episodes(podcast: rest.joined(separator: " ")))
        case "play":
            guard !rest.isEmpty else { throw usage("podcast play NAME [EPISODE]") }
            return .podcast(.play(podcast: rest[0], episode: rest.count > 1 ? rest.dropFirst().joined(separator: " ") : nil))
        case "refresh": return .podcast(.refresh(podcast: rest.isEmpty ? nil : rest.joined(separator: " ")))
        case "remove", "unsubscribe":
            guard !rest.isEmpty else { throw usage("podcast remove NAME") }
            return .podcast(.unsubscribe(podcast: rest.joined(separator: " ")))
        case let sub where sub == "played" || sub == "unplayed":
            guard rest.count >= 2 else { throw usage("podcast \(sub) NAME EPISODE") }
            return .podcast(.setPlayed(podcast: rest[0], episode: rest.dropFirst().joined(separator: " "), sub == "played"))
        case "speed":
            guard rest.count == 2 else { throw usage("podcast speed NAME 0.5-2.0|none") }
            return .podcast(.setSpeed(podcast: rest[0], rest[1] == "none" ? nil : (Double(rest[1]) ?? -1)))
        case "download":
            guard rest.count >= 2 else { throw usage("podcast download NAME EPISODE") }
            return .podcast(.download(podcast: rest[0], episode: rest.dropFirst().joined(separator: " ")))
        case let sub: throw usage(UserMessage(.cliUnknownSubcommandHelp, ["command": "podcast", "sub": sub]))
        }
    }

    private static func announce(_ w: Words) throws(UsageError) -> CLICommand {
        var a = CLICommand.Announce()
        var words: [String] = []
        var i = 0
        let ops = w.operands
        func value(_ flag: String) throws(UsageError) -> String {
            i += 1
            guard i < ops.count else { throw usage(UserMessage(.cliOptionNeedsValueAnnounce, ["flag": flag])) }
            return ops[i]
        }
        while i < ops.count {
            switch ops[i] {
            case "--rooms", "--room":
                a.rooms = try value(ops[i]).split(separator: ",").map(String.init).filter { !$0.isEmpty }
            case "--all": a.all = true
            case "--url": let u = try value("--url"); a.url = u.contains("://") ? u : w.absolute(u)
            case "--lang": a.language = try value("--lang")
            case "--volume":
                guard let v = Int(try value("--volume")), (0...100).contains(v) else { throw usage(UserMessage(.cliAnnounceVolumeNeeds)) }
                a.volume = v
            case "--duck":
                guard let d = Double(try value("--duck")), d.isFinite else { throw usage(UserMessage(.cliAnnounceDuckNeeds)) }
                a.duckDecibels = -abs(d)
            default: words.append(ops[i])
            }
            i += 1
        }
        a.group = w.group
        if !words.isEmpty { a.text = words.joined(separator: " ") }
        let targets = (a.rooms.isEmpty ? 0 : 1) + (a.all ? 1 : 0) + (a.group == nil ? 0 : 1)
        guard targets == 1 else { throw usage(UserMessage(.cliAnnounceNeedsTarget)) }
        guard (a.url == nil) != (a.text == nil) else { throw usage(UserMessage(.cliAnnounceNeedsText)) }
        return .announce(a)
    }

    private static func speakers(_ w: Words) throws(UsageError) -> CLICommand {
        switch w.first {
        case nil, "list": return .speakers(.list)
        case let verb? where ["allow", "deny", "forget"].contains(verb):
            guard w.operands.count == 2 else { throw usage("speakers \(verb) NAME") }
            return .speakers(.decide(verb: verb, name: w.operands[1]))
        case "pair":
            guard w.operands.count >= 2 else { throw usage(UserMessage(.cliSpeakersPairNeeds)) }
            return .speakers(.pair(code: w.rest.joined()))
        case "code":
            // The code as a person types it, in groups or not (`123 456`, `1234-5678`); the words after it name the player.
            let rest = w.operands.dropFirst()
            let groups = rest.prefix { !$0.isEmpty && $0.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || $0 == "-" } }
            guard !groups.isEmpty else { throw usage(UserMessage(.cliSpeakersCodeNeeds)) }
            let name = rest.dropFirst(groups.count).joined(separator: " ")
            return .speakers(.sendspinCode(code: groups.joined(), name: name.isEmpty ? nil : name))
        case let sub?: throw usage(UserMessage(.cliSpeakersUnknownCommand, ["sub": sub]))
        }
    }

    private static func equalizer(_ w: Words) throws(UsageError) -> CLICommand {
        let operands = w.operands
        switch operands.first {
        case nil: throw usage(UserMessage(.cliEqNeedsRoom))
        case "presets": return .eq(.presets)
        case "save":
            guard operands.count >= 3 else { throw usage("eq save NAME ROOM | eq save NAME g1,…,g10") }
            let source = operands[2]
            return .eq(.save(name: operands[1], from: Words.gains(source).map { .gains($0) } ?? .room(source)))
        case "delete":
            guard operands.count >= 2 else { throw usage("eq delete NAME") }
            return .eq(.delete(name: operands.dropFirst().joined(separator: " ")))
        case let room?:
            let args = w.rest
            if args.isEmpty { return .eq(.show(room: room)) }
            var change = CLICommand.Equalizer.Change()
            var i = 0
            while i < args.count {
                let a = args[i]
                let number = i + 1 < args.count ? Double(args[i + 1]) : nil
                switch a {
                // `bass 3` is the shelf; `bass` alone is the preset of that name.
                case "bass" where number != nil: change.bass = number; i += 2
                case "treble" where number != nil: change.treble = number; i += 2
                case "preamp":
                    guard i + 1 < args.count else { throw usage(UserMessage(.cliEqPreampNeeds)) }
                    if args[i + 1] == "auto" { change.preamp = .auto } else if let db = number { change.preamp = .decibels(db) } else {
                        throw usage(UserMessage(.cliEqPreampNeeds))
                    }
                    i += 2
                default:
                    if let g = Words.gains(a) { change.gains = g } else { change.preset = a }
                    i += 1
                }
            }
            return .eq(.set(room: room, change))
        }
    }

    private static func group(_ w: Words) throws(UsageError) -> CLICommand {
        let rest = w.rest
        switch w.first ?? "list" {
        case "list": return .group(.list)
        case "new", "create":
            guard let name = rest.first else { throw usage("group new NAME [ROOM...]") }
            return .group(.create(name: name, rooms: Array(rest.dropFirst())))
        case "add":
            guard rest.count >= 2 else { throw usage("group add GROUP ROOM...") }
            return .group(.add(group: rest[0], rooms: Array(rest.dropFirst())))
        case "leave", "remove":
            guard rest.count == 1 else { throw usage("group leave ROOM") }
            return .group(.leave(room: rest[0]))
        case "rename":
            guard rest.count == 2 else { throw usage("group rename GROUP NAME") }
            return .group(.rename(group: rest[0], name: rest[1]))
        case "delete":
            guard rest.count == 1 else { throw usage("group delete GROUP") }
            return .group(.delete(group: rest[0]))
        case let sub: throw usage(UserMessage(.cliUnknownSubcommandHelp, ["command": "group", "sub": sub]))
        }
    }
}
