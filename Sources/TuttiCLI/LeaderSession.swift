import Glibc
import TuttiCore
import TuttiControlClient

/// Runs one command at the leader over `client` and prints the answer: as
/// JSON with `--json`, else as text. Player and queue calls go to `group`
/// when one is given. One thread (the main one).
struct LeaderSession {
    let client: ControlClient
    let json: Bool
    let group: String?
    /// The language of what it prints (the leader is asked for its errors in it too).
    var language: Language = .english

    func call(_ method: String, _ params: [String: JSONValue] = [:]) throws(CLIFailure) -> JSONValue {
        var params = params
        if let group, method.hasPrefix("player.") || method.hasPrefix("queue.") || method == "podcasts.play" { params["group"] = .string(group) }
        do { return try client.call(method, params) } catch let e as ControlClient.RemoteError {
            throw .refused(e.message)
        } catch {
            throw .unreachable("\(error)")
        }
    }

    func output(_ value: JSONValue) { print(jsonText(value)) }

    /// The result as JSON, or what `text` makes of it (nothing: print nothing).
    func show(_ result: JSONValue, _ text: (JSONValue) -> String?) {
        if json { output(result) } else if let line = text(result) { print(line) }
    }

    /// A player's answer: its status line (when the answer is an object).
    func showStatus(_ result: JSONValue) { show(result) { $0.object != nil ? describeStatus($0, language: language) : nil } }

