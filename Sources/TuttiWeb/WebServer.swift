import CCivetweb
import Glibc
import Synchronization
import TuttiCore
import TuttiSystem

/// Errors of the web server, with what a user needs to act.
public enum WebError: Error, CustomStringConvertible, Equatable {
    /// civetweb could not start (most often: the port is taken).
    case cannotStart(endpoint: String, reason: String)
    /// A WebSocket message could not be written (the page went away, or stopped reading).
    case writeFailed(peer: String)
    case closed

    public var description: String {
        switch self {
        case .cannotStart(let e, let r): "cannot serve the web app on \(e): \(r)"
        case .writeFailed(let p): "the page at \(p) stopped reading"
        case .closed: "the page's connection is closed"
        }
    }
}

/// One HTTP request, read whole (bodies are bounded by `WebServer.maximumBodyBytes`).
public struct WebRequest: Sendable {
    public var method: String
    /// The path, URL-decoded, without the query.
    public var path: String
    public var query: String
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]
    public var peer: String

    public init(method: String, path: String, query: String = "", headers: [String: String], body: [UInt8] = [], peer: String) {
        self.method = method; self.path = path; self.query = query; self.headers = headers; self.body = body; self.peer = peer
    }

    /// A 403 for a request a browser sent from a page of another site
    /// (`Origin` present and not this server's `Host`); nil for the
    /// server's own pages and for programs, which send no `Origin`. With
    /// this, a page opened anywhere in the house cannot post commands here.
    public func crossSiteRefusal(log: Logger) -> WebResponse? {
        guard let origin = headers["origin"], !WebServer.sameOrigin(origin: origin, host: headers["host"]) else { return nil }
        log.warning("web: refused \(method) \(path) from \(peer), sent by a page of \(origin)")
        return .text(403, "refused: this request came from a page of another site (\(origin))")
    }
}

public struct WebResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(_ status: Int, _ message: String) -> WebResponse {
        WebResponse(status: status, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array(message.utf8))
    }

    /// For content that must never act as a page (cover art): no script, no
    /// plugin, no fetch, no form, even if a browser took it for HTML.
    public static let sandboxPolicy = "sandbox; default-src 'none'"

    /// Whether a header can be written as it is: a name of token characters,
    /// and a value without CR, LF or NUL, which would end the header early
    /// and let whatever follows be read as more headers or a body.
    public static func isWritable(name: String, value: String) -> Bool {
        guard !name.isEmpty, name.utf8.allSatisfy({ $0 > 32 && $0 < 127 && $0 != UInt8(ascii: ":") }) else { return false }
        return !value.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
    }
}

/// What the server calls for its WebSocket endpoint. Calls come on
/// civetweb's worker thread of that connection, one at a time per socket.
public protocol WebSocketHandler: AnyObject, Sendable {
    /// The handshake is done; `socket` may be written from any thread.
    func opened(_ socket: WebSocket)
    /// One whole text message (fragments joined, at most the server's `maximumMessageBytes`).
    func received(_ message: [UInt8], on socket: WebSocket)
    /// One whole message, text or binary, with the monotonic time (ns) at
    /// which civetweb handed over its last fragment: before the handler
    /// lane, so a protocol that answers clock requests stamps it at the socket.
    /// By default a text message goes to `received(_:on:)` and a binary one is dropped.
    func received(_ message: [UInt8], binary: Bool, arrival: Int64, on socket: WebSocket)
    /// The connection is gone; no write reaches it any more.
    func closed(_ socket: WebSocket)
}

extension WebSocketHandler {
    public func received(_ message: [UInt8], binary: Bool, arrival: Int64, on socket: WebSocket) {
        if !binary { received(message, on: socket) }
    }
}

/// One open WebSocket. Writes may come from any thread and block at most
/// the server's request timeout on a peer that stopped reading.
// Sendable because `connection` is used only under `state`'s lock, `partial` only by civetweb's one worker thread of this connection, and `descriptor` is written once before the handler hears of the socket.
public final class WebSocket: @unchecked Sendable {
    public let peer: String
    private let state: Mutex<Connection?>
    // Sendable because civetweb's mg_websocket_write takes the connection's own lock, and we stop using it under `state` once it closes.
    private struct Connection: @unchecked Sendable { let pointer: OpaquePointer }
    /// Fragments of a message still arriving (the worker thread's own), and whether it is binary.
    var partial: [UInt8] = []
    var partialIsBinary = false
    /// Set by `close()`; the next message from the page ends the connection.
    private let closing = Atomic<Bool>(false)
    /// The connection's descriptor, when it was found (see `terminate`).
    var descriptor: Int32?
    private let saidGoodbye = Atomic<Bool>(false)

