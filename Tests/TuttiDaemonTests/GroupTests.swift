import Foundation
import Testing
import TuttiAudio
import TuttiControlClient
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// Groups of rooms, each with its own stream, and party mode, through the
/// JSON-RPC API and the `tutti` binary, with real followers on loopback.
@Suite(.serialized) struct GroupTests {
    /// Frames where the left channel is above `level`, between two instants, from a virtual DAC's log.
    func loudFrames(_ path: String, ppm: Double, from t0: Int64, to t1: Int64, level: Int = 3_000) -> (loud: Int, total: Int) {
        let samples = readRaw(path), timing = readTiming(path)
        var loud = 0, total = 0
        guard let first = timing.last(where: { $0.time <= t0 })?.frame ?? timing.first?.frame else { return (0, 0) }
        var i = first
        while 2 * i + 1 < samples.count {
            guard let t = leaveTime(ofFrame: i, timing: timing, ppm: ppm) else { break }
            if t >= t1 { break }
            if t >= t0 { total += 1; if abs(Int(samples[2 * i])) > level { loud += 1 } }
            i += 1
        }
        if total == 0 { print("\(path): \(samples.count / 2) frames, timing \(timing.first.map { "\($0)" } ?? "-") … \(timing.last.map { "\($0)" } ?? "-"), window \(t0)…\(t1)") }
        return (loud, total)
    }

    @Test func groupsPlayTheirOwnStreamsAndPartyModeSyncsEveryRoom() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/clicks.wav", wavImage(toneWithClicks(seconds: 40, frequency: 440)))
        writeFile(dir + "/quiet.wav", wavImage(quantize(TestSignal.sine(frequency: 880, seconds: 40, amplitude: 0.3))))
        // quiet.wav is queued later: a file named at start opens only itself, not its folder.
        let leader = try startLeader(files: [dir + "/clicks.wav"]) { c in c.control = Endpoint(host: "127.0.0.1", port: 0); c.allowedFolders = [dir] }
        defer { leader.stop() }
        let a = try startFollower(leader: leader.endpoint, name: "living", output: .file(path: dir + "/a.raw", ppm: -120, delayMilliseconds: 0))
        let b = try startFollower(leader: leader.endpoint, name: "kitchen", output: .file(path: dir + "/b.raw", ppm: 130, delayMilliseconds: 0)) { c in
            c.clockOffsetMilliseconds = 2_500; c.clockSkewPPM = 40
        }
        defer { a.stop(); b.stop() }
        let rpc = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        #expect(waitUntil(timeout: 5) { leader.followerNames == ["kitchen", "living"] })

        // The kitchen gets its own group and plays something else there.
        let created = try #require(try rpc.call("groups.create", ["name": "Kitchen", "rooms": ["kitchen"]]).object)
        #expect(created["rooms"]?.strings == ["kitchen"] && created["state"]?.string == "idle", "\(created)")
        let kitchenID = try #require(created["id"]?.string)
        _ = try rpc.call("queue.add", ["group": "Kitchen", "uris": [JSONValue(dir + "/quiet.wav")]])
        let play = try #require(try rpc.call("player.play", ["group": JSONValue(kitchenID)]).object)
        #expect(play["state"]?.string == "playing" && (play["file"]?.string)?.hasSuffix("quiet.wav") == true)
        #expect((try rpc.call("player.status").object)?["file"]?.string == dir + "/clicks.wav", "the main group is untouched")
        let split = Monotonic.now()
        #expect(waitUntilPlayed([dir + "/a.raw", dir + "/b.raw"], through: split + 3_000_000_000))
        // Living room: clicks; kitchen: the 880 Hz tone and no click.
        let livingClicks = clickTimes(dir + "/a.raw", ppm: -120).filter { $0 > split + 500_000_000 }
        let kitchenClicks = clickTimes(dir + "/b.raw", ppm: 130).filter { $0 > split + 500_000_000 && $0 < split + 3_000_000_000 }
        let kitchenTone = loudFrames(dir + "/b.raw", ppm: 130, from: split + 500_000_000, to: split + 2_500_000_000)
        print("groups apart: living \(livingClicks.count) clicks, kitchen \(kitchenClicks.count) clicks, kitchen tone \(kitchenTone.loud)/\(kitchenTone.total) loud frames")
        #expect(livingClicks.count >= 2)
        #expect(kitchenClicks.isEmpty)
        #expect(kitchenTone.total > 80_000 && Double(kitchenTone.loud) / Double(kitchenTone.total) > 0.6)

