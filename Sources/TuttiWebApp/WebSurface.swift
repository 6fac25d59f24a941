import Glibc
import Synchronization
import TuttiCore
import TuttiAuth
import TuttiNet
import TuttiSystem
import TuttiWeb
import TuttiControlKit
import TuttiLibrary

/// The web app (`--web HOST:PORT`): its files, album art, and the control
/// API, over civetweb.
///
/// * `GET /…` — the app's files (web/), gzipped, revalidated by ETag.
/// * `GET /art/HASH` — a cover from the library, cached for a year (the
///   URL is the image's content hash, so it never changes meaning).
/// * `/ws` — a WebSocket carrying the same JSON-RPC as the TCP port, one
///   object per text frame, notifications included: one API, not two.
///   Each page is a client of the JSON-RPC server (`JSONRPCServing`) with its own bounded outbox.
/// * `POST /api` — one JSON-RPC request per body, for scripts.
/// * `GET /preview/TRACKID` — 30 s from the middle of a library track as
///   Ogg Opus, for this page only (WebSurface+Preview.swift).
/// * `POST /calibrate?plan=JSON` — a recording of the sweeps `calibrate.play`
///   played (a WAV file, at most 12 MiB and 60 s), analysed here with
///   TuttiCore's `Calibration`: each room's delay, confidence, response and
///   new trim, or why the recording cannot be used (docs/sound.md "Tuning rooms").
// Sendable because `server` is set once in init and only read after; the rest is immutable.
public final class WebSurface: @unchecked Sendable {
    let leader: any LeaderControl
    private let control: any JSONRPCServing
    let log: Logger
    private var server: WebServer!
    private let assets: WebAssets
    private let pages: Pages
    /// Previews asked for per client address (`GET /preview/ID`).
    let previewLimits = Mutex(PreviewRateLimit())

    /// `control`: the JSON-RPC server the pages and `/api` speak to.
    public init(leader: any LeaderControl, control: any JSONRPCServing, options: WebOptions, log: Logger) throws {
        self.leader = leader
        self.control = control
        self.log = log
        let root = try options.root ?? Self.findRoot()
        assets = try WebAssets(root: root)
        pages = Pages(control: control, leader: leader, log: log, stallMilliseconds: leader.surfaceSettings.clientStallMilliseconds)
        let server = WebServer(endpoint: options.endpoint.description, timeoutMilliseconds: leader.surfaceSettings.clientStallMilliseconds,
                               largeBodies: ["/calibrate": CalibrationUpload.maximumBytes],
                               socketHandler: pages, log: log) { [weak self] request in
            self?.respond(to: request) ?? .text(503, "the leader is stopping")
        }
        try server.start()
        self.server = server
        log.info("serving \(root) (\(assets.files.count) files)")
    }

    public var endpoint: Endpoint? {
        let text = server.endpoint
        return try? Endpoint(parsing: text)
    }

    public func stop() {
        server.stop() // closes every page: the rooms that play here end their threads
        pages.loginWatch.stop()
        pages.playHereThreads.waitForAll(untilNanoseconds: Condition.deadline(afterSeconds: 1))
    }

    /// The app's files: beside the executable (a build in a checkout:
    /// .build/debug/tuttid → web/; an install: bin/tuttid → share/tutti/web).
    static func findRoot() throws -> String {
        let exe = CommandLine.arguments.first.map { PathText.canonical($0) ?? $0 } ?? "."
        var dir = PathText.parent(exe.hasPrefix("/") ? exe : (PathText.canonical(".") ?? "") + "/" + exe)
        var candidates = [PathText.standardized(dir + "/../share/tutti/web")]
        for _ in 0..<5 {
            candidates.append(dir + "/web")
            dir = PathText.parent(dir)
        }
        candidates.append("/usr/share/tutti/web")
        for c in candidates where access(c + "/index.html", F_OK) == 0 { return c }
        throw WebAssets.LoadError.notFound(candidates.last!)
    }

    private func respond(to request: WebRequest) -> WebResponse {
        let path = request.path
        if path == "/api" { return api(request) }
        if path == "/calibrate" { return calibrate(request) }
        if path.hasPrefix(Self.previewPrefix) { return preview(request) }
        guard request.method == "GET" || request.method == "HEAD" else {
            return .text(405, "only GET here (POST goes to /api)")
        }
        if path.hasPrefix("/art/") { return art(String(path.dropFirst(5)), ifNoneMatch: request.headers["if-none-match"]) }
        if let r = assets.response(for: path, acceptEncoding: request.headers["accept-encoding"], ifNoneMatch: request.headers["if-none-match"]) {
            return r
        }
        return .text(404, "no such page: \(path)")
    }

