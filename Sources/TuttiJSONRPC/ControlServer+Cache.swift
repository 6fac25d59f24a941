import FoundationEssentials
import TuttiCore
import TuttiStreams
import TuttiControlKit

/// JSON-RPC methods for the offline cache of network tracks.
extension ControlServer {
    func dispatchCache(_ method: String, _ params: [String: JSONValue]) throws -> JSONValue? {
        guard method.hasPrefix("cache.") else { return nil }
        guard let cache = leader.cache else {
            throw RPCError(code: -32000, UserMessage(.cacheNone))
        }
        func entry(_ e: StreamCache.Entry) -> JSONValue {
            ["url": .string(e.url), "size": .int(e.size), "added": .int(Int(e.added.timeIntervalSince1970 * 1000)),
             "lastUsed": .int(Int(e.lastUsed.timeIntervalSince1970 * 1000))]
        }
        switch method {
        case "cache.add":
            guard let url = params["url"]?.string, SourceOpener.isNetworkURL(url), url.utf8.count <= 4_096 else {
                throw RPCError(code: -32602, message: "cache.add needs \"url\": an http:// or https:// URL")
            }
            // A first look at the host as written; every connection (redirects included) is checked again by address.
            try confined(url)
            var lastSent: Int64 = 0
            do {
                let e = try cache.add(url) { received, total in
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    guard now - lastSent >= 200 else { return }
                    lastSent = now
                    self.notify("cache.progress", ["url": .string(url), "received": .int(received), "total": .int(total)], key: "cache.progress " + url)
                }
                return entry(e)
            } catch {
                throw RPCError(code: -32000, error.message)
            }
        case "cache.list":
            return ["entries": .array(cache.list().map(entry)), "size": .int(cache.totalSize), "capacity": .int(cache.capacityBytes)]
        case "cache.size":
            return ["size": .int(cache.totalSize), "capacity": .int(cache.capacityBytes), "entries": .int(cache.list().count)]
        case "cache.remove":
            guard let url = params["url"]?.string else { throw RPCError(code: -32602, message: "cache.remove needs \"url\"") }
            return ["url": .string(url), "removed": .bool(cache.remove(url))]
        case "cache.clear":
            return ["freed": .int(cache.clear())]
        default:
            return nil
        }
    }
}
