import Foundation
import TuttiCore
import TuttiDiscovery

// What `tutti` prints, from the JSON-RPC results: pure, so tests check the
// text without a leader.

/// A JSON-RPC result as `--json` prints it: sorted keys, indented (nil: not JSON).
public func jsonText(_ value: Any) -> String? {
    guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .prettyPrinted, .fragmentsAllowed]) else { return nil }
    return String(decoding: data, as: UTF8.self)
}

/// M:SS.
public func clock(_ seconds: Double) -> String {
    let s = Int(seconds.rounded(.down))
    return String(format: "%d:%02d", s / 60, s % 60)
}

/// `player.status` as `tutti status` prints it: the track line, then the play options.
public func describeStatus(_ s: [String: Any]) -> String {
    let position = s["position"] as? Double ?? 0
    let duration = s["duration"] as? Double
    var bar = ""
    if let d = duration, d > 0 {
        let filled = min(30, Int(30 * position / d))
        bar = " [" + String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled) + "]"
    }
    var file = (s["file"] as? String).map { URL(fileURLWithPath: $0).lastPathComponent } ?? "?"
    if let title = s["title"] as? String {
        file = title
        if let artist = s["artist"] as? String { file = "\(artist) — \(title)" }
        if let album = s["album"] as? String { file += " [\(album)]" }
    }
    let track = (s["track"] as? Int ?? 0) + 1
    var line = "\(s["state"] as? String ?? "?"): \(file) (track \(track)/\(s["trackCount"] as? Int ?? 0)) \(clock(position))\(duration.map { "/" + clock($0) } ?? "")\(bar)"
    // Network sources: how much is downloaded ahead, and of a file how much has arrived.
    var buffered: [String] = []
    if let b = s["bufferedSeconds"] as? Double { buffered.append(String(format: "%.1f s ahead", b)) }
    if let f = s["bufferedFraction"] as? Double { buffered.append(String(format: "%.0f%% downloaded", f * 100)) }
    if !buffered.isEmpty { line += " (buffered: " + buffered.joined(separator: ", ") + ")" }
    // The play options, on the line below: shuffle, repeat, single, consume.
    var options = ["shuffle \((s["shuffle"] as? Bool ?? false) ? "on" : "off")", "repeat \(s["repeat"] as? String ?? "off")"]
    if let single = s["single"] as? String, single != "off" { options.append("single \(single)") }
    if s["consume"] as? Bool == true { options.append("consume on") }
    if let speed = s["speed"] as? Double, speed != 1 {
        options.append(String(format: "speed %.2f×", speed) + ((s["remaining"] as? Double).map { ", ends in " + clock($0) } ?? ""))
    }
    if let pitch = s["pitch"] as? Double, pitch != 0 { options.append(String(format: "pitch %+.1f", pitch)) }
    if s["shuffle"] != nil { line += "\n  " + options.joined(separator: ", ") }
    if let e = s["error"] as? String { line += "\n  last error: \(e)" }
    if let source = s["source"] as? String { line += "\n  \(source)" } // "AirPlay from Anna's iPhone"
    return line
}

/// One room of `rooms.list`: volume, trim and sync health.
public func describeRoom(_ r: [String: Any]) -> String {
    var line = "\(r["name"] as? String ?? "?")\((r["group"] as? String).map { $0 == "main" ? "" : " [\(r["groupName"] as? String ?? $0)]" } ?? ""): volume \(r["volume"] as? Int ?? 0)\((r["muted"] as? Bool ?? false) ? " (muted)" : "")"
    if let trim = r["latencyMs"] as? Double, trim != 0 { line += String(format: ", latency %+.1f ms", trim) }
    if let h = r["health"] as? [String: Any] {
        line += String(format: ", sync %+.1f µs, buffer %.0f ms, ratio %+.1f ppm, rtt %.0f µs, underruns %d, resyncs %d",
                       h["outputErrorUs"] as? Double ?? 0, h["bufferMs"] as? Double ?? 0, h["ratioPpm"] as? Double ?? 0,
                       h["rttUs"] as? Double ?? 0, h["underruns"] as? Int ?? 0, h["hardResyncs"] as? Int ?? 0)
        // v6: a stream that delivers late is why commands there take longer than 100 ms (docs/protocol.md, command lead).
        if let late = h["streamDelayMaxMs"] as? Double, late >= 10 { line += String(format: ", stream up to %.0f ms late", late) }
    }
    return line
}