    /// The page closed the socket itself (a close frame), rather than
    /// vanishing: the connection broke, or it stopped answering pings.
    public var closedByPage: Bool { saidGoodbye.load(ordering: .acquiring) }
    func pageSaidGoodbye() { saidGoodbye.store(true, ordering: .releasing) }

    init(connection: OpaquePointer, peer: String) {
        self.peer = peer
        state = Mutex(Connection(pointer: connection))
    }

    /// Sends one text message.
    public func send(text: [UInt8]) throws(WebError) {
        try send { (false, text) }
    }

    /// Sends one binary message.
    public func send(binary bytes: [UInt8]) throws(WebError) {
        try send { (true, bytes) }
    }

    /// Sends one message (binary or text) made by `make` under the socket's
    /// write lock, just before it is written: a clock reply stamps its send
    /// time there.
    public func send(_ make: () -> (binary: Bool, bytes: [UInt8])) throws(WebError) {
        let ok = state.withLock { connection -> Bool? in
            guard let connection, !closing.load(ordering: .relaxed) else { return nil }
            let (binary, bytes) = make()
            let n = bytes.withUnsafeBufferPointer { b in
                // A zero-length message still needs a valid pointer.
                withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1) { empty in
                    let p = b.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } ?? UnsafePointer(empty.baseAddress!)
                    return mg_websocket_write(connection.pointer, Int32(binary ? MG_WEBSOCKET_OPCODE_BINARY : MG_WEBSOCKET_OPCODE_TEXT), p, b.count)
                }
            }
            return n > 0
        }
        guard let ok else { throw .closed }
        guard ok else { throw .writeFailed(peer: peer) }
    }

    /// Asks for the connection to end: nothing more is written, and
    /// civetweb drops it at the page's next message, or when its pings go
    /// unanswered (a page that stopped reading).
    public func close() {
        closing.store(true, ordering: .releasing)
    }

    var isClosing: Bool { closing.load(ordering: .acquiring) }

    /// Ends the connection now, whatever the page does: `close()` waits for
    /// the page's next message, and a page that only answers pings never
    /// sends one. Under the lock, so the descriptor is still civetweb's
    /// (it is closed only after `detach`).
    public func terminate() {
        closing.store(true, ordering: .releasing)
        state.withLock { connection in
            if connection != nil, let descriptor { shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    func detach() { state.withLock { $0 = nil } }
}

/// An HTTP and WebSocket server on civetweb: its own worker threads, one
/// per connection (an open WebSocket keeps one, so `threads` bounds the
/// pages open at once plus page loads), so a slow page never holds up
/// another. A write to a page that stopped reading blocks for up to the
/// timeout: callers write from a thread of the page's own (`ClientWriter`).
/// Plain HTTP only: Debian 12's civetweb is built against OpenSSL 1.1 and
/// its TLS does not start with OpenSSL 3 (bench/web/server-choice). Every request goes to `handler`; WebSocket upgrades
/// on `webSocketPath` go to `socketHandler`.
///
/// Threads: `handler` and `socketHandler` are called on civetweb's
/// workers, concurrently; they must be thread-safe.
// Sendable because `context` and `lane` are set in start() before civetweb's workers exist and cleared in stop() after mg_stop has ended them, by the thread that owns the server, and the handlers are immutable.
public final class WebServer: @unchecked Sendable {
    public typealias Handler = @Sendable (WebRequest) -> WebResponse

    /// Request bodies beyond this are refused (413) before being read.
    public static let maximumBodyBytes = 1 << 20
    /// WebSocket messages beyond this close the connection (a playlist upload is at most 1 MiB of M3U).
    public static let maximumMessageBytes = (1 << 20) + 64 * 1024

    public let requestedEndpoint: String
    /// Paths whose request bodies may be larger than `maximumBodyBytes`, with their limit
    /// (a recording for the analysis). Only one such body is read and handled at a time:
    /// a second gets 503 before its body is read, so memory stays one upload's.
    let largeBodies: [String: Int]
    private let largeBodyInFlight = Atomic<Bool>(false)
    /// Messages from a peer beyond this close its WebSocket.
    public let maximumMessageBytes: Int
    /// What the log calls this server ("web app", "Sendspin").
    let label: String
    let handler: Handler
    let webSocketPath: String
    let socketHandler: (any WebSocketHandler)?
    let log: Logger
    private var context: OpaquePointer?
    private let threads: Int
    /// Where the handlers run (see HandlerLane: civetweb's own stacks are too small).
    private var lane: HandlerLane?
    private let timeoutMilliseconds: Int
    /// Connections per source address (see `admitConnection`).
    private let shares: Mutex<ConnectionShares>
    private let refusedConnections = Atomic<Int>(0)
    /// Where civetweb keeps a connection's request info in its connection
    /// record, learned at the first request (-1: not yet). civetweb fills in
    /// the peer's address there before it calls init_connection, but gives
    /// the info out (`mg_get_request_info`) only once a request was read.
    let requestInfoOffset = Atomic<Int>(-1)
    private let lastRefusalLog = Atomic<Int64>(0)
    /// civetweb's listening sockets (found by `deferAccept`): `stop` wakes its master thread through them.
    private let listeningSockets = Mutex<[Int32]>([])

    /// `endpoint` is `HOST:PORT` (port 0: any free one). `timeoutMilliseconds`
    /// bounds a read or write on one connection; a WebSocket page that
    /// answers no ping for about five times that is dropped.
    /// `threads` bounds the connections served at once: civetweb gives each
    /// its own worker for as long as it is open (an open page's WebSocket, a
    /// page load's keep-alive), and starts every worker up front, each about
    /// 20 KiB resident (its stack's touched pages, its connection record).
    /// 24 serve a household's phones and tablets (an open app holds one,
    /// a page load six for a few seconds); each is also a thread, and 48 were
    /// over half of an idle leader's 89 threads. 160 (this server's 128 and
    /// the Snapcast port's 32) were 3 of a leader's 15 MiB (bench/resources).
    public init(endpoint: String, threads: Int = 24, timeoutMilliseconds: Int = 10_000,
                webSocketPath: String = "/ws", maximumMessageBytes: Int = WebServer.maximumMessageBytes, label: String = "web app",
                largeBodies: [String: Int] = [:],
                socketHandler: (any WebSocketHandler)?, log: Logger, handler: @escaping Handler) {
        requestedEndpoint = endpoint
        self.largeBodies = largeBodies
        self.maximumMessageBytes = maximumMessageBytes
        self.label = label
        self.threads = threads
        self.timeoutMilliseconds = timeoutMilliseconds
        self.webSocketPath = webSocketPath
        self.socketHandler = socketHandler
        self.log = log
        self.handler = handler
        shares = Mutex(ConnectionShares(limits: Self.shareLimits(threads: threads)))
    }

    deinit { stop() }

    public func start() throws(WebError) {
        mg_init_library(0)
        lane = HandlerLane(threads: 8)
        let options = [
            "listening_ports", requestedEndpoint,
            "num_threads", String(threads),
            "request_timeout_ms", String(timeoutMilliseconds),
            // Pings at this interval; a page that misses several is gone.
            "websocket_timeout_ms", String(max(timeoutMilliseconds / 5, 500)),
            "enable_websocket_ping_pong", "yes",
            "enable_keep_alive", "yes",
            // An idle keep-alive connection holds a worker: a page load's
            // six are given back 5 s after its last request, not 30.
            "keep_alive_timeout_ms", "5000",
            // civetweb writes a WebSocket frame's header and payload in two sends.
            "tcp_nodelay", "1",
        ]
        var callbacks = mg_callbacks()
        callbacks.log_message = { connection, message in
            guard let message, let ctx = mg_get_context(connection), let raw = mg_get_user_data(ctx) else { return 0 }
            Unmanaged<WebServer>.fromOpaque(raw).takeUnretainedValue().log.warning("web: \(String(cString: message))")
            return 1
        }
        installShareCallbacks(&callbacks)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let started: OpaquePointer? = withCStrings(options) { argv in mg_start(&callbacks, me, argv) }
        guard let started else {
            lane?.stop()
            lane = nil
            throw .cannotStart(endpoint: requestedEndpoint, reason: "the address is in use or not valid (see the log)")
        }
        context = started
        if !deferAccept(port: port, seconds: 30) { log.warning("web: could not defer accepting connections that send nothing") }
        mg_set_request_handler(started, "/", { connection, data in
            guard let connection, let data else { return 500 }
            return Unmanaged<WebServer>.fromOpaque(data).takeUnretainedValue().serve(connection)
        }, me)
        if socketHandler != nil {
            mg_set_websocket_handler(started, webSocketPath, { connection, data in
                guard let connection, let data else { return 1 }
                return Unmanaged<WebServer>.fromOpaque(data).takeUnretainedValue().allowUpgrade(connection) ? 0 : 1
            }, { connection, data in
                guard let connection, let data else { return }
                Unmanaged<WebServer>.fromOpaque(data).takeUnretainedValue().socketReady(connection)
            }, { connection, bits, bytes, count, data in
                guard let connection, let data else { return 0 }
                return Unmanaged<WebServer>.fromOpaque(data).takeUnretainedValue().socketData(connection, bits: bits, bytes, count) ? 1 : 0
            }, { connection, data in
                guard let connection, let data else { return }
                Unmanaged<WebServer>.fromOpaque(data).takeUnretainedValue().socketClosed(connection)
            }, me)
        }
        log.info("\(label) on http://\(endpoint)")
    }

    /// civetweb gives a connection a worker from its accept until its first
    /// request comes or `request_timeout_ms` passes, and that timeout (the
    /// stall limit) also bounds every write, so it cannot be short: 200
    /// connections that said nothing held all the workers (48 then) and the page did
    /// not load until they were gone (bench/hostile). With TCP_DEFER_ACCEPT
    /// the kernel hands civetweb a connection only once its first bytes came
    /// (a browser sends its request at once), or after about `seconds`.
    /// civetweb does not give out its listening socket: it is found by port.
    private func deferAccept(port: Int, seconds: Int32) -> Bool {
        guard port > 0, let directory = opendir("/proc/self/fd") else { return false }
        defer { closedir(directory) }
        var done = false
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name) else { continue }
            var listening: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0, listening == 1 else { continue }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else { continue }
            let bound: UInt16 = withUnsafePointer(to: &address) { pointer in
                switch Int32(pointer.pointee.ss_family) {
                case AF_INET: return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
                case AF_INET6: return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
                default: return 0
                }
            }
            guard Int(bound) == port else { continue }
            listeningSockets.withLock { $0.append(fd) }
            var wait = seconds
            if setsockopt(fd, Int32(IPPROTO_TCP), TCP_DEFER_ACCEPT, &wait, socklen_t(MemoryLayout<Int32>.size)) == 0 { done = true }
        }
        return done
    }

    /// The address it listens on (the real port when 0 was asked for).
    public var endpoint: String {
        var ports = [mg_server_port](repeating: mg_server_port(), count: 4)
        guard let context, mg_get_server_ports(context, 4, &ports) > 0 else { return requestedEndpoint }
        let host = requestedEndpoint.split(separator: ":").dropLast().joined(separator: ":")
        return "\(host.isEmpty ? "0.0.0.0" : host):\(ports[0].port)"
    }

    public var port: Int {
        Int(endpoint.split(separator: ":").last.flatMap { Int($0) } ?? 0)
    }

    public func stop() {
        guard let context else { return }
        self.context = nil
        // civetweb's master thread polls its port in 2 s quanta and looks at
        // its stop flag only between them: a port shut down wakes it at once
        // (it turns round until mg_stop sets the flag, a few µs later).
        for fd in listeningSockets.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
        mg_stop(context)
        lane?.stop()
        lane = nil
    }

    // MARK: HTTP

    private func serve(_ connection: OpaquePointer) -> Int32 {
        guard let info = mg_get_request_info(connection)?.pointee else { return 500 }
        var headers: [String: String] = [:]
        withUnsafeBytes(of: info.http_headers) { raw in
            let all = raw.bindMemory(to: mg_header.self)
            for h in all.prefix(Int(info.num_headers)) {
                guard let n = h.name, let v = h.value else { continue }
                headers[String(cString: n).lowercased()] = String(cString: v)
            }
        }
        let peer = remoteAddress(info)
        var body: [UInt8] = []
        let path = info.local_uri.map { String(cString: $0) } ?? "/"
        let large = largeBodies[path]
        let limit = large ?? Self.maximumBodyBytes
        if info.content_length > Int64(limit) {
            return write(.text(413, "request body over \(limit) bytes"), to: connection)
        }
        if large != nil {
            guard !largeBodyInFlight.exchange(true, ordering: .acquiringAndReleasing) else {
                return write(.text(503, "another upload to \(path) is being handled: try again in a few seconds"), to: connection)
            }
        }
        defer { if large != nil { largeBodyInFlight.store(false, ordering: .releasing) } }
        if info.content_length > 0 || headers["transfer-encoding"] != nil {
            var chunk = [UInt8](repeating: 0, count: 16_384)
            if info.content_length > 0 { body.reserveCapacity(Int(info.content_length)) }
            while true {
                let n = chunk.withUnsafeMutableBytes { mg_read(connection, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                body += chunk[0..<Int(n)]
                if body.count > limit {
                    return write(.text(413, "request body over \(limit) bytes"), to: connection)
                }
            }
        }
        let request = WebRequest(method: info.request_method.map { String(cString: $0) } ?? "GET",
                                 path: path,
                                 query: info.query_string.map { String(cString: $0) } ?? "",
                                 headers: headers, body: body, peer: peer)
        let handler = self.handler
        let response = lane.map { lane in lane.run { handler(request) } } ?? handler(request)
        return write(response, to: connection, head: request.method == "HEAD")
    }

    /// Every response goes out here: its headers checked (`isWritable`: one
    /// that is not is never sent, and the answer becomes a 500), and
    /// `nosniff` on all, so a browser takes each for the type it says.
    private func write(_ response: WebResponse, to connection: OpaquePointer, head onlyHead: Bool = false) -> Int32 {
        var response = response
        if let bad = response.headers.first(where: { !WebResponse.isWritable(name: $0.0, value: $0.1) }) {
            log.error("web: refused to write the header \(bad.0.debugDescription) with a line break or control character in it")
            response = .text(500, "the server made a malformed header; see its log")
        }
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        if !response.headers.contains(where: { $0.0.lowercased() == "x-content-type-options" }) { head += "X-Content-Type-Options: nosniff\r\n" }
        head += "Content-Length: \(response.body.count)\r\n\r\n"
        let headBytes = Array(head.utf8)
        _ = headBytes.withUnsafeBytes { mg_write(connection, $0.baseAddress, $0.count) }
        if !response.body.isEmpty && !onlyHead {
            _ = response.body.withUnsafeBytes { mg_write(connection, $0.baseAddress, $0.count) }
        }
        return Int32(response.status)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 401: "Unauthorized"
        case 413: "Payload Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 503: "Service Unavailable"
        default: status < 400 ? "OK" : "Error"
        }
    }

    private func remoteAddress(_ info: mg_request_info) -> String {
        let host = withUnsafeBytes(of: info.remote_addr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return "\(host):\(info.remote_port)"
    }

    // MARK: WebSocket

    /// Only pages served by this leader may open the socket: a browser
    /// sends `Origin`, and a page from elsewhere on the web must not drive
    /// the music of the house it happens to be opened in.
    private func allowUpgrade(_ connection: OpaquePointer) -> Bool {
        guard let info = mg_get_request_info(connection)?.pointee else { return false }
        var origin: String?
        var host: String?
        withUnsafeBytes(of: info.http_headers) { raw in
            for h in raw.bindMemory(to: mg_header.self).prefix(Int(info.num_headers)) {
                guard let n = h.name, let v = h.value else { continue }
                switch String(cString: n).lowercased() {
                case "origin": origin = String(cString: v)
                case "host": host = String(cString: v)
                default: break
                }
            }
        }
        guard let origin else { return true } // not a browser: the same as the TCP port
        let allowed = Self.sameOrigin(origin: origin, host: host)
        if !allowed { log.warning("web: refused a WebSocket from \(remoteAddress(info)) opened by a page of \(origin)") }
        return allowed
    }

    /// Whether `Origin: scheme://authority` names the `Host` the request went to.
    public static func sameOrigin(origin: String, host: String?) -> Bool {
        guard let host else { return false }
        let parts = origin.split(separator: "/", omittingEmptySubsequences: true)
        // "http://name:8080" splits into "http:" and "name:8080"; anything more is not an origin.
        guard parts.count == 2, parts[0].hasSuffix(":") else { return false }
        return parts[1].lowercased() == host.lowercased()
    }

    private func socketReady(_ connection: OpaquePointer) {
        guard let info = mg_get_request_info(connection)?.pointee else { return }
        // A bounded kernel send buffer (civetweb lets Linux grow it to 4 MB), so a page
        // that stopped reading shows up as a stalled write, not megabytes of kernel memory.
        let socket = WebSocket(connection: connection, peer: remoteAddress(info))
        // By address and both ports: two hosts may use the same port (and `terminate` shuts this descriptor down).
        let host = withUnsafeBytes(of: info.remote_addr) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
        socket.descriptor = Self.socket(peerHost: host, peerPort: info.remote_port, localPort: info.server_port)
        if let fd = socket.descriptor {
            var size: Int32 = Self.sendBufferBytes
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        record(of: connection)?.socket = socket
        socketHandler?.opened(socket)
    }

    public static let sendBufferBytes: Int32 = 64 * 1024

    /// The descriptor of the connection from `peerHost:peerPort` to our
    /// `localPort` (IPv4 or IPv6), found as `socket(remotePort:localPort:)` does.
    static func socket(peerHost: String, peerPort: Int32, localPort: Int32) -> Int32? {
        var v4 = in_addr(), v6 = in6_addr()
        let isV4 = inet_pton(AF_INET, peerHost, &v4) == 1
        guard isV4 || inet_pton(AF_INET6, peerHost, &v6) == 1, let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name) else { continue }
            var peer = sockaddr_storage(), local = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            guard withUnsafeMutablePointer(to: &peer, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } }) == 0 else { continue }
            length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            guard withUnsafeMutablePointer(to: &local, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }) == 0 else { continue }
            let matches: Bool = withUnsafePointer(to: &peer) { p in
                withUnsafePointer(to: &local) { l in
                    if isV4, Int32(p.pointee.ss_family) == AF_INET {
                        let a = p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                        let b = l.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                        return a.sin_addr.s_addr == v4.s_addr && Int32(UInt16(bigEndian: a.sin_port)) == peerPort && Int32(UInt16(bigEndian: b.sin_port)) == localPort
                    }
                    if !isV4, Int32(p.pointee.ss_family) == AF_INET6 {
                        let a = p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                        let b = l.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                        let same = withUnsafeBytes(of: a.sin6_addr) { x in withUnsafeBytes(of: v6) { y in x.elementsEqual(y) } }
                        return same && Int32(UInt16(bigEndian: a.sin6_port)) == peerPort && Int32(UInt16(bigEndian: b.sin6_port)) == localPort
                    }
                    return false
                }
            }
            if matches { return fd }
        }
        return nil
    }

    /// civetweb does not hand out a connection's descriptor: find it among
    /// ours by its two ports (once per WebSocket).
    static func socket(remotePort: Int32, localPort: Int32) -> Int32? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name) else { continue }
            var peer = sockaddr_in(), local = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let gotPeer = withUnsafeMutablePointer(to: &peer) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } } == 0
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let gotLocal = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } } == 0
            if gotPeer, gotLocal, peer.sin_family == sa_family_t(AF_INET),
               Int32(UInt16(bigEndian: peer.sin_port)) == remotePort, Int32(UInt16(bigEndian: local.sin_port)) == localPort {
                return fd
            }
        }
        return nil
    }

    private func socketData(_ connection: OpaquePointer, bits: Int32, _ bytes: UnsafeMutablePointer<CChar>?, _ count: Int) -> Bool {
        guard let socket = record(of: connection)?.socket else { return false }
        if socket.isClosing { return false }
        let opcode = bits & 0x0f
        let final = bits & 0x80 != 0
        switch opcode {
        case Int32(MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE):
            socket.pageSaidGoodbye()
            return false
        case Int32(MG_WEBSOCKET_OPCODE_TEXT), Int32(MG_WEBSOCKET_OPCODE_BINARY), Int32(MG_WEBSOCKET_OPCODE_CONTINUATION):
            let arrival = Condition.now()
            if socket.partial.count + count > maximumMessageBytes {
                log.info("web: \(socket.peer) sent a message over \(maximumMessageBytes) bytes: closing")
                return false
            }
            if opcode != Int32(MG_WEBSOCKET_OPCODE_CONTINUATION) { socket.partialIsBinary = opcode == Int32(MG_WEBSOCKET_OPCODE_BINARY) }
            if count > 0, let bytes { socket.partial += UnsafeRawBufferPointer(start: bytes, count: count) }
            if final {
                let message = socket.partial
                let binary = socket.partialIsBinary
                socket.partial.removeAll(keepingCapacity: true)
                if let socketHandler {
                    if let lane {
                        lane.run { socketHandler.received(message, binary: binary, arrival: arrival, on: socket) }
                    } else {
                        socketHandler.received(message, binary: binary, arrival: arrival, on: socket)
                    }
                }
            }
            return !socket.isClosing
        default:
            return true // ping and pong are civetweb's
        }
    }

    private func socketClosed(_ connection: OpaquePointer) {
        guard let record = record(of: connection), let socket = record.socket else { return }
        record.socket = nil
        socket.detach()
        socketHandler?.closed(socket)
    }
}

