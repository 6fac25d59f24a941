import CTuttiNet
import Glibc
import Synchronization
import TuttiCore

/// Errors from the network edge, with the address involved.
public enum NetError: Error, CustomStringConvertible, Equatable {
    case badAddress(String, reason: String)
    case resolve(String, reason: String)
    case system(operation: String, address: String, errno: Int32)
    case closed
    case protocolViolation(ProtocolError)
    case timedOut(String)

    public var description: String {
        switch self {
        case .badAddress(let a, let r): "bad address '\(a)': \(r)"
        case .resolve(let a, let r): "cannot resolve '\(a)': \(r)"
        case .system(let op, let addr, let e): "\(op) \(addr): \(String(cString: strerror(e)))"
        case .closed: "connection closed"
        case .protocolViolation(let p): "protocol violation: \(p)"
        case .timedOut(let what): "timed out waiting for \(what)"
        }
    }
}

/// `HOST:PORT`, with HOST a name or IPv4 address.
public struct Endpoint: Equatable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) { self.host = host; self.port = port }

    public init(parsing text: String, defaultPort: UInt16? = nil) throws(NetError) {
        if let colon = text.lastIndex(of: ":") {
            let host = String(text[..<colon])
            guard let port = UInt16(text[text.index(after: colon)...]) else {
                throw .badAddress(text, reason: "port must be a number 0–65535")
            }
            self.init(host: host.isEmpty ? "0.0.0.0" : host, port: port)
        } else if let defaultPort {
            guard !text.isEmpty else { throw .badAddress(text, reason: "empty host") }
            self.init(host: text, port: defaultPort)
        } else {
            throw .badAddress(text, reason: "expected HOST:PORT")
        }
    }

    public var description: String { "\(host):\(port)" }

    func resolve() throws(NetError) -> sockaddr_in {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let info = result else { throw .resolve(description, reason: String(cString: gai_strerror(rc))) }
        defer { freeaddrinfo(result) }
        return info.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
    }
}

/// A connected TCP socket. Sends are serialised by a lock so two threads
/// (time replies and audio) can write whole messages without interleaving.
public final class TCPConnection: Sendable {
    public let peer: String
    private let fd: Int32
    /// Held for a whole message. Inside: the unsent end of a message that
    /// `sendIfFree` began and could not finish without waiting; every other
    /// send writes it first, so messages never interleave.
    private let sendLock = Mutex<SendState>(SendState())
    /// What the send lock guards: the unsent end of a message, and once the
    /// handshake is done the sealer, so records are numbered in wire order.
    struct SendState: ~Copyable {
        var unsent: [UInt8] = []
        var sealer: RecordSealer? = nil
    }
    private let isClosed = Atomic<Bool>(false)

    init(fd: Int32, peer: String) {
        self.fd = fd
        self.peer = peer
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        tutti_enable_receive_timestamps(fd)
    }

    deinit { Glibc.close(fd) }