    func run(_ command: CLICommand) throws(CLIFailure) {
        switch command {
        case .status: try status()
        case .player(let method): showStatus(try call(method))
        case .seek(let value, let relative): showStatus(try call("player.seek", relative ? ["by": JSONValue(value)] : ["position": JSONValue(value)]))
        case .speed(nil), .pitch(nil):
            // No value: what it is now.
            let s = objectOrEmpty(try call("player.status"))
            if json { output(s) } else if case .speed = command { print(cFormat("%.2f×", s["speed"]?.number ?? 1)) } else {
                print(language.text(.cliPitchSemitones, ["pitch": cFormat("%+.1f", s["pitch"]?.number ?? 0)]))
            }
        case .speed(let value?): showStatus(try call("player.setSpeed", ["speed": JSONValue(value)]))
        case .pitch(let value?): showStatus(try call("player.setPitch", ["semitones": JSONValue(value)]))
        case .shuffle(let on): try mode("shuffle", on)
        case .consume(let on): try mode("consume", on)
        case .repeatMode(let mode):
            let result = try call("player.repeat", mode.map { ["mode": .string($0)] } ?? [:])
            show(result) { language.text(.cliStatusRepeat, ["mode": language.value($0["repeat"]?.string ?? "?")]) }
        case .single(let mode):
            let result = try call("player.single", mode.map { ["mode": .string($0)] } ?? [:])
            show(result) { language.text(.cliStatusSingle, ["mode": language.value($0["single"]?.string ?? "?")]) }
        case .queue(let q): try queue(q)
        case .search(let query):
            let r = objectOrEmpty(try call("library.search", ["query": .string(query), "record": true]))
            if json { output(r) } else {
                for t in objects(r["tracks"]) {
                    print("\(t["id"]?.integer ?? 0)\t\(t["artist"]?.string ?? "-") — \(t["title"]?.string ?? "?")\(t["album"]?.string.map { " (\($0))" } ?? "")")
                }
                if r["hasMore"]?.bool == true { print(language.text(.cliSearchMore)) }
            }
        case .searches(let clear):
            let r = objectOrEmpty(try call(clear ? "searches.clear" : "searches.recent"))
            if json { output(r) } else { for q in r["searches"]?.strings ?? [] { print(q) } }
        case .like(let id), .unlike(let id):
            let like = if case .like = command { true } else { false }
            let r = try call(like ? "favourites.like" : "favourites.unlike", id.map { ["id": JSONValue($0)] } ?? [:])
            show(r) { language.text(like ? .cliLiked : .cliUnliked, ["title": $0["title"]?.string ?? ""]) }
        case .favourites:
            let r = objectOrEmpty(try call("favourites.list"))
            if json { output(r) } else {
                for t in objects(r["favourites"]) { print("\(t["id"]?.integer ?? 0)\t\(t["artist"]?.string ?? "-") — \(t["title"]?.string ?? "?")") }
            }
        case .history:
            let r = objectOrEmpty(try call("history.list"))
            if json { output(r) } else { for t in objects(r["plays"]) { print("\(t["artist"]?.string ?? "-") — \(t["title"]?.string ?? "?")") } }
        case .libraryScan(let folder): try scan(folder)
        case .playlist(let p): try playlist(p)
        case .cache(let c): try cache(c)
        case .podcast(let p): try podcast(p)
        case .speakers(let s): try speakers(s)
        case .rooms:
            let rooms = objects(try call("rooms.list")["rooms"])
            if json { output(.array(rooms)) } else { for r in rooms { print(describeRoom(r, language: language)) } }
        case .groupVolume(let group, let volume): try groupRooms(group, try call("groups.setVolume", ["group": .string(group), "volume": JSONValue(volume)]))
        case .groupMute(let group, let muted): try groupRooms(group, try call("groups.setMute", ["group": .string(group), "muted": .bool(muted)]))
        case .roomVolume(let room, let volume): try setRoom(["room": .string(room), "volume": JSONValue(volume)])
        case .roomMute(let room, let muted): try setRoom(["room": .string(room), "muted": .bool(muted)])
        case .roomLatency(let room, let ms): try setRoom(["room": .string(room), "latencyMs": JSONValue(ms)])
        case .eq(let e): try equalizer(e)
        case .reverb(let room, nil, nil):
            let rooms = objects(try call("rooms.list")["rooms"])
            guard let r = rooms.first(where: { $0["name"]?.string == room }) else { throw .refused(UserMessage(.roomUnknown, ["room": room])) }
            if json { output(["room": .string(room), "reverb": r["reverb"] ?? .null]) } else { print(roomReverb(room, r["reverb"])) }
        case .reverb(let room, let preset, let mix):
            var params: [String: JSONValue] = ["room": .string(room)]
            if let preset { params["preset"] = .string(preset) }
            if let mix { params["mix"] = JSONValue(mix) }
            show(try call("rooms.setReverb", params)) { roomReverb($0["room"]?.string ?? room, $0["reverb"]) }
        case .channels(let room, let map?):
            show(try call("rooms.setChannels", ["room": .string(room), "channels": .string(map)])) {
                language.text(.cliRoomChannelsSet, ["room": $0["room"]?.string ?? room, "channels": language.value($0["channels"]?.string ?? map)])
            }
        case .channels(let room, nil):
            let rooms = objects(try call("rooms.list")["rooms"])
            guard let r = rooms.first(where: { $0["name"]?.string == room }) else { throw .refused(UserMessage(.roomUnknown, ["room": room])) }
            if json { output(["room": .string(room), "channels": r["channels"] ?? "stereo"]) } else { print(describeRoom(r, language: language)) }
        case .pair(let left, let right, let name):
            var params: [String: JSONValue] = ["left": .string(left), "right": .string(right)]
            if let name { params["name"] = .string(name) }
            show(try call("rooms.pair", params)) { $0.object != nil ? describeRoom($0, language: language) : nil }
        case .swapPair(let name):
            show(try call("rooms.swapPair", ["room": .string(name)])) { $0.object != nil ? describeRoom($0, language: language) : nil }
        case .unpair(let name):
            show(try call("rooms.unpair", ["room": .string(name)])) {
                language.text(.cliRoomUnpaired, ["pair": $0["unpaired"]?.string ?? name,
                                                 "rooms": ($0["rooms"]?.strings ?? []).joined(separator: language.text(.cliListAnd))])
            }
        case .announce(let a):
            var params: [String: JSONValue] = [:]
            if a.all { params["rooms"] = "all" } else if let g = a.group { params["group"] = .string(g) } else { params["rooms"] = .array(a.rooms.map(JSONValue.string)) }
            if let url = a.url { params["url"] = .string(url) }
            if let text = a.text { params["text"] = .string(text) }
            if let lang = a.language { params["lang"] = .string(lang) }
            if let v = a.volume { params["volume"] = .number(Double(v) / 100) }
            if let d = a.duckDecibels { params["duck_db"] = .number(d) }
            show(try call("announce", params)) { r in
                let speakers = (r["speakers"]?.strings ?? []).joined(separator: ", ")
                let missing = r["notConnected"]?.strings ?? [], cannot = r["cannotMix"]?.strings ?? []
                let queued = r["queuedSeconds"]?.number ?? 0
                return language.text(.cliAnnounceTo, ["speakers": speakers, "seconds": fixedPoint(r["seconds"]?.number ?? 0, decimals: 1)])
                    + (queued > 0 ? language.text(.cliAnnounceQueued) : "")
                    + (missing.isEmpty ? "" : language.text(.cliAnnounceNotConnected, ["rooms": missing.joined(separator: ", ")]))
                    + (cannot.isEmpty ? "" : language.text(.cliAnnounceCannotMix, ["rooms": cannot.joined(separator: ", ")]))
            }
        case .group(let g): try group(g)
        case .party(let p): try party(p)
        case .watch: try watch()
        case .calibrate(let c): try calibrate(c)
        case .leaders, .doctor: preconditionFailure("\(command) needs no leader") // run(_:_:environment:) runs them
        }
    }

