import Foundation
import Synchronization
import Testing
import TuttiAuth
import TuttiCore
import TuttiControlKit
import TuttiDaemon
import TuttiWebApp
import TuttiFollower
import TuttiNet
import TuttiTestSupport

/// Paired by default (protocol v7): a leader with `speakers = paired` lets
/// a speaker in only once a person allowed it or typed the code it shows;
/// after the handshake every frame is sealed, so a flipped bit ends the
/// connection; a forgotten speaker is refused; a pinned speaker gives a
/// leader with another key nothing but a goodbye.
@Suite(.serialized) struct PairingTests {
    func pairedLeader(files: [String] = [], folders: [String] = [], log: CapturingLog = CapturingLog(), state: String? = nil) throws -> Leader {
        let folder = state ?? makeTemporaryDirectory()
        return try startLeader(files: files, log: log.logger) { c in
            c.pairedSpeakersOnly = true
            c.stateDirectory = folder
            c.allowedFolders = folders + files.map { ($0 as NSString).deletingLastPathComponent }
        }
    }

    func speaker(_ leader: Leader, _ name: String, state: String, output: String = "/dev/null", code: Bool = false) throws -> Follower {
        try startFollower(leader: leader.endpoint, name: name, output: .file(path: output, ppm: 0, delayMilliseconds: 0), steering: false) { c in
            c.stateDirectory = state
            c.pairByCode = code
        }
    }

