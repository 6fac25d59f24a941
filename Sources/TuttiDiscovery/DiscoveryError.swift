import CAvahi

/// Why discovery or announcement did not work, in words a user can act on.
/// The Avahi error code, when there is one, is kept as the cause.
public struct DiscoveryError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Code: Sendable, Equatable {
        /// avahi-daemon is not on the system bus.
        case daemonNotRunning
        /// The D-Bus system bus itself cannot be reached.
        case noSystemBus
        /// A service name that DNS-SD cannot carry (empty, over 63 bytes).
        case badName
        /// Anything else Avahi reported.
        case avahi
    }

    public let code: Code
    public let message: String
    /// The Avahi error code (`AVAHI_ERR_*`), if Avahi reported one.
    public let avahiError: Int32?

    public init(_ code: Code, _ message: String, avahiError: Int32? = nil) {
        self.code = code
        self.message = message
        self.avahiError = avahiError
    }

    public var description: String { message }

    /// Turns an Avahi error code into an error, once, at the boundary.
    static func fromAvahi(_ error: Int32, doing what: String) -> DiscoveryError {
        switch error {
        case Int32(AVAHI_ERR_NO_DAEMON):
            return DiscoveryError(.daemonNotRunning,
                                  "avahi-daemon is not running (is the avahi-daemon package installed and started, with dbus?)",
                                  avahiError: error)
        case Int32(AVAHI_ERR_DBUS_ERROR), Int32(AVAHI_ERR_DISCONNECTED):
            // libavahi-client reports an unreachable system bus as a D-Bus error.
            return DiscoveryError(.noSystemBus,
                                  "cannot reach avahi-daemon over the D-Bus system bus (are dbus and avahi-daemon running?)",
                                  avahiError: error)
        default:
            return DiscoveryError(.avahi, "\(what): \(String(cString: avahi_strerror(error)))", avahiError: error)
        }
    }
}