    private func status() throws(CLIFailure) {
        let status = objectOrEmpty(try call("player.status"))
        let rooms = objects(try call("rooms.list")["rooms"])
        let groups = objectOrEmpty(try call("groups.list"))
        if json {
            output(["player": status, "rooms": .array(rooms), "groups": groups["groups"] ?? [], "party": groups["party"] ?? false])
            return
        }
        print(describeStatus(status, language: language))
        if rooms.isEmpty { print(language.text(.cliStatusNoRooms)) }
        for r in rooms { print("  " + describeRoom(r, language: language)) }
        // Other groups, each with its own stream, in a line each.
        let others = objects(groups["groups"]).filter { $0["id"]?.string != (group ?? "main") && $0["name"]?.string != group }
        let party = groups["party"]?.bool == true
        if !others.isEmpty || party {
            print(language.text(party ? .cliGroupsPartyHeader : .cliGroupsHeader))
            for g in others { print("  " + describeGroup(g, language: language)) }
        }
    }

    /// An on/off mode of the player; nil: the other one.
    private func mode(_ name: String, _ wanted: Bool?) throws(CLIFailure) {
        var on = wanted ?? false
        if wanted == nil { on = !(try call("player.status")[name]?.bool ?? false) }
        let result = try call("player." + name, ["on": .bool(on)])
        let state = language.value(on ? "on" : "off")
        show(result) { _ in language.text(name == "shuffle" ? .cliStatusShuffle : .cliStatusConsume, ["state": state]) }
    }

    /// "added N" for `queue.add`.
    private func showAdded(_ r: JSONValue) { show(r) { language.text(.cliQueueAdded, ["count": "\($0["added"]?.array?.count ?? 0)"]) } }

    private func queue(_ q: CLICommand.Queue) throws(CLIFailure) {
        switch q {
        case .list:
            let q = objectOrEmpty(try call("queue.list"))
            if json { output(q); return }
            let current = q["current"]?.integer ?? -1
            for e in objects(q["entries"]) {
                let i = e["index"]?.integer ?? 0
                print("\(i == current ? ">" : " ")\(cFormat("%3d", i + 1)) \(e["uri"]?.string ?? "")")
            }
        case .add(let uris, let next): showAdded(try call("queue.add", ["uris": JSONValue(uris), "next": .bool(next)]))
        case .addSearch(let text): showAdded(try call("queue.add", ["search": .string(text)]))
        case .addAlbum(let album): showAdded(try call("queue.add", ["album": .string(album)]))
        case .addPlaylist(let id): showAdded(try call("queue.add", ["playlist": JSONValue(id)]))
        case .remove(let index): output(try call("queue.remove", ["index": JSONValue(index)]))
        case .move(let from, let to): output(try call("queue.move", ["from": JSONValue(from), "to": JSONValue(to)]))
        case .clear: _ = try call("queue.clear"); if !json { print(language.text(.cliQueueCleared)) }
        case .play(let index): showStatus(try call("queue.play", ["index": JSONValue(index)]))
        }
    }

