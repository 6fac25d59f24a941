import FoundationEssentials
import TuttiAudio
import TuttiCore
import TuttiLibrary
import TuttiStreams
import TuttiControlKit

/// JSON-RPC methods for podcasts: subscribe, list, episodes, refresh,
/// play (resuming where the listener stopped, at the show's speed),
/// played flags, preferred speed, download for offline play.
extension ControlServer {
    private func podcastService() throws -> any PodcastControl {
        guard let podcasts = leader.podcastControl else {
            throw RPCError(code: -32000, UserMessage(.podcastsNoLibrary))
        }
        return podcasts
    }

    static func podcastObject(_ p: Podcast) -> [String: JSONValue] {
        var o: [String: JSONValue] = ["id": .int(p.id.rawValue), "url": .string(p.url), "title": .string(p.title), "episodes": .int(p.episodeCount),
                                      "unplayed": .int(p.unplayedCount), "subscribedAt": .int(p.subscribedAt)]
        if let v = p.author { o["author"] = .string(v) }
        if let v = p.image { o["image"] = .string(v) }
        if let v = p.description { o["description"] = .string(v) }
        if let v = p.link { o["link"] = .string(v) }
        if let v = p.speed { o["speed"] = .number(v) }
        if let v = p.refreshedAt { o["refreshedAt"] = .int(v) }
        if let v = p.refreshError { o["refreshError"] = .string(v) }
        return o
    }

    static func episodeObject(_ e: PodcastEpisode) -> JSONValue {
        var o: [String: JSONValue] = ["id": .int(e.id.rawValue), "podcast": .int(e.podcast.rawValue), "guid": .string(e.guid), "title": .string(e.title),
                                      "url": .string(e.url), "played": .bool(e.played), "position": .number(Double(e.positionMs) / 1000)]
        if let v = e.mimeType { o["type"] = .string(v) }
        if let v = e.length { o["length"] = .int(v) }
        if let v = e.durationMs { o["duration"] = .number(Double(v) / 1000) }
        if let v = e.publishedAt { o["published"] = .int(v) }
        if let v = e.description { o["description"] = .string(v) }
        if let v = e.image { o["image"] = .string(v) }
        return .object(o)
    }

    /// `podcast`: its id, feed URL or title.
    private func podcastParameter(_ params: [String: JSONValue], method: String, in service: any PodcastControl) throws -> Podcast {
        let key: String
        switch params["podcast"] {
        case .number(let n)?: key = String(Int64(exactly: n.rounded()) ?? -1)
        case .string(let s)? where !s.isEmpty && s.utf8.count <= 4_096: key = s
        default: throw RPCError(code: -32602, message: "\(method) needs \"podcast\": its id, feed URL or title (see podcasts.list)")
        }
        do {
            guard let p = try service.library.findPodcast(key) else { throw RPCError(code: -32602, message: "no podcast \(key) (see podcasts.list)") }
            return p
        } catch let e as LibraryError { throw RPCError(code: -32000, e.message) }
    }

    /// `episode`: its id, or text of its title; nil when not given.
    private func episodeParameter(_ params: [String: JSONValue], of podcast: Podcast, in service: any PodcastControl) throws -> PodcastEpisode? {
        guard let raw = params["episode"], raw != .null else { return nil }
        let all = try libraryCall { try service.library.episodes(of: podcast.id) }
        switch raw {
        case .number(let n):
            guard let e = all.first(where: { Double($0.id.rawValue) == n }) else {
                throw RPCError(code: -32602, message: "no episode \(n) in '\(podcast.title)' (see podcasts.episodes)")
            }
            return e
        case .string(let s) where !s.isEmpty && s.utf8.count <= 1_024:
            let lower = s.lowercased()
            if let e = all.first(where: { $0.title.lowercased() == lower || $0.guid == s || String($0.id.rawValue) == s }) { return e }
            let matching = all.filter { $0.title.lowercased().contains(lower) }
            guard let e = matching.first else { throw RPCError(code: -32602, message: "no episode of '\(podcast.title)' is called \(s)") }
            return e // newest first: the newest that matches
        default:
            throw RPCError(code: -32602, message: "episode must be an episode id or words of its title")
        }
    }

