import Foundation
import Testing
import TuttiControlClient
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiNet
import TuttiTestSupport

/// A non-loopback IPv4 address of this machine, if it has one.
func thisMachinesAddress() -> String? {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { return nil }
    defer { freeifaddrs(list) }
    var p = list
    while let i = p {
        defer { p = i.pointee.ifa_next }
        guard let a = i.pointee.ifa_addr, a.pointee.sa_family == sa_family_t(AF_INET) else { continue }
        var addr = a.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
        var text = [CChar](repeating: 0, count: 32)
        inet_ntop(AF_INET, &addr, &text, 32)
        let s = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if !s.hasPrefix("127.") { return s }
    }
    return nil
}

/// Control surfaces with a password: who may do what before and after logging in.
@Suite(.serialized) struct ControlAccessTests {
    static let password = "kitchen-secret-42"

    func leader(guest: Bool = false, onLoopback: Bool = true, host: String = "127.0.0.1") throws -> Leader {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/t.wav", wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 30, amplitude: 0.2))))
        return try startLeader(files: [dir + "/t.wav"]) { c in
            c.control = Endpoint(host: host, port: 0)
            c.mpd = Endpoint(host: host, port: 0)
            c.password = Self.password
            c.guestReadOnly = guest
            c.passwordOnLoopback = onLoopback
        }
    }

    func remoteError(_ body: () throws -> JSONValue) -> ControlClient.RemoteError? {
        do { _ = try body(); return nil } catch let e as ControlClient.RemoteError { return e } catch { return nil }
    }

