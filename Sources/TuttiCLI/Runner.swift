import Foundation
import Glibc
import TuttiCore
import TuttiDiscovery
import TuttiControlClient
import TuttiNet

func fail(_ message: String, _ code: Int32) -> Never {
    FileHandle.standardError.write("tutti: \(message)\n".data(using: .utf8)!)
    exit(code)
}

func output(_ value: Any) {
    if let text = jsonText(value) { print(text) }
}

/// `tutti doctor` is `tutti-follower doctor` (the speaker's binary: it
/// opens the ALSA device and mixer), or `tuttid doctor` where no speaker is
/// installed; each beside this binary, else on PATH. `tutti` itself links
/// no audio library, so it starts in a few milliseconds.
func runDoctor(_ arguments: [String]) -> Never {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    let own = n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
    let folder = own.lastIndex(of: "/").map { String(own[...$0]) } ?? ""
    for program in ["tutti-follower", "tuttid"] {
        let argv = ([program, "doctor"] + arguments).map { strdup($0) } + [nil]
        if !folder.isEmpty, access(folder + program, X_OK) == 0 { execv(folder + program, argv) }
        execvp(program, argv)
    }
    fail("doctor needs tutti-follower or tuttid (beside tutti or on PATH): \(String(cString: strerror(errno)))", 2)
}

