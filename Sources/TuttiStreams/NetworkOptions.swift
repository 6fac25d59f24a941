import TuttiCore

/// Tunables for network sources. The defaults suit a leader on a home network.
public struct NetworkOptions: Sendable {
    /// Seconds to wait for the response headers.
    public var connectTimeout: Double = 10
    /// Seconds without a single byte after which `read` fails (a stalled server
    /// must not hang the leader's source thread forever).
    public var stallTimeout: Double = 10
    /// Most audio bytes held between the network and the decoder. A finite
    /// file pauses the transfer above this (and resumes it with a Range
    /// request); a live stream drops what does not fit, with a log line.
    public var bufferCapacity: Int = 2 << 20
    /// What to do when a live stream drops (TuttiCore's `ReconnectPolicy`).
    public var reconnect: ReconnectPolicy = ReconnectPolicy()
    /// Ask for in-band ICY metadata (`Icy-MetaData: 1`).
    public var requestMetadata = true
    /// Bytes fed to the decoder before giving up on finding an MPEG frame.
    public var maxProbeBytes = 512 * 1024
    public var userAgent = "Tutti/1.0"
    /// PEM file of the certificate authorities trusted for https:// (nil:
    /// the system store, /etc/ssl/certs/ca-certificates.crt on Debian).
    public var caFile: String? = nil
    /// Which addresses may be fetched from. The default refuses this
    /// machine and the private network (`local-streams = yes` allows them)
    /// and always refuses link-local, multicast and unspecified addresses.
    public var destinations = StreamDestinationPolicy()

    public init() {}
}

/// Counters of one network source, for status pages and tests.
public struct NetworkStatistics: Sendable, Equatable {
    /// Live stream: connections re-established after a drop.
    public var reconnects = 0
    /// Live stream: connection attempts after a drop (successful or not).
    public var reconnectAttempts = 0
    /// Finite file: transfers paused because the buffer was full (each resumed with a Range request).
    public var pauses = 0
    /// Live stream: audio bytes dropped because the consumer was slow.
    public var droppedBytes: Int64 = 0
    /// Audio bytes received (metadata excluded).
    public var receivedBytes: Int64 = 0
    public var bufferedBytes = 0
    public var peakBufferedBytes = 0
}