    /// Runs a library call; its `LibraryError` becomes the JSON-RPC error.
    private func libraryCall<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as LibraryError { throw RPCError(code: -32000, error.message) }
    }

    private func queue(of group: String?) throws -> PlayQueue {
        do { return try leader.queue(group: group) } catch { throw RPCError(code: -32602, error.message) }
    }

    func dispatchPodcasts(_ method: String, _ params: [String: JSONValue], group: String?) throws -> JSONValue? {
        guard method.hasPrefix("podcasts.") else { return nil }
        let service = try podcastService()
        switch method {
        case "podcasts.subscribe":
            guard let url = params["url"]?.string, SourceOpener.isNetworkURL(url), url.utf8.count <= FeedLimits.maxURLBytes else {
                throw RPCError(code: -32602, message: "podcasts.subscribe needs \"url\": the feed's http:// or https:// URL")
            }
            try confined(url)
            do { return .object(Self.podcastObject(try service.subscribe(url: url))) } catch {
                throw RPCError(code: -32000, error.message)
            }
        case "podcasts.list":
            return ["podcasts": .array(try libraryCall { try service.library.podcasts() }.map { .object(Self.podcastObject($0)) })]
        case "podcasts.episodes":
            let podcast = try podcastParameter(params, method: method, in: service)
            let limit = params["limit"]?.number.map { Int(max(1, min(Double(FeedLimits.maxEpisodes), $0))) } ?? FeedLimits.maxEpisodes
            let episodes = try libraryCall { try service.library.episodes(of: podcast.id, limit: limit) }
            return ["podcast": .object(Self.podcastObject(podcast)), "episodes": .array(episodes.map(Self.episodeObject))]
        case "podcasts.unsubscribe":
            let podcast = try podcastParameter(params, method: method, in: service)
            try libraryCall { try service.unsubscribe(podcast.id) }
            return ["podcast": .int(podcast.id.rawValue), "removed": true]
        case "podcasts.refresh":
            let shows: [Podcast]
            if params["podcast"] == nil { shows = try libraryCall { try service.library.podcasts() } }
            else { shows = [try podcastParameter(params, method: method, in: service)] }
            let outcomes = shows.map(service.refresh)
            return ["podcasts": .array(outcomes.map { o -> JSONValue in
                var object = Self.podcastObject(o.podcast)
                object["added"] = .int(o.update?.added ?? 0)
                object["notModified"] = .bool(o.update == nil && o.error == nil)
                if let e = o.error { object["error"] = .string(e) }
                return .object(object)
            })]
        case "podcasts.setPlayed":
            let podcast = try podcastParameter(params, method: method, in: service)
            guard let episode = try episodeParameter(params, of: podcast, in: service) else {
                throw RPCError(code: -32602, message: "podcasts.setPlayed needs \"episode\"")
            }
            let played = params["played"]?.bool ?? true
            try libraryCall { try service.library.setPlayed(episode.id, played) }
            leader.events.emit(.library)
            return Self.episodeObject(try libraryCall { try service.library.episode(episode.id) } ?? episode)
        case "podcasts.setSpeed":
            let podcast = try podcastParameter(params, method: method, in: service)
            var speed: Double? = nil
            if let raw = params["speed"], raw != .null {
                guard let v = raw.number, v.isFinite, PlaybackTempo.speedRange.contains(v) else {
                    throw RPCError(code: -32602, message: "speed must be \(PlaybackTempo.speedRange.lowerBound)–\(PlaybackTempo.speedRange.upperBound) (or null: none)")
                }
                speed = v
            }
            try libraryCall { try service.library.setPodcastSpeed(podcast.id, speed) }
            leader.events.emit(.library)
            return .object(Self.podcastObject(try libraryCall { try service.library.podcast(podcast.id) } ?? podcast))
        case "podcasts.download":
            let podcast = try podcastParameter(params, method: method, in: service)
            guard let episode = try episodeParameter(params, of: podcast, in: service) else {
                throw RPCError(code: -32602, message: "podcasts.download needs \"episode\"")
            }
            guard let cache = leader.cache else { throw RPCError(code: -32000, UserMessage(.cacheNone)) }
            try confined(episode.url)
            do {
                let entry = try cache.add(episode.url)
                return ["episode": .int(episode.id.rawValue), "url": .string(entry.url), "size": .int(entry.size)]
            } catch {
                throw RPCError(code: -32000, error.message)
            }
        case "podcasts.play":
            let podcast = try podcastParameter(params, method: method, in: service)
            let episodes = try libraryCall { try service.library.episodes(of: podcast.id) }
            // No episode named: the newest not yet played (or the newest of all).
            guard let episode = try episodeParameter(params, of: podcast, in: service) ?? episodes.first(where: { !$0.played }) ?? episodes.first else {
                throw RPCError(code: -32000, UserMessage(.podcastsNoEpisodes, ["title": podcast.title]))
            }
            return try playEpisode(episode, of: podcast, group: group)
        default:
            throw RPCError(code: -32601, message: "unknown method '\(method)' (see docs/api.md)")
        }
    }

    /// Plays `episode` in `group`: its queue entry if it has one, else a
    /// new one at the end; at the show's speed; from where the listener
    /// stopped (unless it was played to the end).
    private func playEpisode(_ episode: PodcastEpisode, of podcast: Podcast, group: String?) throws -> JSONValue {
        try confined(episode.url)
        func perform(_ command: PlayerCommand) throws -> CommandOutcome {
            do { return try leader.perform(command, group: group) } catch { throw RPCError(code: -32000, error.message) }
        }
        var queue = try queue(of: group)
        var index = queue.entries.firstIndex { $0.uri == episode.url }
        if index == nil {
            let added = try perform(.add(uris: [episode.url], next: false)).added
            queue = try self.queue(of: group)
            index = added.first.flatMap(queue.index(ofID:))
        }
        guard let index else { throw RPCError(code: -32000, UserMessage(.podcastsNotQueued)) }
        if let speed = podcast.speed { _ = try perform(.speed(speed)) }
        var outcome = try perform(.playIndex(index))
        let resume = episode.played ? 0 : Double(episode.positionMs) / 1000
        if resume >= 1 { outcome = try perform(.seek(seconds: resume)) }
        let wait = outcome.effectiveAt - Monotonic.now()
        if wait > 0 { Monotonic.sleep(nanoseconds: min(wait, nanosecondsPerSecond) + 2 * nanosecondsPerMillisecond) }
        var result = statusObject(group: group)
        result["episode"] = Self.episodeObject(episode)
        result["resumedAt"] = .number(resume)
        return .object(result)
    }
}
