import Testing
import TuttiCore

/// The pure half of the managed AirPlay receivers: the metadata pipe's
/// items, what a session means for the group, the receivers' names and
/// ports, the restart delays, and the transport's take-over (`cue`).
@Suite struct AirPlayReceiverTests {
    static func item(_ type: String, _ code: String, _ data: [UInt8] = []) -> String {
        func hex(_ s: String) -> String { s.utf8.map { String($0, radix: 16) }.joined() }
        var s = "<item><type>\(hex(type))</type><code>\(hex(code))</code><length>\(data.count)</length>"
        if !data.isEmpty { s += "\n<data encoding=\"base64\">\n\(Base64.encode(data))</data>" }
        return s + "</item>\n"
    }

    @Test func itemsAreReadInAnyPiecesWithTheirData() {
        let art: [UInt8] = (0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let text = Self.item("ssnc", "pbeg") + Self.item("core", "minm", Array("Tone 440".utf8)) + Self.item("ssnc", "PICT", art)
        var reader = AirPlayMetadataReader()
        var items: [AirPlayMetadataItem] = []
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count { // pieces of 1, 2, 3 … 37 bytes
            let n = min(bytes.count - i, 1 + i % 37)
            items += reader.feed(bytes[i..<(i + n)])
            i += n
        }
        #expect(items.map(\.code) == ["pbeg", "minm", "PICT"])
        #expect(items[0].type == "ssnc" && items[0].data.isEmpty)
        #expect(items[1].text == "Tone 440")
        #expect(items[2].data == art)
        #expect(reader.skipped == 0)
    }

    @Test func badItemsAreSkippedAndTheReaderStaysBounded() {
        var reader = AirPlayMetadataReader(maximumDataBytes: 1_000)
        let good = Self.item("core", "asar", Array("Artist".utf8))
        let wrongLength = "<item><type>636f7265</type><code>6d696e6d</code><length>9</length><data encoding=\"base64\">SGVsbG8=</data></item>"
        let badHex = "<item><type>zz</type><code>6d696e6d</code><length>0</length></item>"
        let huge = "<item><type>73736e63</type><code>50494354</code><length>999999</length><data encoding=\"base64\">" + String(repeating: "QUFB", count: 2_000)
        var items = reader.feed(Array(("garbage" + wrongLength + badHex + huge + "</data></item>" + good).utf8))
        #expect(items.map(\.text) == ["Artist"])
        #expect(reader.skipped == 3)
        // Endless text with no item end: nothing is kept beyond the bound.
        for _ in 0..<100 { items = reader.feed(Array(("<item>" + String(repeating: "x", count: 1_000)).utf8)) }
        #expect(items.isEmpty)
        items = reader.feed(Array(good.utf8))
        #expect(items.map(\.text) == ["Artist"])
        #expect(Base64.decode(Array("SGVs\nbG8=".utf8)) == Array("Hello".utf8))
        #expect(Base64.decode(Array("SG=Vs".utf8)) == nil)
    }

    @Test func aSessionTakesOverShowsNowPlayingAndReleasesAfterAGrace() {
        var s = AirPlaySession(releaseGrace: 1_000)
        func feed(_ type: String, _ code: String, _ text: String = "", at now: Int64 = 0) -> [AirPlaySession.Action] {
            s.handle(AirPlayMetadataItem(type: type, code: code, data: Array(text.utf8)), now: now)
        }
        #expect(feed("ssnc", "snam", "Anna's iPhone").isEmpty)
        #expect(feed("ssnc", "clip", "192.168.1.20").isEmpty)
        #expect(feed("ssnc", "dapo", "3689").isEmpty)
        #expect(feed("ssnc", "acre", "1234567890").isEmpty)
        #expect(feed("ssnc", "pbeg") == [.takeOver, .nowPlaying])
        #expect(feed("core", "minm", "Tone") == [.nowPlaying])
        _ = feed("core", "asar", "Tutti")
        _ = feed("core", "asal", "Tests")
        _ = feed("ssnc", "prgr", "1000/45100/442000", at: 5_000_000_000)
        let now = s.nowPlaying
        #expect(now.title == "Tone" && now.artist == "Tutti" && now.album == "Tests" && now.source == "AirPlay from Anna's iPhone")
        #expect(now.positionSeconds == 1 && now.durationSeconds == 10)
        #expect(now.position(at: 6_500_000_000) == 2.5)
        #expect(now.remote == DACPRemote(address: "192.168.1.20", port: 3689, activeRemote: "1234567890"))
        // The end, then a second phone within the grace: no release.
        #expect(feed("ssnc", "pend", at: 10).isEmpty)
        #expect(s.tick(now: 500).isEmpty)
        #expect(feed("ssnc", "pbeg", at: 600) == [.takeOver, .nowPlaying])
        #expect(s.tick(now: 5_000).isEmpty)
        // Its end, and the grace runs out: back to what played before.
        _ = feed("ssnc", "pend", at: 6_000)
        #expect(s.tick(now: 6_999).isEmpty)
        #expect(s.tick(now: 7_000) == [.release])
        #expect(!s.holding && s.nowPlaying == AirPlayNowPlaying())
        #expect(feed("core", "minm", "late").isEmpty, "metadata after the release changes nothing")
        _ = feed("ssnc", "pbeg")
        #expect(s.receiverGone() == [.release])
    }

    @Test func aPhoneWhoseRemoteIsIncompleteIsNotGivenTheLastPhonesRemote() {
        var s = AirPlaySession(releaseGrace: 1_000)
        func feed(_ type: String, _ code: String, _ text: String = "", at now: Int64 = 0) -> [AirPlaySession.Action] {
            s.handle(AirPlayMetadataItem(type: type, code: code, data: Array(text.utf8)), now: now)
        }
        _ = feed("ssnc", "clip", "192.168.1.20"); _ = feed("ssnc", "dapo", "3689"); _ = feed("ssnc", "acre", "1234567890")
        _ = feed("ssnc", "pbeg")
        #expect(s.nowPlaying.remote != nil)
        // The receiver dies; a second phone gives an address the filter refuses: no remote at all,
        // never the first phone's port and Active-Remote.
        #expect(s.receiverGone() == [.release])
        _ = feed("ssnc", "clip", "fe80::1%wlan0 bad")
        _ = feed("ssnc", "pbeg")
        #expect(s.nowPlaying.remote == nil)
        // Within a session, a refused part clears the remote too.
        _ = feed("ssnc", "clip", "192.168.1.30"); _ = feed("ssnc", "dapo", "3690"); _ = feed("ssnc", "acre", "42")
        #expect(s.nowPlaying.remote == DACPRemote(address: "192.168.1.30", port: 3690, activeRemote: "42"))
        _ = feed("ssnc", "dapo", "70000")
        #expect(s.nowPlaying.remote == nil)
    }

    @Test func aReceiverThatCouldNotStartIsStartedAtTheNextUpdate() {
        var plan = AirPlayReceiverPlan()
        let groups = [(id: "main", name: "Home")]
        #expect(plan.update(groups: groups, partyGroup: nil, enabled: true).count == 1)
        #expect(plan.update(groups: groups, partyGroup: nil, enabled: true).isEmpty, "running: nothing to do")
        plan.forget(groupID: "main")
        #expect(plan.update(groups: groups, partyGroup: nil, enabled: true).count == 1, "forgotten after a failed start: started again")
    }

    @Test func receiversFollowGroupsNamesAndPartyMode() {
        var plan = AirPlayReceiverPlan()
        var actions = plan.update(groups: [("main", "Home"), ("g1", "Kitchen")], partyGroup: nil, enabled: true)
        let home = AirPlayReceiverPlan.Receiver(groupID: "main", name: "Home", slot: 0)
        let kitchen = AirPlayReceiverPlan.Receiver(groupID: "g1", name: "Kitchen", slot: 1)
        #expect(actions == [.start(home), .start(kitchen)])
        #expect(kitchen.port == 5101 && kitchen.udpPortBase == 5210)
        // Renamed: restarted under the new name, on its own ports.
        actions = plan.update(groups: [("main", "Home"), ("g1", "Cuisine")], partyGroup: nil, enabled: true)
        #expect(actions == [.restart(AirPlayReceiverPlan.Receiver(groupID: "g1", name: "Cuisine", slot: 1))])
        #expect(plan.update(groups: [("main", "Home"), ("g1", "Cuisine")], partyGroup: nil, enabled: true).isEmpty)
        // Party: one receiver, "Whole house".
        actions = plan.update(groups: [("main", "Home"), ("g1", "Cuisine")], partyGroup: "main", enabled: true)
        #expect(actions == [.stop(groupID: "g1"), .restart(AirPlayReceiverPlan.Receiver(groupID: "main", name: "Whole house", slot: 0))])
        // Party off, a group deleted and another created: the free slot is reused.
        actions = plan.update(groups: [("main", "Home"), ("g2", "Garden")], partyGroup: nil, enabled: true)
        #expect(actions == [.restart(home), .start(AirPlayReceiverPlan.Receiver(groupID: "g2", name: "Garden", slot: 1))])
        #expect(plan.update(groups: [("main", "Home")], partyGroup: nil, enabled: false) == [.stop(groupID: "main"), .stop(groupID: "g2")])
        let conf = AirPlayReceiverPlan.configuration(for: AirPlayReceiverPlan.Receiver(groupID: "x", name: "Bob's \"Den\"\\", slot: 2),
                                                     audioPipe: "/run/a", metadataPipe: "/run/m")
        #expect(conf.contains(#"name = "Bob's \"Den\"\\";"#) && conf.contains("port = 5102;") && conf.contains("udp_port_base = 5220;"))
        #expect(conf.contains(#"ignore_volume_control = "yes";"#) && conf.contains(#"pipe_name = "/run/m";"#))
    }

    @Test func restartsBackOffWhileTheProgramKeepsDying() {
        var b = RestartBackoff(first: 100, ceiling: 1_000, stableAfter: 10_000)
        #expect([b.delay(afterRunning: 5), b.delay(afterRunning: 5), b.delay(afterRunning: 5), b.delay(afterRunning: 5), b.delay(afterRunning: 5)]
                == [100, 200, 400, 800, 1_000])
        #expect(b.delay(afterRunning: 20_000) == 100, "a long run starts afresh")
    }

