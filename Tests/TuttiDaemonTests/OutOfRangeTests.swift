import Foundation
import Glibc
import Testing
import TuttiCore
import TuttiDaemon
import TuttiFuzzTargets
import TuttiMPD
import TuttiNet
import TuttiTestSupport

/// Numbers from the network that once ended the leader with a trap, each
/// sent as a client sends it, on the real port (MPD 6600's protocol, and
/// Snapcast's control API on its TCP port), to a leader playing two 10 s
/// tracks. Each test asserts the documented error or the clamped effect,
/// and that the leader still answers afterwards.
@Suite(.serialized) struct OutOfRangeTests {
    struct Fixture {
        let dir: String
        let leader: Leader
        var files: [String] { ["a", "b"].map { dir + "/\($0).wav" } }
        var mpd: Endpoint { leader.mpdEndpoint! }
    }

    func makeFixture(_ name: String = #function, surfaces: any LeaderSurfaces = ControlSurfaces()) throws -> Fixture {
        let dir = makeTemporaryDirectory(name)
        for file in ["a", "b"] { writeFile(dir + "/\(file).wav", wavImage(counterFrames(count: 48_000 * 10))) }
        let leader = try startLeader(files: ["a", "b"].map { dir + "/\($0).wav" }, surfaces: surfaces) { c in
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.mpd = Endpoint(host: "127.0.0.1", port: 0)
            c.snapcastControl = Endpoint(host: "127.0.0.1", port: 0)
            c.allowedFolders = [dir]
        }
        // Playing the first track, its length known (the decoder has opened it).
        #expect(waitUntil(timeout: 10) { leader.nowPlaying.state == .playing && leader.nowPlaying.durationSeconds == 10 })
        return Fixture(dir: dir, leader: leader)
    }

    /// Sends `text` on a fresh connection and reads until the peer closes (end `text` with `close`).
    func exchange(_ endpoint: Endpoint, _ text: String, until done: ((String) -> Bool)? = nil) throws -> String {
        let c = try TCPConnection.connect(to: endpoint)
        defer { c.close() }
        c.setReceiveTimeout(milliseconds: 5_000)
        try c.send(Array(text.utf8))
        var received: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 1)
        defer { buffer.deallocate() }
        while let (n, _) = try? c.receive(into: buffer), n > 0 {
            received += buffer[0..<n]
            if let done, done(String(decoding: received, as: UTF8.self)) { break }
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// MPD's `status`, as key → value, on a new connection: proof the leader still serves.
    func mpdStatus(_ f: Fixture) throws -> [String: String] {
        let reply = try exchange(f.mpd, "status\nclose\n")
        #expect(reply.hasSuffix("\nOK\n"), "\(reply)")
        var fields: [String: String] = [:]
        for line in reply.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = String(line[line.index(colon, offsetBy: 2)...])
        }
        return fields
    }

    /// One Snapcast control request with id 1 (CRLF-framed, as python-snapcast sends it): its reply.
    func snapcast(_ f: Fixture, _ method: String, _ params: String) throws -> JSONValue? {
        let port = try #require(f.leader.snapcastControlEndpoint)
        let text = try exchange(port, "{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"\(method)\",\"params\":\(params)}\r\n") { text in
            text.split(separator: "\r\n").contains { JSONValue.parsing(String($0))?["id"] == .number(1) }
        }
        return text.split(separator: "\r\n").lazy.compactMap { JSONValue.parsing(String($0)) }.first { $0["id"] == .number(1) }
    }

    /// `seek 0 1e300` ended the leader (`Int(seconds * 48000)` trapped in
    /// Transport). Now the position is clamped to the track's end, which
    /// moves on to the next track, as MPD does.
    @Test func mpdSeekFarPastTheEndMovesOnToTheNextTrack() throws {
        let f = try makeFixture()
        defer { f.leader.stop() }
        #expect(try exchange(f.mpd, "seek 0 1e300\nclose\n") == "OK MPD \(MPDServer.protocolVersion)\nOK\n")
        let now = f.leader.nowPlaying
        #expect(now.track == 1 && now.state == .playing, "\(now)")
        #expect(now.positionSeconds < 2, "\(now.positionSeconds) s into the next track")
        // Back before the start: the start of the same track; past the end of the last: the list has played out.
        #expect(try exchange(f.mpd, "seekcur -1e300\nclose\n").hasSuffix("\nOK\n"))
        #expect(f.leader.nowPlaying.track == 1 && f.leader.nowPlaying.positionSeconds < 2)
        #expect(try exchange(f.mpd, "seekcur +1e300\nclose\n").hasSuffix("\nOK\n"))
        #expect(waitUntil(timeout: 5) { f.leader.nowPlaying.state == .stopped }, "\(f.leader.nowPlaying)")
        let status = try mpdStatus(f)
        #expect(status["state"] == "stop" && status["playlistlength"] == "2", "\(status)")
    }

