import CAvahi
import Dispatch
import Synchronization

/// One connection to avahi-daemon: an `AvahiThreadedPoll` (its own thread,
/// on which every Avahi callback runs) and an `AvahiClient` on it. Frees
/// both in `close()` / `deinit`.
///
/// Thread contract: `stateChanged` runs on the poll thread with the poll
/// lock held (the first time inside `init`). Any other thread touches the
/// client or objects made from it only inside `locked`. Never call `close()`
/// from an Avahi callback (it joins the poll thread).
// Sendable because `client` changes only in init, in a reconnect (under `alive` and the poll lock) and in close() (under `alive`, the poll stopped); other uses are inside `locked`.
final class AvahiConnection: @unchecked Sendable {
    typealias StateHandler = (_ client: OpaquePointer, _ state: AvahiClientState) -> Void

    private let poll: OpaquePointer
    /// Guarded by the poll lock.
    private var client: OpaquePointer?
    private let waitForDaemon: Bool
    private let stateChanged: StateHandler
    /// False once `close()` has freed the poll: work queued off the poll
    /// thread checks it (holding it) before touching the poll.
    private let alive = Mutex(true)
    private var pollRunning = false

    /// - Parameter waitForDaemon: with true (`AVAHI_CLIENT_NO_FAIL`), a missing
    ///   daemon is not an error: the client waits for it, and if the daemon
    ///   goes away later a new client is made that waits for it to return.
    /// - Throws: `DiscoveryError` when the daemon or the bus cannot be reached
    ///   (only without `waitForDaemon`), or the poll thread cannot start.
    init(waitForDaemon: Bool, stateChanged: @escaping StateHandler) throws(DiscoveryError) {
        guard let poll = avahi_threaded_poll_new() else { throw DiscoveryError(.avahi, "cannot create an Avahi event loop") }
        self.poll = poll
        self.waitForDaemon = waitForDaemon
        self.stateChanged = stateChanged
        var error: Int32 = 0
        client = makeClient(&error)
        guard client != nil else {
            avahi_threaded_poll_free(poll)
            alive.withLock { $0 = false }
            throw DiscoveryError.fromAvahi(error, doing: "connecting to avahi-daemon")
        }
        guard avahi_threaded_poll_start(poll) >= 0 else {
            avahi_client_free(client)
            client = nil
            avahi_threaded_poll_free(poll)
            alive.withLock { $0 = false }
            throw DiscoveryError(.avahi, "cannot start the Avahi event loop thread")
        }
        pollRunning = true
    }

    deinit { close() }

    private func makeClient(_ error: inout Int32) -> OpaquePointer? {
        let flags = waitForDaemon ? AVAHI_CLIENT_NO_FAIL : AvahiClientFlags(rawValue: 0)
        return avahi_client_new(avahi_threaded_poll_get(poll), flags, { client, state, context in
            guard let client, let context else { return }
            Unmanaged<AvahiConnection>.fromOpaque(context).takeUnretainedValue().clientChanged(client, state)
        }, Unmanaged.passUnretained(self).toOpaque(), &error)
    }

    private func clientChanged(_ client: OpaquePointer, _ state: AvahiClientState) {
        stateChanged(client, state)
        // A NO_FAIL client that lost its daemon stays failed; libavahi's
        // advice is a new NO_FAIL client, which waits for the daemon's return.
        // Freeing a client inside its own callback is not allowed, so this
        // happens off the poll thread.
        if state == AVAHI_CLIENT_FAILURE, waitForDaemon, avahi_client_errno(client) == Int32(AVAHI_ERR_DISCONNECTED) {
            let lost = UInt(bitPattern: client)   // a pointer is not Sendable; its address is
            DispatchQueue.global().async { [self] in
                alive.withLock { alive in
                    guard alive else { return }
                    locked {
                        guard let current = self.client, UInt(bitPattern: current) == lost else { return }
                        avahi_client_free(current)
                        var error: Int32 = 0
                        // Nil only when out of memory or the like: then there is nothing to retry with.
                        self.client = makeClient(&error)
                    }
                }
            }
        }
    }

    /// Runs `body` with the poll lock held, so the poll thread is not inside Avahi.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return try body()
    }

    /// The client, for creating browsers and groups (call inside `locked`).
    var currentClient: OpaquePointer? { client }

    /// Stops the poll thread and frees the client (and with it every
    /// browser, resolver and entry group made from it). Idempotent.
    func close() {
        // Holding `alive` keeps a queued reconnect from using the poll while it
        // is freed; no Avahi callback takes it, so joining the poll thread is safe.
        alive.withLock { alive in
            guard alive else { return }
            alive = false
            if pollRunning { avahi_threaded_poll_stop(poll); pollRunning = false }
            if let client { avahi_client_free(client); self.client = nil }
            avahi_threaded_poll_free(poll)
        }
    }
}
