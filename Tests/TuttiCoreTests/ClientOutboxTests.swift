import Testing
import TuttiCore

@Suite struct ClientOutboxTests {
    private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }
    private func drain(_ o: inout ClientOutbox) -> [String] {
        var out: [String] = []
        while let b = o.next() { out.append(String(decoding: b, as: UTF8.self)) }
        return out
    }

    @Test func messagesComeOutInOrder() {
        var o = ClientOutbox()
        for i in 0..<5 { #expect(o.enqueue(bytes("m\(i)")) == .queued) }
        #expect(o.count == 5)
        #expect(o.queuedBytes == 10)
        #expect(drain(&o) == ["m0", "m1", "m2", "m3", "m4"])
        #expect(o.isEmpty && o.queuedBytes == 0)
    }

    @Test func aNewerStateReplacesTheWaitingOneAndGoesAfterReplies() {
        var o = ClientOutbox()
        _ = o.enqueue(bytes("rooms v=40"), key: "rooms.changed")
        _ = o.enqueue(bytes("reply 1"))
        _ = o.enqueue(bytes("player a"), key: "player.changed")
        #expect(o.enqueue(bytes("rooms v=50"), key: "rooms.changed") == .replaced)
        #expect(o.enqueue(bytes("player b"), key: "player.changed") == .replaced)
        // The latest state of each kind, once, after the reply queued before it.
        #expect(drain(&o) == ["reply 1", "rooms v=50", "player b"])
        #expect(o.coalesced == 2)
    }

    @Test func aSleepingClientHoldsOneMessagePerKind() {
        var o = ClientOutbox(limits: .init(maximumBytes: 1_000, maximumMessages: 8))
        // 39,000 changes from another client: the outbox never grows past the kinds there are.
        for i in 0..<39_000 {
            let kind = ["rooms.changed", "player.changed", "queue.changed"][i % 3]
            #expect(o.enqueue(bytes("\(kind) \(i)"), key: kind) != .overflow(reason: ""), "change \(i)")
        }
        #expect(o.count == 3)
        #expect(drain(&o) == ["rooms.changed 38997", "player.changed 38998", "queue.changed 38999"])
    }

    @Test func overflowIsReportedWithTheBacklog() {
        var o = ClientOutbox(limits: .init(maximumBytes: 100, maximumMessages: 3))
        for _ in 0..<3 { #expect(o.enqueue(bytes("0123456789")) == .queued) }
        guard case .overflow(let reason) = o.enqueue(bytes("x")) else { Issue.record("a fourth message must overflow"); return }
        #expect(reason.contains("3 messages (30 bytes)"), "\(reason)")
        var big = ClientOutbox(limits: .init(maximumBytes: 100, maximumMessages: 10))
        // One large reply to a client that keeps up is admitted; a second behind it is not.
        #expect(big.enqueue([UInt8](repeating: 1, count: 500)) == .queued)
        if case .overflow = big.enqueue([1]) {} else { Issue.record("a message behind an over-limit one must overflow") }
        #expect(big.next()?.count == 500)
        #expect(big.enqueue([1]) == .queued)
    }

    @Test func aClientThatNeverCatchesUpIsStalledAfterTheLimit() {
        let second: Int64 = 1_000_000_000
        var o = ClientOutbox(limits: .init(maximumBusyNanoseconds: 10 * second))
        // A client that keeps up: the writer drains each message; it is never busy for long.
        for t in 0..<100 {
            #expect(o.enqueue(bytes("m"), key: "rooms.changed", at: Int64(t) * second) == .queued)
            _ = o.next()
            o.finishedWriting()
            #expect(o.busySince == nil)
        }
        // A client that stopped reading: the writer is stuck on one message, newer states coalesce behind it.
        _ = o.enqueue(bytes("a"), key: "rooms.changed", at: 200 * second)
        _ = o.next() // being written, for ever
        for t in 201...210 { #expect(o.enqueue(bytes("b"), key: "rooms.changed", at: Int64(t) * second) != .closed) }
        guard case .stalled(let why) = o.enqueue(bytes("c"), key: "rooms.changed", at: 211 * second) else {
            Issue.record("11 s without catching up must be a stall"); return
        }
        #expect(why.hasPrefix("did not read for 11 s"), "\(why)")
        #expect(o.count == 1, "the newest state only, still")
    }

    @Test func closingDropsEverythingAndRefusesMore() {
        var o = ClientOutbox()
        _ = o.enqueue(bytes("a"))
        o.close()
        #expect(o.isEmpty && o.queuedBytes == 0)
        #expect(o.enqueue(bytes("b")) == .closed)
        #expect(o.next() == nil)
    }

    @Test func theConsumedPrefixIsCompacted() {
        var o = ClientOutbox(limits: .init(maximumBytes: 1 << 20, maximumMessages: 100_000))
        var sent = 0, received = 0
        for _ in 0..<50 {
            for _ in 0..<100 { _ = o.enqueue(bytes("\(sent)")); sent += 1 }
            for _ in 0..<99 { #expect(o.next() == bytes("\(received)")); received += 1 }
        }
        // First in, first out across every compaction; one left per round.
        #expect(o.count == 50)
        #expect(drain(&o) == (received..<sent).map { "\($0)" })
    }
}

@Suite struct GroupVolumeTests {
    @Test func theGroupIsItsLoudestRoomAndKeepsTheBalance() {
        #expect(GroupVolume.of([40, 20, 10]) == 40)
        #expect(GroupVolume.scaled([40, 20, 10], to: 80) == [80, 40, 20])
        #expect(GroupVolume.scaled([40, 20, 10], to: 20) == [20, 10, 5])
        #expect(GroupVolume.scaled([80, 40, 20], to: 40) == [40, 20, 10], "down and back up again keeps the ratios")
        #expect(GroupVolume.scaled([50, 25], to: 100) == [100, 50])
        #expect(GroupVolume.scaled([0, 0], to: 30) == [30, 30], "from silence every room takes the group's volume")
        #expect(GroupVolume.scaled([60, 30], to: 0) == [0, 0])
        #expect(GroupVolume.scaled([60, 30], to: 250) == [100, 50], "clamped to 100")
        #expect(GroupVolume.of([]) == 0 && GroupVolume.scaled([], to: 50) == [])
    }
}

@Suite struct GroupVolumeBalanceTests {
    @Test func aKeptBalanceSurvivesADragThroughSilence() throws {
        let b = try #require(GroupVolume.balance(of: [60, 30, 15]))
        // Down to 0 and back: the rooms return to their balance, not to one level.
        #expect(GroupVolume.scaled(balance: b, to: 0) == [0, 0, 0])
        #expect(GroupVolume.scaled(balance: b, to: 1) == [1, 1, 0])
        #expect(GroupVolume.scaled(balance: b, to: 60) == [60, 30, 15])
        #expect(GroupVolume.scaled(balance: b, to: 80) == [80, 40, 20])
        #expect(GroupVolume.balance(of: [0, 0]) == nil)
    }
}