/// Calls `body` with a NULL-terminated C array of the strings.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    var argv: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
    return argv.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
}

// MARK: Connections per source address

/// One connection's record, civetweb's user data for it from its accept to
/// its close: the places it holds, and its WebSocket once it is one.
// Sendable because civetweb calls for one connection come on its one worker thread at a time (init, requests, WebSocket callbacks, close).
final class ConnectionRecord: @unchecked Sendable {
    /// Decided at its first request (civetweb shows the peer's address only then).
    var admission: (address: SourceAddress, place: ConnectionShares.Place?)?
    var socket: WebSocket?
}

extension WebServer {
    /// Each connection holds a civetweb worker for as long as it is open (a
    /// page's WebSocket, a keep-alive), so one host may hold at most a
    /// quarter of them (12 of 48, 2 of 8; `ConnectionShares`), and a few
    /// (4 of 48, 2 of 8) are kept for clients on this machine. Beyond its
    /// share a host's connection is answered 503 and closed at once.
    static func shareLimits(threads: Int) -> ConnectionShares.Limits {
        let reserve = threads >= 24 ? 4 : min(2, max(0, threads - 1))
        // A browser opens six connections to load a page, and keeps them
        // 5 s beside the app's WebSocket: a reload holds a dozen for a
        // moment. A host gets 12 where the port has room (the rest stay for others).
        let share = threads >= 24 ? max(12, threads / 4) : max(2, threads / 4)
        // 127.0.0.1 and ::1 may use every worker: a reverse proxy or tunnel on
        // this machine brings every phone from there (ConnectionShares.Limits.localhostShare).
        return ConnectionShares.Limits(port: max(1, threads - reserve), perAddress: min(ConnectionShares.Limits.mostPerAddress, share),
                                       loopbackReserve: reserve, localhostShare: threads)
    }

