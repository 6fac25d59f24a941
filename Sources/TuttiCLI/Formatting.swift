import TuttiCore
import TuttiDiscovery

// What `tutti` prints, from the JSON-RPC results: pure, so tests check the
// text without a leader.

/// M:SS.
public func clock(_ seconds: Double) -> String {
    let s = Int(seconds.rounded(.down))
    return cFormat("%d:%02d", s / 60, s % 60)
}

extension Language {
    /// A text of the catalogue in this language, its placeholders filled.
    func text(_ key: MessageKey, _ arguments: [String: String] = [:]) -> String { UserMessage(key, arguments).text(in: self) }

    /// A word the leader sends as a value (`play`, `off`, `left`, `paired`) in
    /// this language; a word the catalogue does not have stays as it came.
    func value(_ word: String) -> String { Self.valueWords[word].map { text($0) } ?? word }

    private static let valueWords: [String: MessageKey] = [
        "play": .cliStatePlay, "pause": .cliStatePause, "stop": .cliStateStop, "on": .cliOn, "off": .cliOff,
        "all": .cliRepeatAll, "one": .cliRepeatOne, "oneshot": .cliSingleOneshot,
        "stereo": .cliChannelStereo, "left": .cliChannelLeft, "right": .cliChannelRight, "mono": .cliChannelMono, "swap": .cliChannelSwap,
        "open": .cliAdmissionOpen, "room-key": .cliAdmissionRoomKey, "paired": .cliAdmissionPaired,
    ]
}

/// The last component of a path, as a file name (`/music/a/01 song.flac` → `01 song.flac`).
func fileName(_ path: String) -> String {
    guard let last = path.split(separator: "/").last else { return path.isEmpty ? "" : "/" }
    return String(last)
}

/// `player.status` as `tutti status` prints it: the track line, then the play options.
public func describeStatus(_ s: JSONValue, language: Language = .english) -> String {
    let position = s["position"]?.number ?? 0
    let duration = s["duration"]?.number
    var bar = ""
    if let d = duration, d > 0 {
        let filled = min(30, Int(30 * position / d))
        bar = " [" + String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled) + "]"
    }
    var file = s["file"]?.string.map(fileName) ?? "?"
    if let title = s["title"]?.string {
        file = title
        if let artist = s["artist"]?.string { file = "\(artist) — \(title)" }
        if let album = s["album"]?.string { file += " [\(album)]" }
    }
    let track = (s["track"]?.integer ?? 0) + 1
    var line = language.text(.cliStatusTrack, [
        "state": language.value(s["state"]?.string ?? "?"), "file": file, "number": "\(track)", "count": "\(s["trackCount"]?.integer ?? 0)",
        "position": "\(clock(position))\(duration.map { "/" + clock($0) } ?? "")\(bar)",
    ])
    // Network sources: how much is downloaded ahead, and of a file how much has arrived.
    var buffered: [String] = []
    if let b = s["bufferedSeconds"]?.number { buffered.append(language.text(.cliStatusAhead, ["seconds": cFormat("%.1f", b)])) }
    if let f = s["bufferedFraction"]?.number { buffered.append(language.text(.cliStatusDownloaded, ["percent": cFormat("%.0f", f * 100)])) }
    if !buffered.isEmpty { line += " " + language.text(.cliStatusBuffered, ["parts": buffered.joined(separator: ", ")]) }
    // The play options, on the line below: shuffle, repeat, single, consume.
    var options = [language.text(.cliStatusShuffle, ["state": language.value((s["shuffle"]?.bool ?? false) ? "on" : "off")]),
                   language.text(.cliStatusRepeat, ["mode": language.value(s["repeat"]?.string ?? "off")])]
    if let single = s["single"]?.string, single != "off" { options.append(language.text(.cliStatusSingle, ["mode": language.value(single)])) }
    if s["consume"]?.bool == true { options.append(language.text(.cliStatusConsume, ["state": language.value("on")])) }
    if let speed = s["speed"]?.number, speed != 1 {
        options.append(language.text(.cliStatusSpeed, ["speed": cFormat("%.2f", speed)])
                       + (s["remaining"]?.number.map { ", " + language.text(.cliStatusEndsIn, ["time": clock($0)]) } ?? ""))
    }
    if let pitch = s["pitch"]?.number, pitch != 0 { options.append(language.text(.cliStatusPitch, ["pitch": cFormat("%+.1f", pitch)])) }
    if s["shuffle"] != nil { line += "\n  " + options.joined(separator: ", ") }
    if let e = s["error"]?.string { line += "\n  " + language.text(.cliStatusLastError, ["error": e]) }
    if let source = s["source"]?.string { line += "\n  \(source)" } // "AirPlay from Anna's iPhone": the leader's text
    return line
}