        // Party: every room plays the main group, in sync; the kitchen's own stream pauses.
        let party = try #require(try rpc.call("party.on").object)
        #expect(party["rooms"]?.strings == ["kitchen", "living"])
        let partyAt = Monotonic.now()
        let groups = try #require((try rpc.call("groups.list").object))
        #expect(groups["party"]?.bool == true)
        let kitchenGroup = (groups["groups"]?.objectArray)?.first { $0["id"]?.string == kitchenID }
        #expect(kitchenGroup?["state"]?.string == "paused" && kitchenGroup?["rooms"]?.strings == [])
        #expect(waitUntilPlayed([dir + "/a.raw", dir + "/b.raw"], through: partyAt + 5_000_000_000))
        let ta = clickTimes(dir + "/a.raw", ppm: -120), tb = clickTimes(dir + "/b.raw", ppm: 130)
        let diffs = pairedDifferences(tb.filter { $0 > partyAt + 300_000_000 }, ta, from: partyAt + 300_000_000).sorted()
        print("party: kitchen joined; click difference to the living room µs:", diffs.map { $0 / 1000 })
        #expect(diffs.count >= 3, "\(diffs.count) clicks compared")
        #expect((diffs.last ?? .max) < 200_000, "max \(Double(diffs.last ?? 0) / 1000) µs")
        #expect(b.engine.statistics.hardResyncs == 0)

