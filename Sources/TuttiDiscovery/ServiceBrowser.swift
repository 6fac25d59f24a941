import CAvahi
import Synchronization
import TuttiCore
import TuttiSystem

/// A leader found on the network: where to connect and what its TXT record says.
public struct DiscoveredLeader: Sendable, Equatable, CustomStringConvertible {
    /// The DNS-SD instance name ("Tutti on kitchen-pi").
    public var name: String
    /// The host's mDNS name ("kitchen-pi.local").
    public var hostName: String
    /// Its IPv4 address, as text.
    public var address: String
    /// The follower port.
    public var port: UInt16
    /// Every TXT key and value (keys without a value map to "").
    public var txt: [String: String]
    /// True when this machine announced it (connect through loopback then:
    /// the leader's control socket is often bound to 127.0.0.1 only).
    public var isLocal: Bool

    public init(name: String, hostName: String, address: String, port: UInt16, txt: [String: String], isLocal: Bool) {
        self.name = name; self.hostName = hostName; self.address = address; self.port = port; self.txt = txt; self.isLocal = isLocal
    }

    public var protocolVersion: Int? { txt[TuttiService.Key.version].flatMap { Int($0) } }
    public var controlPort: UInt16? { txt[TuttiService.Key.control].flatMap { UInt16($0) } }
    public var mpdPort: UInt16? { txt[TuttiService.Key.mpd].flatMap { UInt16($0) } }
    public var id: String? { txt[TuttiService.Key.id] }

    public var description: String { "'\(name)' at \(address):\(port)" }

    /// The leader to use among `leaders`: the one named `name` if given,
    /// else the first by name (so every follower picks the same one).
    public static func choose(from leaders: [DiscoveredLeader], named name: String?) -> DiscoveredLeader? {
        if let name { return leaders.first { $0.name == name } }
        return leaders.min { $0.name < $1.name }
    }

    /// The leader's key fingerprint it announces (v7), if any.
    public var keyFingerprint: String? { txt[TuttiService.Key.key] }

    /// For a speaker paired with the leader whose key has `fingerprint`:
    /// only announcements carrying that fingerprint, never the first by name
    /// blindly (anyone can announce `!x`). The name, when asked, narrows it
    /// further. Several with the same key (one leader on two interfaces):
    /// the first by name. nil fingerprint: as `choose(from:named:)`.
    public static func choose(from leaders: [DiscoveredLeader], named name: String?, pinned fingerprint: String?) -> DiscoveredLeader? {
        guard let fingerprint else { return choose(from: leaders, named: name) }
        let ours = leaders.filter { $0.keyFingerprint == fingerprint }
        return choose(from: ours, named: name) ?? (name == nil ? nil : ours.min { $0.name < $1.name })
    }
}

/// Browses for a DNS-SD service type (IPv4) and resolves every instance,
/// continuously, until stopped.
///
/// Thread contract: any thread may read `leaders`, `settled`, `failure` and
/// call `stop`. `onChange` runs on the browser's poll thread with the list
/// sorted by name; it must not call `stop`.
// Sendable because `browser` is used only under Avahi's poll lock, `connection` is set once in init, and the list and flags are in Mutexes.
public final class ServiceBrowser: @unchecked Sendable {
    private struct Instance: Hashable { var interface: Int32; var name: String; var domain: String }
    private struct State {
        var resolved: [Instance: DiscoveredLeader] = [:]
        var local: Set<Instance> = []
        var pendingResolutions = 0
        var allForNow = false
        var failure: DiscoveryError?
    }

    public let type: String
    private let state = Mutex(State())
    private let onChange: (@Sendable ([DiscoveredLeader]) -> Void)?
    private var connection: AvahiConnection!
    private var browser: OpaquePointer?   // poll lock
    private let stopped = Mutex(false)
    /// Broadcast after every callback that may have changed what is known
    /// (`waitForChange`): a waiting `discoverLeaders` sleeps until then.
    private let changed = Condition()

