import TuttiAudio
import TuttiCore
import TuttiDiscovery
import TuttiNet
import TuttiSystem

extension Follower {
    /// Browses for `_tutti._tcp` and picks the leader: for a paired speaker
    /// only one announcing its leader's key fingerprint; then the one named
    /// `leaderName`, else the first by name, so that every follower of a
    /// home picks the same one. Logs the choice when it changes.
    /// - Throws: `FollowerError` when Avahi is not there or nothing is found
    ///   (the connect loop retries with backoff).
    func findLeader() throws(FollowerError) -> Endpoint {
        let wanted = configuration.leaderName
        let leaders: [DiscoveredLeader]
        do { leaders = try discoverLeaders(timeout: 3, named: wanted) } catch { throw .discovery(error.message) }
        // Paired: only announcements with our leader's key fingerprint (a rogue `!x` is ignored).
        let pinned = configuration.pairByCode ? nil : pinnedLeader.map { TuttiCore.keyFingerprint($0, crypto: crypto) }
        // A TXT record is easy to copy: announcements whose leader failed to prove its key lately are skipped.
        let now = Monotonic.now()
        let skipped = distrusted.withLock { d in d = d.filter { $0.value > now }; return Set(d.keys) }
        let candidates = leaders.filter { !skipped.contains(Self.endpoint(of: $0).description) }
        guard let chosen = DiscoveredLeader.choose(from: candidates, named: wanted, pinned: pinned) else {
            if let pinned { throw .noPairedLeaderFound(fingerprint: pinned, seen: leaders.map(\.name)) }
            throw .noLeaderFound(named: wanted, seen: leaders.map(\.name))
        }
        let endpoint = Self.endpoint(of: chosen)
        let summary = "'\(chosen.name)' at \(endpoint)"
        let changed = foundLeader.withLock { last in defer { last = summary }; return last != summary }
        if changed {
            let others = leaders.count > 1 ? " (of \(leaders.count): \(leaders.map(\.name).joined(separator: ", ")))" : ""
            log.info("found leader \(summary) over mDNS\(others)")
        }
        return endpoint
    }

    /// Where to connect for an announcement: a leader on this machine is
    /// reached over loopback (it may listen there only).
    static func endpoint(of leader: DiscoveredLeader) -> Endpoint {
        Endpoint(host: leader.isLocal ? "127.0.0.1" : leader.address, port: leader.port)
    }

    /// An announced leader that could not prove the key this speaker expects
    /// is skipped for a minute, so a copied announcement cannot hold the
    /// speaker away from its own leader.
    func distrust(_ endpoint: Endpoint) {
        distrusted.withLock { $0[endpoint.description] = Monotonic.now() + 60 * nanosecondsPerSecond }
    }

    /// Browses for `_sendspin-server._tcp` (Music Assistant, aiosendspin's
    /// `sendspin serve`) and picks the one named `leaderName`, else the first
    /// by name; its TXT `path` is the WebSocket's (`/sendspin` without one).
    /// - Throws: `FollowerError` when Avahi is not there or none is found (the connect loop retries).
    func findSendspinServer() throws(FollowerError) -> SendspinServerAddress {
        let wanted = configuration.leaderName
        let servers: [DiscoveredLeader]
        do throws(DiscoveryError) {
            let browser = try ServiceBrowser(type: Self.sendspinServiceType)
            defer { browser.stop() }
            _ = browser.wait(untilNanoseconds: Condition.deadline(afterSeconds: 3)) {
                if browser.failure != nil { return true }
                if let wanted { return browser.leaders.contains { $0.name == wanted } }
                return browser.settled
            }
            if let failure = browser.failure { throw failure }
            servers = browser.leaders
        } catch { throw .discovery(error.message) }
        guard let chosen = DiscoveredLeader.choose(from: servers, named: wanted) else {
            throw .noLeaderFound(named: wanted, seen: servers.map(\.name))
        }
        let path = chosen.txt["path"].flatMap { $0.hasPrefix("/") && $0.utf8.count <= 256 && !$0.contains(" ") ? $0 : nil } ?? SendspinServerAddress.defaultPath
        let address = SendspinServerAddress(host: chosen.isLocal ? "127.0.0.1" : chosen.address, port: chosen.port, path: path)
        let summary = "'\(chosen.name)' at \(address)"
        if foundLeader.withLock({ last in defer { last = summary }; return last != summary }) {
            log.info("found Sendspin server \(summary) over mDNS")
        }
        return address
    }

    static let sendspinServiceType = "_sendspin-server._tcp"
}