    /// Connections open now from `host` (an address, as a peer's `HOST:PORT` starts).
    public func connections(from host: String) -> Int { shares.withLock { $0.held(by: SourceAddress.parse(host) ?? .unknown) } }

    func installShareCallbacks(_ callbacks: inout mg_callbacks) {
        callbacks.init_connection = { connection, data in
            guard let connection, let data, let ctx = mg_get_context(connection), let raw = mg_get_user_data(ctx) else { return 0 }
            let record = Unmanaged<WebServer>.fromOpaque(raw).takeUnretainedValue().admitNewConnection(connection)
            data.pointee = Unmanaged.passRetained(record).toOpaque()
            return 0
        }
        callbacks.begin_request = { connection in
            guard let connection, let ctx = mg_get_context(connection), let raw = mg_get_user_data(ctx) else { return 0 }
            return Unmanaged<WebServer>.fromOpaque(raw).takeUnretainedValue().admitOrRefuse(connection)
        }
        callbacks.connection_close = { connection in
            guard let connection, let ctx = mg_get_context(connection), let raw = mg_get_user_data(ctx) else { return }
            Unmanaged<WebServer>.fromOpaque(raw).takeUnretainedValue().releaseConnection(connection)
        }
    }

    /// The record a connection was given at its start.
    func record(of connection: OpaquePointer) -> ConnectionRecord? {
        mg_get_user_connection_data(connection).map { Unmanaged<ConnectionRecord>.fromOpaque($0).takeUnretainedValue() }
    }