/// A room's reverb as `rooms.list` gives it: "Large hall at 30 % (RT60 1.8 s)", "off".
/// The preset's name is data (what `tutti reverb ROOM PRESET` takes).
public func describeReverb(_ r: JSONValue?, language: Language = .english) -> String {
    guard let r, r["off"]?.bool == false else { return language.value("off") }
    let name = r["preset"]?.string
        ?? language.text(.cliReverbCustom, ["size": cFormat("%.2f", r["size"]?.number ?? 0), "damping": cFormat("%.2f", r["damping"]?.number ?? 0)])
    return language.text(.cliReverbSetting, ["preset": name, "mix": cFormat("%.0f", r["mix"]?.number ?? 0),
                                             "seconds": cFormat("%.1f", r["decaySeconds"]?.number ?? 0)])
}

/// One room of `rooms.list`: volume, trim and sync health.
public func describeRoom(_ r: JSONValue, language: Language = .english) -> String {
    let group = r["group"]?.string.map { $0 == "main" ? "" : " [\(r["groupName"]?.string ?? $0)]" } ?? ""
    var line = "\(r["name"]?.string ?? "?")\(group): " + language.text(.cliRoomVolume, ["volume": "\(r["volume"]?.integer ?? 0)"])
    if r["muted"]?.bool ?? false { line += " " + language.text(.cliRoomMuted) }
    if let pair = r["pair"], pair.object != nil {
        // A stereo pair: one volume; each speaker's side and trim.
        let sides = (r["speakers"]?.array ?? []).map { s in
            "\(s["name"]?.string ?? "?") \(language.value(s["side"]?.string ?? "?"))"
                + ((s["latencyMs"]?.number ?? 0) != 0 ? cFormat(" %+.1f ms", s["latencyMs"]?.number ?? 0) : "")
                + ((s["connected"]?.bool ?? false) ? "" : " " + language.text(.cliRoomOffline))
        }
        return line + ", " + language.text(.cliRoomStereoPair, ["speakers": sides.joined(separator: ", ")])
    }
    if let channels = r["channels"]?.string, channels != "stereo" { line += ", " + language.text(.cliRoomPlays, ["channels": language.value(channels)]) }
    if let reverb = r["reverb"], reverb["off"]?.bool == false {
        line += ", " + language.text(.cliRoomReverb, ["reverb": describeReverb(reverb, language: language)])
    }
    if let trim = r["latencyMs"]?.number, trim != 0 { line += ", " + language.text(.cliRoomLatency, ["ms": cFormat("%+.1f", trim)]) }
    if let h = r["health"], h.object != nil {
        line += ", " + language.text(.cliRoomHealth, [
            "sync": cFormat("%+.1f", h["outputErrorUs"]?.number ?? 0), "buffer": cFormat("%.0f", h["bufferMs"]?.number ?? 0),
            "ratio": cFormat("%+.1f", h["ratioPpm"]?.number ?? 0), "rtt": cFormat("%.0f", h["rttUs"]?.number ?? 0),
            "underruns": "\(h["underruns"]?.integer ?? 0)", "resyncs": "\(h["hardResyncs"]?.integer ?? 0)",
        ])
        // v6: a stream that delivers late is why commands there take longer than 100 ms (docs/protocol.md, command lead).
        if let late = h["streamDelayMaxMs"]?.number, late >= 10 { line += ", " + language.text(.cliRoomStreamLate, ["ms": cFormat("%.0f", late)]) }
    }
    return line
}

/// A room's equaliser: preset, ten bands, shelves and preamp.
public func describeEqualizer(_ room: String, _ eq: JSONValue, language: Language = .english) -> String {
    let bands = ["32", "64", "125", "250", "500", "1k", "2k", "4k", "8k", "16k"]
    let gains = eq["gains"]?.numbers ?? []
    var line = language.text(.cliEqHeader, ["room": room, "preset": eq["preset"]?.string ?? language.text(.cliEqCustom)])
    if eq["flat"]?.bool ?? false { line += " " + language.text(.cliEqFlat) }
    line += "\n  " + zip(bands, gains).map { "\($0) " + cFormat("%+g", $1) }.joined(separator: "  ")
    line += "\n  " + language.text(.cliEqShelves, [
        "bass": cFormat("%+g", eq["bass"]?.number ?? 0), "treble": cFormat("%+g", eq["treble"]?.number ?? 0),
        "preamp": language.text(eq["preamp"]?.string == "auto" ? .cliEqAuto : .cliEqManual),
        "preampDb": cFormat("%+.1f", eq["preampDb"]?.number ?? 0),
    ])
    return line
}