/// A room's equaliser: preset, ten bands, shelves and preamp.
public func describeEqualizer(_ room: String, _ eq: [String: Any]) -> String {
    let bands = ["32", "64", "125", "250", "500", "1k", "2k", "4k", "8k", "16k"]
    let gains = eq["gains"] as? [Double] ?? []
    var line = "\(room): EQ \((eq["preset"] as? String) ?? "custom")\((eq["flat"] as? Bool ?? false) ? " (flat: bypassed)" : "")\n  "
    line += zip(bands, gains).map { String(format: "%@ %+g", $0, $1) }.joined(separator: "  ")
    let preamp = eq["preamp"] as? String == "auto" ? "auto" : "manual"
    line += String(format: "\n  bass %+g, treble %+g, preamp %@ (%+.1f dB)", eq["bass"] as? Double ?? 0, eq["treble"] as? Double ?? 0, preamp, eq["preampDb"] as? Double ?? 0)
    return line
}

/// One group of `groups.list`: its rooms and what it plays.
public func describeGroup(_ g: [String: Any]) -> String {
    let rooms = (g["rooms"] as? [String] ?? []).joined(separator: ", ")
    var playing = g["state"] as? String ?? "?"
    if let title = g["title"] as? String { playing += ": " + ((g["artist"] as? String).map { "\($0) — " } ?? "") + title }
    return "\(g["name"] as? String ?? "?") (\(g["id"] as? String ?? "?")): \(rooms.isEmpty ? "no rooms" : rooms) — \(playing)"
}

/// A leader found over mDNS, as `tutti leaders --json` prints it.
public func describeLeader(_ l: DiscoveredLeader) -> [String: Any] {
    var object: [String: Any] = ["name": l.name, "address": l.address, "hostName": l.hostName, "port": Int(l.port), "local": l.isLocal]
    if let v = l.protocolVersion { object["version"] = v }
    if let c = l.controlPort { object["control"] = Int(c) }
    if let m = l.mpdPort { object["mpd"] = Int(m) }
    if let id = l.id { object["id"] = id }
    return object
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
public func describePodcast(_ p: [String: Any]) -> String {
    let count = p["episodes"] as? Int ?? 0
    var line = "\(p["id"] as? Int ?? 0)\t\(p["title"] as? String ?? "")\t\(count) episode\(count == 1 ? "" : "s"), \(p["unplayed"] as? Int ?? 0) unplayed"
    if let author = p["author"] as? String { line += "\t\(author)" }
    if let error = p["refreshError"] as? String { line += "\t(last refresh failed: \(error))" }
    return line
}

/// One line per episode: id, played mark (✓ played, ▶ started, · new), date, progress, title.
public func describeEpisode(_ e: [String: Any]) -> String {
    let played = e["played"] as? Bool == true
    let position = e["position"] as? Double ?? 0
    let mark = played ? "✓" : (position >= 1 ? "▶" : "·")
    var date = ""
    if let ms = e["published"] as? Int {
        let (y, m, d) = FeedDates.civil(fromDays: Int64((Double(ms) / 86_400_000).rounded(.down)))
        date = "\(y)-\(m < 10 ? "0" : "")\(m)-\(d < 10 ? "0" : "")\(d)"
    }
    let duration = e["duration"] as? Double
    let progress = duration.map { position >= 1 && !played ? "\(clock(position))/\(clock($0))" : clock($0) } ?? (position >= 1 ? clock(position) : "")
    return "\(e["id"] as? Int ?? 0)\t\(mark)\t\(date)\t\(progress)\t\(e["title"] as? String ?? "")"
}