    @Test func jsonRPCNeedsTheLoginAndThenDoesEverything() throws {
        let l = try leader()
        defer { l.stop() }
        let c = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: l.controlEndpoint!.port))
        let refused = remoteError { try c.call("player.status") }
        #expect(refused?.code == -32001 && refused?.message.contains("needs a password") == true, "\(String(describing: refused))")
        #expect(remoteError { try c.call("player.play") }?.code == -32001)
        let status = try #require(try c.call("auth.status").object)
        #expect(status["access"]?.string == "none" && status["password"]?.bool == true)
        // Not logged in, it hears nothing of what plays.
        c.setReceiveTimeout(milliseconds: 400)
        _ = try l.perform(.play)
        #expect((try? c.nextNotification()) == nil, "a client that has not logged in was told of a change")
        c.setReceiveTimeout(milliseconds: 5_000)
        let wrong = remoteError { try c.call("auth.login", ["password": "kitchen-secret-43"]) }
        #expect(wrong?.message == "wrong password")
        let ok = try #require(try c.call("auth.login", ["password": JSONValue(Self.password)]).object)
        #expect(ok["access"]?.string == "full")
        let token = try #require(ok["token"]?.string)
        #expect(token.count == 64 && !token.contains(Self.password))
        #expect((try c.call("player.status").object)?["state"] != nil)
        _ = try c.call("player.pause")
        // The token opens a new connection as the password does.
        let c2 = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: l.controlEndpoint!.port))
        _ = try c2.call("auth.login", ["token": JSONValue(token)])
        _ = try c2.call("player.play")
        #expect(l.nowPlaying.state == .playing)
    }

    @Test func guestsMayLookButNotTouch() throws {
        let l = try leader(guest: true)
        defer { l.stop() }
        let c = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: l.controlEndpoint!.port))
        #expect((try c.call("player.status").object)?["state"] != nil)
        #expect((try c.call("rooms.list").object) != nil)
        let refused = remoteError { try c.call("player.play") }
        #expect(refused?.code == -32001 && refused?.message.contains("guests can only look") == true, "\(String(describing: refused))")
        #expect(remoteError { try c.call("queue.clear") }?.code == -32001)
        #expect(l.queue.count == 1, "the guest changed nothing")
    }

    @Test func mpdPasswordWithMpc() throws {
        let l = try leader()
        defer { l.stop() }
        let port = String(l.mpdEndpoint!.port)
        let without = try runProgram("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", port, "status"], mergeErrors: true)
        #expect(without.status != 0 && without.out.contains("you don't have permission"), "\(without.out)")
        let wrong = try runProgram("/usr/bin/mpc", ["-h", "nope-nope@127.0.0.1", "-p", port, "status"], mergeErrors: true)
        #expect(wrong.status != 0 && wrong.out.contains("incorrect password"), "\(wrong.out)")
        let right = try runProgram("/usr/bin/mpc", ["-h", "\(Self.password)@127.0.0.1", "-p", port, "play"], mergeErrors: true)
        #expect(right.status == 0 && right.out.contains("playing"), "\(right.out)")
        #expect(l.nowPlaying.state == .playing)
    }

    @Test func theTuttiClientLogsInWithPassword() throws {
        let l = try leader()
        defer { l.stop() }
        let port = l.controlEndpoint!.port
        let without = try runTutti(port: port, ["status"])
        #expect(without.status == 1 && without.out.contains("needs a password"), "\(without.out)")
        let with = try runTutti(port: port, ["--password", Self.password, "status"])
        #expect(with.status == 0 && ["stopped", "paused", "playing"].contains { with.out.contains($0) }, "\(with.out)")
        let wrong = try runTutti(port: port, ["--password", "not-the-password", "status"])
        #expect(wrong.status == 1 && wrong.out.contains("wrong password"), "\(wrong.out)")
    }

    @Test(.enabled(if: thisMachinesAddress() != nil, "needs a non-loopback IPv4 address"))
    func fromAnotherAddressThePasswordIsNeededAndFromLoopbackNot() throws {
        let address = try #require(thisMachinesAddress())
        let l = try leader(onLoopback: false, host: "0.0.0.0")
        defer { l.stop() }
        let port = l.controlEndpoint!.port
        let local = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: port))
        #expect((try local.call("player.status").object) != nil, "a client on this machine is trusted")
        let remote = try ControlClient(endpoint: Endpoint(host: address, port: port))
        #expect(remoteError { try remote.call("player.status") }?.code == -32001, "a client from \(address) must log in")
        _ = try remote.call("auth.login", ["password": JSONValue(Self.password)])
        #expect((try remote.call("player.status").object) != nil)
    }

    @Test func aSurfaceBeyondLoopbackGetsAGeneratedPasswordKeptAcrossRestarts() throws {
        let dir = makeTemporaryDirectory()
        let log = CapturingLog()
        func start() throws -> Leader {
            try startLeader(files: [], log: log.logger) { c in
                c.control = Endpoint(host: "0.0.0.0", port: 0)
                c.databasePath = dir + "/db/library.db"
                c.passwordOnLoopback = true
            }
        }
        let first = try start()
        let saved = try String(contentsOfFile: dir + "/db/control-password", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/db/control-password")[.posixPermissions] as? Int
        #expect(saved.count == 20 && mode == 0o600, "password \(saved.count) characters, mode \(String(mode ?? 0, radix: 8))")
        // The log (the journal, under systemd) says where the password is, never what it is.
        #expect(!log.lines.contains { $0.contains(saved) }, "the generated password was logged: \(log.lines.filter { $0.contains(saved) })")
        #expect(log.lines.contains { $0.contains(dir + "/db/control-password") && $0.contains("sudo cat") }, "\(log.lines)")
        let c = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: first.controlEndpoint!.port))
        #expect(remoteError { try c.call("player.status") }?.code == -32001)
        _ = try c.call("auth.login", ["password": JSONValue(saved)])
        first.stop()
        let second = try start()
        defer { second.stop() }
        #expect(second.controlAccess.password == saved, "the same password after a restart")
        // A leader only on loopback has none.
        let local = try startLeader(files: []) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { local.stop() }
        #expect(local.controlAccess.password == nil)
    }

    @Test func theRulesAreExact() {
        let open = ControlAccess()
        #expect(open.initialLevel(peerIsLoopback: false) == .full)
        let locked = ControlAccess(password: "p4ssword!")
        #expect(locked.initialLevel(peerIsLoopback: true) == .full && locked.initialLevel(peerIsLoopback: false) == .none)
        #expect(ControlAccess(password: "p4ssword!", guestReadOnly: true).initialLevel(peerIsLoopback: false) == .guest)
        #expect(ControlAccess.permits(.none, method: "auth.login") && !ControlAccess.permits(.none, method: "player.status"))
        #expect(ControlAccess.permits(.guest, method: "library.search") && !ControlAccess.permits(.guest, method: "library.scan"))
        #expect(!ControlAccess.permits(.guest, method: "playlists.export") && !ControlAccess.permits(.guest, method: "cache.add"))
        #expect(ControlAccess.permitsMPD(.none, command: "password") && !ControlAccess.permitsMPD(.none, command: "status"))
        #expect(ControlAccess.permitsMPD(.guest, command: "search") && !ControlAccess.permitsMPD(.guest, command: "add"))
        #expect(ControlAccess.isLoopback("127.0.0.5") && ControlAccess.isLoopback("::1") && !ControlAccess.isLoopback("192.0.2.2"))
    }
}

