import Testing
import TuttiCore

@Suite("Play queue rules") struct PlayQueueTests {
    func queue(_ n: Int, seed: UInt64 = 7) -> PlayQueue {
        var q = PlayQueue(seed: seed)
        q.add((0..<n).map { "t\($0)" })
        return q
    }

    func playOrder(_ q: PlayQueue) -> [String] { q.order.map { q.entries[$0].uri } }

    @Test func idsAreUniqueAndStable() {
        var q = queue(3)
        #expect(q.entries.map(\.id) == [1, 2, 3])
        q.remove(at: 1)
        q.add(["x"])
        #expect(q.entries.map(\.id) == [1, 3, 4])
        #expect(q.index(ofID: 4) == 2)
        #expect(q.index(ofID: 2) == nil)
    }

    @Test func repeatOffStopsAfterTheLastTrack() {
        var q = queue(3)
        q.select(0)
        var played = ["t0"]
        while case .play(let i) = q.stepForward(manual: false) { q.apply(.play(index: i)); played.append(q.entries[i].uri) }
        #expect(played == ["t0", "t1", "t2"])
        #expect(q.stepForward(manual: false) == .stop)
    }

    @Test func repeatAllWrapsAndRepeatOneRepeatsButManualNextMovesOn() {
        var q = queue(3)
        q.select(2)
        q.repeatMode = .all
        #expect(q.stepForward(manual: false) == .play(index: 0))
        q.repeatMode = .one
        #expect(q.stepForward(manual: false) == .restart(index: 2))
        #expect(q.stepForward(manual: true) == .play(index: 0), "manual next on the last track with repeat one wraps")
        q.select(1)
        #expect(q.stepForward(manual: true) == .play(index: 2))
        #expect(RepeatMode.off.next == .all && RepeatMode.all.next == .one && RepeatMode.one.next == .off)
    }

    @Test func singleStopsAtTheEndButRepeatOneRepeatsAndNextMovesOn() {
        var q = queue(3)
        q.select(0)
        q.single = .on
        #expect(q.stepForward(manual: false) == .stop)
        #expect(q.stepForward(manual: true) == .play(index: 1), "a manual next still moves on")
        q.repeatMode = .one
        #expect(q.stepForward(manual: false) == .restart(index: 0), "repeat one wins over single")
        let saved = PlayQueue(entries: q.entries, order: q.order, current: 0, shuffle: false, repeatMode: .off, single: .oneshot, consume: true, seed: 1)
        #expect(saved.single == .oneshot && saved.consume)
    }

    @Test func previousRestartsAfterThreeSeconds() {
        var q = queue(3)
        q.select(1)
        #expect(q.stepBack(elapsedSeconds: 3.5) == .restart(index: 1))
        #expect(q.stepBack(elapsedSeconds: 1) == .play(index: 0))
        q.select(0)
        #expect(q.stepBack(elapsedSeconds: 1) == .restart(index: 0), "first track: restart")
        q.repeatMode = .all
        #expect(q.stepBack(elapsedSeconds: 1) == .play(index: 2), "repeat all wraps backwards")
    }

    @Test func shuffleKeepsCurrentAndPermutesTheRest() {
        var q = queue(20)
        q.select(5)
        q.setShuffle(true)
        #expect(q.current == 5)
        #expect(q.order.first == 5)
        #expect(Set(q.order) == Set(0..<20) && q.order.count == 20)
        #expect(q.order != [5] + (0..<20).filter { $0 != 5 }, "actually shuffled")
        // Playing through visits every entry exactly once.
        var seen = [q.current!]
        while case .play(let i) = q.stepForward(manual: false) { q.apply(.play(index: i)); seen.append(i) }
        #expect(seen.sorted() == Array(0..<20))
        // Off again: user order back, current unchanged.
        let playing = q.current
        q.setShuffle(false)
        #expect(q.order == Array(0..<20) && q.current == playing)
    }

    @Test func shuffleIsDeterministicForASeed() {
        var a = queue(10, seed: 42), b = queue(10, seed: 42), c = queue(10, seed: 43)
        a.select(0); b.select(0); c.select(0)
        a.setShuffle(true); b.setShuffle(true); c.setShuffle(true)
        #expect(a.order == b.order)
        #expect(a.order != c.order)
    }

    @Test func addingWhileShuffledPlaysInThisRound() {
        var q = queue(10)
        q.select(0)
        q.setShuffle(true)
        // Play three entries, then add two.
        for _ in 0..<3 { if case .play(let i) = q.stepForward(manual: false) { q.apply(.play(index: i)) } }
        let position = q.order.firstIndex(of: q.current!)!
        let ids = q.add(["new1", "new2"])
        for id in ids {
            let index = q.index(ofID: id)!
            #expect(q.order.firstIndex(of: index)! > position, "added entries are still to come")
        }
        #expect(q.order.count == 12 && Set(q.order) == Set(0..<12))
    }

    @Test func insertNextPlaysRightAfterCurrentEvenShuffled() {
        for shuffled in [false, true] {
            var q = queue(6)
            q.select(2)
            q.setShuffle(shuffled)
            q.insertNext(["a", "b"])
            #expect(q.entries[q.current!].uri == "t2")
            guard case .play(let i) = q.stepForward(manual: false) else { Issue.record("no next"); continue }
            #expect(q.entries[i].uri == "a")
            q.apply(.play(index: i))
            guard case .play(let j) = q.stepForward(manual: false) else { Issue.record("no next"); continue }
            #expect(q.entries[j].uri == "b")
            #expect(q.entries.map(\.uri)[3...4] == ["a", "b"], "user order too")
        }
    }

    @Test func removeAndMoveKeepCurrentAndOrderConsistent() {
        var q = queue(5)
        q.select(3)
        q.remove(at: 1)
        #expect(q.entries.map(\.uri) == ["t0", "t2", "t3", "t4"])
        #expect(q.currentEntry?.uri == "t3")
        #expect(q.order == [0, 1, 2, 3])
        q.move(from: 2, to: 0)
        #expect(q.entries.map(\.uri) == ["t3", "t0", "t2", "t4"])
        #expect(q.currentEntry?.uri == "t3")
        q.move(from: 1, to: 3)
        #expect(q.entries.map(\.uri) == ["t3", "t2", "t4", "t0"])
        #expect(q.currentEntry?.uri == "t3")
        q.remove(at: 0)
        #expect(q.current == nil, "removing the current entry leaves none")
        #expect(q.stepForward(manual: false) == .play(index: 0))
        q.clear()
        #expect(q.isEmpty && q.stepForward(manual: true) == .stop && q.stepBack(elapsedSeconds: 0) == .stop)
    }

    @Test func moveWhileShuffledKeepsPlayOrderOfTheSameEntries() {
        var q = queue(8)
        q.select(0)
        q.setShuffle(true)
        let before = playOrder(q)
        q.move(from: 6, to: 1)
        #expect(playOrder(q) == before)
        #expect(q.currentEntry?.uri == "t0")
    }
}