    @Test func aCueTakesOverAndItsEndGoesBackPaused() throws {
        var queue = PlayQueue(seed: 1)
        queue.add(["a", "b"])
        queue.select(1)
        var t = Transport(queue: queue, state: .paused)
        t.pausedAt = TrackPosition(track: 2, frame: 48_000)
        let cue = try t.apply(.cue(uri: "pipe:/run/k"), at: 1_000).get()
        #expect(t.state == .playing && t.queue.entries.map(\.uri) == ["a", "b", "pipe:/run/k"])
        #expect(cue.actions.contains(.open(TrackPosition(track: cue.added[0], frame: 0))))
        // A second source replaces the first, keeping what played before.
        t.timeline.decoding = TrackPosition(track: cue.added[0], frame: 0) // the player opened it (`.open`)
        let second = try t.apply(.cue(uri: "pipe:/run/k2"), at: 2_000).get()
        t.timeline.decoding = TrackPosition(track: second.added[0], frame: 0)
        #expect(t.queue.entries.map(\.uri) == ["a", "b", "pipe:/run/k2"] && t.cued?.entry == second.added[0])
        #expect(try t.apply(.uncue(uri: "pipe:/run/k"), at: 3_000).get().actions.isEmpty, "not the one cued: nothing")
        _ = try t.apply(.uncue(uri: "pipe:/run/k2"), at: 3_000).get()
        #expect(t.state == .paused && t.pausedAt == TrackPosition(track: 2, frame: 48_000) && t.queue.entries.map(\.uri) == ["a", "b"])
        // With nothing before: stopped, queue empty.
        var empty = Transport(queue: PlayQueue(seed: 1), state: .stopped)
        let only = try empty.apply(.cue(uri: "pipe:/run/k"), at: 0).get()
        empty.timeline.decoding = TrackPosition(track: only.added[0], frame: 0)
        _ = try empty.apply(.uncue(uri: "pipe:/run/k"), at: 100).get()
        #expect(empty.state == .stopped && empty.queue.isEmpty)
    }
}
