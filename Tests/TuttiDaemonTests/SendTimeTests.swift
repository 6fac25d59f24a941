import Foundation
import Synchronization
import Testing
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// v8: the leader's send time before each write of the stream, for speakers
/// that announced v8 only; a v8 speaker still joins a v7 leader.
@Suite("Send times on the stream (protocol v8)")
struct SendTimeTests {
    @Test("A v7 speaker plays beside a v8 one; only the v8 one is sent send times, and its clock model uses them")
    func olderSpeakerStillPlays() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/count.wav", wavImage(counterFrames(count: 48_000 * 2)))
        let leader = try startLeader(files: [dir + "/count.wav"], codec: .opus, loop: true)
        defer { leader.stop() }
        let old = try startFollower(leader: leader.endpoint, name: "old", output: .file(path: dir + "/old.raw", ppm: 0, delayMilliseconds: 0)) { c in
            c.protocolVersion = WireProtocol.sendTimeVersion - 1
        }
        defer { old.stop() }
        let new = try startFollower(leader: leader.endpoint, name: "new", output: .file(path: dir + "/new.raw", ppm: 0, delayMilliseconds: 0))
        defer { new.stop() }
        #expect(waitUntil(timeout: 10) { old.engine.statistics.playing && new.engine.statistics.playing })
        // Two writes of two chunks a second... 25 a second once the buffer is full: well over 20 within a few seconds.
        #expect(waitUntil(timeout: 10) { new.streamArrivals >= 20 })
        #expect(old.streamArrivals == 0)
        #expect(old.connectionCount == 1 && old.connected, "the v7 speaker was never closed on an unknown message")
        #expect(Set(leader.followerNames) == ["old", "new"])
    }

    @Test("A v8 speaker refused by a v7 leader says hello as v7 at its next attempt")
    func newerSpeakerGoesDownToAnOlderLeader() throws {
        let listener = try TCPListener(endpoint: Endpoint(host: "127.0.0.1", port: 0))
        defer { listener.close() }
        let hellos = Hellos()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            // What a v7 leader does with a hello it does not speak: reject, in the clear, then close.
            for _ in 0..<2 {
                guard let c = try? listener.accept() else { return }
                if case .hello(let version, _)? = try? MessageReader(connection: c).next() {
                    hellos.versions.withLock { $0.append(version) }
                }
                let reason = "protocol version mismatch: follower speaks v8, leader speaks v7"
                try? c.send(Message.reject(version: 7, reason: reason).encoded())
                c.close()
            }
        }
        let dir = makeTemporaryDirectory()
        let f = try startFollower(leader: listener.endpoint, name: "new", output: .file(path: dir + "/x.raw", ppm: 0, delayMilliseconds: 0))
        defer { f.stop() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(hellos.versions.withLock { $0 } == [WireProtocol.version, 7])
        #expect(f.helloVersion == 7)
    }
}

/// The hellos a fake leader saw (its thread writes, the test reads).
final class Hellos: Sendable {
    let versions = Mutex<[UInt16]>([])
}
