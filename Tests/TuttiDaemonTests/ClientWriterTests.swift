import Glibc
import Synchronization
import Testing
import TuttiCore
import TuttiNet
import TuttiTestSupport
@testable import TuttiDaemon
import TuttiSources
@testable import TuttiLeader
@testable import TuttiControlKit
@testable import TuttiMPD

/// A client's writer: replies written on the requester's thread when the
/// socket is free, and in order behind whatever is being written.
struct ClientWriterTests {
    /// What the fake socket received, and on which threads.
    final class Socket: Sendable {
        let written = Mutex<[[UInt8]]>([])
        let threads = Mutex<[pthread_t]>([])
        /// While set, a write waits (a client reading slowly).
        let held = Atomic<Bool>(false)

        func write(_ bytes: [UInt8]) {
            while held.load(ordering: .acquiring) { usleep(1_000) }
            let rest = kept.withLock { k in defer { k = [] }; return k }
            written.withLock { $0.append(rest + bytes) }
            threads.withLock { $0.append(pthread_self()) }
        }

        /// While false, the socket takes nothing without waiting.
        let free = Atomic<Bool>(true)
        /// At most this many bytes go at once; the rest is kept for the next `write`, as `TCPConnection` does.
        let takesAtOnce = Atomic<Int>(Int.max)
        let kept = Mutex<[UInt8]>([])

        func writeIfFree(_ bytes: [UInt8]) -> TCPConnection.QuickSend {
            guard free.load(ordering: .acquiring) else { return .notSent }
            let n = min(bytes.count, takesAtOnce.load(ordering: .acquiring))
            written.withLock { $0.append(Array(bytes[..<n])) }
            threads.withLock { $0.append(pthread_self()) }
            if n == bytes.count { return .sent }
            kept.withLock { $0 = Array(bytes[n...]) }
            return .started
        }

        var stream: [UInt8] { written.withLock { $0.flatMap { $0 } } }
    }

    func writer(_ socket: Socket) -> ClientWriter {
        ClientWriter(peer: "test", limits: ClientOutbox.Limits(), log: .silent, write: { socket.write($0) },
                     writeIfFree: { socket.writeIfFree($0) }, disconnect: {})
    }

    @Test func notificationsToAClientThatKeepsUpGoOnTheSendersThread() {
        let socket = Socket()
        let writer = writer(socket)
        for i in 0..<100 { writer.send([UInt8(i)], key: "player.status") }
        // All of them, in order, none coalesced: each went before the next was offered.
        #expect(socket.stream == (0..<100).map { UInt8($0) })
        // No writer thread wrote any of them.
        #expect(socket.threads.withLock { $0.allSatisfy { pthread_equal($0, pthread_self()) != 0 } })
        writer.close(reason: "connection closed")
    }

    @Test func whatTheSocketCannotTakeAtOnceIsWrittenInOrderBehindIt() {
        let socket = Socket()
        let writer = writer(socket)
        socket.free.store(false, ordering: .releasing)
        socket.held.store(true, ordering: .releasing)
        writer.send([1])
        writer.send([2])
        socket.free.store(true, ordering: .releasing)
        writer.send([3]) // behind the two waiting, though the socket is free now
        #expect(socket.stream.isEmpty)
        socket.held.store(false, ordering: .releasing)
        writer.flush()
        #expect(socket.stream == [1, 2, 3])
        // Caught up: the next goes on this thread again.
        writer.send([4])
        #expect(socket.stream == [1, 2, 3, 4])
        #expect(pthread_equal(socket.threads.withLock { $0.last! }, pthread_self()) != 0)
        #expect(socket.threads.withLock { $0.prefix(3).allSatisfy { pthread_equal($0, pthread_self()) == 0 } })
        writer.close(reason: "connection closed")
    }

    @Test func aMessageTheSocketTookPartOfIsFinishedBeforeTheNext() {
        let socket = Socket()
        let writer = writer(socket)
        socket.takesAtOnce.store(2, ordering: .releasing)
        writer.send([1, 2, 3, 4, 5])
        socket.takesAtOnce.store(Int.max, ordering: .releasing)
        writer.send([6, 7])
        writer.reply([8])
        writer.flush()
        #expect(socket.stream == [1, 2, 3, 4, 5, 6, 7, 8])
        writer.close(reason: "connection closed")
    }

    @Test func aReplyToAnIdleClientIsWrittenOnTheRequestersThread() {
        let socket = Socket()
        let writer = ClientWriter(peer: "test", limits: ClientOutbox.Limits(), log: .silent, write: { socket.write($0) }, disconnect: {})
        writer.reply(Array("OK\n".utf8))
        // Written before `reply` returned, by this thread.
        #expect(socket.written.withLock { $0 } == [Array("OK\n".utf8)])
        #expect(socket.threads.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } } == [true])
        writer.close(reason: "connection closed")
    }

    @Test func aReplyWaitsBehindWhatIsBeingWritten() {
        let socket = Socket()
        let writer = ClientWriter(peer: "test", limits: ClientOutbox.Limits(), log: .silent, write: { socket.write($0) }, disconnect: {})
        socket.held.store(true, ordering: .releasing)
        writer.send([1])
        writer.send([2])
        writer.reply([3]) // queued: the writer thread holds the socket
        #expect(socket.written.withLock { $0 }.isEmpty)
        socket.held.store(false, ordering: .releasing)
        writer.flush()
        #expect(socket.written.withLock { $0 } == [[1], [2], [3]])
        // A big reply always goes through the writer's thread.
        writer.reply([UInt8](repeating: 7, count: ClientWriter.directBytes + 1))
        writer.reply([4])
        writer.flush()
        #expect(socket.written.withLock { $0 }.map(\.count) == [1, 1, 1, ClientWriter.directBytes + 1, 1])
        #expect(socket.written.withLock { $0 }.last == [4])
        writer.close(reason: "connection closed")
    }
}

/// The AirPlay receivers' folder holds shairport-sync's config, which it obeys:
/// only a real directory of this user's that nobody else can write is used.
@Suite struct AirPlayDirectoryTests {
    @Test func onlyAPrivateDirectoryOfThisUsersIsUsed() throws {
        let dir = makeTemporaryDirectory()
        try AirPlayReceivers.makePrivateDirectory(dir + "/a/airplay")
        var info = stat()
        #expect(stat(dir + "/a/airplay", &info) == 0 && info.st_mode & 0o777 == 0o700)
        try AirPlayReceivers.makePrivateDirectory(dir + "/a/airplay") // its own, again: accepted
        mkdir(dir + "/open", 0o777); chmod(dir + "/open", 0o777)
        #expect(throws: AirPlayDirectoryError.self) { try AirPlayReceivers.makePrivateDirectory(dir + "/open") }
        mkdir(dir + "/target", 0o700); symlink(dir + "/target", dir + "/link")
        #expect(throws: AirPlayDirectoryError.self) { try AirPlayReceivers.makePrivateDirectory(dir + "/link") }
    }
}