    @Test func pairingByApprovalLetsTheSpeakerInAndItIsRememberedOnBothSides() throws {
        let dir = makeTemporaryDirectory(), leaderState = makeTemporaryDirectory(), speakerState = makeTemporaryDirectory()
        let leader = try pairedLeader(state: leaderState)
        defer { leader.stop() }
        let kitchen = try speaker(leader, "kitchen", state: speakerState)
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.map(\.name) == ["kitchen"] })
        usleep(300_000)
        #expect(!kitchen.connected && leader.followerNames.isEmpty, "an unpaired speaker joined before it was allowed")
        #expect(leader.pairingRequests.first?.fingerprint == kitchen.keyFingerprint)
        #expect(leader.decidePairing(name: "kitchen", allow: true))
        #expect(waitUntil(timeout: 5) { kitchen.connected && leader.followerNames == ["kitchen"] })
        #expect(kitchen.paired && leader.pairedSpeakers.map(\.name) == ["kitchen"] && leader.pairingRequests.isEmpty)
        // Both sides wrote it down (0600): the leader's list, the speaker's pin.
        let pin = try #require(kitchen.pinnedLeader)
        #expect(keyFingerprint(pin, crypto: SodiumCrypto()) == leader.speakerKeyFingerprint)
        for file in [leaderState + "/speakers", leaderState + "/leader.key", speakerState + "/speaker.key", speakerState + "/leader.pub"] {
            let mode = try #require(try? FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
            #expect(mode == 0o600, "\(file) is \(String(mode, radix: 8))")
        }
        kitchen.stop()
        #expect(waitUntil(timeout: 5) { leader.followerNames.isEmpty })
        // A restarted speaker (same state) joins without asking; a restarted leader (same state) still knows it.
        leader.stop()
        let again = try pairedLeader(state: leaderState)
        defer { again.stop() }
        let back = try speaker(again, "kitchen", state: speakerState)
        defer { back.stop() }
        #expect(waitUntil(timeout: 5) { back.connected && again.followerNames == ["kitchen"] })
        #expect(again.pairingRequests.isEmpty)
        _ = dir
    }

    /// The speaker service waits for approval while `tutti-follower pair`
    /// (same state folder) pairs by code: the service joins as paired within
    /// seconds, and its request is gone from the leader's list.
    @Test func aServiceWaitingForApprovalJoinsOnceThePairCommandPaired() throws {
        let leader = try pairedLeader()
        defer { leader.stop() }
        let state = makeTemporaryDirectory()
        let service = try speaker(leader, "hall", state: state)
        defer { service.stop() }
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.map(\.byCode) == [false] })
        let pairing = try speaker(leader, "hall", state: state, code: true)
        defer { pairing.stop() }
        let code = try #require(pairing.pairingCode)
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.contains { $0.byCode } })
        #expect(leader.pairByCode(code) == .paired("hall"))
        #expect(waitUntil(timeout: 3) { leader.pairingRequests.isEmpty }, "\(leader.pairingRequests)")
        #expect(waitUntil(timeout: 15) { service.connected && leader.followerNames == ["hall"] }, "\(service.lastFailure ?? "")")
    }

    /// A speaker that leaves while its request waits is no longer listed.
    @Test func aRequestEndsWhenItsSpeakerLeaves() throws {
        let leader = try pairedLeader()
        defer { leader.stop() }
        let gone = try speaker(leader, "attic", state: makeTemporaryDirectory())
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.count == 1 })
        gone.stop()
        #expect(waitUntil(timeout: 3) { leader.pairingRequests.isEmpty }, "\(leader.pairingRequests)")
    }

    @Test func aDeniedSpeakerIsRefusedAndNeverHearsAudio() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/t.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 2, amplitude: 0.5))))
        let leader = try pairedLeader(files: [dir + "/t.wav"])
        defer { leader.stop() }
        _ = try leader.perform(.playIndex(0))
        let stranger = try speaker(leader, "stranger", state: makeTemporaryDirectory(), output: dir + "/stranger.raw")
        defer { stranger.stop() }
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.count == 1 })
        #expect(leader.decidePairing(name: "stranger", allow: false))
        #expect(waitUntil(timeout: 5) { stranger.lastFailure?.contains("denied") == true }, "\(stranger.lastFailure ?? "")")
        #expect(!stranger.paired && stranger.pinnedLeader == nil && leader.pairedSpeakers.isEmpty)
        let heard = readRaw(dir + "/stranger.raw").filter { $0 != 0 }.count
        #expect(heard == 0, "the denied speaker played \(heard) non-zero samples")
    }

    @Test func pairingByCodeTakesTheRightCodeAfterAWrongOneAndThreeWrongOnesEndIt() throws {
        let leader = try pairedLeader()
        defer { leader.stop() }
        #expect(leader.pairByCode("123456") == .nobodyWaiting)
        let state = makeTemporaryDirectory()
        let pairing = try speaker(leader, "den", state: state, code: true)
        defer { pairing.stop() }
        let code = try #require(pairing.pairingCode)
        #expect(code.count == 6 && code.allSatisfy(\.isNumber))
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.first?.byCode == true })
        let wrong = code == "000000" ? "000001" : "000000"
        #expect(leader.pairByCode(wrong) == .wrongCode)
        #expect(leader.followerNames.isEmpty && !pairing.paired)
        #expect(leader.pairByCode(code) == .paired("den"))
        #expect(waitUntil(timeout: 5) { pairing.paired && !pairing.isRunning })
        #expect(leader.pairedSpeakers.map(\.name) == ["den"])
        // The speaker service with the same state now plays for this leader, without asking.
        let service = try speaker(leader, "den", state: state)
        defer { service.stop() }
        #expect(waitUntil(timeout: 5) { service.connected && leader.followerNames == ["den"] })

        // Three wrong codes: that request is over, on both sides.
        let other = try speaker(leader, "hall", state: makeTemporaryDirectory(), code: true)
        defer { other.stop() }
        let otherCode = try #require(other.pairingCode)
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.contains { $0.name == "hall" } })
        for guess in ["111111", "222222", "333333"] where guess != otherCode {
            #expect(leader.pairByCode(guess) == .wrongCode)
        }
        #expect(waitUntil(timeout: 5) { !other.isRunning })
        #expect(other.pairingFailure?.contains("three wrong pairing codes") == true, "\(other.pairingFailure ?? "")")
        // At once: the request is over with its third wrong code, though the leader lets it go from its list only when it
        // sees the speaker's connection end (CI once offered the right code in between, and it was taken and ended untried).
        #expect(leader.pairByCode(otherCode) == .nobodyWaiting, "the right code still paired after three wrong ones")
        #expect(waitUntil(timeout: 5) { !leader.pairingRequests.contains { $0.name == "hall" } }, "the leader still lists hall's request")
        #expect(!leader.pairedSpeakers.map(\.name).contains("hall"))
    }

    @Test func sealedPCMIsBitExactAndAForgottenSpeakerIsRefused() throws {
        let dir = makeTemporaryDirectory()
        let input = quantize(TestSignal.music(seconds: 3))
        writeFile(dir + "/music.wav", wavImage(input))
        let leader = try pairedLeader(folders: [dir])
        defer { leader.stop() }
        let state = makeTemporaryDirectory()
        let a = try speaker(leader, "a", state: state, output: dir + "/a.raw")
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.count == 1 })
        _ = leader.decidePairing(name: "a", allow: true)
        #expect(waitUntil(timeout: 5) { a.connected && a.clock != nil })
        _ = try leader.perform(.add(uris: [dir + "/music.wav"], next: false))
        _ = try leader.perform(.playIndex(0))
        waitForPlayout(leader)
        a.stop()

        let output = readRaw(dir + "/a.raw")
        let inStart = try #require(firstSoundingFrame(input))
        let outStart = try #require(firstSoundingFrame(output))
        let frames = input.count / 2 - inStart
        #expect(output.count / 2 - outStart >= frames, "output holds every input frame")
        var mismatches = 0
        for i in 0..<(2 * frames) where 2 * outStart + i < output.count {
            if output[2 * outStart + i] != input[2 * inStart + i] { mismatches += 1 }
        }
        #expect(mismatches == 0, "\(mismatches) of \(2 * frames) samples differ after sealing")

        // Forgotten: its connection closes, and it cannot come back.
        let b = try speaker(leader, "a", state: state)
        defer { b.stop() }
        #expect(waitUntil(timeout: 5) { b.connected })
        #expect(leader.forget(speaker: "a"))
        #expect(waitUntil(timeout: 5) { !b.connected && leader.followerNames.isEmpty })
        #expect(waitUntil(timeout: 5) { b.lastFailure?.contains("not paired") == true }, "\(b.lastFailure ?? "")")
        usleep(500_000)
        #expect(leader.followerNames.isEmpty && !b.connected)
    }

    @Test func aFlippedBitInASealedChunkClosesTheConnection() throws {
        let dir = makeTemporaryDirectory()
        writeFile(dir + "/t.wav", wavImage(quantize(TestSignal.sine(frequency: 440, seconds: 4, amplitude: 0.5))))
        let log = CapturingLog()
        let leader = try startLeader(files: [dir + "/t.wav"], log: log.logger) // open: sealed all the same
        defer { leader.stop() }
        let relay = try BitFlippingRelay(to: leader.endpoint, flipAt: 40_000)
        defer { relay.stop() }
        let f = try startFollower(leader: relay.endpoint, name: "den", output: .file(path: "/dev/null", ppm: 0, delayMilliseconds: 0))
        defer { f.stop() }
        #expect(waitUntil(timeout: 10) { f.lastFailure?.contains("does not verify") == true }, "\(f.lastFailure ?? "none")")
        #expect(relay.flipped.load(ordering: .relaxed) >= 1)
        #expect(waitUntil(timeout: 5) { log.lines.contains { $0.contains("follower den disconnected") } })
    }

    @Test func aPinnedSpeakerGivesAnotherLeaderNothingButGoodbye() throws {
        let real = try pairedLeader()
        defer { real.stop() }
        let state = makeTemporaryDirectory()
        let den = try speaker(real, "den", state: state)
        #expect(waitUntil(timeout: 5) { real.pairingRequests.count == 1 })
        _ = real.decidePairing(name: "den", allow: true)
        #expect(waitUntil(timeout: 5) { den.connected })
        den.stop()
        // A rogue leader (open, its own key) that the speaker is pointed at.
        let roguelog = CapturingLog()
        let rogue = try startLeader(files: [], log: roguelog.logger)
        defer { rogue.stop() }
        let misled = try speaker(rogue, "den", state: state)
        defer { misled.stop() }
        #expect(waitUntil(timeout: 5) { misled.lastFailure?.contains("is not the one this speaker is paired with") == true }, "\(misled.lastFailure ?? "")")
        #expect(!misled.connected && rogue.followerNames.isEmpty)
        // The rogue saw a goodbye, never a proof: its session ended before `keyProof`.
        #expect(waitUntil(timeout: 5) { roguelog.lines.contains { $0.contains("refused 'den'") && $0.contains("is not the one this speaker is paired with") } },
                "\(roguelog.lines.joined(separator: "\n"))")
    }

    @Test func onAPairedOnlyLeaderAnOldOrUnpairedSpeakerCannotJoinOrCommand() throws {
        let leader = try pairedLeader()
        defer { leader.stop() }
        // A v6 client (no handshake) as a stranger would send it: hello, then room commands.
        let raw = try TCPConnection.connect(to: leader.endpoint)
        defer { raw.close() }
        try raw.send(Message.hello(version: WireProtocol.streamDelayVersion, name: "intruder").encoded())
        try raw.send(Message.roomCommand(.next).encoded())
        let reader = MessageReader(connection: raw)
        raw.setReceiveTimeout(milliseconds: 3_000)
        guard case .reject(_, let reason)? = try reader.next() else { Issue.record("no reject"); return }
        #expect(reason.contains("paired"))
        #expect(leader.followerNames.isEmpty)
        // A v7 client that skips the handshake and sends a room command gets nothing but a closed connection.
        let skip = try TCPConnection.connect(to: leader.endpoint)
        defer { skip.close() }
        try skip.send(Message.hello(version: WireProtocol.version, name: "skipper").encoded() + Message.roomCommand(.volumeUp).encoded())
        let r2 = MessageReader(connection: skip)
        skip.setReceiveTimeout(milliseconds: 3_000)
        var got: [MessageType] = []
        while let m = try? r2.next() { got.append(m.type) }
        #expect(!got.contains(.welcome) && leader.followerNames.isEmpty, "\(got)")
        #expect(leader.settings(of: "skipper").volume == 100)
    }

    /// The packages' tutti.conf is closed: the leader admits paired speakers
    /// only, the speaker keeps its key and pin in /var/lib/tutti. Without a
    /// file (the command line, the demo) both stay open, as before.
    @Test func theShippedConfigurationAdmitsPairedSpeakersOnly() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let text = String(decoding: try #require(FileManager.default.contents(atPath: root + "/deploy/tutti.conf")), as: UTF8.self)
        let file = try ConfigFile.parse(text, path: "/etc/tutti/tutti.conf")
        guard case .leader(let c) = try DaemonCommand.parse(["leader"], file: file, hostname: "pi").0 else { Issue.record("not a leader"); return }
        #expect(c.pairedSpeakersOnly && c.roomKey == nil)
        guard case .follower(let f) = try DaemonCommand.parse(["follower"], file: file, hostname: "pi").0 else { Issue.record("not a follower"); return }
        #expect(f.stateDirectory == "/var/lib/tutti" && f.roomKey == nil)
        guard case .leader(let plain) = try DaemonCommand.parse(["leader", "--music", "/m"], file: nil, hostname: "pi").0 else { Issue.record("not a leader"); return }
        #expect(!plain.pairedSpeakersOnly)
        #expect(throws: UsageError.self) { try DaemonCommand.parse(["leader", "--music", "/m", "--speakers", "some"], file: nil, hostname: "pi") }
    }

    /// The web app in a real browser (Tests/Web/pairing_test.py): "kitchen
    /// wants to join: Allow / Deny" in the Rooms view pairs it, and the code
    /// field pairs a speaker showing its code.
    @Test func theWebAppAllowsASpeakerAndPairsOneByCode() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), "chromedriver is missing: run scripts/setup.sh")
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let state = makeTemporaryDirectory()
        let leader = try startLeader(files: []) { c in
            c.pairedSpeakersOnly = true
            c.stateDirectory = state
            c.control = Endpoint(host: "127.0.0.1", port: 0)
            c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: repository + "/web")
            c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
        }
        defer { leader.stop() }
        let kitchen = try speaker(leader, "kitchen", state: makeTemporaryDirectory())
        let den = try speaker(leader, "den", state: makeTemporaryDirectory(), code: true)
        defer { kitchen.stop(); den.stop() }
        #expect(waitUntil(timeout: 5) { leader.pairingRequests.count == 2 })
        let web = try #require(leader.webEndpoint), control = try #require(leader.controlEndpoint)
        var args = [repository + "/Tests/Web/pairing_test.py", "--url", "http://127.0.0.1:\(web.port)", "--control-port", String(control.port),
                    "--approve", "kitchen", "--code-room", "den", "--code", try #require(den.pairingCode),
                    // A Sendspin player's Pairing PSK token (SendspinTests' example), pasted into its own field.
                    "--sendspin-token", Self.sendspinToken]
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"] { args += ["--screenshot", shots + "/pairing.png"] }
        let r = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 120)
        print(r.out)
        #expect(r.status == 0 && r.out.contains("all checks passed"), "the pairing browser test failed:\n\(r.out)")
        #expect(waitUntil(timeout: 5) { kitchen.connected && den.paired })
        #expect(Set(leader.pairedSpeakers.map(\.name)) == ["kitchen", "den"])
        // The token the page sent is staged for its player, and for it only.
        let token = try #require(SendspinPairingToken.parse(Self.sendspinToken))
        #expect(leader.sendspinTrust?.trust.staged.map(\.clientID) == [token.clientID])
    }

    static let sendspinToken = "SP:0AAAQEAYEAUDAOCAJBIFQYDIOB4IBCEQTCQKRMFYYDENBWHA5DYPSAIJCEMSCKJRHFAUSUKZMFUXC6MBRGIZTINJWG44DSOR3HQ6T4PY"
}

