import CCurl
import Glibc
import Synchronization
import TuttiAudio
import TuttiCore
import TuttiSystem

/// What one transfer asks for: a GET of `url` with `headers`, and its limits.
struct HTTPRequest: Sendable {
    var url: String
    var headers: [(String, String)] = []
    /// Seconds for the connection and the response head (after each redirect).
    var connectTimeout: Double = 10
    /// Seconds without a body byte after which the transfer fails.
    var stallTimeout: Double = 10
    /// PEM file of the certificate authorities trusted for https:// (nil: the system store).
    var caFile: String? = nil
    /// Which addresses the transfer may connect to (checked on each connection, redirects included).
    var destinations = StreamDestinationPolicy()
    static let maxRedirects = 5
}

/// libcurl, loaded at the first transfer: a leader that plays no network
/// stream never loads it nor its TLS, Kerberos and LDAP libraries (about
/// 6 MiB resident). Set up (curl_global_init) once, before the first transfer.
private let curl = Result { () throws(SharedLibraryError) -> FunctionTable<tutti_curl> in
    let table = try FunctionTable<tutti_curl>.open("libcurl.so.4", symbols: [
        "curl_global_init", "curl_easy_init", "curl_easy_cleanup", "curl_easy_setopt", "curl_easy_getinfo", "curl_easy_strerror",
        "curl_slist_append", "curl_slist_free_all", "curl_multi_init", "curl_multi_add_handle", "curl_multi_remove_handle",
        "curl_multi_cleanup", "curl_multi_perform", "curl_multi_info_read", "curl_multi_poll", "curl_multi_wakeup"])
    guard table.functions.global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK else { throw SharedLibraryError(description: "curl_global_init failed") }
    return table
}

/// The one HTTP client: an HTTP(S) GET through libcurl on its own thread
/// (`tutti-http`), for every network source. libcurl does TLS (its CA file
/// or the system store), redirects (at most 5, http and https only),
/// chunked bodies and SHOUTcast v1's `ICY 200 OK` (`CURLOPT_HTTP200ALIASES`);
/// the response head goes through `HeadReader` and `ResponseHead` (pure,
/// bounded: 8 KiB a line, 100 headers), and the connect, head and stall
/// timeouts are kept here on the monotonic clock.
///
/// Every socket is opened here (`CURLOPT_OPENSOCKETFUNCTION`), after DNS
/// and for every redirect, and refused when `StreamDestinationPolicy`
/// refuses its address: the check sees the address actually connected to,
/// not the URL's text, so a name that resolves to 127.0.0.1 or a redirect
/// to 169.254.169.254 are refused as a literal would be. Proxies from the
/// environment are not used (the check must see the real destination).
/// A body longer than its Content-Length is cut off with a failure.
///
/// Thread contract: `start` once; `cancel` from any thread, at once (it
/// wakes the transfer's poll). The delegate is called on the transfer's
/// thread, never after `cancel` returns except for a callback already running.
final class CurlTransfer: Transfer, @unchecked Sendable {
    // @unchecked Sendable: `cancelled` is atomic and `multi` under a mutex;
    // every other field is touched only by the transfer's thread.
    private let request: HTTPRequest
    private weak let delegate: (any TransferDelegate)?
    private let cancelled = Atomic<Bool>(false)
    private let multi = Mutex<MultiHandle?>(nil)

    private var head = HeadReader()
    private var reported = false
    private var refused = false
    private var failure: TransferFailure?
    private var redirects = 0
    private var headDeadline: Int64 = 0
    private var lastByte: Int64 = 0
    /// The last address refused by the destination policy (libcurl may go on to another address of the same name).
    private var refusal: StreamDestinationRefusal?
    /// Body bytes of the final response so far, and what its Content-Length declared.
    private var bodyBytes: Int64 = 0
    private var declaredLength: Int64?

    private struct MultiHandle: @unchecked Sendable { let pointer: UnsafeMutableRawPointer }

    init(_ request: HTTPRequest, delegate: any TransferDelegate) {
        self.request = request
        self.delegate = delegate
    }

    func start() {
        do {
            try startThread(name: "tutti-http") { [self] in
                let result = perform()
                if !isCancelled && !refused { delegate?.transfer(self, didCompleteWith: result) }
            }
        } catch {
            // The system refused a thread: this transfer fails, the process goes on.
            delegate?.transfer(self, didCompleteWith: TransferFailure(reason: "\(error)"))
        }
    }

    func cancel() {
        cancelled.store(true, ordering: .releasing)
        multi.withLock { if let m = $0, case .success(let table) = curl { _ = table.functions.multi_wakeup(m.pointer) } }
    }

    private var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    private static func nanoseconds(_ seconds: Double) -> Int64 { Int64(max(0.001, seconds) * 1e9) }

