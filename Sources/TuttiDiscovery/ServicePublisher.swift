import CAvahi
import Glibc
import Synchronization
import TuttiCore
import TuttiSystem

/// Announces one DNS-SD service through avahi-daemon for as long as it lives.
///
/// It never needs the daemon to be there: it waits for it (and logs once),
/// registers when it appears, registers again if it restarts, and takes an
/// alternative name ("Name #2") when another service already has its name.
///
/// Thread contract: `init`, `status`, `waitUntilEstablished` and `stop` may
/// be called from any thread; Avahi's callbacks run on the publisher's own
/// poll thread. Entry-group state is guarded by the poll lock.
// Sendable because `group` and `name` are touched only under Avahi's poll lock (callbacks hold it; other threads take it through `connection.locked`), `connection` is set once in init, and status lives in Mutexes.
public final class ServicePublisher: @unchecked Sendable {
    public enum Status: Sendable, Equatable {
        /// avahi-daemon is not (yet, or no longer) there.
        case waitingForDaemon
        /// Registered with the daemon, being probed on the network.
        case registering
        /// Announced under this name.
        case established(name: String)
        /// Avahi refused (the message says why); nothing more will happen.
        case failed(String)
        case stopped
    }

    public let type: String
    public let port: UInt16
    public let txt: [String: String]
    private let log: Logger
    private var connection: AvahiConnection!
    /// Poll lock: the entry group and the name currently tried.
    private var group: OpaquePointer?
    private var name: String
    private let statusBox = Mutex<Status>(.waitingForDaemon)
    private let warnedAboutDaemon = Mutex(false)
    /// Broadcast when `status` changes (`waitUntilEstablished`).
    private let changed = Condition()

    /// - Throws: `DiscoveryError.badName` for a name DNS-SD cannot carry;
    ///   `DiscoveryError` if the Avahi event loop cannot start. A missing
    ///   daemon is not an error (see `status`).
    public init(name: String, port: UInt16, txt: [String: String] = [:], type: String = TuttiService.type, log: Logger) throws(DiscoveryError) {
        guard !name.isEmpty, name.utf8.count <= TuttiService.maxNameBytes else {
            throw DiscoveryError(.badName, "service name must be 1–\(TuttiService.maxNameBytes) bytes: '\(name)'")
        }
        self.name = name
        self.port = port
        self.txt = txt
        self.type = type
        self.log = log
        connection = try AvahiConnection(waitForDaemon: true) { [weak self] client, state in
            self?.clientChanged(client, state)
        }
    }

    deinit { stop() }

    public var status: Status { statusBox.withLock { $0 } }

    /// The name the service is announced under, once established.
    public var establishedName: String? {
        if case .established(let name) = status { return name }
        return nil
    }

    /// Waits until the service is established (its name), it failed (nil),
    /// or `seconds` passed (nil).
    public func waitUntilEstablished(timeout seconds: Double) -> String? {
        let deadline = Condition.deadline(afterSeconds: seconds)
        return changed.withLock {
            while true {
                if let name = establishedName { return name }
                if case .failed = status { return nil }
                if !changed.wait(untilNanoseconds: deadline) { return establishedName }
            }
        }
    }

    /// Withdraws the service and frees the Avahi objects. Idempotent.
    public func stop() {
        let first = statusBox.withLock { status in defer { status = .stopped }; return status != .stopped }
        guard first, let connection else { return }
        connection.locked {
            if let group { avahi_entry_group_free(group) }
            group = nil
        }
        connection.close()
    }

    private func setStatus(_ status: Status) {
        statusBox.withLock { if $0 != .stopped { $0 = status } }
        changed.withLock { changed.broadcast() }
    }

    // MARK: Poll thread (poll lock held)

    private func clientChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            register(client)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The daemon is renaming the host: withdraw, register again on S_RUNNING.
            if let group { avahi_entry_group_reset(group) }
            setStatus(.registering)
        case AVAHI_CLIENT_CONNECTING:
            setStatus(.waitingForDaemon)
            let first = warnedAboutDaemon.withLock { warned in defer { warned = true }; return !warned }
            if first { log.warning("avahi-daemon is not running; '\(name)' will be announced when it starts") }
        case AVAHI_CLIENT_FAILURE:
            // The client frees its groups with itself.
            group = nil
            let error = avahi_client_errno(client)
            if error == Int32(AVAHI_ERR_DISCONNECTED) {
                setStatus(.waitingForDaemon)
                log.warning("avahi-daemon went away; '\(name)' will be announced again when it returns")
            } else {
                let failure = DiscoveryError.fromAvahi(error, doing: "announcing '\(name)'")
                setStatus(.failed(failure.message))
                log.warning("\(failure)")
            }
        default:
            break
        }
    }

    private func groupChanged(_ group: OpaquePointer, _ state: AvahiEntryGroupState) {
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            setStatus(.established(name: name))
            log.info("announced '\(name)' (\(type), port \(port)) over mDNS")
        case AVAHI_ENTRY_GROUP_COLLISION:
            // Someone else on the network has the name: take the next alternative.
            let old = name
            name = Self.alternative(to: name)
            log.info("service name '\(old)' is taken on the network; trying '\(name)'")
            avahi_entry_group_reset(group)
            register(avahi_entry_group_get_client(group))
        case AVAHI_ENTRY_GROUP_FAILURE:
            let failure = DiscoveryError.fromAvahi(avahi_client_errno(avahi_entry_group_get_client(group)), doing: "announcing '\(name)'")
            setStatus(.failed(failure.message))
            log.warning("\(failure)")
        default:
            break
        }
    }

    private func register(_ client: OpaquePointer?) {
        guard let client else { return }
        if group == nil {
            group = avahi_entry_group_new(client, { group, state, context in
                guard let group, let context else { return }
                Unmanaged<ServicePublisher>.fromOpaque(context).takeUnretainedValue().groupChanged(group, state)
            }, Unmanaged.passUnretained(self).toOpaque())
        }
        guard let group else {
            fail(avahi_client_errno(client))
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }
        setStatus(.registering)
        // A local service with the same name is refused at once (not probed): rename and retry.
        for _ in 0..<32 {
            var list: UnsafeMutablePointer<AvahiStringList>? = nil
            for key in txt.keys.sorted() { list = avahi_string_list_add_pair(list, key, txt[key]) }
            defer { avahi_string_list_free(list) }
            let rc = avahi_entry_group_add_service_strlst(group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC),
                                                          AvahiPublishFlags(rawValue: 0), name, type, nil, nil, port, list)
            if rc == Int32(AVAHI_ERR_COLLISION) {
                let old = name
                name = Self.alternative(to: name)
                log.info("service name '\(old)' is taken on this host; trying '\(name)'")
                avahi_entry_group_reset(group)
                continue
            }
            guard rc >= 0 else { fail(rc); return }
            let committed = avahi_entry_group_commit(group)
            if committed < 0 { fail(committed) }
            return
        }
        fail(Int32(AVAHI_ERR_COLLISION))
    }

    private func fail(_ error: Int32) {
        let failure = DiscoveryError.fromAvahi(error, doing: "announcing '\(name)'")
        setStatus(.failed(failure.message))
        log.warning("\(failure)")
    }

    /// Avahi's next name: "Name" → "Name #2" → "Name #3".
    static func alternative(to name: String) -> String {
        guard let next = avahi_alternative_service_name(name) else { return name + " #2" }
        defer { avahi_free(next) }
        return String(cString: next)
    }
}