    /// - Throws: `DiscoveryError` when avahi-daemon (or the system bus) is not
    ///   there: discovery cannot wait for a daemon that may never come.
    public init(type: String = TuttiService.type, onChange: (@Sendable ([DiscoveredLeader]) -> Void)? = nil) throws(DiscoveryError) {
        self.type = type
        self.onChange = onChange
        connection = try AvahiConnection(waitForDaemon: false) { [weak self] client, state in
            self?.clientChanged(client, state)
        }
        let error: Int32? = connection.locked {
            guard let client = connection.currentClient else { return Int32(AVAHI_ERR_DISCONNECTED) }
            browser = avahi_service_browser_new(client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET), type, nil,
                                                AvahiLookupFlags(rawValue: 0), { browser, interface, _, event, name, _, domain, flags, context in
                guard let browser, let context else { return }
                Unmanaged<ServiceBrowser>.fromOpaque(context).takeUnretainedValue()
                    .browserEvent(browser, interface: interface, event: event, name: name, domain: domain, flags: flags)
            }, Unmanaged.passUnretained(self).toOpaque())
            return browser == nil ? avahi_client_errno(client) : nil
        }
        if let error {
            connection.close()
            throw DiscoveryError.fromAvahi(error, doing: "browsing for \(type)")
        }
    }

    deinit { stop() }

    /// Every resolved instance, one per name, sorted by name.
    public var leaders: [DiscoveredLeader] { state.withLock { Self.list($0) } }

    /// True once Avahi said "all for now" and nothing is left to resolve:
    /// what the network had to say at start has been heard.
    public var settled: Bool { state.withLock { $0.allForNow && $0.pendingResolutions == 0 } }

    /// Set when browsing failed (the daemon went away, for one).
    public var failure: DiscoveryError? { state.withLock { $0.failure } }

    /// Waits until `done` holds (checked now and after every callback) or
    /// `deadline` (CLOCK_MONOTONIC ns) passes; whether it held.
    public func wait(untilNanoseconds deadline: Int64, for done: () -> Bool) -> Bool {
        changed.withLock {
            while !done() {
                if !changed.wait(untilNanoseconds: deadline) { return done() }
            }
            return true
        }
    }

    /// Stops browsing and frees the Avahi objects. Idempotent.
    public func stop() {
        let first = stopped.withLock { s in defer { s = true }; return !s }
        guard first, let connection else { return }
        connection.close() // frees the browser and resolvers with the client
    }

    private static func list(_ state: State) -> [DiscoveredLeader] {
        // The same leader seen on two interfaces is one leader.
        var byName: [String: DiscoveredLeader] = [:]
        for (instance, leader) in state.resolved.sorted(by: { $0.key.interface < $1.key.interface }) where byName[instance.name] == nil {
            byName[instance.name] = leader
        }
        return byName.values.sorted { $0.name < $1.name }
    }

    // MARK: Poll thread (poll lock held)

    private func clientChanged(_ client: OpaquePointer, _ clientState: AvahiClientState) {
        defer { changed.withLock { changed.broadcast() } }
        guard clientState == AVAHI_CLIENT_FAILURE else { return }
        let error = DiscoveryError.fromAvahi(avahi_client_errno(client), doing: "browsing for \(type)")
        state.withLock { $0.failure = error }
    }

    private func browserEvent(_ browser: OpaquePointer, interface: AvahiIfIndex, event: AvahiBrowserEvent,
                              name: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?, flags: AvahiLookupResultFlags) {
        defer { changed.withLock { changed.broadcast() } }
        switch event {
        case AVAHI_BROWSER_NEW:
            guard let name, let domain else { return }
            let instance = Instance(interface: interface, name: String(cString: name), domain: String(cString: domain))
            let local = flags.rawValue & AVAHI_LOOKUP_RESULT_LOCAL.rawValue != 0
            state.withLock {
                if local { $0.local.insert(instance) }
                $0.pendingResolutions += 1
            }
            // Freed in its callback, or with the client.
            let resolver = avahi_service_resolver_new(avahi_service_browser_get_client(browser), interface, AvahiProtocol(AVAHI_PROTO_INET),
                                                      name, type, domain, AvahiProtocol(AVAHI_PROTO_INET), AvahiLookupFlags(rawValue: 0),
                                                      { resolver, interface, _, event, name, _, domain, hostName, address, port, txt, _, context in
                guard let context else { return }
                Unmanaged<ServiceBrowser>.fromOpaque(context).takeUnretainedValue()
                    .resolved(interface: interface, event: event, name: name, domain: domain, hostName: hostName,
                              address: address, port: port, txt: txt)
                if let resolver { avahi_service_resolver_free(resolver) }
            }, Unmanaged.passUnretained(self).toOpaque())
            if resolver == nil { state.withLock { $0.pendingResolutions -= 1 } }
        case AVAHI_BROWSER_REMOVE:
            guard let name, let domain else { return }
            let instance = Instance(interface: interface, name: String(cString: name), domain: String(cString: domain))
            let list: [DiscoveredLeader]? = state.withLock {
                $0.local.remove(instance)
                return $0.resolved.removeValue(forKey: instance) == nil ? nil : Self.list($0)
            }
            if let list { onChange?(list) }
        case AVAHI_BROWSER_ALL_FOR_NOW:
            state.withLock { $0.allForNow = true }
        case AVAHI_BROWSER_FAILURE:
            let error = DiscoveryError.fromAvahi(avahi_client_errno(avahi_service_browser_get_client(browser)), doing: "browsing for \(type)")
            state.withLock { $0.failure = error }
        default:
            break
        }
    }

    private func resolved(interface: AvahiIfIndex, event: AvahiResolverEvent, name: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?,
                          hostName: UnsafePointer<CChar>?, address: UnsafePointer<AvahiAddress>?, port: UInt16, txt: UnsafeMutablePointer<AvahiStringList>?) {
        defer { changed.withLock { changed.broadcast() } }
        guard event == AVAHI_RESOLVER_FOUND, let name, let domain, let address else {
            state.withLock { $0.pendingResolutions -= 1 }
            return
        }
        var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        avahi_address_snprint(&text, text.count, address)
        let instance = Instance(interface: interface, name: String(cString: name), domain: String(cString: domain))
        let list: [DiscoveredLeader] = state.withLock {
            let leader = DiscoveredLeader(name: instance.name, hostName: hostName.map { String(cString: $0) } ?? "",
                                          address: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), port: port, txt: Self.parse(txt),
                                          isLocal: $0.local.contains(instance))
            $0.resolved[instance] = leader
            $0.pendingResolutions -= 1
            return Self.list($0)
        }
        onChange?(list)
    }

    /// TXT strings "key=value" (or a bare "key") into a dictionary; a key
    /// seen twice keeps its first value (RFC 6763 §6.4).
    static func parse(_ txt: UnsafeMutablePointer<AvahiStringList>?) -> [String: String] {
        var out: [String: String] = [:]
        var item = txt
        while let current = item {
            let size = avahi_string_list_get_size(current)
            if let bytes = avahi_string_list_get_text(current), size > 0 {
                let buffer = UnsafeBufferPointer(start: bytes, count: size)
                let key: String, value: String
                if let eq = buffer.firstIndex(of: UInt8(ascii: "=")) {
                    key = String(decoding: buffer[..<eq], as: UTF8.self)
                    value = String(decoding: buffer[(eq + 1)...], as: UTF8.self)
                } else {
                    key = String(decoding: buffer, as: UTF8.self)
                    value = ""
                }
                if !key.isEmpty, out[key.lowercased()] == nil { out[key.lowercased()] = value }
            }
            item = avahi_string_list_get_next(current)
        }
        return out
    }
}

/// Browses for leaders for up to `timeout` seconds and returns those found,
/// sorted by name. Returns early once the network has answered and every
/// answer is resolved, or as soon as a leader called `name` is found.
///
/// - Throws: `DiscoveryError` when avahi-daemon or the system bus is not
///   there. Finding nothing is not an error: the list is empty.
public func discoverLeaders(timeout: Double, named name: String? = nil) throws(DiscoveryError) -> [DiscoveredLeader] {
    let browser = try ServiceBrowser()
    defer { browser.stop() }
    let deadline = Condition.deadline(afterSeconds: max(0, timeout))
    _ = browser.wait(untilNanoseconds: deadline) {
        if browser.failure != nil { return true }
        if let name { return browser.leaders.contains(where: { $0.name == name }) }
        return browser.settled
    }
    if let failure = browser.failure { throw failure }
    return browser.leaders
}
