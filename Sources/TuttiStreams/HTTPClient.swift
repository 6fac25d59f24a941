import Foundation
import Synchronization
import TuttiCore
import TuttiNet

/// One HTTP transfer in flight, whichever client runs it (URLSession or
/// the plain-socket client); `HTTPStream` compares them by identity.
protocol Transfer: AnyObject, Sendable {
    func cancel()
}

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
extension URLSessionDataTask: Transfer {}

/// Why a transfer failed, for `HTTPStream` to turn into a `StreamError`.
struct TransferFailure: Error, Sendable {
    var reason: String
    /// Nothing arrived for the stall timeout (or the headers for the connect timeout).
    var timedOut = false
}

/// What a transfer reports, on its own thread, in this order: one
/// `response` (or one `redirect` to a URL this client does not serve),
/// any number of `data`, then one `complete`. Nothing after `cancel`.
protocol TransferDelegate: AnyObject, Sendable {
    /// Returns false to cancel the transfer (no `complete` follows).
    func transfer(_ t: any Transfer, didReceiveStatus status: Int, headers: [String: String]) -> Bool
    func transfer(_ t: any Transfer, didReceive data: UnsafeRawBufferPointer)
    func transfer(_ t: any Transfer, didCompleteWith failure: TransferFailure?)
    /// A redirect to an https:// URL: the delegate continues with another client.
    func transfer(_ t: any Transfer, redirectedTo url: URL)
}

/// The response head of an HTTP/1.x request, or of a SHOUTcast v1 server
/// (`ICY 200 OK`, which URLSession's libcurl rejects). Pure parsing, bounded.
public struct ResponseHead: Equatable, Sendable {
    public var status: Int
    /// Header names lower-cased; a repeated header keeps its last value.
    public var headers: [String: String]

    public static let maxLineBytes = 8_192
    public static let maxHeaders = 100

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case lineTooLong, tooManyHeaders, badStatusLine(String), badHeader(String)
        public var description: String {
            switch self {
            case .lineTooLong: "a response header line is longer than \(ResponseHead.maxLineBytes) bytes"
            case .tooManyHeaders: "the response has more than \(ResponseHead.maxHeaders) headers"
            case .badStatusLine(let l): "not an HTTP response (status line '\(l.prefix(80))')"
            case .badHeader(let l): "malformed response header '\(l.prefix(80))'"
            }
        }
    }

    /// Parses the lines of a head (without the blank line that ends it).
    public static func parse(lines: [String]) throws(ParseError) -> ResponseHead {
        guard let first = lines.first else { throw .badStatusLine("") }
        // "HTTP/1.1 200 OK" or "ICY 200 OK".
        let parts = first.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.") || parts[0] == "ICY" || parts[0] == "HTTP/1",
              let status = Int(parts[1]), (100...599).contains(status) else { throw .badStatusLine(first) }
        guard lines.count - 1 <= maxHeaders else { throw .tooManyHeaders }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { throw .badHeader(line) }
            headers[line[..<colon].trimmingWhitespace().lowercased()] = line[line.index(after: colon)...].trimmingWhitespace()
        }
        return ResponseHead(status: status, headers: headers)
    }

    /// The body's length from `Content-Length`, nil when absent or unreadable.
    public var contentLength: Int64? { Self.contentLength(headers) }

    /// `Content-Length` from headers (names lower-cased): digits only, so a
    /// server's "-5" reads as no length rather than a negative one.
    public static func contentLength(_ headers: [String: String]) -> Int64? {
        guard let text = headers["content-length"]?.trimmingWhitespace(), !text.isEmpty, text.utf8.count <= 18,
              text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }
}

/// Splits incoming bytes into header lines until the blank line; bounded
/// in line length and count. Returns the body bytes that followed.
public struct HeadReader: Sendable {
    public private(set) var lines: [String] = []
    private var line: [UInt8] = []
    public private(set) var done = false

    public init() {}

    /// Consumes `bytes`; returns how many belonged to the head.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(ResponseHead.ParseError) -> Int {
        var i = 0
        while i < bytes.count && !done {
            let b = bytes[i]
            i += 1
            if b == UInt8(ascii: "\n") {
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                if line.isEmpty {
                    // Some servers send blank lines before the status line; after it, a blank line ends the head.
                    if !lines.isEmpty { done = true }
                } else {
                    // Latin-1: every byte is a character, so no header is lost to bad UTF-8.
                    lines.append(String(line.map { Character(Unicode.Scalar($0)) }))
                    guard lines.count <= ResponseHead.maxHeaders + 1 else { throw .tooManyHeaders }
                }
                line.removeAll(keepingCapacity: true)
            } else {
                line.append(b)
                guard line.count <= ResponseHead.maxLineBytes else { throw .lineTooLong }
            }
        }
        return i
    }
}

