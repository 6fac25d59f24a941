import TuttiCore
import TuttiDiscovery

// What `tutti` prints, from the JSON-RPC results: pure, so tests check the
// text without a leader.

/// M:SS.
public func clock(_ seconds: Double) -> String {
    let s = Int(seconds.rounded(.down))
    return cFormat("%d:%02d", s / 60, s % 60)
}

/// The last component of a path, as a file name (`/music/a/01 song.flac` → `01 song.flac`).
func fileName(_ path: String) -> String {
    guard let last = path.split(separator: "/").last else { return path.isEmpty ? "" : "/" }
    return String(last)
}

/// `player.status` as `tutti status` prints it: the track line, then the play options.
public func describeStatus(_ s: JSONValue) -> String {
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
    var line = "\(s["state"]?.string ?? "?"): \(file) (track \(track)/\(s["trackCount"]?.integer ?? 0)) \(clock(position))\(duration.map { "/" + clock($0) } ?? "")\(bar)"
    // Network sources: how much is downloaded ahead, and of a file how much has arrived.
    var buffered: [String] = []
    if let b = s["bufferedSeconds"]?.number { buffered.append(cFormat("%.1f s ahead", b)) }
    if let f = s["bufferedFraction"]?.number { buffered.append(cFormat("%.0f%% downloaded", f * 100)) }
    if !buffered.isEmpty { line += " (buffered: " + buffered.joined(separator: ", ") + ")" }
    // The play options, on the line below: shuffle, repeat, single, consume.
    var options = ["shuffle \((s["shuffle"]?.bool ?? false) ? "on" : "off")", "repeat \(s["repeat"]?.string ?? "off")"]
    if let single = s["single"]?.string, single != "off" { options.append("single \(single)") }
    if s["consume"]?.bool == true { options.append("consume on") }
    if let speed = s["speed"]?.number, speed != 1 {
        options.append(cFormat("speed %.2f×", speed) + (s["remaining"]?.number.map { ", ends in " + clock($0) } ?? ""))
    }
    if let pitch = s["pitch"]?.number, pitch != 0 { options.append(cFormat("pitch %+.1f", pitch)) }
    if s["shuffle"] != nil { line += "\n  " + options.joined(separator: ", ") }
    if let e = s["error"]?.string { line += "\n  last error: \(e)" }
    if let source = s["source"]?.string { line += "\n  \(source)" } // "AirPlay from Anna's iPhone"
    return line
}

/// One room of `rooms.list`: volume, trim and sync health.
/// A room's reverb as `rooms.list` gives it: "Large hall at 30 % (RT60 1.8 s)", "off".
public func describeReverb(_ r: JSONValue?) -> String {
    guard let r, r["off"]?.bool == false else { return "off" }
    let name = r["preset"]?.string ?? cFormat("custom (size %.2f, damping %.2f)", r["size"]?.number ?? 0, r["damping"]?.number ?? 0)
    return name + cFormat(" at %.0f %% (RT60 %.1f s)", r["mix"]?.number ?? 0, r["decaySeconds"]?.number ?? 0)
}

public func describeRoom(_ r: JSONValue) -> String {
    let group = r["group"]?.string.map { $0 == "main" ? "" : " [\(r["groupName"]?.string ?? $0)]" } ?? ""
    var line = "\(r["name"]?.string ?? "?")\(group): volume \(r["volume"]?.integer ?? 0)\((r["muted"]?.bool ?? false) ? " (muted)" : "")"
    if let pair = r["pair"], pair.object != nil {
        // A stereo pair: one volume; each speaker's side and trim.
        let sides = (r["speakers"]?.array ?? []).map { s in
            "\(s["name"]?.string ?? "?") \(s["side"]?.string ?? "?")" + ((s["latencyMs"]?.number ?? 0) != 0 ? cFormat(" %+.1f ms", s["latencyMs"]?.number ?? 0) : "")
                + ((s["connected"]?.bool ?? false) ? "" : " (offline)")
        }
        return line + ", stereo pair: " + sides.joined(separator: ", ")
    }
    if let channels = r["channels"]?.string, channels != "stereo" { line += ", plays \(channels)" }
    if let reverb = r["reverb"], reverb["off"]?.bool == false { line += ", reverb \(describeReverb(reverb))" }
    if let trim = r["latencyMs"]?.number, trim != 0 { line += cFormat(", latency %+.1f ms", trim) }
    if let h = r["health"], h.object != nil {
        line += cFormat(", sync %+.1f µs, buffer %.0f ms, ratio %+.1f ppm, rtt %.0f µs, underruns %d, resyncs %d",
                        h["outputErrorUs"]?.number ?? 0, h["bufferMs"]?.number ?? 0, h["ratioPpm"]?.number ?? 0,
                        h["rttUs"]?.number ?? 0, h["underruns"]?.integer ?? 0, h["hardResyncs"]?.integer ?? 0)
        // v6: a stream that delivers late is why commands there take longer than 100 ms (docs/protocol.md, command lead).
        if let late = h["streamDelayMaxMs"]?.number, late >= 10 { line += cFormat(", stream up to %.0f ms late", late) }
    }
    return line
}

/// A room's equaliser: preset, ten bands, shelves and preamp.
public func describeEqualizer(_ room: String, _ eq: JSONValue) -> String {
    let bands = ["32", "64", "125", "250", "500", "1k", "2k", "4k", "8k", "16k"]
    let gains = eq["gains"]?.numbers ?? []
    var line = "\(room): EQ \(eq["preset"]?.string ?? "custom")\((eq["flat"]?.bool ?? false) ? " (flat: bypassed)" : "")\n  "
    line += zip(bands, gains).map { "\($0) " + cFormat("%+g", $1) }.joined(separator: "  ")
    let preamp = eq["preamp"]?.string == "auto" ? "auto" : "manual"
    line += cFormat("\n  bass %+g, treble %+g, preamp ", eq["bass"]?.number ?? 0, eq["treble"]?.number ?? 0)
        + preamp + cFormat(" (%+.1f dB)", eq["preampDb"]?.number ?? 0)
    return line
}

/// One group of `groups.list`: its rooms and what it plays.
public func describeGroup(_ g: JSONValue) -> String {
    let rooms = (g["rooms"]?.strings ?? []).joined(separator: ", ")
    var playing = g["state"]?.string ?? "?"
    if let title = g["title"]?.string { playing += ": " + (g["artist"]?.string.map { "\($0) — " } ?? "") + title }
    return "\(g["name"]?.string ?? "?") (\(g["id"]?.string ?? "?")): \(rooms.isEmpty ? "no rooms" : rooms) — \(playing)"
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
public func describeLeaders(_ leaders: [DiscoveredLeader]) -> String {
    if leaders.isEmpty { return "no leaders found over mDNS" }
    return leaders.map { l in
        var line = "\(l.name)\t\(l.address):\(l.port)"
        if let c = l.controlPort { line += "  control \(c)" }
        if let m = l.mpdPort { line += "  mpd \(m)" }
        if l.isLocal { line += "  (this machine)" }
        return line
    }.joined(separator: "\n")
}

/// One line per show: id, title, episodes (unplayed), author, feed URL.
public func describePodcast(_ p: JSONValue) -> String {
    let count = p["episodes"]?.integer ?? 0
    var line = "\(p["id"]?.integer ?? 0)\t\(p["title"]?.string ?? "")\t\(count) episode\(count == 1 ? "" : "s"), \(p["unplayed"]?.integer ?? 0) unplayed"
    if let author = p["author"]?.string { line += "\t\(author)" }
    if let error = p["refreshError"]?.string { line += "\t(last refresh failed: \(error))" }
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
