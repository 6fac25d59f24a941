import Foundation
import Glibc
import Testing
import TuttiAudio
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// A follower's media keys act on the leader and on that room, through the
/// real evdev reader (fed `struct input_event` records through a FIFO).
@Suite(.serialized) struct ButtonTests {
    /// One 24-byte `struct input_event`: timeval, type, code, value.
    func event(_ type: UInt16, _ code: UInt16, _ value: Int32, at t: Double) -> [UInt8] {
        var bytes: [UInt8] = []
        func le<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
        le(Int64(t)); le(Int64((t - t.rounded(.down)) * 1e6)); le(type); le(code); le(value)
        return bytes
    }

    @Test func mediaKeysOnAFollowerReachTheLeaderAndTheRoom() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/a.wav", wavImage(counterFrames(count: 48_000 * 8)))
        writeFile(dir + "/b.wav", wavImage(counterFrames(count: 48_000 * 8, from: 100)))
        let leader = try startLeader(files: [dir + "/a.wav", dir + "/b.wav"])
        defer { leader.stop() }
        let follower = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        defer { follower.stop() }
        #expect(waitUntil(timeout: 5) { follower.connected })

        let fifo = dir + "/keys"
        #expect(mkfifo(fifo, 0o600) == 0)
        writeFile(dir + "/buttons.conf", Array("# a USB media-key dongle\ninput \(fifo)\n".utf8))
        // Hold a writing end open first (O_RDWR never blocks on a FIFO), so the
        // reader sees a device that stays open rather than an immediate end.
        let writer = open(fifo, O_RDWR)
        #expect(writer >= 0)
        defer { close(writer) }
        let buttons = try ButtonController(configPath: dir + "/buttons.conf", log: testLog) { command in follower.send(command) }
        defer { buttons.stop() }

        // Events are written as a person presses keys: a FIFO has no kernel
        // timestamps on the monotonic clock, so the reader times them on arrival.
        func key(_ code: UInt16) {
            let t = Date().timeIntervalSince1970
            for (value, pause) in [(Int32(1), 80_000 as UInt32), (0, 450_000)] {
                let bytes = event(1, code, value, at: t) + event(0, 0, 0, at: t)
                _ = bytes.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
                usleep(pause)
            }
        }
        key(163)              // KEY_NEXTSONG
        key(114); key(114)    // KEY_VOLUMEDOWN twice
        #expect(waitUntil(timeout: 4) { leader.nowPlaying.track == 1 }, "KEY_NEXTSONG skipped to the next track")
        #expect(waitUntil(timeout: 4) { leader.settings(of: "den").volume == 90 }, "two KEY_VOLUMEDOWN presses: 100 → 90")
        #expect(waitUntil(timeout: 2) { follower.settings.volume == 90 })
        #expect(leader.settings(of: "other").volume == 100, "only that room changed")
    }

    /// A button acts on its room's group: next in a room of its own skips
    /// that group's track, not the main group's; party pulls every room
    /// into that group and a second press puts them back.
    @Test func buttonsActOnTheirRoomsGroupAndPartyToggles() throws {
        let dir = makeTemporaryDirectory()
        for (i, name) in ["a", "b", "c"].enumerated() { writeFile(dir + "/\(name).wav", wavImage(counterFrames(count: 48_000 * 8, from: i * 500_000))) }
        let leader = try startLeader(files: [dir + "/a.wav", dir + "/b.wav"])
        defer { leader.stop() }
        let den = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/den.raw", ppm: 0, delayMilliseconds: 0))
        let hall = try startFollower(leader: leader.endpoint, name: "hall", output: .file(path: dir + "/hall.raw", ppm: 0, delayMilliseconds: 0))
        defer { den.stop(); hall.stop() }
        #expect(waitUntil(timeout: 5) { den.connected && hall.connected && leader.followerNames.count == 2 })
        _ = try leader.createGroup(name: "Den", rooms: ["den"])
        _ = try leader.perform(.add(uris: [dir + "/c.wav", dir + "/a.wav"], next: false), group: "Den")
        _ = try leader.perform(.play, group: "Den")
        den.send(.next)
        #expect(waitUntil(timeout: 4) { (try? leader.nowPlaying(group: "Den").track) == 1 }, "next in the den skipped the den's track")
        #expect(leader.nowPlaying.track == 0, "the main group did not move")
        hall.send(.party)
        #expect(waitUntil(timeout: 4) { leader.partyActive && leader.group(ofRoom: "den").id == "main" }, "party from the hall: every room plays the hall's group")
        den.send(.party)
        #expect(waitUntil(timeout: 4) { !leader.partyActive && leader.group(ofRoom: "den").name == "Den" }, "a second party press puts the den back")
    }
}