/// `Transfer-Encoding: chunked` decoding as a state machine (any chunking
/// of the input), with bounded size lines.
public struct ChunkedDecoder: Sendable {
    public enum State: Equatable, Sendable { case size, data(Int), dataEnd, trailer, done }
    public private(set) var state = State.size
    private var line: [UInt8] = []

    public init() {}

    public struct Malformed: Error, CustomStringConvertible { public var description: String }

    /// Feeds body bytes; `body` receives the payload. Stops at the end.
    public mutating func process(_ bytes: UnsafeRawBufferPointer, body: (UnsafeRawBufferPointer) -> Void) throws(Malformed) {
        var i = 0
        while i < bytes.count {
            switch state {
            case .done:
                return
            case .data(let remaining):
                let n = min(remaining, bytes.count - i)
                body(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]))
                i += n
                state = remaining - n == 0 ? .dataEnd : .data(remaining - n)
            case .size, .dataEnd, .trailer:
                let b = bytes[i]
                i += 1
                guard b == UInt8(ascii: "\n") else {
                    line.append(b)
                    guard line.count <= 1_024 else { throw Malformed(description: "a chunk-size line is longer than 1024 bytes") }
                    continue
                }
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                let text = String(decoding: line, as: UTF8.self)
                line.removeAll(keepingCapacity: true)
                switch state {
                case .dataEnd:
                    guard text.isEmpty else { throw Malformed(description: "no line end after a chunk") }
                    state = .size
                case .trailer:
                    if text.isEmpty { state = .done }
                default:
                    let hex = text.split(separator: ";", maxSplits: 1).first.map { $0.trimmingWhitespace() } ?? ""
                    // 15 hex digits at most: a size that cannot overflow.
                    // Digits only: Int(_:radix:) also takes a sign, and "-3" would be a negative length.
                    guard !hex.isEmpty, hex.count <= 15, hex.allSatisfy(\.isHexDigit), let size = Int(hex, radix: 16) else {
                        throw Malformed(description: "bad chunk size '\(text.prefix(40))'")
                    }
                    state = size == 0 ? .trailer : .data(size)
                }
            }
        }
    }
}

/// A small HTTP/1.1 client on a plain TCP socket for `http://` URLs, on its
/// own thread: accepts SHOUTcast v1's `ICY 200 OK`, follows up to 5
/// redirects, decodes chunked bodies, bounds every header line and count.
///
/// Thread contract: `start` once, `cancel` from any thread; the delegate is
/// called on the transfer's thread and never after `cancel` returns… except
/// for a callback already running.
final class SocketTransfer: Transfer, Sendable {
    static let maxRedirects = 5

    private let url: URL
    private let requestHeaders: [(String, String)]
    private let connectTimeout: Double
    private let stallTimeout: Double
    private weak let delegate: (any TransferDelegate)?
    private let cancelled = Atomic<Bool>(false)
    private let connection = Mutex<TCPConnection?>(nil)

    init(url: URL, headers: [(String, String)], connectTimeout: Double, stallTimeout: Double, delegate: any TransferDelegate) {
        self.url = url
        self.requestHeaders = headers
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.delegate = delegate
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "tutti-http"
        thread.start()
    }

    func cancel() {
        cancelled.store(true, ordering: .releasing)
        connection.withLock { $0?.close() } // wakes a blocked receive
    }

    private var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    private func run() {
        var target = url
        var redirects = 0
        while !isCancelled {
            do throws(TransferFailure) {
                switch try exchange(target) {
                case .finished:
                    return
                case .redirect(let next):
                    redirects += 1
                    guard redirects <= Self.maxRedirects else {
                        throw TransferFailure(reason: "more than \(Self.maxRedirects) redirects (last to \(next.absoluteString))")
                    }
                    if next.scheme?.lowercased() == "https" {
                        if !isCancelled { delegate?.transfer(self, redirectedTo: next) }
                        return
                    }
                    target = next
                }
            } catch {
                if !isCancelled { delegate?.transfer(self, didCompleteWith: error) }
                return
            }
        }
    }

    private enum Outcome { case finished, redirect(URL) }