/// No control client can name a file outside the music folder, the cache
/// and the playlist folder: not with `..`, not with an absolute path, not
/// through a symlink inside the music folder that points out of it.
@Suite(.serialized) struct PathConfinementTests {
    @Test func everyPathTakingMethodRefusesWhatLiesOutside() throws {
        let dir = makeTemporaryDirectory()
        let music = dir + "/music", outside = dir + "/private"
        try FileManager.default.createDirectory(atPath: music + "/album", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        let tone = wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 1, amplitude: 0.2)))
        writeFile(music + "/album/in.wav", tone)
        writeFile(outside + "/secret.wav", tone)
        writeFile(outside + "/list.m3u", Array("/etc/passwd\n".utf8))
        try FileManager.default.createSymbolicLink(atPath: music + "/escape", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: music + "/album/link.wav", withDestinationPath: outside + "/secret.wav")
        let leader = try startLeader(files: []) { c in
            c.musicDirectory = music
            c.databasePath = dir + "/db/library.db"
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        #expect(waitUntil(timeout: 10) { ((try? leader.library?.trackCount()) ?? 0) >= 1 })
        let c = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: leader.controlEndpoint!.port))
        func refused(_ method: String, _ params: [String: JSONValue]) -> Bool {
            do { _ = try c.call(method, params); return false } catch let e as ControlClient.RemoteError { return e.message.contains("outside the music folder") } catch { return false }
        }
        let bad = [outside + "/secret.wav", music + "/../private/secret.wav", music + "/escape/secret.wav", music + "/album/link.wav",
                   "file://" + outside + "/secret.wav", "/etc/passwd", "pipe:" + outside + "/fifo", "relative/secret.wav"]
        for path in bad {
            #expect(refused("queue.add", ["uris": [JSONValue(path)]]), "queue.add \(path)")
        }
        #expect(leader.queue.count == 0, "nothing outside was queued")
        #expect(refused("playlists.import", ["path": JSONValue(outside + "/list.m3u"), "name": "x"]))
        #expect(refused("playlists.import", ["path": JSONValue(music + "/escape/list.m3u"), "name": "x"]))
        #expect(refused("library.scan", ["folder": JSONValue(outside)]))
        #expect(refused("library.scan", ["folder": JSONValue(music + "/escape")]))
        let pid = try #require((try c.call("playlists.create", ["name": "P"]).object)?["id"]?.integer)
        // Export writes only into the playlist folder (FetchPolicyTests has the rest).
        func refusedExport(_ path: String) -> Bool {
            do { _ = try c.call("playlists.export", ["id": JSONValue(pid), "path": JSONValue(path)]); return false } catch let e as ControlClient.RemoteError { return e.message.contains("only into the playlist folder") } catch { return false }
        }
        #expect(refusedExport(outside + "/out.m3u"))
        #expect(refusedExport(dir + "/db/playlists/../../private/out.m3u"))
        #expect(!FileManager.default.fileExists(atPath: outside + "/out.m3u"))
        // What lies inside is fine.
        _ = try c.call("queue.add", ["uris": [JSONValue(music + "/album/in.wav")]])
        _ = try c.call("playlists.export", ["id": JSONValue(pid), "path": JSONValue(dir + "/db/playlists/out.m3u")])
        #expect(leader.queue.count == 1)

        // MPD: relative paths that climb out, absolute ones, and the link.
        let port = String(leader.mpdEndpoint!.port)
        for uri in ["../private/secret.wav", outside + "/secret.wav", "escape/secret.wav", "album/link.wav"] {
            let r = try runProgram("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", port, "add", uri], mergeErrors: true)
            #expect(r.status != 0, "mpc add \(uri): \(r.out)")
        }
        #expect(leader.queue.count == 1, "mpc queued nothing outside")
        let inside = try runProgram("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", port, "add", "album/in.wav"], mergeErrors: true)
        #expect(inside.status == 0, "\(inside.out)")
        #expect(leader.queue.count == 2)
    }
}

