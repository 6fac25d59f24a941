import TuttiTestSupport
import Foundation
import Glibc
import Testing
import TuttiCore
@testable import TuttiDiscovery

/// A service name no other test (or leftover) uses.
func uniqueName(_ label: String) -> String { "Tutti test \(label) \(UInt32.random(in: 0...UInt32.max))" }

func secondsSince(_ start: ContinuousClock.Instant) -> Double {
    let d = ContinuousClock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
}

/// Every test here runs its own avahi-daemon on loopback (see AvahiTestDaemon).
@Suite(.serialized) struct DiscoveryTests {
    @Test func publishedServiceIsFoundWithItsPortAndTXT() throws {
        let daemon = try AvahiTestDaemon()
        let ready = try daemon.start()
        print("avahi-daemon ready in \(String(format: "%.2f", ready)) s")
        let name = uniqueName("publish")
        let port = UInt16.random(in: 20_000...40_000)
        let start = ContinuousClock.now
        let publisher = try ServicePublisher(name: name, port: port,
                                             txt: TuttiService.txt(controlPort: 5001, mpdPort: 6601, id: "0123abcd").merging(["note": "a=b=c"]) { $1 },
                                             log: .silent)
        defer { publisher.stop() }
        let established = try #require(publisher.waitUntilEstablished(timeout: 10), "status: \(publisher.status)")
        #expect(established == name)
        let announced = secondsSince(start)
        let leaders = try discoverLeaders(timeout: 10, named: name)
        let found = secondsSince(start)
        print("established in \(String(format: "%.2f", announced)) s, discovered in \(String(format: "%.2f", found)) s")
        let leader = try #require(leaders.first { $0.name == name }, "\(leaders)")
        #expect(leader.port == port)
        #expect(leader.address == "127.0.0.1")
        #expect(leader.protocolVersion == Int(WireProtocol.version))
        #expect(leader.controlPort == 5001 && leader.mpdPort == 6601 && leader.id == "0123abcd")
        #expect(leader.txt["note"] == "a=b=c", "a value may hold '='")
        #expect(leader.isLocal)
        #expect(found < 5, "discovered within 5 s of publishing")

        // Withdrawn: a continuous browser sees it go.
        let browser = try ServiceBrowser()
        defer { browser.stop() }
        let started = ContinuousClock.now
        #expect(waitUntil(timeout: 10) { browser.leaders.contains { $0.name == name } })
        let stopped = ContinuousClock.now
        publisher.stop()
        // Within the same 10 s as before.
        let left = 10 - secondsSince(started)
        #expect(waitUntil(timeout: left) { !browser.leaders.contains { $0.name == name } }, "still listed after stop()")
        print("withdrawal seen in \(String(format: "%.2f", secondsSince(stopped))) s")
    }

