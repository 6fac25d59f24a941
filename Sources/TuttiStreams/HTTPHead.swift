import TuttiCore

/// One HTTP transfer in flight (`CurlTransfer`, or a fake in tests);
/// `HTTPStream` compares them by identity.
protocol Transfer: AnyObject, Sendable {
    func cancel()
}

/// Why a transfer failed, for `HTTPStream` to turn into a `StreamError`.
struct TransferFailure: Error, Sendable {
    var reason: String
    /// Nothing arrived for the stall timeout (or the headers for the connect timeout).
    var timedOut = false
    /// The destination policy refused every address the transfer tried.
    var refusal: StreamDestinationRefusal? = nil
    /// The body went past the Content-Length it declared (this many bytes).
    var overran: Int64? = nil
}

/// What a transfer reports, on its own thread, in this order: one
/// `response` (redirects are followed before it), any number of `data`,
/// then one `complete`. Nothing after `cancel`.
protocol TransferDelegate: AnyObject, Sendable {
    /// Returns false to cancel the transfer (no `complete` follows).
    func transfer(_ t: any Transfer, didReceiveStatus status: Int, headers: [String: String]) -> Bool
    func transfer(_ t: any Transfer, didReceive data: UnsafeRawBufferPointer)
    func transfer(_ t: any Transfer, didCompleteWith failure: TransferFailure?)
}

/// The response head of an HTTP request (HTTP/1.x, HTTP/2 as libcurl
/// writes it), or of a SHOUTcast v1 server (`ICY 200 OK`). Pure parsing,
/// bounded; `CurlTransfer` feeds it each header line libcurl receives.
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
        // "HTTP/1.1 200 OK", "HTTP/2 200" or "ICY 200 OK".
        let parts = first.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, ["HTTP/1.0", "HTTP/1.1", "HTTP/1", "HTTP/2", "HTTP/3", "ICY"].contains(parts[0]),
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
