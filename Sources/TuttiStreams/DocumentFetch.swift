import TuttiCore
import TuttiSystem

/// A small document fetched whole (a podcast feed, a station playlist).
public struct FetchedDocument: Sendable, Equatable {
    public var body: [UInt8]
    public var contentType: String?
    public var etag: String?
    public var lastModified: String?
}

/// What a conditional fetch got: the document, or 304 Not Modified.
public enum DocumentFetchResult: Sendable, Equatable {
    case fetched(FetchedDocument)
    case notModified
}

/// Fetches a document into memory through `CurlTransfer` (so with the
/// destination policy, bounded redirects and no proxy from the
/// environment), refusing it as soon as it is known to be larger than
/// `maxBytes`: at once from its Content-Length, or when the bytes received
/// pass it, so a 50 MB answer is cut off at `maxBytes` and never held.
/// `etag` and `lastModified` make the request conditional (`If-None-Match`,
/// `If-Modified-Since`); a 304 answer is `.notModified`.
///
/// Thread contract: blocks the calling thread (at most the connect
/// timeout for the head, the stall timeout between bytes); any thread.
public enum DocumentFetch {
    public static func fetch(_ url: String, options: NetworkOptions, maxBytes: Int, etag: String? = nil, lastModified: String? = nil,
                             accept: String = "*/*") throws(StreamError) -> DocumentFetchResult {
        guard SourceOpener.isNetworkURL(url) else { throw .unsupportedURL(url) }
        var headers = [("User-Agent", options.userAgent), ("Accept-Encoding", "identity"), ("Accept", accept)]
        if let etag, !etag.isEmpty, etag.utf8.count <= 1_024, !etag.contains(where: \.isNewline) { headers.append(("If-None-Match", etag)) }
        if let lastModified, !lastModified.isEmpty, lastModified.utf8.count <= 128, !lastModified.contains(where: \.isNewline) {
            headers.append(("If-Modified-Since", lastModified))
        }
        let request = HTTPRequest(url: url, headers: headers, connectTimeout: options.connectTimeout, stallTimeout: options.stallTimeout,
                                  caFile: options.caFile, destinations: options.destinations)
        let receiver = DocumentReceiver(url: url, maxBytes: maxBytes)
        let transfer = CurlTransfer(request, delegate: receiver)
        transfer.start()
        return try receiver.wait()
    }
}

extension DocumentFetch {
    /// A DACP remote-control request back to an AirPlay sender (`GET
    /// /ctrl-int/1/nextitem` with its `Active-Remote`): the phone is on the
    /// home's network, where shairport-sync saw it, so a local address is allowed.
    public static func remoteControl(_ remote: DACPRemote, path: String, timeout: Double = 3) throws(StreamError) {
        let host = remote.address.contains(":") ? "[\(remote.address)]" : remote.address
        let url = "http://\(host):\(remote.port)\(path)"
        let request = HTTPRequest(url: url, headers: [("Active-Remote", remote.activeRemote), ("User-Agent", "Tutti"), ("Accept-Encoding", "identity")],
                                  connectTimeout: timeout, stallTimeout: timeout, destinations: StreamDestinationPolicy(allowsLocal: true))
        let receiver = DocumentReceiver(url: url, maxBytes: 64 << 10, noContentIsAnswer: true)
        CurlTransfer(request, delegate: receiver).start()
        _ = try receiver.wait()
    }
}

/// Gathers one transfer's answer for `DocumentFetch`.
// @unchecked Sendable: every field is read and written under `condition`'s lock.
private final class DocumentReceiver: TransferDelegate, @unchecked Sendable {
    private let url: String
    private let maxBytes: Int
    private let noContentIsAnswer: Bool
    private let condition = Condition()
    private var body: [UInt8] = []
    private var head: (status: Int, headers: [String: String])?
    private var outcome: Result<DocumentFetchResult, StreamError>?

    /// `noContentIsAnswer`: a 204 is the answer (a DACP command done); for a document it is an error.
    init(url: String, maxBytes: Int, noContentIsAnswer: Bool = false) {
        self.url = url
        self.maxBytes = maxBytes
        self.noContentIsAnswer = noContentIsAnswer
    }

    func wait() throws(StreamError) -> DocumentFetchResult {
        condition.lock()
        while outcome == nil { condition.wait() }
        let result = outcome!
        condition.unlock()
        return try result.get()
    }

    private func settle(_ result: Result<DocumentFetchResult, StreamError>) {
        guard outcome == nil else { return }
        outcome = result
        condition.broadcast()
    }

    func transfer(_ t: any Transfer, didReceiveStatus status: Int, headers: [String: String]) -> Bool {
        condition.withLock {
            head = (status, headers)
            if status == 304 {
                settle(.success(.notModified))
                return false
            }
            guard status == 200 || (status == 204 && noContentIsAnswer) else {
                settle(.failure(.httpStatus(url: url, status: status)))
                return false
            }
            if let length = ResponseHead.contentLength(headers), length > Int64(maxBytes) {
                settle(.failure(.tooLarge(url: url, limit: maxBytes)))
                return false
            }
            return true
        }
    }

    func transfer(_ t: any Transfer, didReceive data: UnsafeRawBufferPointer) {
        let overflow: Bool = condition.withLock {
            guard outcome == nil else { return false }
            guard body.count + data.count <= maxBytes else {
                body = []
                settle(.failure(.tooLarge(url: url, limit: maxBytes)))
                return true
            }
            body.append(contentsOf: data)
            return false
        }
        if overflow { t.cancel() }
    }

    func transfer(_ t: any Transfer, didCompleteWith failure: TransferFailure?) {
        condition.withLock {
            if let failure {
                if let refusal = failure.refusal { settle(.failure(.refused(url: url, refusal))) }
                else { settle(.failure(.network(url: url, reason: failure.reason))) }
                return
            }
            guard let head else { settle(.failure(.network(url: url, reason: "the connection closed before a response"))); return }
            settle(.success(.fetched(FetchedDocument(body: body, contentType: head.headers["content-type"],
                                                      etag: head.headers["etag"], lastModified: head.headers["last-modified"]))))
        }
    }
}