    public static func connect(to endpoint: Endpoint, timeoutMilliseconds: Int = 2_000) throws(NetError) -> TCPConnection {
        var address = try endpoint.resolve()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .system(operation: "socket", address: endpoint.description, errno: errno) }
        var tv = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw .system(operation: "connect", address: endpoint.description, errno: e)
        }
        return TCPConnection(fd: fd, peer: endpoint.description)
    }

    /// Ends sending (a FIN after what was sent) and keeps reading: a last
    /// message then reaches a peer that is still talking, where a full
    /// shutdown would answer its next bytes with a reset that can drop it.
    public func finishSending() {
        if !isClosed.load(ordering: .acquiring) { shutdown(fd, Int32(SHUT_WR)) }
    }

    /// Bounds how long a send may block on a peer that stopped reading.
    public func setSendTimeout(milliseconds: Int) {
        var tv = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    public func setSendBuffer(bytes: Int32) {
        var size = bytes
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    public func setReceiveTimeout(milliseconds: Int) {
        var tv = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Writes all bytes or throws. `stamp` runs under the send lock just
    /// before the write, to take a timestamp as late as possible.
    public func send(_ bytes: [UInt8]) throws(NetError) {
        try sendLock.withLock { (state) throws(NetError) in
            try finish(&state.unsent)
            try sendSealed(bytes, &state.sealer)
        }
    }

    public func send(_ make: () -> [UInt8]) throws(NetError) {
        try sendLock.withLock { (state) throws(NetError) in
            try finish(&state.unsent)
            try sendSealed(make(), &state.sealer)
        }
    }

    /// From now on every send is sealed with `cipher` (after the handshake).
    /// Call between sends, from the thread that ran the handshake.
    public func startSealing(_ cipher: any FrameCipher) {
        sendLock.withLock { $0.sealer = RecordSealer(cipher: cipher) }
    }

    private func sendSealed(_ bytes: [UInt8], _ sealer: inout RecordSealer?) throws(NetError) {
        guard sealer != nil else { return try sendAll(bytes) }
        guard !bytes.isEmpty else { return } // nothing to seal (a `.started` message's remainder is already sealed)
        try sealer!.seal(bytes) { (b) throws(NetError) in try sendAll(b) }
    }

    /// What `sendIfFree` did.
    public enum QuickSend: Equatable, Sendable {
        /// All of it went.
        case sent
        /// Nothing went (another thread is sending, or the socket is full): send it some other way.
        case notSent
        /// The start went; the rest is kept and goes first with the next `send`, which may wait.
        case started
    }

    /// Sends `bytes` only as far as it can without waiting: for a thread that
    /// serves many peers and must never block on one (the leader's fan-out).
    public func sendIfFree(_ bytes: [UInt8]) throws(NetError) -> QuickSend {
        let outcome = try sendLock.withLockIfAvailable { (state) throws(NetError) -> QuickSend in
            guard state.unsent.isEmpty, !bytes.isEmpty else { return state.unsent.isEmpty ? .sent : .notSent }
            func attempt(_ b: UnsafeRawBufferPointer, _ unsent: inout [UInt8]) throws(NetError) -> QuickSend {
                let n = Glibc.send(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                if n == b.count { return .sent }
                if n > 0 { unsent = Array(b[n...]); return .started }
                let e = errno
                if n == 0 || e == EAGAIN || e == EWOULDBLOCK || e == EINTR { return .notSent }
                throw isClosed.load(ordering: .relaxed) ? .closed : .system(operation: "send to", address: peer, errno: e)
            }
            guard state.sealer != nil else {
                var unsent: [UInt8] = []
                let r: Result<QuickSend, NetError> = bytes.withUnsafeBytes { b in Result { () throws(NetError) in try attempt(b, &unsent) } }
                state.unsent = unsent
                return try r.get()
            }
            // Sealed: once sealed, a record must go (its number is spent), so
            // what the socket does not take now is kept as unsent.
            var unsent: [UInt8] = []
            let outcome = try state.sealer!.seal(bytes) { (b) throws(NetError) -> QuickSend in
                let o = try attempt(b, &unsent)
                if o == .notSent { unsent = Array(b); return .started }
                return o
            }
            state.unsent = unsent
            return outcome
        }
        return outcome ?? .notSent
    }

    private func finish(_ unsent: inout [UInt8]) throws(NetError) {
        guard !unsent.isEmpty else { return }
        try sendAll(unsent)
        unsent = []
    }

    private func sendAll(_ bytes: [UInt8]) throws(NetError) {
        // `withUnsafeBytes` rethrows untyped: the error comes through a Result.
        let r: Result<Void, NetError> = bytes.withUnsafeBytes { b in Result { () throws(NetError) in try sendAll(b) } }
        try r.get()
    }

    private func sendAll(_ bytes: UnsafeRawBufferPointer) throws(NetError) {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if n > 0 { offset += n; continue }
            let e = errno
            if n < 0 && e == EINTR { continue }
            if n < 0 && (e == EAGAIN || e == EWOULDBLOCK) { throw .timedOut("\(peer) to read") }
            throw isClosed.load(ordering: .relaxed) ? .closed : .system(operation: "send to", address: peer, errno: e)
        }
    }

    /// Reads what is available (blocking); 0 means the peer closed.
    /// `arrival` is when the kernel received the last of it (monotonic ns), 0 if unknown.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> (count: Int, arrival: Int64) {
        while true {
            var arrival: Int64 = 0
            let n = tutti_recv_timestamped(fd, buffer.baseAddress, UInt(buffer.count), &arrival)
            if n >= 0 { return (n, arrival) }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { throw .timedOut("data from \(peer)") }
            throw isClosed.load(ordering: .relaxed) ? .closed : .system(operation: "receive from", address: peer, errno: e)
        }
    }

    /// Wakes any blocked reader or writer; the descriptor is freed on deinit.
    public func close() {
        if !isClosed.exchange(true, ordering: .acquiringAndReleasing) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    public var closed: Bool { isClosed.load(ordering: .relaxed) }

    /// Whether the peer closed its side (or the connection broke), seen by a
    /// non-blocking peek: for a thread that holds a peer without reading
    /// (a pairing request waiting on a person). Bytes waiting are not a close.
    public var peerHasClosed: Bool {
        var byte: UInt8 = 0
        let n = Glibc.recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if n == 0 { return true }
        if n > 0 { return false }
        let e = errno
        return !(e == EAGAIN || e == EWOULDBLOCK || e == EINTR)
    }
}

/// A listening TCP socket.
public final class TCPListener: Sendable {
    public let endpoint: Endpoint
    private let fd: Int32
    private let isClosed = Atomic<Bool>(false)

    public init(endpoint: Endpoint, backlog: Int32 = 64) throws(NetError) {
        var address = try endpoint.resolve()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .system(operation: "socket", address: endpoint.description, errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0, listen(fd, backlog) == 0 else {
            let e = errno
            Glibc.close(fd)
            throw .system(operation: "listen on", address: endpoint.description, errno: e)
        }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.endpoint = Endpoint(host: endpoint.host, port: UInt16(bigEndian: bound.sin_port))
    }

    deinit { Glibc.close(fd) }

    /// Blocks until a peer connects; throws `.closed` after `close()`.
    public func accept() throws(NetError) -> TCPConnection {
        while true {
            let (connection, e) = acceptOne()
            if let connection { return connection }
            if isClosed.load(ordering: .relaxed) { throw .closed }
            if e == EINTR || e == ECONNABORTED || e == EMFILE || e == ENFILE {
                if e == EMFILE || e == ENFILE { usleep(100_000) }
                continue
            }
            throw .system(operation: "accept on", address: endpoint.description, errno: e)
        }
    }

    public func close() {
        if !isClosed.exchange(true, ordering: .acquiringAndReleasing) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    public var closed: Bool { isClosed.load(ordering: .acquiring) }

    /// One accept(2): the connection, named by its peer's address, or the errno.
    private func acceptOne() -> (TCPConnection?, Int32) {
        var peer = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let client = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(fd, $0, &length) }
        }
        guard client >= 0 else { return (nil, errno) }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &peer.sin_addr, &text, socklen_t(text.count))
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (TCPConnection(fd: client, peer: "\(host):\(UInt16(bigEndian: peer.sin_port))"), 0)
    }

    /// For a thread that waits on many ports at once (poll): the socket to
    /// wait on. Its accepts then never block (`acceptIfReady`).
    public var pollDescriptor: Int32 {
        let flags = fcntl(fd, F_GETFL)
        if flags & O_NONBLOCK == 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        return fd
    }

    /// What `acceptIfReady` found.
    public enum Arrival {
        case connection(TCPConnection)
        /// Nobody waits (the peer gave up between poll and accept).
        case none
        /// This process or the system has no descriptor (or memory) left: try again later.
        case outOfDescriptors
    }

    /// Takes a waiting connection without blocking (after `pollDescriptor`).
    /// The connection itself blocks, as `accept`'s do. Throws `.closed` after `close()`.
    public func acceptIfReady() throws(NetError) -> Arrival {
        while true {
            let (connection, e) = acceptOne()
            if let connection { return .connection(connection) }
            if isClosed.load(ordering: .relaxed) { throw .closed }
            switch e {
            case EINTR: continue
            // Errors of the connection that was waiting, not of the port (accept(2), Linux): take the next.
            case ECONNABORTED, EPROTO, ENOPROTOOPT, EHOSTDOWN, ENONET, EHOSTUNREACH, EOPNOTSUPP, ENETUNREACH, ENETDOWN: continue
            case EAGAIN, EWOULDBLOCK: return .none
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .outOfDescriptors
            default: throw .system(operation: "accept on", address: endpoint.description, errno: e)
            }
        }
    }
}

/// A connection's receive buffer: 512 bytes until a read fills it, then
/// `largest`. malloc puts a 16 KiB block's header on a page of its own, so
/// a connection that held one from the start cost a resident page while it
/// sent nothing: a thousand idle connections were 3 MiB of a leader
/// (bench/hostile). A peer that sends little (a control client's requests,
/// a speaker's reports) never needs more.
public final class ReceiveBuffer {
    /// The memory received into: a read's bytes are `storage[0..<count]`.
    public private(set) var storage: UnsafeMutableRawBufferPointer
    private let largest: Int
    private var filled = false

    public init(largest: Int = 16_384) {
        self.largest = largest
        storage = .allocate(byteCount: min(512, largest), alignment: 8)
    }

    deinit { storage.deallocate() }

    /// Reads what is available (blocking), as `TCPConnection.receive` does.
    /// The bytes of the previous read are gone.
    public func receive(from connection: TCPConnection) throws(NetError) -> (count: Int, arrival: Int64) {
        if filled && storage.count < largest {
            storage.deallocate()
            storage = .allocate(byteCount: largest, alignment: 8)
        }
        let received = try connection.receive(into: storage)
        filled = received.count == storage.count
        return received
    }
}

/// Reads framed protocol messages from a connection.
public final class MessageReader {
    public let connection: TCPConnection
    private var framer = MessageFramer()
    private let buffer = ReceiveBuffer()
    private var readArrival: Int64 = 0

    /// Set once the handshake is done: every byte after is a sealed record.
    private var opener: RecordOpener?

    public init(connection: TCPConnection) { self.connection = connection }

    /// From the next byte on, the stream is sealed records (after the handshake).
    /// Bytes already read past the handshake's last message are opened too.
    public func startOpening(_ cipher: any FrameCipher) throws(NetError) {
        var o = RecordOpener(cipher: cipher)
        // What the framer holds beyond the last message is already sealed.
        let leftover = framer.takePending()
        leftover.withUnsafeBytes { o.append($0) }
        opener = o
        try drainOpener()
    }

    /// Opens every whole record held, into the message framer.
    private func drainOpener() throws(NetError) {
        do {
            while try opener!.next({ framer.append($0) }) {}
        } catch {
            throw .protocolViolation(error)
        }
    }

    /// The next message; nil when the peer closed cleanly. Throws on a
    /// malformed or oversized message (the caller closes the connection).
    public func next() throws(NetError) -> Message? { try nextTimed()?.message }

    /// The next message and, when it ended the read that completed it,
    /// the kernel's arrival time for it (monotonic ns); otherwise nil.
    /// When the latest read's last segment reached this machine (kernel
    /// stamp; nil without one): every message parsed from that read had come
    /// by then, however long the reader took to get to it.
    public var lastReadArrival: Int64? { readArrival != 0 ? readArrival : nil }

    public func nextTimed() throws(NetError) -> (message: Message, arrival: Int64?)? {
        while true {
            do {
                if let message = try framer.next() {
                    // The kernel stamps the last segment of a read: exact for the message that ends it.
                    // (Sealed: and no part of a later record came in that read.)
                    let exact = framer.pendingBytes == 0 && (opener?.pendingBytes ?? 0) == 0 && readArrival != 0
                    return (message, exact ? readArrival : nil)
                }
            } catch {
                throw .protocolViolation(error)
            }
            let (n, arrival) = try buffer.receive(from: connection)
            if n == 0 {
                let pending = framer.pendingBytes + (opener?.pendingBytes ?? 0)
                if pending > 0 { throw .protocolViolation(.truncated(.chunk, needed: 0, had: pending)) }
                return nil
            }
            if opener != nil {
                // Decrypted here, on the receive thread, before anything is parsed.
                opener!.append(UnsafeRawBufferPointer(rebasing: buffer.storage[0..<n]))
                try drainOpener()
            } else {
                framer.append(UnsafeRawBufferPointer(rebasing: buffer.storage[0..<n]))
            }
            readArrival = arrival
        }
    }
}

/// A UDP socket for clock exchanges: the leader's is bound and answers
/// whoever asks; a follower's is connected to the leader. Kernel receive
/// timestamps (SO_TIMESTAMPNS) on every datagram.
///
/// `@unchecked Sendable`: the descriptor is immutable, sends and receives
/// are single system calls (the kernel serialises them), and `close` only
/// flips an atomic and shuts the socket down.
public final class UDPSocket: @unchecked Sendable {
    /// A sender's address, as the kernel gave it (network byte order).
    public struct Peer: Equatable, Sendable {
        public var address: UInt32
        public var port: UInt16
        public init(address: UInt32, port: UInt16) { self.address = address; self.port = port }
    }

    public let endpoint: Endpoint
    private let fd: Int32
    private let isClosed = Atomic<Bool>(false)

    private init(fd: Int32, endpoint: Endpoint) {
        self.fd = fd
        self.endpoint = endpoint
        tutti_enable_receive_timestamps(fd)
        // DSCP EF (46): Wi-Fi's WMM carries marked datagrams in a queue of
        // their own (AC_VO or AC_VI, by the station's and access point's
        // DSCP-to-UP mapping), not behind the best-effort queue that fills
        // when the link is loaded; clock samples then see that queue's floor
        // many times a second rather than a few times a minute. Tiny and a
        // few dozen a second, so no abuse of the priority. The audio stream
        // stays best effort. An unmarked path loses nothing.
        var tos = Int32(Self.expeditedForwarding)
        setsockopt(fd, Int32(IPPROTO_IP), IP_TOS, &tos, socklen_t(MemoryLayout<Int32>.size))
    }

    /// The IP TOS byte of DSCP EF (46 << 2), which clock datagrams carry.
    public static let expeditedForwarding: UInt8 = 0xB8

    deinit { Glibc.close(fd) }

    /// Binds `endpoint` (port 0: any free port).
    public static func bind(_ endpoint: Endpoint) throws(NetError) -> UDPSocket {
        try open(endpoint, operation: "bind UDP") { fd, address, length in Glibc.bind(fd, address, length) }
    }

    /// A socket whose datagrams go to `endpoint` (and only its replies come back).
    public static func connect(to endpoint: Endpoint) throws(NetError) -> UDPSocket {
        try open(endpoint, operation: "connect UDP") { fd, address, length in Glibc.connect(fd, address, length) }
    }

    /// A datagram socket with `call` (bind or connect) applied to `endpoint`'s address.
    private static func open(_ endpoint: Endpoint, operation: String,
                             _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) throws(NetError) -> UDPSocket {
        var address = try endpoint.resolve()
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw .system(operation: "socket", address: endpoint.description, errno: errno) }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            throw .system(operation: operation, address: endpoint.description, errno: e)
        }
        return UDPSocket(fd: fd, endpoint: endpoint)
    }

    public func setReceiveTimeout(milliseconds: Int) {
        var tv = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one datagram (to the connected peer, or to `peer`). A datagram
    /// the kernel refuses (no route, a full buffer) is lost like any other:
    /// the error says why, and the caller usually just carries on.
    public func send(_ bytes: [UInt8], to peer: Peer? = nil) throws(NetError) {
        while true {
            let n: Int
            if let peer {
                var to = sockaddr_in()
                to.sin_family = sa_family_t(AF_INET)
                to.sin_addr.s_addr = peer.address
                to.sin_port = peer.port
                n = bytes.withUnsafeBytes { b in
                    withUnsafePointer(to: &to) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            Glibc.sendto(fd, b.baseAddress, b.count, Int32(MSG_NOSIGNAL), $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
            } else {
                n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            if n >= 0 { return }
            let e = errno
            if e == EINTR { continue }
            throw isClosed.load(ordering: .relaxed) ? .closed : .system(operation: "send UDP to", address: endpoint.description, errno: e)
        }
    }

    /// Waits for one datagram (up to the receive timeout: then `.timedOut`).
    /// `arrival` is the kernel's receive time (monotonic ns, 0 if unknown).
    public func receive(into buffer: UnsafeMutableRawBufferPointer) throws(NetError) -> (count: Int, arrival: Int64, from: Peer) {
        while true {
            var arrival: Int64 = 0
            var address: UInt32 = 0, port: UInt16 = 0
            let n = tutti_recvfrom_timestamped(fd, buffer.baseAddress, UInt(buffer.count), &arrival, &address, &port)
            if n >= 0 && !isClosed.load(ordering: .relaxed) { return (n, arrival, Peer(address: address, port: port)) }
            if isClosed.load(ordering: .relaxed) { throw .closed }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { throw .timedOut("a datagram on \(endpoint)") }
            // A connected socket reports an earlier datagram's ICMP error here (nobody listening): not fatal.
            if e == ECONNREFUSED { throw .system(operation: "receive UDP from", address: endpoint.description, errno: e) }
            throw .system(operation: "receive UDP on", address: endpoint.description, errno: e)
        }
    }

    /// Wakes a blocked receiver; the descriptor is freed on deinit.
    public func close() {
        if !isClosed.exchange(true, ordering: .acquiringAndReleasing) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    public var closed: Bool { isClosed.load(ordering: .relaxed) }
}