    /// civetweb's init_connection, on the worker the connection was given:
    /// it takes its place now, before it has said anything (a silent or
    /// slow connection holds the worker all the same). Over its host's
    /// share it is shut down at once, so civetweb's first read ends it.
    /// Until the first request has shown where the peer's address is kept,
    /// the first request takes the place instead (`admitOrRefuse`).
    private func admitNewConnection(_ connection: OpaquePointer) -> ConnectionRecord {
        let record = ConnectionRecord()
        let offset = requestInfoOffset.load(ordering: .acquiring)
        guard offset >= 0 else { return record }
        let info = UnsafeRawPointer(connection).advanced(by: offset).assumingMemoryBound(to: mg_request_info.self).pointee
        let host = withUnsafeBytes(of: info.remote_addr) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) }
        admit(record, host: host)
        if record.admission?.place == nil, let fd = Self.socket(peerHost: host, peerPort: info.remote_port, localPort: info.server_port) {
            shutdown(fd, Int32(SHUT_RDWR))
        }
        return record
    }

    private func admit(_ record: ConnectionRecord, host: String) {
        let address = SourceAddress.parse(host) ?? .unknown
        switch shares.withLock({ $0.admit(address) }) {
        case .success(let place): record.admission = (address, place)
        case .failure(let refusal):
            record.admission = (address, nil)
            let n = refusedConnections.add(1, ordering: .relaxed).newValue
            let now = Condition.now(), last = lastRefusalLog.load(ordering: .relaxed)
            if now - last > 5_000_000_000, lastRefusalLog.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged {
                log.warning("web \(requestedEndpoint): refused \(host): \(refusal); refused \(n) so far")
            }
        }
    }

    /// civetweb's begin_request: a connection refused at its start (or, before
    /// the offset was known, over its share at its first request) is answered
    /// 503 here, and closed; 0: serve the request.
    private func admitOrRefuse(_ connection: OpaquePointer) -> Int32 {
        guard let record = record(of: connection) else { return 0 }
        if record.admission == nil, let info = mg_get_request_info(connection) {
            let offset = Int(bitPattern: UnsafeRawPointer(info)) - Int(bitPattern: UnsafeRawPointer(connection))
            if offset >= 0 && offset < 65_536 { requestInfoOffset.store(offset, ordering: .releasing) }
            admit(record, host: withUnsafeBytes(of: info.pointee.remote_addr) { raw in String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self) })
        }
        guard record.admission?.place == nil else { return 0 }
        // Sets civetweb's must-close: the connection ends after this answer.
        _ = tutti_mg_send_error(connection, 503, "too many connections from your address; close some and try again")
        return 503
    }

    private func releaseConnection(_ connection: OpaquePointer) {
        guard let raw = mg_get_user_connection_data(connection) else { return }
        mg_set_user_connection_data(connection, nil)
        let record = Unmanaged<ConnectionRecord>.fromOpaque(raw).takeRetainedValue()
        if let admission = record.admission, let place = admission.place { shares.withLock { $0.release(admission.address, place: place) } }
    }
}

extension WebRequest {
    /// The value of `name` in the query (`a=1&b=x%20y`), percent-decoded
    /// (`+` is a space, as forms send it); nil when absent or not UTF-8.
    public func queryValue(_ name: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard Self.percentDecoded(parts[0]) == name else { continue }
            return parts.count > 1 ? Self.percentDecoded(parts[1]) : ""
        }
        return nil
    }

    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 65...70: c - 55
            case 97...102: c - 87
            default: nil
            }
        }
        while i != utf8.endIndex {
            let c = utf8[i]
            if c == UInt8(ascii: "%"), let j = utf8.index(i, offsetBy: 2, limitedBy: utf8.endIndex), j != utf8.endIndex,
               let hi = hex(utf8[utf8.index(after: i)]), let lo = hex(utf8[j]) {
                bytes.append(hi << 4 | lo)
                i = utf8.index(after: j)
                continue
            }
            bytes.append(c == UInt8(ascii: "+") ? 32 : c)
            i = utf8.index(after: i)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