    @Test func twoPublishersWithOneNameGetDistinctNames() throws {
        let daemon = try AvahiTestDaemon()
        try daemon.start()
        let name = uniqueName("collision")
        let a = try ServicePublisher(name: name, port: 1111, log: .silent)
        defer { a.stop() }
        let b = try ServicePublisher(name: name, port: 2222, log: .silent)
        defer { b.stop() }
        let nameA = try #require(a.waitUntilEstablished(timeout: 10), "\(a.status)")
        let nameB = try #require(b.waitUntilEstablished(timeout: 10), "\(b.status)")
        #expect(nameA != nameB)
        #expect(Set([nameA, nameB]) == [name, name + " #2"])
        var leaders: [DiscoveredLeader] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            leaders = try discoverLeaders(timeout: 3).filter { $0.name.hasPrefix(name) }
            if leaders.count == 2 { break }
        }
        #expect(leaders.map(\.name) == [name, name + " #2"])
        #expect(Set(leaders.map(\.port)) == [1111, 2222])
        #expect(leaders.first { $0.name == nameA }?.port == 1111)
    }

    @Test func noDaemonIsAClearErrorAndAPublisherWaitsForIt() throws {
        let daemon = try AvahiTestDaemon() // holds the lock; no daemon running
        #expect(throws: DiscoveryError.self) { try discoverLeaders(timeout: 1) }
        do {
            _ = try discoverLeaders(timeout: 1)
        } catch {
            #expect(error.code == .daemonNotRunning)
            #expect(error.message.contains("avahi-daemon is not running"), "\(error)")
        }
        #expect(throws: DiscoveryError.self) { try ServiceBrowser() }

        // Publishing does not need the daemon: it waits, then announces.
        let name = uniqueName("waits")
        let publisher = try ServicePublisher(name: name, port: 3333, log: .silent)
        defer { publisher.stop() }
        #expect(waitUntil(timeout: 5) { publisher.status == .waitingForDaemon }, "\(publisher.status)")
        try daemon.start()
        let first = try #require(publisher.waitUntilEstablished(timeout: 15), "after the daemon started: \(publisher.status)")
        #expect(first == name)

        // The daemon goes away and comes back: announced again.
        try daemon.stop()
        #expect(waitUntil(timeout: 5) { publisher.status == .waitingForDaemon })
        let restarted = ContinuousClock.now
        try daemon.start()
        #expect(publisher.waitUntilEstablished(timeout: 15) == name, "after a restart: \(publisher.status)")
        let leaders = try discoverLeaders(timeout: 10, named: name)
        #expect(leaders.first { $0.name == name }?.port == 3333)
        print("re-announced and found \(String(format: "%.2f", secondsSince(restarted))) s after the daemon restarted")
    }

    @Test func badNamesAreErrorsNotCrashes() {
        #expect(throws: DiscoveryError.self) { try ServicePublisher(name: "", port: 1, log: .silent) }
        #expect(throws: DiscoveryError.self) { try ServicePublisher(name: String(repeating: "x", count: 64), port: 1, log: .silent) }
        #expect(TuttiService.fitName(String(repeating: "é", count: 40)).utf8.count == 62)
        #expect(TuttiService.defaultName.hasPrefix("Tutti on "))
        #expect(TuttiService.stableLeaderID(port: 4953) == TuttiService.stableLeaderID(port: 4953))
        #expect(TuttiService.stableLeaderID(port: 4953) != TuttiService.stableLeaderID(port: 4954))
        #expect(TuttiService.stableLeaderID(port: 4953).count == 16)
        #expect(ServicePublisher.alternative(to: "Kitchen") == "Kitchen #2")
        #expect(ServicePublisher.alternative(to: "Kitchen #2") == "Kitchen #3")
    }

    @Test func choosingALeader() {
        func leader(_ name: String) -> DiscoveredLeader {
            DiscoveredLeader(name: name, hostName: "h.local", address: "10.0.0.1", port: 4953, txt: [:], isLocal: false)
        }
        let all = [leader("b"), leader("a"), leader("c")]
        #expect(DiscoveredLeader.choose(from: all, named: nil)?.name == "a")
        #expect(DiscoveredLeader.choose(from: all, named: "c")?.name == "c")
        #expect(DiscoveredLeader.choose(from: all, named: "zz") == nil)
        #expect(DiscoveredLeader.choose(from: [], named: nil) == nil)
    }

    @Test func aPairedSpeakerChoosesOnlyItsLeadersKeyNeverTheFirstByName() {
        func leader(_ name: String, key: String?) -> DiscoveredLeader {
            DiscoveredLeader(name: name, hostName: "h.local", address: "10.0.0.1", port: 4953, txt: key.map { ["key": $0] } ?? [:], isLocal: false)
        }
        let all = [leader("!x", key: "badbadbadbadbad0"), leader("Tutti on pi", key: "0123456789abcdef"), leader("!y", key: nil)]
        #expect(DiscoveredLeader.choose(from: all, named: nil)?.name == "!x", "unpaired: the first by name, as before")
        #expect(DiscoveredLeader.choose(from: all, named: nil, pinned: "0123456789abcdef")?.name == "Tutti on pi")
        #expect(DiscoveredLeader.choose(from: all, named: "!x", pinned: "0123456789abcdef")?.name == "Tutti on pi",
                "a name never picks a leader without the key (a renamed leader with the key is still ours)")
        #expect(DiscoveredLeader.choose(from: all, named: nil, pinned: "ffffffffffffffff") == nil)
        #expect(TuttiService.txt(controlPort: nil, mpdPort: nil, id: "i", keyFingerprint: "0123456789abcdef")["key"] == "0123456789abcdef")
    }
}
