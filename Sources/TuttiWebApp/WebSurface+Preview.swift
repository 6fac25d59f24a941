import Synchronization
import TuttiControlKit
import TuttiCore
import TuttiLibrary
import TuttiSystem
import TuttiWeb

/// `GET /preview/TRACKID` (issue 34): 30 s from the middle of a library
/// track as Ogg Opus (`audio/ogg; codecs=opus`), for the page that asked
/// only; no room, queue or history is touched. Guarded as `/api` is: a
/// page of another site is refused (`Origin`, `Sec-Fetch-Site`), and the
/// client needs at least a guest's access (loopback, no password, guests
/// allowed, or `Authorization: Bearer TOKEN`). Each client address may ask
/// for `PreviewRateLimit.Policy.requests` a minute (429 and Retry-After
/// beyond); the leader encodes on one worker, and a request that has to
/// wait for its preview holds a place: two per address (429 and Retry-After
/// beyond: one address cannot hold the server's lanes), four in all (503
/// beyond). Each preview is kept a minute. Errors are JSON,
/// `{"error": {"code", "message"}}`, in the page's language.
extension WebSurface {
    static let previewPrefix = "/preview/"

    func preview(_ request: WebRequest) -> WebResponse {
        let language = request.queryValue("lang").flatMap { Language(tag: $0) }
            ?? request.headers["accept-language"].flatMap { Language(acceptLanguage: $0) } ?? .english
        func refused(_ status: Int, _ message: UserMessage, headers: [(String, String)] = []) -> WebResponse {
            let body: JSONValue = ["error": ["code": .string(message.key.rawValue), "message": .string(message.text(in: language))]]
            return WebResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")] + headers,
                               body: Array(body.serialized.utf8))
        }
        guard request.method == "GET" || request.method == "HEAD" else { return .text(405, "GET a preview from /preview/TRACKID") }
        if let refusal = request.crossSiteRefusal(log: log) { return refusal }
        // A page of another site may still make the browser GET this (an <audio> element): the browser says so.
        if request.headers["sec-fetch-site"]?.lowercased() == "cross-site" {
            log.warning("web: refused a preview for \(request.peer), asked by a page of another site")
            return .text(403, "refused: this request came from a page of another site")
        }
        switch accessLevel(request) {
        case .success(let a):
            guard a.0 >= .guest else {
                return refused(401, UserMessage(.accessLoginFirst), headers: [("WWW-Authenticate", "Bearer")])
            }
        case .failure(let refusal): return refusal.response
        }
        let address = SourceAddress.parse(request.peer) ?? .unknown
        if let wait = previewLimits.withLock({ $0.admit(address, now: Condition.now()) }) {
            return refused(429, UserMessage(.previewTooMany, ["address": address.description, "seconds": String(wait)]),
                           headers: [("Retry-After", String(wait))])
        }
        let text = String(request.path.dropFirst(Self.previewPrefix.count))
        // Digits only, and few enough for an Int64: a track id as library.search gives it.
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let id = Int64(text) else {
            return refused(400, UserMessage(.previewBadTrack, ["id": String(text.prefix(40))]))
        }
        do {
            let preview = try leader.preview(of: TrackID(id), for: address)
            return WebResponse(status: 200, headers: [("Content-Type", "audio/ogg; codecs=opus"), ("Cache-Control", "private, max-age=60"),
                                                      ("Tutti-Preview-Cache", preview.cached ? "hit" : "miss"),
                                                      ("Tutti-Preview-Encode-Ms", String(preview.encodeMilliseconds))], body: preview.bytes)
        } catch {
            switch error {
            case .unknownTrack, .noLibrary: return refused(404, error.message)
            case .undecodable: return refused(422, error.message)
            case .addressBusy: return refused(429, error.message, headers: [("Retry-After", String(PreviewWaiting.retryAfterSeconds))])
            case .busy, .stopping: return refused(503, error.message, headers: [("Retry-After", String(PreviewWaiting.retryAfterSeconds))])
            }
        }
    }
}
