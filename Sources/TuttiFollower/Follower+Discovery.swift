import TuttiCore
import TuttiDiscovery
import TuttiNet

extension Follower {
    /// Browses for `_tutti._tcp` and picks the leader: the one named
    /// `leaderName`, else the first by name, so that every follower of a
    /// home picks the same one. Logs the choice when it changes.
    /// - Throws: `FollowerError` when Avahi is not there or nothing is found
    ///   (the connect loop retries with backoff).
    func findLeader() throws(FollowerError) -> Endpoint {
        let wanted = configuration.leaderName
        let leaders: [DiscoveredLeader]
        do { leaders = try discoverLeaders(timeout: 3, named: wanted) } catch { throw .discovery(error.message) }
        guard let chosen = DiscoveredLeader.choose(from: leaders, named: wanted) else {
            throw .noLeaderFound(named: wanted, seen: leaders.map(\.name))
        }
        // A leader on this machine is reached over loopback: it may listen there only.
        let endpoint = Endpoint(host: chosen.isLocal ? "127.0.0.1" : chosen.address, port: chosen.port)
        let summary = "'\(chosen.name)' at \(endpoint)"
        let changed = foundLeader.withLock { last in defer { last = summary }; return last != summary }
        if changed {
            let others = leaders.count > 1 ? " (of \(leaders.count): \(leaders.map(\.name).joined(separator: ", ")))" : ""
            log.info("found leader \(summary) over mDNS\(others)")
        }
        return endpoint
    }
}