    /// One request and its response; `.redirect` for a 3xx with a Location.
    private func exchange(_ target: URL) throws(TransferFailure) -> Outcome {
        guard let host = target.host, target.scheme?.lowercased() == "http" else {
            throw TransferFailure(reason: "cannot follow a redirect to '\(target.absoluteString)'")
        }
        let port = target.port ?? 80
        guard (1...65_535).contains(port) else { throw TransferFailure(reason: "bad port \(port)") }
        let connection: TCPConnection
        do {
            connection = try TCPConnection.connect(to: Endpoint(host: host, port: UInt16(port)),
                                                   timeoutMilliseconds: Int(connectTimeout * 1000))
        } catch {
            throw TransferFailure(reason: Self.connectReason(error), timedOut: { if case .timedOut = error { true } else { false } }())
        }
        self.connection.withLock { $0 = connection }
        defer { connection.close(); self.connection.withLock { $0 = nil } }
        if isCancelled { return .finished }

        var path = target.path.isEmpty ? "/" : target.path
        if let q = target.query { path += "?" + q }
        var request = "GET \(path) HTTP/1.1\r\nHost: \(host)\(target.port.map { ":\($0)" } ?? "")\r\nAccept: */*\r\nConnection: close\r\n"
        for (k, v) in requestHeaders { request += "\(k): \(v)\r\n" }
        request += "\r\n"
        connection.setSendTimeout(milliseconds: Int(connectTimeout * 1000))
        do { try connection.send(Array(request.utf8)) } catch {
            throw TransferFailure(reason: "sending the request: \(error)")
        }

        // The head must arrive within the connect timeout, each later byte within the stall timeout.
        connection.setReceiveTimeout(milliseconds: Int(max(0.001, connectTimeout) * 1000))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 1)
        defer { buffer.deallocate() }
        var headReader = HeadReader()
        var leftover = UnsafeRawBufferPointer(start: nil, count: 0)
        while !headReader.done {
            let n = try receive(connection, into: buffer, waitingFor: "the response headers")
            if n == 0 {
                if isCancelled { return .finished }
                throw TransferFailure(reason: headReader.lines.isEmpty ? "the server closed the connection without a response"
                                                                       : "the connection closed in the middle of the response headers")
            }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            let used: Int
            do { used = try headReader.feed(chunk) } catch { throw TransferFailure(reason: error.description) }
            if headReader.done { leftover = UnsafeRawBufferPointer(rebasing: chunk[used...]) }
        }
        let head: ResponseHead
        do { head = try ResponseHead.parse(lines: headReader.lines) } catch { throw TransferFailure(reason: error.description) }

        if [301, 302, 303, 307, 308].contains(head.status), let location = head.headers["location"] {
            guard location.utf8.count <= 4_096, let next = URL(string: location, relativeTo: target)?.absoluteURL else {
                throw TransferFailure(reason: "a redirect to an unusable Location '\(location.prefix(80))'")
            }
            return .redirect(next)
        }
        if isCancelled { return .finished }
        guard delegate?.transfer(self, didReceiveStatus: head.status, headers: head.headers) == true else { return .finished }

        connection.setReceiveTimeout(milliseconds: Int(max(0.001, stallTimeout) * 1000))
        let chunked = head.headers["transfer-encoding"]?.lowercased().contains("chunked") == true
        var dechunker = chunked ? ChunkedDecoder() : nil
        // Without chunking, a Content-Length says where the body ends (the server may keep the connection).
        var remaining: Int64? = chunked ? nil : head.contentLength
        var pendingBytes = leftover
        while true {
            if pendingBytes.count > 0 {
                if isCancelled { return .finished }
                var bytes = pendingBytes
                if let r = remaining { bytes = UnsafeRawBufferPointer(rebasing: bytes[0..<Int(min(Int64(bytes.count), r))]); remaining = r - Int64(bytes.count) }
                if dechunker != nil {
                    do {
                        try dechunker!.process(bytes) { delegate?.transfer(self, didReceive: $0) }
                    } catch { throw TransferFailure(reason: error.description) }
                    if dechunker!.state == .done { break }
                } else {
                    delegate?.transfer(self, didReceive: bytes)
                }
            }
            if remaining == 0 { break }
            let n = try receive(connection, into: buffer, waitingFor: "data")
            if isCancelled { return .finished }
            if n == 0 {
                if dechunker != nil { throw TransferFailure(reason: "the connection closed in the middle of a chunked body") }
                break // the end; HTTPStream compares what arrived with Content-Length
            }
            pendingBytes = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
        }
        if !isCancelled { delegate?.transfer(self, didCompleteWith: nil) }
        return .finished
    }

    private func receive(_ connection: TCPConnection, into buffer: UnsafeMutableRawBufferPointer, waitingFor what: String) throws(TransferFailure) -> Int {
        do { return try connection.receive(into: buffer).count } catch {
            if isCancelled { return 0 }
            if case .timedOut = error { throw TransferFailure(reason: "nothing received while waiting for \(what)", timedOut: true) }
            throw TransferFailure(reason: "\(error)")
        }
    }

    /// "connection refused" rather than the socket layer's wording.
    private static func connectReason(_ error: NetError) -> String {
        switch error {
        case .system(_, let address, let e) where e == ECONNREFUSED: "connection refused by \(address) (is the server running?)"
        case .system(_, let address, let e) where e == EINPROGRESS || e == EAGAIN: "no answer from \(address) (connect timed out)"
        case .resolve(let address, let reason): "cannot resolve \(address): \(reason)"
        default: "\(error)"
        }
    }
}