    /// A cover, only as a JPEG, PNG, GIF or WebP decided from its bytes (its
    /// tag's declared type is not trusted: an SVG or HTML "cover" would run
    /// script on this origin), and sandboxed so that even a browser that
    /// guessed otherwise would run nothing.
    private func art(_ hash: String, ifNoneMatch: String?) -> WebResponse {
        guard !hash.isEmpty, hash.utf8.count <= 128, hash.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else {
            return .text(404, "not a cover id")
        }
        let tag = "\"\(hash)\""
        let headers = [("Cache-Control", "public, max-age=31536000, immutable"), ("ETag", tag),
                       ("Content-Security-Policy", WebResponse.sandboxPolicy)]
        if AirPlayArtwork.isID(hash) {
            // A phone's artwork (AirPlay): only while it plays.
            guard let bytes = leader.airPlayArtwork(id: hash), let type = ImageType.sniff(bytes) else { return .text(404, "no cover \(hash)") }
            return WebResponse(status: 200, headers: headers + [("Content-Type", type.mime)], body: bytes)
        }
        guard let library = leader.library else { return .text(404, "no library") }
        guard let cover = try? library.cover(hash: hash) else { return .text(404, "no cover \(hash)") }
        guard let type = ImageType.sniff(cover.bytes) else {
            return .text(415, "cover \(hash) is not a JPEG, PNG, GIF or WebP image: not served")
        }
        if ifNoneMatch == tag { return WebResponse(status: 304, headers: headers) }
        return WebResponse(status: 200, headers: headers + [("Content-Type", type.mime)], body: cover.bytes)
    }

    /// JSON-RPC over HTTP POST. JSON only: a page elsewhere on the web can
    /// send a "simple" cross-site form POST, but not this one without the
    /// browser first asking (CORS), which this server never allows. And a
    /// browser's request must come from this server's own pages (`Origin`):
    /// a page opened in the house cannot send commands through it.
    private func api(_ request: WebRequest) -> WebResponse {
        guard request.method == "POST" else { return .text(405, "POST a JSON-RPC request to /api") }
        guard request.headers["content-type"]?.lowercased().hasPrefix("application/json") == true else {
            return .text(415, "send the JSON-RPC request with Content-Type: application/json")
        }
        if let refusal = request.crossSiteRefusal(log: log) { return refusal }
        let level: ControlAccess.Level, bearer: String?
        switch accessLevel(request) {
        case .success(let a): (level, bearer) = a
        case .failure(let refusal): return refusal.response
        }
        guard let reply = control.handle(request.body, level: level, peer: request.peer, bearer: bearer,
                                         language: request.headers["accept-language"].flatMap { Language(acceptLanguage: $0) }) else { return WebResponse(status: 204) }
        return WebResponse(status: 200, headers: [("Content-Type", "application/json")], body: reply.bytes)
    }

    struct Refusal: Error { var response: WebResponse }

    /// Stateless access: a client from another machine shows its token (from
    /// auth.login) in every request; never the password.
    func accessLevel(_ request: WebRequest) -> Result<(ControlAccess.Level, String?), Refusal> {
        var level = control.initialLevel(address: request.peer)
        var bearer: String?
        if let authorization = request.headers["authorization"] {
            guard authorization.hasPrefix("Bearer "), case let token = String(authorization.dropFirst(7)), !token.isEmpty, token.utf8.count <= 1_024 else {
                return .failure(Refusal(response: .text(401, "Authorization must be \"Bearer TOKEN\", with the token auth.login returned")))
            }
            switch leader.login.login(token: token, peer: request.peer) {
            case .success:
                level = .full
                bearer = token
            case .failure(let failure):
                if case .limited = failure { return .failure(Refusal(response: .text(429, failure.description))) }
                return .failure(Refusal(response: WebResponse(status: 401, headers: [("WWW-Authenticate", "Bearer"), ("Content-Type", "text/plain; charset=utf-8")],
                                                              body: Array(failure.description.utf8))))
            }
        }
        return .success((level, bearer))
    }