        // Party off: the kitchen goes back to its group (paused: silence there).
        let off = try #require(try rpc.call("party.off").object)
        #expect(off["moved"]?.strings == ["kitchen"])
        let offAt = Monotonic.now()
        #expect(waitUntilPlayed([dir + "/a.raw", dir + "/b.raw"], through: offAt + 2_500_000_000))
        #expect(leader.group(ofRoom: "kitchen").id == kitchenID && leader.group(ofRoom: "living").id == "main")
        let afterOff = loudFrames(dir + "/b.raw", ppm: 130, from: offAt + 400_000_000, to: offAt + 1_800_000_000)
        #expect(afterOff.total > 50_000 && afterOff.loud == 0, "kitchen after party off: \(afterOff)")
        #expect(clickTimes(dir + "/a.raw", ppm: -120).contains { $0 > offAt + 400_000_000 }, "the living room plays on")
    }

    @Test func badGroupRequestsAreRefusedWithReasons() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/one.wav", wavImage(counterFrames(count: 48_000 * 20)))
        let leader = try startLeader(files: [dir + "/one.wav"]) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        let f = try startFollower(leader: leader.endpoint, name: "den", output: .file(path: dir + "/d.raw", ppm: 0, delayMilliseconds: 0))
        defer { f.stop() }
        #expect(waitUntil(timeout: 5) { leader.followerNames == ["den"] })
        let rpc = try ControlClient(endpoint: try #require(leader.controlEndpoint))
        func refusal(_ method: String, _ params: [String: JSONValue]) -> String? {
            do { _ = try rpc.call(method, params); return nil } catch let e as ControlClient.RemoteError { return e.message } catch { return "\(error)" }
        }
        #expect(refusal("player.play", ["group": "Nowhere"])?.contains("no group 'Nowhere'") == true)
        #expect(refusal("player.play", ["group": 7])?.contains("group must be") == true)
        #expect(refusal("groups.create", ["name": ""])?.contains("needs \"name\"") == true)
        #expect(refusal("groups.create", ["name": JSONValue(String(repeating: "x", count: 65))])?.contains("1–64 bytes") == true)
        #expect(refusal("groups.create", ["name": "Attic", "rooms": ["nosuchroom"]])?.contains("no room 'nosuchroom'") == true)
        _ = try rpc.call("groups.create", ["name": "Attic"])
        #expect(refusal("groups.create", ["name": "attic"])?.contains("already exists") == true)
        #expect(refusal("groups.rename", ["group": "Attic", "name": "Home"])?.contains("already exists") == true)
        #expect(refusal("groups.delete", ["group": "main"])?.contains("cannot be deleted") == true)
        #expect(refusal("groups.add", ["group": "Attic"])?.contains("needs \"rooms\"") == true)
        #expect(refusal("groups.add", ["group": "Cellar", "rooms": ["den"]])?.contains("no group 'Cellar'") == true)
        #expect(refusal("party.on", ["group": "Cellar"])?.contains("no group 'Cellar'") == true)
        // Nothing moved by the refusals; the connection is still usable.
        #expect(leader.group(ofRoom: "den").id == "main")
        let renamed = try #require(try rpc.call("groups.rename", ["group": "attic", "name": "Loft"]).object)
        #expect(renamed["name"]?.string == "Loft")
        _ = try rpc.call("groups.add", ["group": "Loft", "rooms": ["den"]])
        #expect(leader.group(ofRoom: "den").name == "Loft")
        let deleted = try #require(try rpc.call("groups.delete", ["group": "Loft"]).object)
        #expect(deleted["movedToMain"]?.strings == ["den"])
        #expect(leader.group(ofRoom: "den").id == "main")
        #expect(((try rpc.call("groups.list").object)?["groups"]?.objectArray)?.count == 1)
    }

    @Test func tuttiGroupAndPartyCommands() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/one.wav", wavImage(counterFrames(count: 48_000 * 20)))
        let leader = try startLeader(files: [dir + "/one.wav"]) { c in c.control = Endpoint(host: "127.0.0.1", port: 0) }
        defer { leader.stop() }
        let x = try startFollower(leader: leader.endpoint, name: "office", output: .file(path: dir + "/x.raw", ppm: 0, delayMilliseconds: 0))
        let y = try startFollower(leader: leader.endpoint, name: "bath", output: .file(path: dir + "/y.raw", ppm: 0, delayMilliseconds: 0))
        defer { x.stop(); y.stop() }
        #expect(waitUntil(timeout: 5) { leader.followerNames.count == 2 })
        let port = try #require(leader.controlEndpoint).port
        func tutti(_ args: String...) throws -> (status: Int32, out: String) { try runTutti(port: port, args) }
        let made = try tutti("group", "new", "Upstairs", "office")
        #expect(made.status == 0 && made.out.contains("Upstairs") && made.out.contains("office"), "\(made.out)")
        #expect(leader.group(ofRoom: "office").name == "Upstairs")
        let list = try tutti("group")
        #expect(list.status == 0 && list.out.contains("Home (main): bath") && list.out.contains("Upstairs"), "\(list.out)")
        let added = try tutti("--group", "Upstairs", "queue", "add", dir + "/one.wav")
        #expect(added.status == 0, "\(added.out)")
        #expect(try leader.queue(group: "Upstairs").count == 1 && leader.queue.count == 1)
        let status = try tutti("status")
        #expect(status.out.contains("office [Upstairs]") && status.out.contains("groups:"), "\(status.out)")
        let party = try tutti("party")
        #expect(party.status == 0 && party.out.contains("party mode on") && leader.partyActive, "\(party.out)")
        #expect(leader.group(ofRoom: "office").id == "main")
        let json = try tutti("--json", "party", "status")
        #expect((try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])?["party"] as? Bool == true)
        #expect(try tutti("party", "off").status == 0 && !leader.partyActive)
        #expect(leader.group(ofRoom: "office").name == "Upstairs")
        // A speaker switched on during a party joins it, and leaves it with the others.
        #expect(try tutti("party", "on", "Upstairs").status == 0)
        let attic = try startFollower(leader: leader.endpoint, name: "attic", output: .file(path: dir + "/z.raw", ppm: 0, delayMilliseconds: 0))
        defer { attic.stop() }
        #expect(waitUntil(timeout: 5) { leader.followerNames.contains("attic") })
        #expect(leader.group(ofRoom: "attic").name == "Upstairs" && leader.group(ofRoom: "bath").name == "Upstairs")
        #expect(try tutti("party", "off").status == 0)
        #expect(leader.group(ofRoom: "attic").id == "main" && leader.group(ofRoom: "office").name == "Upstairs")
        let left = try tutti("group", "leave", "office")
        #expect(left.status == 0 && leader.group(ofRoom: "office").name == "office", "\(left.out)")
        #expect(try tutti("group", "delete", "main").status == 1)
        #expect(try tutti("group", "add", "Upstairs").status == 64)
        #expect(try tutti("--group", "Nowhere", "play").status == 1)
        #expect(try tutti("party", "sideways").status == 64)
        // Single and consume, on a group's player, shown by status.
        #expect(try tutti("--group", "Upstairs", "single", "oneshot").out.contains("single oneshot"))
        #expect(try tutti("--group", "Upstairs", "consume", "on").status == 0)
        let upstairs = try tutti("--group", "Upstairs", "status")
        #expect(upstairs.out.contains("single oneshot") && upstairs.out.contains("consume on"), "\(upstairs.out)")
        #expect(try leader.nowPlaying(group: "Upstairs").consume && leader.nowPlaying.single == .off)
        #expect(try tutti("single", "twice").status == 64)
    }

    @Test func groupsAndTheirQueuesSurviveARestart() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/one.wav", wavImage(counterFrames(count: 48_000 * 20)))
        writeFile(dir + "/two.wav", wavImage(counterFrames(count: 48_000 * 20, from: 500_000)))
        var leader: Leader? = try startLeader(files: [dir + "/one.wav"]) { c in c.databasePath = dir + "/db/library.db" }
        let f = try startFollower(leader: leader!.endpoint, name: "porch", output: .file(path: dir + "/p.raw", ppm: 0, delayMilliseconds: 0))
        defer { f.stop() }
        #expect(waitUntil(timeout: 5) { leader!.followerNames == ["porch"] })
        _ = try leader!.createGroup(name: "Outside", rooms: ["porch"])
        _ = try leader!.createGroup(name: "Garage", rooms: [])
        // The Outside group's own queue, shuffled-off order edited, playing its second entry 1.2 s in.
        _ = try leader!.perform(.add(uris: [dir + "/one.wav", dir + "/two.wav", dir + "/one.wav"], next: false), group: "Outside")
        _ = try leader!.perform(.repeatMode(.all), group: "Outside")
        _ = try leader!.perform(.playIndex(1), group: "Outside")
        #expect(waitUntil(timeout: 10) { ((try? leader!.nowPlaying(group: "Outside"))?.positionSeconds ?? 0) >= 1.2 })
        leader!.stop()
        leader = nil
        let again = try startLeader(files: []) { c in c.databasePath = dir + "/db/library.db" }
        defer { again.stop() }
        #expect(again.groups.map(\.name) == ["Home", "Outside", "Garage"])
        #expect(again.group(ofRoom: "porch").name == "Outside")
        let outside = try again.nowPlaying(group: "Outside")
        #expect(try again.queue(group: "Outside").entries.map { ($0.uri as NSString).lastPathComponent } == ["one.wav", "two.wav", "one.wav"])
        #expect(outside.track == 1 && outside.state == .paused && outside.repeatMode == .all, "\(outside)")
        #expect(outside.positionSeconds > 0.8 && outside.positionSeconds < 2.5, "\(outside.positionSeconds)")
        #expect(try again.queue(group: "Garage").isEmpty)
        // A deleted group's state goes with it.
        _ = try again.deleteGroup("Outside")
        again.stop()
        let third = try startLeader(files: []) { c in c.databasePath = dir + "/db/library.db" }
        defer { third.stop() }
        #expect(third.groups.map(\.name) == ["Home", "Garage"])
    }
}