    /// `move 0 9223372036854775807` ended the leader (`to + count` overflowed).
    @Test func mpdMoveToAHugePositionIsABadIndex() throws {
        let f = try makeFixture()
        defer { f.leader.stop() }
        let reply = try exchange(f.mpd, "move 0 9223372036854775807\nmove 0:2 9223372036854775807\nmoveid 1 9223372036854775807\nclose\n")
        #expect(reply == "OK MPD \(MPDServer.protocolVersion)\n" + String(repeating: "ACK [2@0] {move} Bad song index\n", count: 2)
                + "ACK [2@0] {moveid} Bad song index\n")
        #expect(f.leader.queue.entries.map(\.uri) == f.files)
        #expect(try mpdStatus(f)["state"] == "play")
    }

    /// `add "FILE" +9223372036854775807` ended the leader (`current + 1 + n` overflowed).
    @Test func mpdAddAtAHugeRelativePositionIsABadPosition() throws {
        let f = try makeFixture()
        defer { f.leader.stop() }
        let file = f.files[0]
        let reply = try exchange(f.mpd, "add \"\(file)\" +9223372036854775807\naddid \"\(file)\" +9223372036854775807\n"
                                 + "add \"\(file)\" -9223372036854775807\nadd \"\(file)\" 9223372036854775807\nadd \"\(file)\" +0\nclose\n")
        #expect(reply == "OK MPD \(MPDServer.protocolVersion)\nACK [2@0] {add} Bad position\nACK [2@0] {addid} Bad position\n"
                + "ACK [2@0] {add} Bad position\nACK [2@0] {add} Bad position\nOK\n")
        // Only the last one added: after the current song.
        #expect(f.leader.queue.entries.map(\.uri) == [file, file, f.files[1]])
        #expect(try mpdStatus(f)["playlistlength"] == "3")
    }

    /// An absolute path outside the music folders is refused before it is
    /// read: `add "/"` walked the whole file system first, and the answer
    /// told a client whether a file outside exists (Access denied, or No
    /// such song).
    @Test func mpdPathsOutsideTheMusicAreRefusedAlikeWhetherOrNotTheyExist() throws {
        let f = try makeFixture()
        defer { f.leader.stop() }
        let outside = makeTemporaryDirectory("outside")
        writeFile(outside + "/there.wav", wavImage(counterFrames(count: 480)))
        let reply = try exchange(f.mpd, "add \"\(outside)/there.wav\"\nadd \"\(outside)/not-there.wav\"\nadd \"file://\(outside)\"\nclose\n")
        #expect(reply == "OK MPD \(MPDServer.protocolVersion)\n"
                + "ACK [4@0] {add} Access denied: \(outside)/there.wav is outside the music folder\n"
                + "ACK [4@0] {add} Access denied: \(outside)/not-there.wav is outside the music folder\n"
                + "ACK [4@0] {add} Access denied: file://\(outside) is outside the music folder\n")
        #expect(f.leader.queue.count == 2)
    }

    /// Snapcast's `Stream.Control` `setPosition` 1e300 (and `seek` by
    /// ±1e300) ended the leader, like MPD's seek: the same clamp now.
    @Test func snapcastSetPositionFarPastTheEndMovesOn() throws {
        let f = try makeFixture()
        defer { f.leader.stop() }
        let reply = try snapcast(f, "Stream.Control", #"{"id":"main","command":"setPosition","params":{"position":1e300}}"#)
        #expect(reply?["result"] == .string("ok"), "\(String(describing: reply))")
        // Snapcast's reply does not wait for the change to be heard (100 ms on).
        #expect(waitUntil(timeout: 2) { f.leader.nowPlaying.track == 1 }, "\(f.leader.nowPlaying)")
        #expect(f.leader.nowPlaying.positionSeconds < 2, "\(f.leader.nowPlaying)")
        let back = try snapcast(f, "Stream.Control", #"{"id":"main","command":"seek","params":{"offset":-1e300}}"#)
        #expect(back?["result"] == .string("ok"))
        usleep(300_000)
        #expect(f.leader.nowPlaying.track == 1 && f.leader.nowPlaying.positionSeconds < 2, "\(f.leader.nowPlaying)")
        // Not a number of seconds ≥ 0: the documented error, nothing done.
        let negative = try snapcast(f, "Stream.Control", #"{"id":"main","command":"setPosition","params":{"position":-1}}"#)
        #expect(negative?["error"]?["code"] == .number(-32602))
        let status = try snapcast(f, "Server.GetStatus", "{}")
        #expect(status?["result"]?["server"] != nil)
        #expect(try mpdStatus(f)["song"] == "1")
    }

    /// JSON-RPC gets the same clamp (it refused positions beyond 86,400 s
    /// with its own range): one check, in the player, for every surface.
    @Test func jsonRPCSeekFarPastTheEndMovesOnLikeTheOtherSurfaces() throws {
        let f = try makeFixture()
        defer { f.leader.stop() }
        let port = try #require(f.leader.controlEndpoint)
        let text = try exchange(port, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"player.seek\",\"params\":{\"position\":1e300}}\n"
                                + "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"player.seek\",\"params\":{\"by\":-1e300}}\n") { text in
            text.split(separator: "\n").contains { JSONValue.parsing(String($0))?["id"] == .number(2) }
        }
        let replies = text.split(separator: "\n").compactMap { JSONValue.parsing(String($0)) }.filter { $0["id"] != nil } // not the notifications
        #expect(replies.count == 2, "\(text)")
        #expect(replies.first?["result"]?["track"] == .number(1), "\(text)")
        #expect(replies.last?["result"]?["track"] == .number(1), "\(text)")
        #expect((replies.last?["result"]?["position"]?.number ?? 99) < 2, "\(text)")
    }

    /// The fuzz targets' way in (`InProcessControl`): the same answers as
    /// the ports give, without sockets.
    @Test func theInProcessSurfacesAnswerAsThePortsDo() throws {
        let control = InProcessControl()
        let f = try makeFixture(surfaces: control)
        defer { f.leader.stop() }
        let mpd = String(decoding: control.mpd(Array("seek 0 1e300\nmove 0 9223372036854775807\nstatus\n".utf8)), as: UTF8.self)
        #expect(mpd.hasPrefix("OK\nACK [2@0] {move} Bad song index\n"), "\(mpd)")
        #expect(mpd.contains("\nsong: 1\n") && mpd.hasSuffix("\nOK\n"), "\(mpd)")
        let rpc = try #require(control.jsonrpc(Array(#"{"jsonrpc":"2.0","id":7,"method":"queue.move","params":{"from":0,"to":5}}"#.utf8)))
        #expect(JSONValue.parsing(rpc)?["error"]?["message"] == .string("positions must be within 0…1"), "\(String(decoding: rpc, as: UTF8.self))")
        let negative = try #require(control.jsonrpc(Array(#"{"jsonrpc":"2.0","id":8,"method":"player.seek","params":{"position":-1}}"#.utf8)))
        #expect(JSONValue.parsing(negative)?["error"] == .object(["code": .number(-32602), "message": .string("position must be a number of seconds ≥ 0")]))
        let snap = try #require(control.snapcast(Array(#"{"id":1,"jsonrpc":"2.0","method":"Stream.Control","params":{"id":"main","command":"seek","params":{"offset":-1e300}}}"#.utf8)))
        #expect(JSONValue.parsing(snap)?["result"] == .string("ok"))
        #expect(waitUntil(timeout: 2) { f.leader.nowPlaying.track == 1 && f.leader.nowPlaying.positionSeconds < 2 }, "\(f.leader.nowPlaying)")
    }
}