/// Logging in (issue 26, finding 2): failures are limited per source
/// address with an immediate refusal (no sleep on any shared thread), a
/// bearer is only ever a token, and tokens are random, revocable, stored
/// hashed and kept across a restart.
@Suite(.serialized) struct LoginTests {
    static let password = "kitchen-secret-42"

    func leader(database: String? = nil, password: String = LoginTests.password) throws -> Leader {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/t.wav", wavImage(quantize(TestSignal.sine(frequency: 300, seconds: 30, amplitude: 0.2))))
        return try startLeader(files: [dir + "/t.wav"]) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: ControlPlaneTests.webRoot())
            c.password = password
            c.passwordOnLoopback = true // loopback addresses stand for other machines
            c.databasePath = database
        }
    }

    /// One JSON-RPC request on a new TCP connection from `source`; the reply's result or error.
    func rpc(_ port: UInt16, from source: String, _ method: String, _ params: [String: Any] = [:]) -> [String: Any] {
        let body = try! JSONSerialization.data(withJSONObject: ["jsonrpc": "2.0", "id": 1, "method": method, "params": params])
        let line = exchange(port: port, from: source, Array(body) + [10], untilLine: true)
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
    }

    func message(_ reply: [String: Any]) -> String { (reply["error"] as? [String: Any])?["message"] as? String ?? "" }

    @Test func wrongLoginsAreRefusedAtOnceOverTheLimitPerAddressOnEverySurface() throws {
        let l = try leader()
        defer { l.stop() }
        let control = try #require(l.controlEndpoint).port, web = try #require(l.webEndpoint).port, mpd = try #require(l.mpdEndpoint).port
        // Five wrong passwords from 127.0.0.2 cost nothing but the answer.
        for i in 0..<5 {
            #expect(message(rpc(control, from: "127.0.0.2", "auth.login", ["password": "guess-\(i)"])) == "wrong password", "guess \(i)")
        }
        // The sixth is refused before it is checked, even with the right password, and says when to come back.
        let limited = rpc(control, from: "127.0.0.2", "auth.login", ["password": Self.password])
        #expect(message(limited) == "too many failed logins from 127.0.0.2; try again in 1 s", "\(limited)")
        #expect((limited["error"] as? [String: Any])?["code"] as? Int == -32002)
        // The same address is refused on the other surfaces too: POST /api, MPD's password.
        let api = httpRequest(port: web, from: "127.0.0.2", "POST", "/api", headers: [("Content-Type", "application/json")],
                              body: #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"password":"kitchen-secret-42"}}"#)
        #expect(api.contains("too many failed logins from 127.0.0.2"), "\(api)")
        let mpdAnswer = exchange(port: mpd, from: "127.0.0.2", Array("password \(Self.password)\nclose\n".utf8))
        #expect(mpdAnswer.contains("ACK [3@0] {password} too many failed logins from 127.0.0.2"), "\(mpdAnswer)")
        // Another address is not held up: it logs in at once.
        let other = rpc(control, from: "127.0.0.3", "auth.login", ["password": Self.password])
        #expect((other["result"] as? [String: Any])?["access"] as? String == "full", "\(other)")
        // Once the wait is over, the right password works, and the address starts afresh.
        usleep(1_100_000)
        let after = rpc(control, from: "127.0.0.2", "auth.login", ["password": Self.password])
        #expect((after["result"] as? [String: Any])?["access"] as? String == "full", "\(after)")
        #expect(message(rpc(control, from: "127.0.0.2", "auth.login", ["password": "typo"])) == "wrong password", "a fresh start after a success")
    }

    @Test func aBearerIsOnlyEverATokenNeverThePassword() throws {
        let l = try leader()
        defer { l.stop() }
        let web = try #require(l.webEndpoint).port
        let status = #"{"jsonrpc":"2.0","id":1,"method":"player.status"}"#
        let withPassword = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(Self.password)")], body: status)
        #expect(withPassword.hasPrefix("HTTP/1.1 401") && !withPassword.contains("\"state\""), "the password as a bearer: \(withPassword)")
        let login = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json")],
                                body: #"{"jsonrpc":"2.0","id":1,"method":"auth.login","params":{"password":"kitchen-secret-42"}}"#)
        let result = (try? JSONSerialization.jsonObject(with: Data(httpBody(login).utf8))) as? [String: Any]
        let token = try #require((result?["result"] as? [String: Any])?["token"] as? String, "\(login)")
        let withToken = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")], body: status)
        #expect(withToken.hasPrefix("HTTP/1.1 200") && withToken.contains("\"state\""), "\(withToken)")
        // auth.logout with the bearer revokes it.
        _ = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")],
                        body: #"{"jsonrpc":"2.0","id":1,"method":"auth.logout"}"#)
        let revoked = httpRequest(port: web, "POST", "/api", headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")], body: status)
        #expect(revoked.hasPrefix("HTTP/1.1 401"), "\(revoked)")
    }

    @Test func tokensAreRandomRevocableAndKeptAcrossARestart() throws {
        let dir = makeTemporaryDirectory()
        let database = dir + "/db/library.db"
        var l = try leader(database: database)
        var control = try #require(l.controlEndpoint).port
        func token() throws -> String {
            let r = rpc(control, from: "127.0.0.1", "auth.login", ["password": Self.password])
            return try #require((r["result"] as? [String: Any])?["token"] as? String, "\(r)")
        }
        func works(_ t: String) -> Bool {
            (rpc(control, from: "127.0.0.1", "auth.login", ["token": t])["result"] as? [String: Any])?["access"] as? String == "full"
        }
        let (a, b, c) = (try token(), try token(), try token())
        #expect(a != b && b != c && a.count == 64 && Set(a).isSubset(of: Set("0123456789abcdef")), "each login a new random token")
        #expect(works(a) && works(b) && works(c))
        // Stored as digests: no token and not the password in the state database.
        let state = try Data(contentsOf: URL(fileURLWithPath: dir + "/db/state.db"))
        for secret in [a, b, Self.password] { #expect(state.range(of: Data(secret.utf8)) == nil, "\(secret) in state.db") }
        // auth.logout revokes the one it names; a connection that logged in with it loses its access.
        let holder = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: control))
        _ = try holder.call("auth.login", ["token": JSONValue(a)])
        #expect((try holder.call("player.status").object) != nil)
        let out = rpc(control, from: "127.0.0.1", "auth.logout", ["token": a])
        #expect((out["result"] as? [String: Any])?["revoked"] as? Bool == true, "\(out)")
        #expect(!works(a) && works(b))
        #expect(throws: (any Error).self, "the connection that logged in with the revoked token") { _ = try holder.call("player.status") }
        // A restart keeps the others.
        l.stop()
        l = try leader(database: database)
        control = try #require(l.controlEndpoint).port
        #expect(!works(a) && works(b) && works(c), "after a restart")
        // auth.revokeAll needs a login, then revokes every token.
        #expect(message(rpc(control, from: "127.0.0.1", "auth.revokeAll")).contains("log in first"))
        let admin = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: control))
        _ = try admin.call("auth.login", ["password": JSONValue(Self.password)])
        let all = try #require(try admin.call("auth.revokeAll").object)
        #expect(all["revoked"]?.integer == 3, "\(all)") // b, c and admin's own
        #expect(!works(b) && !works(c))
        l.stop()
        // A new password voids every token issued under the old one.
        l = try leader(database: database)
        control = try #require(l.controlEndpoint).port
        let d = try token()
        l.stop()
        l = try leader(database: database, password: "a-new-password-9")
        control = try #require(l.controlEndpoint).port
        #expect(!works(d), "a token from before the password changed")
        l.stop()
    }
}
