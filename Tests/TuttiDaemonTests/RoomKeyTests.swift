import Foundation
import Testing
import TuttiAuth
import TuttiCore
import TuttiDaemon
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// The legacy room key, mixed into the v7 handshake as an Argon2id-stretched
/// pre-shared key (the leader proves it first); a speaker with the wrong
/// key, no key, or too old to prove one is refused with a message on both sides.
@Suite(.serialized) struct RoomKeyTests {
    static let key = try! RoomKey("correct horse battery staple")

    func leader(key: RoomKey?, log: CapturingLog) throws -> Leader {
        try startLeader(files: [], log: log.logger) { c in c.roomKey = key }
    }

    @Test func theRightKeyJoinsAndPlays() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/t.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 1, amplitude: 0.5))))
        let log = CapturingLog()
        let l = try leader(key: Self.key, log: log)
        defer { l.stop() }
        let f = try startFollower(leader: l.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0)) { c in
            c.roomKey = try? RoomKey("correct horse battery staple\n") // a key file's newline is no part of the key
        }
        #expect(waitUntil(timeout: 5) { l.followerNames == ["den"] && f.connected })
        _ = try l.perform(.add(uris: [dir + "/t.wav"], next: false))
        _ = try l.perform(.playIndex(0))
        // Played until the room has heard 40,000 non-zero samples (or 10 s).
        waitUntil(timeout: 10) { readRaw(dir + "/den.raw").filter { $0 != 0 }.count > 40_000 }
        f.stop()
        let played = readRaw(dir + "/den.raw")
        #expect(played.filter { $0 != 0 }.count > 40_000, "the keyed room played \(played.filter { $0 != 0 }.count) non-zero samples")
    }

    @Test func aWrongKeyNoKeyAndAnOldSpeakerAreRefusedWithAReasonOnBothSides() throws {
        let log = CapturingLog()
        let l = try leader(key: Self.key, log: log)
        defer { l.stop() }
        let wrong = try startFollower(leader: l.endpoint, name: "wrong", output: .file(path: "/dev/null", ppm: 0, delayMilliseconds: 0)) { c in
            c.roomKey = try? RoomKey("incorrect horse")
        }
        let none = try startFollower(leader: l.endpoint, name: "none", output: .file(path: "/dev/null", ppm: 0, delayMilliseconds: 0))
        let old = try startFollower(leader: l.endpoint, name: "old", output: .file(path: "/dev/null", ppm: 0, delayMilliseconds: 0)) { c in
            c.protocolVersion = 3
        }
        defer { wrong.stop(); none.stop(); old.stop() }
        #expect(waitUntil(timeout: 5) { [wrong, none, old].allSatisfy { $0.lastFailure != nil } })
        usleep(300_000)
        #expect(l.followerNames.isEmpty, "joined: \(l.followerNames)")
        #expect(wrong.lastFailure?.contains("wrong room key") == true, "\(wrong.lastFailure ?? "")")
        #expect(none.lastFailure?.contains("needs a room key") == true, "\(none.lastFailure ?? "")")
        #expect(old.lastFailure?.contains("cannot prove one") == true, "\(old.lastFailure ?? "")")
        let lines = log.lines.joined(separator: "\n")
        #expect(lines.contains("refused 'wrong'") && lines.contains("wrong room key"), "\(lines)")
        #expect(lines.contains("refused 'none'") && lines.contains("this speaker has no room key"), "\(lines)")
        #expect(lines.contains("refused 'old'") && lines.contains("protocol v3"), "\(lines)")
        #expect(!wrong.connected && !none.connected && !old.connected)
    }

    @Test func aKeyedSpeakerRefusesALeaderWithoutTheKey() throws {
        let log = CapturingLog()
        let open = try leader(key: nil, log: log)
        defer { open.stop() }
        #expect(log.lines.contains { $0.contains("no room key: any device on the network can join") })
        let f = try startFollower(leader: open.endpoint, name: "den", output: .file(path: "/dev/null", ppm: 0, delayMilliseconds: 0)) { c in
            c.roomKey = Self.key
        }
        defer { f.stop() }
        #expect(waitUntil(timeout: 5) { f.lastFailure != nil })
        #expect(f.lastFailure?.contains("asks no room key") == true, "\(f.lastFailure ?? "")")
        #expect(!f.connected)
        // And one whose key differs from the leader's is refused by the leader before it hears a proof.
        let other = try leader(key: try RoomKey("another home's key"), log: CapturingLog())
        defer { other.stop() }
        let g = try startFollower(leader: other.endpoint, name: "den2", output: .file(path: "/dev/null", ppm: 0, delayMilliseconds: 0)) { c in
            c.roomKey = Self.key
        }
        defer { g.stop() }
        #expect(waitUntil(timeout: 5) { g.lastFailure != nil })
        #expect(other.followerNames.isEmpty && !g.connected)
    }

    @Test func theKeyIsStretchedAlikeOnBothSidesAndKeysAreChecked() throws {
        // The handshake's pre-shared key: the same for the same passphrase (a key file's newline dropped), 32 bytes, not the passphrase.
        let psk = Self.key.stretched()
        let sameKeyFromAFile = try RoomKey("correct horse battery staple\n").stretched(), other = try RoomKey("another key!").stretched()
        #expect(psk.count == 32 && psk == sameKeyFromAFile)
        #expect(psk != other)
        #expect(psk != Array("correct horse battery staple".utf8.prefix(32)))
        #expect(throws: RoomKeyError.tooShort) { try RoomKey("short") }
        // The config file and flags: a key, or a file holding one.
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/key", Array("  correct horse battery staple\n".utf8))
        let parsed = try #require(try FollowerConfiguration.parse(["--leader", "127.0.0.1:1", "--room-key-file", dir + "/key"]))
        let loaded = try parsed.0.loadingRoomKey()
        let k = try #require(loaded.roomKey)
        #expect(k.stretched() == psk)
        #expect(throws: UsageError.self) { try FollowerConfiguration.parse(["--room-key", "abc"]) }
    }
}