    /// A recording of a calibration plan, analysed (see the type's comment).
    /// The answer is JSON: the report (`CalibrationResult.report`), or
    /// `{"error": {"code", "message"}}` (422) with why the recording cannot
    /// be used, in the page's language (`lang` in the query, else Accept-Language).
    private func calibrate(_ request: WebRequest) -> WebResponse {
        guard request.method == "POST" else { return .text(405, "POST a WAV recording to /calibrate?plan=PLAN") }
        let type = request.headers["content-type"]?.lowercased() ?? ""
        guard type.hasPrefix("audio/wav") || type.hasPrefix("audio/x-wav") || type.hasPrefix("audio/wave") else {
            return .text(415, "send the recording as a WAV file with Content-Type: audio/wav")
        }
        if let refusal = request.crossSiteRefusal(log: log) { return refusal }
        let language = request.queryValue("lang").flatMap { Language(tag: $0) }
            ?? request.headers["accept-language"].flatMap { Language(acceptLanguage: $0) } ?? .english
        let level: ControlAccess.Level
        switch accessLevel(request) {
        case .success(let a): level = a.0
        case .failure(let refusal): return refusal.response
        }
        func json(_ status: Int, _ value: JSONValue) -> WebResponse {
            WebResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")], body: Array(value.serialized.utf8))
        }
        func refused(_ status: Int, _ code: String, _ message: UserMessage) -> WebResponse {
            json(status, ["error": ["code": .string(code), "message": .string(message.text(in: language))]])
        }
        guard level == .full else { return refused(403, MessageKey.accessLoginFirst.rawValue, UserMessage(.accessLoginFirst)) }
        do throws(CalibrationRefusal) {
            guard let text = request.queryValue("plan"), text.utf8.count <= 16_384, let value = JSONValue.parsing(text),
                  let plan = CalibrationPlan(json: value, pairs: StereoPairs(leader.stereoPairList)) else { throw .badPlan }
            let (samples, rate) = try CalibrationUpload.recording(wav: request.body)
            let started = Self.monotonicMilliseconds()
            let result = try Calibration.analyse(recording: samples, sampleRate: rate, plan: plan)
            var current: [String: Double] = [:]
            // Each speaker's own trim (a side of a pair by its speaker's name).
            for source in plan.sources { current[source.speaker] = Double(leader.settings(of: source.speaker).latencyTrimNanoseconds) / 1e6 }
            log.info("calibration: analysed \(samples.count) samples at \(rate) Hz from \(request.peer) in \(Self.monotonicMilliseconds() - started) ms: "
                     + result.rooms.map { "\($0.room) \($0.delayMilliseconds.map { Calibration.format($0, 3) } ?? "—") ms" }.joined(separator: ", "))
            return json(200, result.report(current: current, language: language))
        } catch {
            log.info("calibration: the recording from \(request.peer) was refused: \(error.description)")
            return refused(422, error.code, error.message)
        }
    }

    private static func monotonicMilliseconds() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1_000 + Int64(t.tv_nsec) / 1_000_000
    }

    /// The pages connected over the WebSocket: each is a control client.
    /// Binary messages are "Play here" (WebSurface+PlayHere.swift).
    final class Pages: WebSocketHandler, Sendable {
        private let control: any JSONRPCServing
        let leader: any LeaderControl
        let log: Logger
        private let stallMilliseconds: Int
        let clients = Mutex<[ObjectIdentifier: SurfaceClient]>([:])
        /// The pages that play here, by socket.
        let playing = Mutex<[ObjectIdentifier: PlayHereRoom]>([:])
        /// Their rooms' threads (`tutti-playhere`, one per page that plays here), waited for when the app stops.
        let playHereThreads = ThreadGroup(name: "tutti-playhere")
        /// Closes pages that may do nothing and have not logged in within 10 s.
        let loginWatch = DeadlineWatch(name: "tutti-web-login")

        init(control: any JSONRPCServing, leader: any LeaderControl, log: Logger, stallMilliseconds: Int) {
            self.control = control
            self.leader = leader
            self.log = log
            self.stallMilliseconds = stallMilliseconds
        }

        func opened(_ socket: WebSocket) {
            let stall = stallMilliseconds
            let client = control.attach(peer: "web page \(socket.peer)", address: socket.peer, newlineFramed: false, write: { bytes in
                do { try socket.send(text: bytes) } catch WebError.writeFailed {
                    throw WebError.writeFailed(peer: "\(socket.peer) (did not read for \(stall / 1000) s)")
                }
            }, writeIfFree: nil, disconnect: { socket.close() })
            clients.withLock { $0[ObjectIdentifier(socket)] = client }
            client.closeUnlessLoggedIn(watch: loginWatch) { socket.terminate() }
        }

        func received(_ message: [UInt8], on socket: WebSocket) {
            guard let client = clients.withLock({ $0[ObjectIdentifier(socket)] }) else { return }
            control.receive(message, from: client, onItsThread: false)
        }

        func closed(_ socket: WebSocket) {
            stopPlayingHere(socket, gone: true)
            guard let client = clients.withLock({ $0.removeValue(forKey: ObjectIdentifier(socket)) }) else { return }
            // civetweb pings a page that sends nothing, and drops one that stops answering (asleep, or gone).
            control.detach(client, reason: socket.closedByPage ? "connection closed" : "stopped answering pings, or the connection broke")
        }
    }
}