    /// Runs the transfer to its end; nil when it completed (or was cancelled).
    private func perform() -> TransferFailure? {
        let table: FunctionTable<tutti_curl>
        switch curl {
        case .success(let t): table = t
        case .failure(let why): return TransferFailure(reason: "libcurl 4 could not be loaded (apt-get install libcurl4): \(why)")
        }
        let api = table.pointer, c = table.functions
        guard let easy = c.easy_init() else { return TransferFailure(reason: "libcurl could not be initialised") }
        defer { c.easy_cleanup(easy) }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        defer { errorBuffer.deallocate() }
        var headers: UnsafeMutablePointer<curl_slist>? = nil
        for (name, value) in request.headers { headers = c.slist_append(headers, "\(name): \(value)") }
        defer { c.slist_free_all(headers) }
        let aliases = c.slist_append(nil, "ICY 200 OK")
        defer { c.slist_free_all(aliases) }

        let context = Unmanaged.passUnretained(self).toOpaque()
        var ok = true
        func check(_ code: CURLcode) { ok = ok && code == CURLE_OK }
        check(tutti_curl_set_string(api, easy, CURLOPT_URL, request.url))
        check(tutti_curl_set_string(api, easy, CURLOPT_PROTOCOLS_STR, "http,https"))
        check(tutti_curl_set_string(api, easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"))
        check(tutti_curl_set_long(api, easy, CURLOPT_FOLLOWLOCATION, 1))
        check(tutti_curl_set_long(api, easy, CURLOPT_MAXREDIRS, HTTPRequest.maxRedirects + 1)) // the head check below says it first
        check(tutti_curl_set_list(api, easy, CURLOPT_HTTPHEADER, headers))
        check(tutti_curl_set_list(api, easy, CURLOPT_HTTP200ALIASES, aliases))
        check(tutti_curl_set_long(api, easy, CURLOPT_CONNECTTIMEOUT_MS, Int(Self.nanoseconds(request.connectTimeout) / 1_000_000)))
        check(tutti_curl_set_long(api, easy, CURLOPT_NOSIGNAL, 1))
        check(tutti_curl_set_long(api, easy, CURLOPT_FORBID_REUSE, 1))
        check(tutti_curl_set_string(api, easy, CURLOPT_PROXY, "")) // no proxy from the environment: see the type's comment
        check(tutti_curl_set_opensocket(api, easy, { context, _, address in
            let t = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
            return t.openSocket(address!)
        }))
        check(tutti_curl_set_pointer(api, easy, CURLOPT_OPENSOCKETDATA, context))
        check(tutti_curl_set_pointer(api, easy, CURLOPT_ERRORBUFFER, errorBuffer))
        if let caFile = request.caFile { check(tutti_curl_set_string(api, easy, CURLOPT_CAINFO, caFile)) }
        check(tutti_curl_set_callback(api, easy, CURLOPT_HEADERFUNCTION, { data, size, count, context in
            let t = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
            return t.receiveHeader(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
        }))
        check(tutti_curl_set_pointer(api, easy, CURLOPT_HEADERDATA, context))
        check(tutti_curl_set_callback(api, easy, CURLOPT_WRITEFUNCTION, { data, size, count, context in
            let t = Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
            return t.receiveBody(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
        }))
        check(tutti_curl_set_pointer(api, easy, CURLOPT_WRITEDATA, context))
        guard ok else { return TransferFailure(reason: "libcurl refused an option (is libcurl older than 7.85?)") }

        guard let m = c.multi_init() else { return TransferFailure(reason: "libcurl could not be initialised") }
        _ = c.multi_add_handle(m, easy)
        multi.withLock { $0 = MultiHandle(pointer: m) }
        defer {
            multi.withLock { $0 = nil }
            _ = c.multi_remove_handle(m, easy)
            _ = c.multi_cleanup(m)
        }

        let stall = Self.nanoseconds(request.stallTimeout)
        headDeadline = Monotonic.now() + Self.nanoseconds(request.connectTimeout)
        var result: CURLcode? = nil
        while result == nil {
            var running: Int32 = 0
            _ = c.multi_perform(m, &running)
            var left: Int32 = 0
            while let message = c.multi_info_read(m, &left) {
                if message.pointee.msg == CURLMSG_DONE { result = message.pointee.data.result }
            }
            if result != nil || running == 0 { break }
            if isCancelled { return nil }
            let now = Monotonic.now()
            let deadline = reported ? lastByte + stall : headDeadline
            if now >= deadline {
                // Worded as StreamError.timedOut: whichever of the two clocks fires first, the user reads the same.
                let waited = StreamError.seconds(reported ? request.stallTimeout : request.connectTimeout)
                return TransferFailure(reason: "nothing received for \(waited) s while waiting for \(reported ? "data" : "the response headers")", timedOut: true)
            }
            var ready: Int32 = 0
            _ = c.multi_poll(m, nil, 0, Int32(clamping: min(1_000, max(1, (deadline - now) / 1_000_000))), &ready)
        }
        if isCancelled || refused { return nil }
        if let failure { return failure }
        let code = result ?? CURLE_OK
        if code == CURLE_OK { return nil }
        if let refusal, code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST {
            return TransferFailure(reason: refusal.description, refusal: refusal)
        }
        let detail = errorBuffer.pointee != 0 ? String(cString: errorBuffer) : (c.easy_strerror(code).map { String(cString: $0) } ?? "libcurl error \(code.rawValue)")
        switch code {
        case CURLE_COULDNT_CONNECT where tutti_curl_os_errno(api, easy) == ECONNREFUSED:
            return TransferFailure(reason: "connection refused (is the server running?): \(detail)")
        case CURLE_OPERATION_TIMEDOUT:
            return TransferFailure(reason: detail, timedOut: true)
        case CURLE_TOO_MANY_REDIRECTS:
            return TransferFailure(reason: "more than \(HTTPRequest.maxRedirects) redirects")
        default:
            return TransferFailure(reason: detail)
        }
    }

    /// One header line of a response (libcurl passes each one whole, the
    /// blank line that ends a head too, and a chunked body's trailers).
    /// False aborts the transfer.
    private func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool {
        if isCancelled { return false }
        if reported { return true }
        do { _ = try head.feed(line) } catch {
            failure = TransferFailure(reason: error.description)
            return false
        }
        guard head.done else { return true }
        let response: ResponseHead
        do { response = try ResponseHead.parse(lines: head.lines) } catch {
            failure = TransferFailure(reason: error.description)
            return false
        }
        head = HeadReader()
        let now = Monotonic.now()
        if response.status < 200 { return true }
        if [301, 302, 303, 307, 308].contains(response.status), let location = response.headers["location"] {
            // libcurl follows it; each redirect gets its own head timeout.
            redirects += 1
            guard redirects <= HTTPRequest.maxRedirects else {
                failure = TransferFailure(reason: "more than \(HTTPRequest.maxRedirects) redirects (last to \(location.prefix(200)))")
                return false
            }
            headDeadline = now + Self.nanoseconds(request.connectTimeout)
            return true
        }
        reported = true
        lastByte = now
        declaredLength = response.status == 200 || response.status == 206 ? ResponseHead.contentLength(response.headers) : nil
        guard delegate?.transfer(self, didReceiveStatus: response.status, headers: response.headers) == true else {
            refused = true
            return false
        }
        return true
    }

    /// Body bytes of the final response (libcurl skips a redirect's body
    /// and removes chunked framing). False aborts the transfer.
    private func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if isCancelled { return false }
        guard reported else { return true }
        lastByte = Monotonic.now()
        bodyBytes += Int64(bytes.count)
        if let declaredLength, bodyBytes > declaredLength {
            // libcurl ignores Content-Length beside Transfer-Encoding: chunked; a body past what was declared is refused, not stored.
            failure = TransferFailure(reason: "the server sent more than the \(declaredLength) bytes its Content-Length declared", overran: declaredLength)
            return false
        }
        delegate?.transfer(self, didReceive: bytes)
        return true
    }

    /// Opens the socket libcurl asked for, unless the destination policy
    /// refuses its address; CURL_SOCKET_BAD makes libcurl try the name's
    /// next address or fail with CURLE_COULDNT_CONNECT.
    private func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        var raw = [UInt8](repeating: 0, count: 16)
        let count = Int(tutti_curl_sockaddr_ip(address, &raw))
        guard let ip = IPAddress(bytes: Array(raw.prefix(count))) else {
            refusal = nil
            return CURL_SOCKET_BAD // not IP (a Unix socket): never asked for by an http(s) URL
        }
        let needsOwn = !request.destinations.allowsLocal && AddressScope(ip) == .publicInternet
        if let why = request.destinations.refusal(for: ip, own: needsOwn ? LocalAddresses.current() : []) {
            refusal = why
            return CURL_SOCKET_BAD
        }
        refusal = nil
        let a = address.pointee
        return socket(a.family, a.socktype | Int32(SOCK_CLOEXEC.rawValue), a.protocol)
    }
}

/// The addresses of this machine's interfaces (getifaddrs), read at each
/// connection to a public address, so an address added later counts too.
enum LocalAddresses {
    static func current() -> [IPAddress] {
        var list: UnsafeMutablePointer<ifaddrs>? = nil
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var out: [IPAddress] = []
        var next = list
        while let entry = next {
            defer { next = entry.pointee.ifa_next }
            guard let sa = entry.pointee.ifa_addr else { continue }
            switch Int32(sa.pointee.sa_family) {
            case AF_INET:
                let bytes = UnsafeRawPointer(sa).withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in
                    withUnsafeBytes(of: p.pointee.sin_addr) { Array($0) }
                }
                if let ip = IPAddress(bytes: bytes) { out.append(ip) }
            case AF_INET6:
                let bytes = UnsafeRawPointer(sa).withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                    withUnsafeBytes(of: p.pointee.sin6_addr) { Array($0) }
                }
                if let ip = IPAddress(bytes: bytes) { out.append(ip) }
            default: continue
            }
        }
        return out
    }
}