/// `tutti`: reads the command line, finds the leader, runs the command and
/// exits (0 done, 1 the leader refused, 2 cannot reach the leader, 64 usage).
@MainActor
public func runTutti(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) -> Never {
    let options: CLIOptions
    do {
        switch try CLIRequest.parse(arguments, environment: environment) {
        case .print(let text, let code): print(text); exit(code)
        case .version: print("tutti \(TuttiVersion.current)"); exit(0)
        case .run(let o): options = o
        }
    } catch { fail(error.message, 64) }
    let host = options.host, port = options.port, json = options.json, leaderName = options.leaderName
    let group = options.group, password = options.password
    let command = options.command, operands = options.operands
    if command == "doctor" { runDoctor(operands) }

    // `tutti leaders`: needs no leader, only Avahi.
    if command == "leaders" || command == "discover" {
        let seconds = operands.first.flatMap { Double($0) }.map { min(max($0, 0.1), 60) } ?? 2
        let leaders: [DiscoveredLeader]
        do { leaders = try discoverLeaders(timeout: seconds) } catch { fail("\(error)", 2) }
        if json { output(leaders.map(describeLeader)) } else { print(describeLeaders(leaders)) }
        exit(0)
    }

    /// Where the control socket is: flags, then TUTTI_HOST, then mDNS, then the default.
    func controlEndpoint() -> (Endpoint, how: String) {
        if let host, port == nil, host.contains(":") {
            // --host HOST:PORT, as TUTTI_HOST takes it.
            guard let e = try? Endpoint(parsing: host, defaultPort: 4954) else { fail("--host \(host): expected HOST or HOST:PORT", 64) }
            return (e, "")
        }
        if host != nil || port != nil { return (Endpoint(host: host ?? "127.0.0.1", port: port ?? 4954), "") }
        if let env = environment["TUTTI_HOST"], !env.isEmpty {
            guard let e = try? Endpoint(parsing: env, defaultPort: 4954) else { fail("TUTTI_HOST=\(env): expected HOST or HOST:PORT", 64) }
            return (e, " (TUTTI_HOST)")
        }
        // A leader on this machine answers at once; browsing takes about a second.
        if leaderName == nil, let local = try? TCPConnection.connect(to: Endpoint(host: "127.0.0.1", port: 4954)) {
            local.close()
            return (Endpoint(host: "127.0.0.1", port: 4954), "")
        }
        // Without Avahi (or with no leader announced) the default is the local leader.
        if let leaders = try? discoverLeaders(timeout: 1.5, named: leaderName) {
            if let chosen = DiscoveredLeader.choose(from: leaders, named: leaderName), let control = chosen.controlPort {
                // A leader on this machine usually binds its control socket to loopback only.
                return (Endpoint(host: chosen.isLocal ? "127.0.0.1" : chosen.address, port: control), " (found '\(chosen.name)' over mDNS)")
            }
        }
        if let leaderName { fail("no leader named '\(leaderName)' with a control port found over mDNS (tutti leaders lists them)", 2) }
        return (Endpoint(host: "127.0.0.1", port: 4954), "")
    }

    let (endpoint, how) = controlEndpoint()
    let client: ControlClient
    do { client = try ControlClient(endpoint: endpoint) } catch {
        fail("cannot reach the leader at \(endpoint)\(how): \(error)", 2)
    }
    // From another machine a leader with a password wants a login first.
    if let password {
        do { _ = try client.call("auth.login", ["password": password]) } catch let e as ControlClient.RemoteError {
            fail("logging in to \(endpoint): \(e.message)", 1)
        } catch { fail("\(error)", 2) }
    }

    func call(_ method: String, _ params: [String: Any] = [:]) -> Any {
        var params = params
        if let group, method.hasPrefix("player.") || method.hasPrefix("queue.") || method == "podcasts.play" { params["group"] = group }
        do { return try client.call(method, params) } catch let e as ControlClient.RemoteError {
            fail(e.message, 1)
        } catch {
            fail("\(error)", 2)
        }
    }

    func needRoom() -> String {
        guard let room = operands.first else { fail("\(command) needs a room name", 64) }
        return room
    }

    switch command {
    case "status":
        let status = call("player.status") as? [String: Any] ?? [:]
        let rooms = (call("rooms.list") as? [String: Any])?["rooms"] as? [[String: Any]] ?? []
        let groups = call("groups.list") as? [String: Any] ?? [:]
        if json { output(["player": status, "rooms": rooms, "groups": groups["groups"] ?? [], "party": groups["party"] ?? false]) } else {
            print(describeStatus(status))
            if rooms.isEmpty { print("no rooms connected") }
            for r in rooms { print("  " + describeRoom(r)) }
            // Other groups, each with its own stream, in a line each.
            let others = (groups["groups"] as? [[String: Any]] ?? []).filter { $0["id"] as? String != (group ?? "main") && $0["name"] as? String != group }
            if !others.isEmpty || groups["party"] as? Bool == true {
                print(groups["party"] as? Bool == true ? "groups (party mode on):" : "groups:")
                for g in others { print("  " + describeGroup(g)) }
            }
        }
    case "play", "pause", "toggle", "next", "prev", "previous":
        let method = command == "prev" ? "player.previous" : "player.\(command)"
        let result = call(method)
        if json { output(result) } else if let s = result as? [String: Any] { print(describeStatus(s)) }
    case "seek":
        guard let text = operands.first, let value = Double(text), value.isFinite else { fail("seek needs SECONDS, +SECONDS or -SECONDS", 64) }
        let relative = text.hasPrefix("+") || text.hasPrefix("-")
        let result = call("player.seek", relative ? ["by": value] : ["position": value])
        if json { output(result) } else if let s = result as? [String: Any] { print(describeStatus(s)) }
    case "speed", "pitch":
        let isSpeed = command == "speed"
        guard let text = operands.first else {
            // No value: what it is now.
            let s = call("player.status") as? [String: Any] ?? [:]
            if json { output(s) } else { print(isSpeed ? String(format: "%.2f×", s["speed"] as? Double ?? 1) : String(format: "%+.1f semitones", s["pitch"] as? Double ?? 0)) }
            exit(0)
        }
        guard let value = Double(text), value.isFinite else {
            fail(isSpeed ? "speed needs a number, 0.5–2.0 (1 is normal)" : "pitch needs semitones, −12…+12 (0 is normal)", 64)
        }
        let result = call(isSpeed ? "player.setSpeed" : "player.setPitch", isSpeed ? ["speed": value] : ["semitones": value])
        if json { output(result) } else if let s = result as? [String: Any] { print(describeStatus(s)) }
    case "stop":
        let result = call("player.stop")
        if json { output(result) } else if let s = result as? [String: Any] { print(describeStatus(s)) }
    case "shuffle", "consume":
        // An on/off mode of the player; without an operand, the other one.
        let on: Bool
        if let arg = operands.first {
            guard arg == "on" || arg == "off" else { fail("\(command) takes on or off", 64) }
            on = arg == "on"
        } else {
            on = !((call("player.status") as? [String: Any])?[command] as? Bool ?? false)
        }
        let result = call("player." + command, ["on": on])
        if json { output(result) } else { print("\(command) \(on ? "on" : "off")") }
    case "repeat":
        var params: [String: Any] = [:]
        if let mode = operands.first {
            guard ["off", "all", "one"].contains(mode) else { fail("repeat takes off, all or one", 64) }
            params["mode"] = mode
        }
        let result = call("player.repeat", params)
        if json { output(result) } else { print("repeat \((result as? [String: Any])?["repeat"] as? String ?? "?")") }
    case "single":
        var params: [String: Any] = [:]
        if let mode = operands.first {
            guard ["off", "on", "oneshot", "once"].contains(mode) else { fail("single takes on, off or oneshot", 64) }
            params["mode"] = mode == "once" ? "oneshot" : mode // mpc says "once"
        }
        let result = call("player.single", params)
        if json { output(result) } else { print("single \((result as? [String: Any])?["single"] as? String ?? "?")") }
    case "queue":
        let sub = operands.first ?? "list"
        let rest = Array(operands.dropFirst())
        func index(_ text: String?) -> Int {
            guard let text, let n = Int(text), n >= 1 else { fail("queue positions are numbers from 1", 64) }
            return n - 1
        }
        switch sub {
        case "list":
            let q = call("queue.list") as? [String: Any] ?? [:]
            if json { output(q) } else {
                let current = q["current"] as? Int ?? -1
                for e in q["entries"] as? [[String: Any]] ?? [] {
                    let i = e["index"] as? Int ?? 0
                    print("\(i == current ? ">" : " ")\(String(format: "%3d", i + 1)) \(e["uri"] as? String ?? "")")
                }
            }
        case "add":
            let next = rest.first == "--next"
            let uris = rest.filter { $0 != "--next" }.map { $0.contains("://") || $0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0 }
            guard !uris.isEmpty else { fail("queue add needs files or URLs", 64) }
            let r = call("queue.add", ["uris": uris, "next": next])
            if json { output(r) } else { print("added \(((r as? [String: Any])?["added"] as? [Any])?.count ?? 0)") }
        case "add-search", "add-album", "add-playlist":
            guard !rest.isEmpty else { fail("\(sub) needs an argument", 64) }
            let params: [String: Any] = sub == "add-search" ? ["search": rest.joined(separator: " ")]
                : sub == "add-album" ? ["album": rest.joined(separator: " ")] : ["playlist": Int(rest[0]) ?? -1]
            let r = call("queue.add", params)
            if json { output(r) } else { print("added \(((r as? [String: Any])?["added"] as? [Any])?.count ?? 0)") }
        case "del": output(call("queue.remove", ["index": index(rest.first)]))
        case "move":
            guard rest.count == 2 else { fail("queue move FROM TO", 64) }
            output(call("queue.move", ["from": index(rest[0]), "to": index(rest[1])]))
        case "clear": _ = call("queue.clear"); if !json { print("queue cleared") }
        case "play": let r = call("queue.play", ["index": index(rest.first)]); if json { output(r) } else if let s = r as? [String: Any] { print(describeStatus(s)) }
        default: fail("unknown queue command '\(sub)'", 64)
        }
    case "search":
        guard !operands.isEmpty else { fail("search needs text", 64) }
        let r = call("library.search", ["query": operands.joined(separator: " "), "record": true]) as? [String: Any] ?? [:]
        if json { output(r) } else {
            for t in r["tracks"] as? [[String: Any]] ?? [] {
                print("\(t["id"] as? Int ?? 0)\t\(t["artist"] as? String ?? "-") — \(t["title"] as? String ?? "?")\(t["album"].map { " (\($0))" } ?? "")")
            }
            if r["hasMore"] as? Bool == true { print("… more results") }
        }
    case "searches":
        let r = call(operands.first == "clear" ? "searches.clear" : "searches.recent") as? [String: Any] ?? [:]
        if json { output(r) } else { for q in r["searches"] as? [String] ?? [] { print(q) } }
    case "like", "unlike":
        var params: [String: Any] = [:]
        if let text = operands.first { guard let id = Int(text) else { fail("\(command) takes a track id", 64) }; params["id"] = id }
        let r = call(command == "like" ? "favourites.like" : "favourites.unlike", params)
        if json { output(r) } else { print("\(command == "like" ? "liked" : "unliked") \((r as? [String: Any])?["title"] as? String ?? "")") }
    case "favorites", "favourites":
        let r = call("favourites.list") as? [String: Any] ?? [:]
        if json { output(r) } else { for t in r["favourites"] as? [[String: Any]] ?? [] { print("\(t["id"] as? Int ?? 0)\t\(t["artist"] as? String ?? "-") — \(t["title"] as? String ?? "?")") } }
    case "history":
        let r = call("history.list") as? [String: Any] ?? [:]
        if json { output(r) } else { for t in r["plays"] as? [[String: Any]] ?? [] { print("\(t["artist"] as? String ?? "-") — \(t["title"] as? String ?? "?")") } }
    case "library":
        guard operands.first == "scan" else { fail("library scan [DIR]", 64) }
        var params: [String: Any] = [:]
        if operands.count > 1 { params["folder"] = operands[1] }
        // Progress: a bar on a terminal, a percentage line every 10 % otherwise.
        let terminal = isatty(STDOUT_FILENO) == 1
        var lastDecile = -1
        client.onNotification = { method, p in
            guard !json, method == "library.scanProgress", let done = p["done"] as? Int, let total = p["total"] as? Int, total > 0 else { return }
            let fraction = Double(done) / Double(total)
            if terminal {
                let filled = Int(fraction * 30)
                let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled)
                FileHandle.standardOutput.write("\rscanning [\(bar)] \(done)/\(total)".data(using: .utf8)!)
                if done == total { print("") }
            } else if Int(fraction * 10) > lastDecile {
                lastDecile = Int(fraction * 10)
                print("scanning: \(lastDecile * 10)% (\(done)/\(total))")
            }
        }
        client.setReceiveTimeout(milliseconds: 0) // a big scan takes as long as it takes
        let r = call("library.scan", params)
        if json { output(r) } else { print((r as? [String: Any])?["summary"] as? String ?? "") }
    case "playlist", "playlists":
        let sub = operands.first ?? "list"
        let rest = Array(operands.dropFirst())
        func id() -> Int { guard let t = rest.first, let n = Int(t) else { fail("playlist \(sub) needs a playlist id", 64) }; return n }
        switch sub {
        case "list":
            let r = call("playlists.list") as? [String: Any] ?? [:]
            if json { output(r) } else { for p in r["playlists"] as? [[String: Any]] ?? [] { print("\(p["id"] as? Int ?? 0)\t\(p["name"] as? String ?? "")\t\(p["entries"] as? Int ?? 0) tracks") } }
        case "show":
            let r = call("playlists.entries", ["id": id()]) as? [String: Any] ?? [:]
            if json { output(r) } else { for t in r["entries"] as? [[String: Any]] ?? [] { print("\((t["index"] as? Int ?? 0) + 1)\t\(t["artist"] as? String ?? "-") — \(t["title"] as? String ?? "?")") } }
        case "create": guard !rest.isEmpty else { fail("playlist create NAME", 64) }; output(call("playlists.create", ["name": rest.joined(separator: " ")]))
        case "delete": output(call("playlists.delete", ["id": id()]))
        case "rename": guard rest.count >= 2 else { fail("playlist rename ID NAME", 64) }; output(call("playlists.rename", ["id": id(), "name": rest.dropFirst().joined(separator: " ")]))
        case "load": let r = call("queue.add", ["playlist": id()]); if json { output(r) } else { print("added \(((r as? [String: Any])?["added"] as? [Any])?.count ?? 0)") }
        case "save": guard !rest.isEmpty else { fail("playlist save NAME", 64) }; output(call("playlists.saveQueue", ["name": rest.joined(separator: " ")]))
        case "import":
            guard let file = rest.first else { fail("playlist import FILE.m3u [NAME]", 64) }
            var params: [String: Any] = ["path": file.hasPrefix("/") ? file : FileManager.default.currentDirectoryPath + "/" + file]
            if rest.count > 1 { params["name"] = rest.dropFirst().joined(separator: " ") }
            output(call("playlists.import", params))
        case "export":
            guard rest.count == 2 else { fail("playlist export ID FILE.m3u", 64) }
            // A bare name goes to the leader's playlist folder (the only place it writes playlists).
            output(call("playlists.export", ["id": id(), "path": rest[1].contains("/") && !rest[1].hasPrefix("/") ? FileManager.default.currentDirectoryPath + "/" + rest[1] : rest[1]]))
        default: fail("unknown playlist command '\(sub)'", 64)
        }
    case "cache":
        let sub = operands.first ?? "list"
        switch sub {
        case "add":
            guard operands.count == 2 else { fail("cache add URL", 64) }
            client.onNotification = { method, p in
                guard !json, method == "cache.progress", let r = p["received"] as? Int else { return }
                let total = p["total"] as? Int ?? 0
                print(total > 0 ? "downloading: \(100 * r / total)% (\(r)/\(total) bytes)" : "downloading: \(r) bytes")
            }
            client.setReceiveTimeout(milliseconds: 0)
            let r = call("cache.add", ["url": operands[1]])
            if json { output(r) } else { print("cached \((r as? [String: Any])?["size"] as? Int ?? 0) bytes") }
        case "list":
            let r = call("cache.list") as? [String: Any] ?? [:]
            if json { output(r) } else { for e in r["entries"] as? [[String: Any]] ?? [] { print("\(e["size"] as? Int ?? 0)\t\(e["url"] as? String ?? "")") } }
        case "size":
            let r = call("cache.size") as? [String: Any] ?? [:]
            if json { output(r) } else { print("\(r["entries"] as? Int ?? 0) tracks, \((r["size"] as? Int ?? 0) >> 20) MiB of \((r["capacity"] as? Int ?? 0) >> 20) MiB") }
        case "remove":
            guard operands.count == 2 else { fail("cache remove URL", 64) }
            output(call("cache.remove", ["url": operands[1]]))
        case "clear": output(call("cache.clear"))
        default: fail("unknown cache command '\(sub)'", 64)
        }
    case "podcast", "podcasts":
        let sub = operands.first ?? "list"
        let rest = Array(operands.dropFirst())
        switch sub {
        case "add", "subscribe":
            guard rest.count == 1 else { fail("podcast add URL", 64) }
            client.setReceiveTimeout(milliseconds: 60_000)
            let r = call("podcasts.subscribe", ["url": rest[0]])
            if json { output(r) } else { print(describePodcast(r as? [String: Any] ?? [:])) }
        case "list":
            let r = call("podcasts.list") as? [String: Any] ?? [:]
            if json { output(r) } else { for p in r["podcasts"] as? [[String: Any]] ?? [] { print(describePodcast(p)) } }
        case "episodes":
            guard !rest.isEmpty else { fail("podcast episodes NAME", 64) }
            let r = call("podcasts.episodes", ["podcast": rest.joined(separator: " ")]) as? [String: Any] ?? [:]
            if json { output(r) } else { for e in r["episodes"] as? [[String: Any]] ?? [] { print(describeEpisode(e)) } }
        case "play":
            guard !rest.isEmpty else { fail("podcast play NAME [EPISODE]", 64) }
            var params: [String: Any] = ["podcast": rest[0]]
            if rest.count > 1 { params["episode"] = rest.dropFirst().joined(separator: " ") }
            let r = call("podcasts.play", params)
            if json { output(r) } else {
                let o = r as? [String: Any] ?? [:]
                let e = o["episode"] as? [String: Any] ?? [:]
                let from = o["resumedAt"] as? Double ?? 0
                print("playing \(e["title"] as? String ?? "")\(from >= 1 ? " from \(clock(from))" : "")")
            }
        case "refresh":
            client.setReceiveTimeout(milliseconds: 0)
            let r = call("podcasts.refresh", rest.isEmpty ? [:] : ["podcast": rest.joined(separator: " ")]) as? [String: Any] ?? [:]
            if json { output(r) } else {
                for p in r["podcasts"] as? [[String: Any]] ?? [] {
                    let what = (p["error"] as? String).map { "failed: \($0)" } ?? (p["notModified"] as? Bool == true ? "not modified" : "\(p["added"] as? Int ?? 0) new")
                    print("\(p["title"] as? String ?? ""): \(what)")
                }
            }
        case "remove", "unsubscribe":
            guard !rest.isEmpty else { fail("podcast remove NAME", 64) }
            output(call("podcasts.unsubscribe", ["podcast": rest.joined(separator: " ")]))
        case "played", "unplayed":
            guard rest.count >= 2 else { fail("podcast \(sub) NAME EPISODE", 64) }
            output(call("podcasts.setPlayed", ["podcast": rest[0], "episode": rest.dropFirst().joined(separator: " "), "played": sub == "played"]))
        case "speed":
            guard rest.count == 2 else { fail("podcast speed NAME 0.5-2.0|none", 64) }
            let speed: Any = rest[1] == "none" ? NSNull() : (Double(rest[1]) ?? -1)
            output(call("podcasts.setSpeed", ["podcast": rest[0], "speed": speed]))
        case "download":
            guard rest.count >= 2 else { fail("podcast download NAME EPISODE", 64) }
            client.setReceiveTimeout(milliseconds: 0)
            output(call("podcasts.download", ["podcast": rest[0], "episode": rest.dropFirst().joined(separator: " ")]))
        default: fail("unknown podcast command '\(sub)' (tutti podcast --help)", 64)
        }
    case "speakers":
        func show(_ result: Any) {
            if json { output(result); return }
            let r = result as? [String: Any] ?? [:]
            print("speakers: \(r["mode"] as? String ?? "?") (leader key \(r["leaderKey"] as? String ?? "?"))")
            for s in r["paired"] as? [[String: Any]] ?? [] {
                print("paired\t\(s["name"] as? String ?? "?")\tkey \(s["key"] as? String ?? "?")\t\(s["connected"] as? Bool == true ? "connected" : "not connected")")
            }
            for s in r["pending"] as? [[String: Any]] ?? [] {
                let by = s["by"] as? String == "code" ? "waits for its code" : "asks to join: tutti speakers allow \(s["name"] as? String ?? "NAME")"
                print("pending\t\(s["name"] as? String ?? "?")\tfrom \(s["address"] as? String ?? "?")\tkey \(s["key"] as? String ?? "?")\t\(by)")
            }
        }
        switch operands.first {
        case nil, "list": show(call("speakers.list"))
        case "allow", "deny", "forget":
            guard operands.count == 2 else { fail("speakers \(operands[0]) NAME", 64) }
            show(call("speakers.\(operands[0])", ["name": operands[1]]))
        case "pair":
            guard operands.count >= 2 else { fail("speakers pair CODE (the six digits `sudo tutti-follower pair` shows)", 64) }
            let r = call("speakers.pair", ["code": operands.dropFirst().joined()])
            if json { output(r) } else { print("paired \((r as? [String: Any])?["paired"] as? String ?? "")") }
        default: fail("unknown speakers command '\(operands[0])' (list, allow, deny, pair, forget)", 64)
        }
    case "rooms":
        let rooms = (call("rooms.list") as? [String: Any])?["rooms"] as? [[String: Any]] ?? []
        if json { output(rooms) } else { for r in rooms { print(describeRoom(r)) } }
    case "vol" where group != nil, "mute" where group != nil, "unmute" where group != nil:
        let result: Any
        if command == "vol" {
            guard let text = operands.first, let v = Int(text), (0...100).contains(v) else { fail("vol --group GROUP needs a volume 0–100", 64) }
            result = call("groups.setVolume", ["group": group!, "volume": v])
        } else {
            result = call("groups.setMute", ["group": group!, "muted": command == "mute"])
        }
        if json { output(result) } else if let r = result as? [String: Any] {
            let rooms = r["rooms"] as? [[String: Any]] ?? []
            if r["kept"] as? Bool == true { print("group \(group!) has no rooms yet: kept for the rooms that join") }
            for room in rooms { print(describeRoom(room)) }
        }
    case "eq":
        func gains(_ text: String) -> [Double]? {
            let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count == 10, parts.allSatisfy({ $0 != nil }) else { return nil }
            return parts.map { $0! }
        }
        func show(_ result: Any) {
            if json { output(result); return }
            guard let r = result as? [String: Any], let eq = r["eq"] as? [String: Any] else { return }
            print(describeEqualizer(r["room"] as? String ?? "?", eq))
        }
        switch operands.first {
        case nil: fail("eq needs ROOM (or: eq presets)", 64)
        case "presets":
            let r = call("eq.presets") as? [String: Any] ?? [:]
            if json { output(r) } else {
                for p in r["presets"] as? [[String: Any]] ?? [] {
                    let g = (p["gains"] as? [Double] ?? []).map { String(format: "%+g", $0) }.joined(separator: " ")
                    print("\(p["name"] as? String ?? "?")\((p["builtIn"] as? Bool ?? false) ? "" : " (saved)"): \(g)")
                }
            }
        case "save":
            guard operands.count >= 3 else { fail("eq save NAME ROOM | eq save NAME g1,…,g10", 64) }
            let name = operands[1], source = operands[2]
            let r = call("eq.save", gains(source).map { ["name": name, "gains": $0] } ?? ["name": name, "room": source])
            if json { output(r) } else { print("saved preset \(name)") }
        case "delete":
            guard operands.count >= 2 else { fail("eq delete NAME", 64) }
            let r = call("eq.delete", ["name": operands.dropFirst().joined(separator: " ")])
            if json { output(r) } else { print("deleted preset \(operands.dropFirst().joined(separator: " "))") }
        case let room?:
            let args = Array(operands.dropFirst())
            var params: [String: Any] = ["room": room]
            if args.isEmpty {
                let rooms = (call("rooms.list") as? [String: Any])?["rooms"] as? [[String: Any]] ?? []
                guard let r = rooms.first(where: { $0["name"] as? String == room }) else { fail("no room '\(room)'", 1) }
                show(["room": room, "eq": r["eq"] ?? [:]])
                break
            }
            var i = 0
            while i < args.count {
                let a = args[i]
                switch a {
                // `bass 3` is the shelf; `bass` alone is the preset of that name.
                case "bass" where i + 1 < args.count && Double(args[i + 1]) != nil,
                     "treble" where i + 1 < args.count && Double(args[i + 1]) != nil:
                    params[a] = Double(args[i + 1])!; i += 2
                case "preamp":
                    guard i + 1 < args.count else { fail("eq ROOM preamp needs auto or dB", 64) }
                    if args[i + 1] == "auto" { params["preamp"] = "auto" } else if let db = Double(args[i + 1]) { params["preamp"] = db } else { fail("eq ROOM preamp needs auto or dB", 64) }
                    i += 2
                default:
                    if let g = gains(a) { params["gains"] = g } else { params["preset"] = a }
                    i += 1
                }
            }
            show(call("rooms.setEq", params))
        }
    case "vol", "mute", "unmute", "latency":
        let room = needRoom()
        var params: [String: Any] = ["room": room]
        switch command {
        case "vol":
            guard operands.count > 1, let v = Int(operands[1]), (0...100).contains(v) else { fail("vol needs ROOM and a volume 0–100", 64) }
            params["volume"] = v
        case "latency":
            guard operands.count > 1, let ms = Double(operands[1]), ms.isFinite else { fail("latency needs ROOM and milliseconds", 64) }
            params["latencyMs"] = ms
        default:
            params["muted"] = command == "mute"
        }
        let result = call("rooms.set", params)
        if json { output(result) } else if let r = result as? [String: Any] { print(describeRoom(r)) }
    case "group", "groups":
        let sub = operands.first ?? "list"
        let rest = Array(operands.dropFirst())
        func show(_ result: Any) {
            if json { output(result) } else if let g = result as? [String: Any] { print(describeGroup(g)) }
        }
        switch sub {
        case "list":
            let r = call("groups.list") as? [String: Any] ?? [:]
            if json { output(r) } else {
                if r["party"] as? Bool == true { print("party mode: on") }
                for g in r["groups"] as? [[String: Any]] ?? [] { print(describeGroup(g)) }
            }
        case "new", "create":
            guard let name = rest.first else { fail("group new NAME [ROOM...]", 64) }
            show(call("groups.create", ["name": name, "rooms": Array(rest.dropFirst())]))
        case "add":
            guard rest.count >= 2 else { fail("group add GROUP ROOM...", 64) }
            show(call("groups.add", ["group": rest[0], "rooms": Array(rest.dropFirst())]))
        case "leave", "remove":
            guard rest.count == 1 else { fail("group leave ROOM", 64) }
            show(call("groups.separate", ["room": rest[0]]))
        case "rename":
            guard rest.count == 2 else { fail("group rename GROUP NAME", 64) }
            show(call("groups.rename", ["group": rest[0], "name": rest[1]]))
        case "delete":
            guard rest.count == 1 else { fail("group delete GROUP", 64) }
            let r = call("groups.delete", ["group": rest[0]])
            if json { output(r) } else { print("deleted \(rest[0])") }
        default: fail("unknown group command '\(sub)' (tutti group --help)", 64)
        }
    case "party":
        switch operands.first ?? "on" {
        case "on":
            var params: [String: Any] = [:]
            if operands.count > 1 { params["group"] = operands[1] }
            let r = call("party.on", params)
            if json { output(r) } else if let g = r as? [String: Any] { print("party mode on: " + describeGroup(g)) }
        case "off":
            let r = call("party.off")
            if json { output(r) } else { print("party mode off") }
        case "status":
            let r = call("party.status")
            if json { output(r) } else { print("party mode \((r as? [String: Any])?["party"] as? Bool == true ? "on" : "off")") }
        default: fail("party [on [GROUP]|off|status]", 64)
        }
    case "watch":
        client.setReceiveTimeout(milliseconds: 0)
        _ = call("player.status")
        while true {
            do {
                let (method, params) = try client.nextNotification()
                if json { output(["method": method, "params": params]) } else if method == "player.changed" {
                    print(describeStatus(params))
                } else if method == "rooms.changed" {
                    for r in params["rooms"] as? [[String: Any]] ?? [] { print(describeRoom(r)) }
                } else if method == "rooms.health" {
                    continue // once a second: `tutti rooms` shows it when asked
                } else if method == "groups.changed" {
                    print("groups:")
                    for g in params["groups"] as? [[String: Any]] ?? [] { print("  " + describeGroup(g)) }
                } else {
                    print("\(method)")
                }
                // Each change as it happens, also into a pipe (stdout is block-buffered there).
                fflush(nil) // nil: every output stream (stdout is a C global Swift 6 will not touch)
            } catch {
                fail("\(error)", 2)
            }
        }
    default:
        fail("unknown command '\(command)' (tutti --help)", 64)
    }
    exit(0)
}
