import Foundation
import Testing
import TuttiControlClient
import TuttiCore
import TuttiDaemon
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

    func remoteError(_ body: () throws -> Any) -> ControlClient.RemoteError? {
        do { _ = try body(); return nil } catch let e as ControlClient.RemoteError { return e } catch { return nil }
    }

    @Test func jsonRPCNeedsTheLoginAndThenDoesEverything() throws {
        let l = try leader()
        defer { l.stop() }
        let c = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: l.controlEndpoint!.port))
        let refused = remoteError { try c.call("player.status") }
        #expect(refused?.code == -32001 && refused?.message.contains("needs a password") == true, "\(String(describing: refused))")
        #expect(remoteError { try c.call("player.play") }?.code == -32001)
        let status = try #require(try c.call("auth.status") as? [String: Any])
        #expect(status["access"] as? String == "none" && status["password"] as? Bool == true)
        // Not logged in, it hears nothing of what plays.
        c.setReceiveTimeout(milliseconds: 400)
        _ = try l.perform(.play)
        #expect((try? c.nextNotification()) == nil, "a client that has not logged in was told of a change")
        c.setReceiveTimeout(milliseconds: 5_000)
        let wrong = remoteError { try c.call("auth.login", ["password": "kitchen-secret-43"]) }
        #expect(wrong?.message == "wrong password")
        let ok = try #require(try c.call("auth.login", ["password": Self.password]) as? [String: Any])
        #expect(ok["access"] as? String == "full")
        let token = try #require(ok["token"] as? String)
        #expect(token.count == 64 && !token.contains(Self.password))
        #expect((try c.call("player.status") as? [String: Any])?["state"] != nil)
        _ = try c.call("player.pause")
        // The token opens a new connection as the password does.
        let c2 = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: l.controlEndpoint!.port))
        _ = try c2.call("auth.login", ["token": token])
        _ = try c2.call("player.play")
        #expect(l.nowPlaying.state == .playing)
    }

    @Test func guestsMayLookButNotTouch() throws {
        let l = try leader(guest: true)
        defer { l.stop() }
        let c = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: l.controlEndpoint!.port))
        #expect((try c.call("player.status") as? [String: Any])?["state"] != nil)
        #expect((try c.call("rooms.list") as? [String: Any]) != nil)
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
        #expect((try local.call("player.status") as? [String: Any]) != nil, "a client on this machine is trusted")
        let remote = try ControlClient(endpoint: Endpoint(host: address, port: port))
        #expect(remoteError { try remote.call("player.status") }?.code == -32001, "a client from \(address) must log in")
        _ = try remote.call("auth.login", ["password": Self.password])
        #expect((try remote.call("player.status") as? [String: Any]) != nil)
    }

    @Test func aSurfaceBeyondLoopbackGetsAGeneratedPasswordKeptAcrossRestarts() throws {
        let dir = makeTemporaryDirectory()
        func start() throws -> Leader {
            try startLeader(files: []) { c in
                c.control = Endpoint(host: "0.0.0.0", port: 0)
                c.databasePath = dir + "/db/library.db"
                c.passwordOnLoopback = true
            }
        }
        let first = try start()
        let saved = try String(contentsOfFile: dir + "/db/control-password", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/db/control-password")[.posixPermissions] as? Int
        #expect(saved.count == 20 && mode == 0o600, "password \(saved.count) characters, mode \(String(mode ?? 0, radix: 8))")
        let c = try ControlClient(endpoint: Endpoint(host: "127.0.0.1", port: first.controlEndpoint!.port))
        #expect(remoteError { try c.call("player.status") }?.code == -32001)
        _ = try c.call("auth.login", ["password": saved])
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
        func refused(_ method: String, _ params: [String: Any]) -> Bool {
            do { _ = try c.call(method, params); return false } catch let e as ControlClient.RemoteError { return e.message.contains("outside the music folder") } catch { return false }
        }
        let bad = [outside + "/secret.wav", music + "/../private/secret.wav", music + "/escape/secret.wav", music + "/album/link.wav",
                   "file://" + outside + "/secret.wav", "/etc/passwd", "pipe:" + outside + "/fifo", "relative/secret.wav"]
        for path in bad {
            #expect(refused("queue.add", ["uris": [path]]), "queue.add \(path)")
        }
        #expect(leader.queue.count == 0, "nothing outside was queued")
        #expect(refused("playlists.import", ["path": outside + "/list.m3u", "name": "x"]))
        #expect(refused("playlists.import", ["path": music + "/escape/list.m3u", "name": "x"]))
        #expect(refused("library.scan", ["folder": outside]))
        #expect(refused("library.scan", ["folder": music + "/escape"]))
        let pid = try #require((try c.call("playlists.create", ["name": "P"]) as? [String: Any])?["id"] as? Int)
        // Export writes only into the playlist folder (FetchPolicyTests has the rest).
        func refusedExport(_ path: String) -> Bool {
            do { _ = try c.call("playlists.export", ["id": pid, "path": path]); return false } catch let e as ControlClient.RemoteError { return e.message.contains("only into the playlist folder") } catch { return false }
        }
        #expect(refusedExport(outside + "/out.m3u"))
        #expect(refusedExport(dir + "/db/playlists/../../private/out.m3u"))
        #expect(!FileManager.default.fileExists(atPath: outside + "/out.m3u"))
        // What lies inside is fine.
        _ = try c.call("queue.add", ["uris": [music + "/album/in.wav"]])
        _ = try c.call("playlists.export", ["id": pid, "path": dir + "/db/playlists/out.m3u"])
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