    private func scan(_ folder: String?) throws(CLIFailure) {
        // Progress: a bar on a terminal, a percentage line every 10 % otherwise.
        let terminal = isatty(STDOUT_FILENO) == 1
        let json = json, language = language
        var lastDecile = -1
        client.onNotification = { method, p in
            guard !json, method == "library.scanProgress", let done = p["done"]?.integer, let total = p["total"]?.integer, total > 0 else { return }
            let fraction = Double(done) / Double(total)
            if terminal {
                let filled = Int(fraction * 30)
                let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: 30 - filled)
                print("\r" + language.text(.cliScanBar, ["bar": bar, "done": "\(done)", "total": "\(total)"]), terminator: "")
                fflush(nil) // nil: every output stream (stdout is a C global Swift 6 will not touch)
                if done == total { print("") }
            } else if Int(fraction * 10) > lastDecile {
                lastDecile = Int(fraction * 10)
                print(language.text(.cliScanPercent, ["percent": "\(lastDecile * 10)", "done": "\(done)", "total": "\(total)"]))
            }
        }
        client.setReceiveTimeout(milliseconds: 0) // a big scan takes as long as it takes
        let r = try call("library.scan", folder.map { ["folder": .string($0)] } ?? [:])
        show(r) { describeScan($0, language: language) }
    }

    private func playlist(_ p: CLICommand.Playlist) throws(CLIFailure) {
        switch p {
        case .list:
            let r = objectOrEmpty(try call("playlists.list"))
            if json { output(r) } else {
                for p in objects(r["playlists"]) { print("\(p["id"]?.integer ?? 0)\t\(p["name"]?.string ?? "")\t" + language.text(.cliPlaylistTracks, ["count": "\(p["entries"]?.integer ?? 0)"])) }
            }
        case .show(let id):
            let r = objectOrEmpty(try call("playlists.entries", ["id": JSONValue(id)]))
            if json { output(r) } else {
                for t in objects(r["entries"]) { print("\((t["index"]?.integer ?? 0) + 1)\t\(t["artist"]?.string ?? "-") — \(t["title"]?.string ?? "?")") }
            }
        case .create(let name): output(try call("playlists.create", ["name": .string(name)]))
        case .delete(let id): output(try call("playlists.delete", ["id": JSONValue(id)]))
        case .rename(let id, let name): output(try call("playlists.rename", ["id": JSONValue(id), "name": .string(name)]))
        case .load(let id): showAdded(try call("queue.add", ["playlist": JSONValue(id)]))
        case .save(let name): output(try call("playlists.saveQueue", ["name": .string(name)]))
        case .importFile(let path, let name):
            var params: [String: JSONValue] = ["path": .string(path)]
            if let name { params["name"] = .string(name) }
            output(try call("playlists.import", params))
        case .export(let id, let path): output(try call("playlists.export", ["id": JSONValue(id), "path": .string(path)]))
        }
    }

    private func cache(_ c: CLICommand.Cache) throws(CLIFailure) {
        switch c {
        case .add(let url):
            let json = json, language = language
            client.onNotification = { method, p in
                guard !json, method == "cache.progress", let r = p["received"]?.integer else { return }
                let total = p["total"]?.integer ?? 0
                print(total > 0 ? language.text(.cliCacheDownloading, ["percent": "\(100 * r / total)", "received": "\(r)", "total": "\(total)"])
                                : language.text(.cliCacheDownloadingBytes, ["received": "\(r)"]))
            }
            client.setReceiveTimeout(milliseconds: 0)
            let r = try call("cache.add", ["url": .string(url)])
            show(r) { language.text(.cliCacheCached, ["size": "\($0["size"]?.integer ?? 0)"]) }
        case .list:
            let r = objectOrEmpty(try call("cache.list"))
            if json { output(r) } else { for e in objects(r["entries"]) { print("\(e["size"]?.integer ?? 0)\t\(e["url"]?.string ?? "")") } }
        case .size:
            let r = objectOrEmpty(try call("cache.size"))
            show(r) {
                language.text(.cliCacheSize, ["count": "\($0["entries"]?.integer ?? 0)", "size": "\(($0["size"]?.integer ?? 0) >> 20)",
                                              "capacity": "\(($0["capacity"]?.integer ?? 0) >> 20)"])
            }
        case .remove(let url): output(try call("cache.remove", ["url": .string(url)]))
        case .clear: output(try call("cache.clear"))
        }
    }

    private func podcast(_ p: CLICommand.Podcast) throws(CLIFailure) {
        switch p {
        case .subscribe(let url):
            client.setReceiveTimeout(milliseconds: 60_000)
            let r = try call("podcasts.subscribe", ["url": .string(url)])
            show(r) { describePodcast(objectOrEmpty($0), language: language) }
        case .list:
            let r = objectOrEmpty(try call("podcasts.list"))
            if json { output(r) } else { for p in objects(r["podcasts"]) { print(describePodcast(p, language: language)) } }
        case .episodes(let podcast):
            let r = objectOrEmpty(try call("podcasts.episodes", ["podcast": .string(podcast)]))
            if json { output(r) } else { for e in objects(r["episodes"]) { print(describeEpisode(e)) } }
        case .play(let podcast, let episode):
            var params: [String: JSONValue] = ["podcast": .string(podcast)]
            if let episode { params["episode"] = .string(episode) }
            let r = try call("podcasts.play", params)
            show(r) { o in
                let e = objectOrEmpty(o["episode"] ?? .null)
                let from = o["resumedAt"]?.number ?? 0
                let title = e["title"]?.string ?? ""
                return from >= 1 ? language.text(.cliPodcastPlayingFrom, ["title": title, "position": clock(from)])
                    : language.text(.cliPodcastPlaying, ["title": title])
            }
        case .refresh(let podcast):
            client.setReceiveTimeout(milliseconds: 0)
            let r = objectOrEmpty(try call("podcasts.refresh", podcast.map { ["podcast": .string($0)] } ?? [:]))
            if json { output(r); return }
            for p in objects(r["podcasts"]) {
                let what = p["error"]?.string.map { language.text(.cliPodcastFailed, ["error": $0]) }
                    ?? language.text(p["notModified"]?.bool == true ? .cliPodcastNotModified : .cliPodcastNew, ["count": "\(p["added"]?.integer ?? 0)"])
                print("\(p["title"]?.string ?? ""): \(what)")
            }
        case .unsubscribe(let podcast): output(try call("podcasts.unsubscribe", ["podcast": .string(podcast)]))
        case .setPlayed(let podcast, let episode, let played):
            output(try call("podcasts.setPlayed", ["podcast": .string(podcast), "episode": .string(episode), "played": .bool(played)]))
        case .setSpeed(let podcast, let speed): output(try call("podcasts.setSpeed", ["podcast": .string(podcast), "speed": speed.map(JSONValue.number) ?? .null]))
        case .download(let podcast, let episode):
            client.setReceiveTimeout(milliseconds: 0)
            output(try call("podcasts.download", ["podcast": .string(podcast), "episode": .string(episode)]))
        }
    }

    private func speakers(_ s: CLICommand.Speakers) throws(CLIFailure) {
        func list(_ result: JSONValue) {
            if json { output(result); return }
            let r = objectOrEmpty(result)
            print(language.text(.cliSpeakersHeader, ["mode": language.value(r["mode"]?.string ?? "?"), "key": r["leaderKey"]?.string ?? "?"]))
            for s in objects(r["paired"]) {
                print(language.text(.cliSpeakersPairedRow, ["name": s["name"]?.string ?? "?", "key": s["key"]?.string ?? "?",
                                                            "state": language.text(s["connected"]?.bool == true ? .cliSpeakersConnected : .cliSpeakersNotConnected)]))
            }
            for s in objects(r["pending"]) {
                let name = ["name": s["name"]?.string ?? "NAME"]
                let how = s["method"]?.string == "dynamic_pairing_code" ? language.text(.cliSpeakersShowsDigits, name)
                    : s["method"]?.string == "static_pairing_code" ? language.text(.cliSpeakersPrintedCode, name)
                    : s["by"]?.string == "code" ? language.text(.cliSpeakersWaitsForCode) : language.text(.cliSpeakersAsksToJoin, name)
                print(language.text(.cliSpeakersPendingRow, ["name": s["name"]?.string ?? "?", "address": s["address"]?.string ?? "?",
                                                             "key": s["key"]?.string ?? "?", "how": how]))
            }
        }
        switch s {
        case .list: list(try call("speakers.list"))
        case .decide(let verb, let name): list(try call("speakers.\(verb)", ["name": .string(name)]))
        case .pair(let code):
            let r = try call("speakers.pair", ["code": .string(code)])
            show(r) { language.text(.cliSpeakersPaired, ["name": $0["paired"]?.string ?? ""]) }
        case .sendspinCode(let code, let name):
            var params: [String: JSONValue] = ["code": .string(code)]
            if let name { params["name"] = .string(name) }
            show(try call("speakers.sendspinCode", params)) { r in
                r["paired"]?.string.map { language.text(.cliSpeakersPaired, ["name": $0]) }
                    ?? language.text(.cliSpeakersCodeWaits, ["player": r["offered"]?.string ?? language.text(.cliSpeakersThePlayer)])
            }
        }
    }

    /// A room's answer to `rooms.set`.
    private func setRoom(_ params: [String: JSONValue]) throws(CLIFailure) {
        show(try call("rooms.set", params)) { $0.object != nil ? describeRoom($0, language: language) : nil }
    }

    /// A group's answer to `groups.setVolume`/`setMute`: its rooms.
    private func groupRooms(_ group: String, _ result: JSONValue) throws(CLIFailure) {
        if json { output(result); return }
        guard result.object != nil else { return }
        if result["kept"]?.bool == true { print(language.text(.cliGroupKept, ["group": group])) }
        for room in objects(result["rooms"]) { print(describeRoom(room, language: language)) }
    }

    private func equalizer(_ e: CLICommand.Equalizer) throws(CLIFailure) {
        func show(_ result: JSONValue) {
            if json { output(result); return }
            guard let eq = result["eq"], eq.object != nil else { return }
            print(describeEqualizer(result["room"]?.string ?? "?", eq, language: language))
        }
        switch e {
        case .presets:
            let r = objectOrEmpty(try call("eq.presets"))
            if json { output(r); return }
            for p in objects(r["presets"]) {
                let g = (p["gains"]?.numbers ?? []).map { cFormat("%+g", $0) }.joined(separator: " ")
                print("\(p["name"]?.string ?? "?")\((p["builtIn"]?.bool ?? false) ? "" : " " + language.text(.cliEqSaved)): \(g)")
            }
        case .save(let name, let source):
            let params: [String: JSONValue] = switch source {
            case .gains(let gains): ["name": .string(name), "gains": JSONValue(gains)]
            case .room(let room): ["name": .string(name), "room": .string(room)]
            }
            let r = try call("eq.save", params)
            self.show(r) { _ in language.text(.cliEqSavedPreset, ["name": name]) }
        case .delete(let name):
            let r = try call("eq.delete", ["name": .string(name)])
            self.show(r) { _ in language.text(.cliEqDeletedPreset, ["name": name]) }
        case .show(let room):
            let rooms = objects(try call("rooms.list")["rooms"])
            guard let r = rooms.first(where: { $0["name"]?.string == room }) else { throw .refused(UserMessage(.roomUnknown, ["room": room])) }
            show(["room": .string(room), "eq": r["eq"] ?? [:]])
        case .set(let room, let change):
            var params: [String: JSONValue] = ["room": .string(room)]
            if let preset = change.preset { params["preset"] = .string(preset) }
            if let gains = change.gains { params["gains"] = JSONValue(gains) }
            if let bass = change.bass { params["bass"] = JSONValue(bass) }
            if let treble = change.treble { params["treble"] = JSONValue(treble) }
            switch change.preamp {
            case .auto?: params["preamp"] = "auto"
            case .decibels(let db)?: params["preamp"] = JSONValue(db)
            case nil: break
            }
            show(try call("rooms.setEq", params))
        }
    }

    private func group(_ g: CLICommand.Group) throws(CLIFailure) {
        let language = language
        let showGroup: (JSONValue) -> String? = { $0.object != nil ? describeGroup($0, language: language) : nil }
        switch g {
        case .list:
            let r = objectOrEmpty(try call("groups.list"))
            if json { output(r); return }
            if r["party"]?.bool == true { print(language.text(.cliPartyModeIs, ["state": language.value("on")])) }
            for g in objects(r["groups"]) { print(describeGroup(g, language: language)) }
        case .create(let name, let rooms): show(try call("groups.create", ["name": .string(name), "rooms": JSONValue(rooms)]), showGroup)
        case .add(let group, let rooms): show(try call("groups.add", ["group": .string(group), "rooms": JSONValue(rooms)]), showGroup)
        case .leave(let room): show(try call("groups.separate", ["room": .string(room)]), showGroup)
        case .rename(let group, let name): show(try call("groups.rename", ["group": .string(group), "name": .string(name)]), showGroup)
        case .delete(let group): show(try call("groups.delete", ["group": .string(group)])) { _ in language.text(.cliGroupDeleted, ["group": group]) }
        }
    }

    private func party(_ p: CLICommand.Party) throws(CLIFailure) {
        switch p {
        case .on(let group):
            let r = try call("party.on", group.map { ["group": .string($0)] } ?? [:])
            show(r) { $0.object != nil ? partyMode(true) + ": " + describeGroup($0, language: language) : nil }
        case .off: show(try call("party.off")) { _ in partyMode(false) }
        case .status: show(try call("party.status")) { partyMode($0["party"]?.bool == true) }
        }
    }

    /// "party mode on", "party mode off".
    private func partyMode(_ on: Bool) -> String { language.text(.cliPartyMode, ["state": language.value(on ? "on" : "off")]) }

    /// "ROOM: reverb …" for `tutti reverb`.
    private func roomReverb(_ room: String, _ reverb: JSONValue?) -> String {
        room + ": " + language.text(.cliRoomReverb, ["reverb": describeReverb(reverb, language: language)])
    }

    /// Prints each change as the leader announces it, until the connection ends.
    private func watch() throws(CLIFailure) {
        client.setReceiveTimeout(milliseconds: 0)
        _ = try call("player.status")
        while true {
            let method: String, params: JSONValue
            do { (method, params) = try client.nextNotification() } catch { throw .unreachable("\(error)") }
            if json { output(["method": .string(method), "params": params]) } else if method == "player.changed" {
                print(describeStatus(params, language: language))
            } else if method == "rooms.changed" {
                for r in objects(params["rooms"]) { print(describeRoom(r, language: language)) }
            } else if method == "rooms.health" {
                continue // once a second: `tutti rooms` shows it when asked
            } else if method == "groups.changed" {
                print(language.text(.cliGroupsHeader))
                for g in objects(params["groups"]) { print("  " + describeGroup(g, language: language)) }
            } else {
                print("\(method)")
            }
            // Each change as it happens, also into a pipe (stdout is block-buffered there).
            fflush(nil) // nil: every output stream (stdout is a C global Swift 6 will not touch)
        }
    }
}

/// `value` when it is an object, else an empty one (what a missing answer prints as).
func objectOrEmpty(_ value: JSONValue) -> JSONValue { value.object != nil ? value : .object([:]) }

/// An array of objects, or none when `value` is anything else (or holds anything else).
func objects(_ value: JSONValue?) -> [JSONValue] {
    guard let items = value?.array, items.allSatisfy({ $0.object != nil }) else { return [] }
    return items
}