/// A TCP relay that flips one bit of what the leader sends, at a byte offset.
final class BitFlippingRelay: @unchecked Sendable { // Sendable: the listener and counters are thread-safe; the threads own their connections.
    let listener: TCPListener
    let flipped = Atomic<Int>(0)
    let upstream: Endpoint
    let flipAt: Int
    var endpoint: Endpoint { listener.endpoint }

    init(to upstream: Endpoint, flipAt: Int) throws {
        listener = try TCPListener(endpoint: Endpoint(host: "127.0.0.1", port: 0))
        self.upstream = upstream
        self.flipAt = flipAt
        Thread.detachNewThread { [self] in
            while let client = try? listener.accept() {
                guard let server = try? TCPConnection.connect(to: upstream) else { client.close(); continue }
                Thread.detachNewThread { [self] in pump(from: client, to: server, flip: false) }
                Thread.detachNewThread { [self] in pump(from: server, to: client, flip: true) }
            }
        }
    }

    private func pump(from a: TCPConnection, to b: TCPConnection, flip: Bool) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 8)
        defer { buffer.deallocate(); a.close(); b.close() }
        var offset = 0
        while let (n, _) = try? a.receive(into: buffer), n > 0 {
            var bytes = Array(buffer[0..<n])
            if flip, offset <= flipAt, flipAt < offset + n {
                bytes[flipAt - offset] ^= 0x10
                flipped.add(1, ordering: .relaxed)
            }
            offset += n
            guard (try? b.send(bytes)) != nil else { return }
        }
    }

    func stop() { listener.close() }
}
