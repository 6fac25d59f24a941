import Glibc
import Synchronization
import Testing
import TuttiCore
@testable import TuttiDaemon

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
            written.withLock { $0.append(bytes) }
            threads.withLock { $0.append(pthread_self()) }
        }
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
