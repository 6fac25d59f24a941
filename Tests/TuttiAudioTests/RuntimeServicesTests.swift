import Foundation
import Synchronization
import Testing
import TuttiSystem

/// The runtime's small pieces that the leader's services are built of.
@Suite struct RuntimeServicesTests {
    /// Threads of this process whose name is `name` (/proc/self/task/*/comm).
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) == name
        }.count
    }

    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }

    /// An on-demand worker keeps no thread while idle, runs every round
    /// that was asked for (work queued while it lingers or as it ends is
    /// never stranded), and joins its thread at stop.
    @Test func onDemandWorkerRunsOnlyWhileThereIsWork() throws {
        let queued = Mutex<[Int]>([])
        let done = Mutex<[Int]>([])
        let worker = OnDemandWorker("test", threadName: "tutti-ondemand", lingerSeconds: 0.05) {
            let batch = queued.withLock { q in defer { q.removeAll() }; return q }
            done.withLock { $0.append(contentsOf: batch) }
            return nil
        }
        worker.start()
        #expect(Self.threads(named: "tutti-ondemand") == 0)
        #expect(!worker.isRunning)

        // 200 items, each queued then poked, in bursts with pauses longer than the linger:
        // the thread ends and starts again, and nothing is left behind.
        for burst in 0..<10 {
            for k in 0..<20 {
                queued.withLock { $0.append(burst * 20 + k) }
                worker.poke()
            }
            if burst % 2 == 1 { usleep(80_000) }
        }
        #expect(Self.waitUntil(seconds: 5) { done.withLock { $0.count } == 200 })
        #expect(done.withLock { $0 } == Array(0..<200))
        // Idle again: the thread ends after lingering.
        #expect(Self.waitUntil(seconds: 5) { !worker.isRunning && Self.threads(named: "tutti-ondemand") == 0 })

        // A round that asks for a later one gets it without a poke.
        let rounds = Mutex(0)
        let paced = OnDemandWorker("paced", threadName: "tutti-paced", lingerSeconds: 0.05) {
            let n = rounds.withLock { $0 += 1; return $0 }
            return n < 5 ? Condition.now() + 10_000_000 : nil
        }
        paced.poke()
        #expect(Self.waitUntil(seconds: 5) { rounds.withLock { $0 } == 5 })
        paced.stop()
        // A thread whose body returned can be listed in /proc a moment longer, until the kernel reaps it.
        #expect(Self.waitUntil(seconds: 1) { Self.threads(named: "tutti-paced") == 0 })

        // Stop joins a running thread, and a poke after stop starts nothing.
        queued.withLock { $0.append(1000) }
        worker.poke()
        worker.stop()
        #expect(!worker.isRunning)
        worker.poke()
        #expect(!worker.isRunning)
        #expect(Self.waitUntil(seconds: 1) { Self.threads(named: "tutti-ondemand") == 0 })
    }

    /// A one-shot program returns when it exits, reports its status, and
    /// is killed at its timeout without waiting for it to end by itself.
    @Test func oneShotProgramWaitsForItsExitAndItsTimeout() throws {
        let start = Date()
        try OneShotProgram.run("/bin/sh", ["-c", "sleep 0.2"], timeoutSeconds: 10)
        let ran = Date().timeIntervalSince(start)
        #expect(ran >= 0.2 && ran < 5, "took \(ran) s")

        #expect(throws: OneShotProgram.Failure.failed(program: "/bin/sh", status: 3)) {
            try OneShotProgram.run("/bin/sh", ["-c", "exit 3"], timeoutSeconds: 10)
        }

        let killing = Date()
        #expect(throws: OneShotProgram.Failure.timedOut(program: "/bin/sh", seconds: 0.3)) {
            try OneShotProgram.run("/bin/sh", ["-c", "sleep 30"], timeoutSeconds: 0.3)
        }
        let waited = Date().timeIntervalSince(killing)
        #expect(waited >= 0.3 && waited < 10, "took \(waited) s")
    }
}