/// One group of `groups.list`: its rooms and what it plays.
public func describeGroup(_ g: JSONValue, language: Language = .english) -> String {
    let rooms = (g["rooms"]?.strings ?? []).joined(separator: ", ")
    var playing = language.value(g["state"]?.string ?? "?")
    if let title = g["title"]?.string { playing += ": " + (g["artist"]?.string.map { "\($0) — " } ?? "") + title }
    return "\(g["name"]?.string ?? "?") (\(g["id"]?.string ?? "?")): \(rooms.isEmpty ? language.text(.cliGroupNoRooms) : rooms) — \(playing)"
}

/// `library.scan`'s answer: what the scan did. English is the leader's own
/// summary, as it always was; another language is made from the counts (a
/// leader too old to send them gives its summary only).
public func describeScan(_ r: JSONValue, language: Language = .english) -> String {
    let summary = r["summary"]?.string ?? ""
    guard language != .english, let added = r["added"]?.integer, let updated = r["updated"]?.integer,
          let unchanged = r["unchanged"]?.integer, let moved = r["moved"]?.integer, let removed = r["removed"]?.integer else { return summary }
    return language.text(.cliScanSummary, [
        "added": "\(added)", "updated": "\(updated)", "unchanged": "\(unchanged)", "moved": "\(moved)", "removed": "\(removed)",
        "skipped": "\(r["skipped"]?.array?.count ?? 0)", "seconds": cFormat("%.2f", r["seconds"]?.number ?? 0),
    ])
}

/// A leader found over mDNS, as `tutti leaders --json` prints it.
public func describeLeader(_ l: DiscoveredLeader) -> JSONValue {
    var object: [String: JSONValue] = ["name": .string(l.name), "address": .string(l.address), "hostName": .string(l.hostName),
                                       "port": JSONValue(Int(l.port)), "local": .bool(l.isLocal)]
    if let v = l.protocolVersion { object["version"] = JSONValue(v) }
    if let c = l.controlPort { object["control"] = JSONValue(Int(c)) }
    if let m = l.mpdPort { object["mpd"] = JSONValue(Int(m)) }
    if let id = l.id { object["id"] = .string(id) }
    return .object(object)
}

/// `tutti leaders` as text: one line a leader.
public func describeLeaders(_ leaders: [DiscoveredLeader], language: Language = .english) -> String {
    if leaders.isEmpty { return language.text(.cliLeadersNone) }
    return leaders.map { l in
        var line = "\(l.name)\t\(l.address):\(l.port)"
        if let c = l.controlPort { line += "  " + language.text(.cliLeadersControl, ["port": "\(c)"]) }
        if let m = l.mpdPort { line += "  " + language.text(.cliLeadersMPD, ["port": "\(m)"]) }
        if l.isLocal { line += "  " + language.text(.cliLeadersThisMachine) }
        return line
    }.joined(separator: "\n")
}

/// One line per show: id, title, episodes (unplayed), author, feed URL.
public func describePodcast(_ p: JSONValue, language: Language = .english) -> String {
    let count = p["episodes"]?.integer ?? 0
    let counts = language.text(count == 1 ? .cliPodcastEpisode : .cliPodcastEpisodes, ["count": "\(count)", "unplayed": "\(p["unplayed"]?.integer ?? 0)"])
    var line = "\(p["id"]?.integer ?? 0)\t\(p["title"]?.string ?? "")\t" + counts
    if let author = p["author"]?.string { line += "\t\(author)" }
    if let error = p["refreshError"]?.string { line += "\t" + language.text(.cliPodcastRefreshFailed, ["error": error]) }
    return line
}

/// One line per episode: id, played mark (✓ played, ▶ started, · new), date, progress, title.
public func describeEpisode(_ e: JSONValue) -> String {
    let played = e["played"]?.bool == true
    let position = e["position"]?.number ?? 0
    let mark = played ? "✓" : (position >= 1 ? "▶" : "·")
    var date = ""
    if let ms = e["published"]?.integer {
        let (y, m, d) = FeedDates.civil(fromDays: Int64((Double(ms) / 86_400_000).rounded(.down)))
        date = "\(y)-\(m < 10 ? "0" : "")\(m)-\(d < 10 ? "0" : "")\(d)"
    }
    let duration = e["duration"]?.number
    let progress = duration.map { position >= 1 && !played ? "\(clock(position))/\(clock($0))" : clock($0) } ?? (position >= 1 ? clock(position) : "")
    return "\(e["id"]?.integer ?? 0)\t\(mark)\t\(date)\t\(progress)\t\(e["title"]?.string ?? "")"
}
