import Foundation
import Testing
import TuttiControlClient
import TuttiControlKit
import TuttiCore
import TuttiDaemon
import TuttiNet
import TuttiTestSupport

/// Sendspin's pairing-code methods end to end: aiosendspin's own
/// `SendspinClient` (10.2.1, Tests/Sendspin/sendspin_code_pairing_client.py)
/// against a leader whose speakers must be paired, the code typed where a
/// person types it (`speakers.sendspinCode`, as the web app's card and
/// `tutti speakers code` call it).
@Suite(.serialized) struct SendspinCodePairingTests {
    struct Setup {
        let dir: String
        let leader: Leader
        let control: Endpoint
        let url: String

        static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

        init(web: Bool = false) throws {
            dir = makeTemporaryDirectory()
            writeFile(dir + "/tone.wav", wavImage(toneWithClicks(seconds: 30, frequency: 440)))
            let directory = dir
            leader = try startLeader(files: [dir + "/tone.wav"], codec: .pcm, loop: true) { c in
                c.control = Endpoint(host: "127.0.0.1", port: 0)
                c.sendspin = Endpoint(host: "127.0.0.1", port: 0)
                c.pairedSpeakersOnly = true
                c.stateDirectory = directory
                if web { c.web = WebOptions(endpoint: Endpoint(host: "127.0.0.1", port: 0), root: Self.repository + "/web") }
            }
            control = try #require(leader.controlEndpoint)
            url = "ws://127.0.0.1:\(try #require(leader.sendspinEndpoint).port)/sendspin"
        }

        /// A connection per call: the waits between calls may outlast an idle control connection's welcome.
        func call(_ method: String, _ params: [String: JSONValue] = [:]) throws -> JSONValue {
            try ControlClient(endpoint: control).call(method, params)
        }

        /// The refusal of `speakers.sendspinCode` for `code` (nil: it was taken).
        func refusal(_ code: String, name: String? = nil) -> String? {
            var params: [String: JSONValue] = ["code": .string(code)]
            if let name { params["name"] = .string(name) }
            do { _ = try call("speakers.sendspinCode", params); return nil } catch let e as ControlClient.RemoteError { return e.message } catch { return "\(error)" }
        }

        func pending() -> [[String: JSONValue]] { (try? call("speakers.pending"))?.object?["pending"]?.objectArray ?? [] }

        func trustFile() throws -> [String: JSONValue] {
            try #require(JSONValue.parsing(try String(contentsOfFile: dir + "/sendspin-trust.json", encoding: .utf8))?.object)
        }
    }

    static func codes(_ client: SendspinScriptRun, connection: Int) -> [String] {
        client.records().filter { $0["kind"]?.string == "code" && $0["connection"]?.integer == connection }.compactMap { $0["code"]?.string }
    }

    static func record(_ client: SendspinScriptRun, _ kind: String, connection: Int) -> [String: JSONValue]? {
        client.records().first { $0["kind"]?.string == kind && $0["connection"]?.integer == connection }
    }

    /// A six-digit code that is not `code`.
    static func other(_ code: String, _ k: Int) -> String {
        let n = (Int(code)! + k) % 1_000_000
        return String(repeating: "0", count: 6 - String(n).count) + String(n)
    }

    /// The dynamic method: the player shows six digits; a wrong one typed is
    /// refused (one round of the attempt spent, 4 left) and the player shows
    /// its code again on the same connection; the right one, typed grouped as
    /// it reads (`123-456`), pairs it (stored on disk, 0600, as
    /// `dynamic_pairing_code`). Reconnecting under the long-term PSK it is a
    /// room with audio, and nobody is asked.
    @Test(arguments: ["chachapoly", "aesgcm"]) func aStockPlayerPairsByTheSixDigitsItShowsAndAWrongCodeCostsARound(suite: String) throws {
        let s = try Setup()
        defer { s.leader.stop() }
        let client = try SendspinScriptRun("sendspin_code_pairing_client.py", ["--url", s.url, "--name", "Study", "--method", "dynamic", "--suite", suite,
                                                                              "--seconds", "30"], out: s.dir + "/code")

        #expect(waitUntil(timeout: 30) { !Self.codes(client, connection: 1).isEmpty }, "\(client.records()) \(client.stderr())")
        let code = try #require(Self.codes(client, connection: 1).first)
        #expect(code.count == 6 && code.allSatisfy(\.isNumber), "\(code)")
        let connected = try #require(Self.record(client, "connected", connection: 1))
        #expect(connected["psk"]?.string == "sentinel" && connected["activities"]?.strings == ["pairing"], "\(connected)")
        let waiting = s.pending().filter { $0["name"]?.string == "Study" }
        #expect(waiting.count == 1 && waiting.first?["via"]?.string == "sendspin" && waiting.first?["method"]?.string == "dynamic_pairing_code"
                && waiting.first?["by"]?.string == "code", "\(s.pending())")

        // Codes that cannot be it: no player waits for eight digits; not digits at all.
        #expect(s.refusal("1234-5678")?.contains("a pairing code of 8 digits") == true, "\(String(describing: s.refusal("1234-5678")))")
        #expect(s.refusal("12a456")?.contains("six digits") == true)
        #expect(s.refusal(code, name: "Cellar")?.contains("Cellar") == true, "a name nobody waits under")

        // A wrong code: refused with the rounds left, and the player shows its code for the next round.
        let wrong = s.refusal(Self.other(code, 1), name: "Study")
        #expect(wrong == "that is not Study's code (4 more tries on this connection)", "\(String(describing: wrong))")
        #expect(waitUntil(timeout: 10) { Self.codes(client, connection: 1).count == 2 }, "\(client.records())")
        #expect(Self.codes(client, connection: 1) == [code, code], "the same code in the second round: it is the connection's")
        #expect(Self.record(client, "closed", connection: 1) == nil)
        #expect(!client.records().contains { $0["kind"]?.string == "paired" })

        // The right code, typed as the player groups it.
        let r = try s.call("speakers.sendspinCode", ["code": .string(code.prefix(3) + "-" + code.suffix(3))])
        #expect(r.object?["paired"]?.string == "Study", "\(r)")
        #expect(waitUntil(timeout: 10) { Self.record(client, "paired", connection: 1) != nil }, "\(client.records()) \(client.stderr())")
        let file = try s.trustFile()
        let paired = file["paired"]?.objectArray ?? []
        #expect(paired.count == 1 && paired.first?["name"]?.string == "Study" && paired.first?["pair_methods"]?.strings == ["dynamic_pairing_code"], "\(file)")
        let mode = try #require(FileManager.default.attributesOfItem(atPath: s.dir + "/sendspin-trust.json")[.posixPermissions] as? Int)
        #expect(mode == 0o600)

        // Back under its long-term PSK: a room, with audio, nobody asked, nothing pending.
        #expect(waitUntil(timeout: 30) { Self.record(client, "connected", connection: 2) != nil }, "\(client.records()) \(client.stderr())")
        let second = try #require(Self.record(client, "connected", connection: 2))
        #expect(second["psk"]?.string == "long_term" && second["activities"]?.strings == ["playback"], "\(second)")
        #expect(waitUntil(timeout: 10) { s.leader.followerNames.contains("Study") }, "\(s.leader.followerNames)")
        #expect(waitUntil(timeout: 20) { (client.records().last { $0["kind"]?.string == "chunks" }?["count"]?.integer ?? 0) >= 150 }, "\(client.records())")
        let audio = try #require(client.records().last { $0["kind"]?.string == "chunks" })
        #expect(audio["synced"]?.bool == true, "\(audio)")
        #expect(s.pending().isEmpty, "\(s.pending())")
        #expect(s.refusal(code)?.contains("no Sendspin player is waiting") == true, "the code is spent")
        #expect(!client.records().contains { $0["kind"]?.string == "error" }, "\(client.records())")
        #expect(!client.stderr().contains("Traceback"), "\(client.stderr())")
    }

    /// The web app's card for a player waiting for the six digits it shows
    /// (Tests/Web/sendspin_code_test.py in Chromium): named field and Deny,
    /// five digits refused on the page, a wrong code refused by the leader
    /// with 4 tries left, the right one typed grouped pairs the player.
    @Test func theWebAppsCardPairsAPlayerByTheSixDigitsItShows() throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), "chromedriver is missing: run scripts/setup.sh")
        let s = try Setup(web: true)
        defer { s.leader.stop() }
        let client = try SendspinScriptRun("sendspin_code_pairing_client.py", ["--url", s.url, "--name", "Study", "--method", "dynamic", "--seconds", "5"],
                                           out: s.dir + "/web")
        #expect(waitUntil(timeout: 30) { !Self.codes(client, connection: 1).isEmpty }, "\(client.records()) \(client.stderr())")
        let web = try #require(s.leader.webEndpoint)
        var args = [Setup.repository + "/Tests/Web/sendspin_code_test.py", "--url", "http://127.0.0.1:\(web.port)", "--control-port", String(s.control.port),
                    "--name", "Study", "--codes", s.dir + "/web.jsonl"]
        if let shots = ProcessInfo.processInfo.environment["TUTTI_SCREENSHOTS"] { args += ["--screenshots", shots] }
        let r = try runProgram("/usr/bin/python3", args, mergeErrors: true, timeout: 120)
        print(r.out)
        #expect(r.status == 0 && r.out.contains("all checks passed"), "the browser test failed:\n\(r.out)")
        #expect(waitUntil(timeout: 10) { Self.record(client, "paired", connection: 1) != nil }, "\(client.records()) \(client.stderr())")
        let paired = try s.trustFile()["paired"]?.objectArray ?? []
        #expect(paired.count == 1 && paired.first?["pair_methods"]?.strings == ["dynamic_pairing_code"], "\(paired)")
    }

    /// Wrong codes are limited: 5 rounds end an attempt (the leader closes the
    /// connection); a code shown on an earlier connection is wrong on the next
    /// (it is bound to its handshake); after 10 wrong codes a player gets no
    /// code attempt (activated with nothing, not waiting for a code), and after
    /// 20 from one address neither does a new player from there, though it has
    /// had no wrong code of its own (budgets of 10 minutes: the expiry is
    /// TuttiAuthTests' `wrongCodesAreBudgetedPerClientAndPerAddress`).
    @Test func wrongCodesAreLimitedPerAttemptPerPlayerAndPerAddress() throws {
        let s = try Setup()
        defer { s.leader.stop() }
        func player(_ name: String, connections: Int) throws -> SendspinScriptRun {
            try SendspinScriptRun("sendspin_code_pairing_client.py", ["--url", s.url, "--name", name, "--method", "dynamic", "--connections", String(connections),
                                                                       "--wait", "60", "--seconds", "5"], out: s.dir + "/" + name)
        }
        /// Types five wrong codes for `name`'s code on `connection` (the first `first`, if given): the refusals.
        func fiveWrong(_ client: SendspinScriptRun, _ name: String, connection: Int, first: String? = nil) throws -> [String] {
            #expect(waitUntil(timeout: 30) { !Self.codes(client, connection: connection).isEmpty }, "\(client.records()) \(client.stderr())")
            let code = try #require(Self.codes(client, connection: connection).first)
            var refusals: [String] = []
            for k in 1...5 {
                #expect(waitUntil(timeout: 10) { Self.codes(client, connection: connection).count == k }, "round \(k): \(client.records())")
                let typed = k == 1 ? first ?? Self.other(code, k) : Self.other(code, k)
                refusals.append(s.refusal(typed, name: name) ?? "taken")
            }
            #expect(waitUntil(timeout: 10) { Self.record(client, "closed", connection: connection) != nil }, "the attempt ends: \(client.records())")
            return refusals
        }
        let rounds = (0..<5).map { "that is not Alpha's code (\(4 - $0) more tries on this connection)" }

        let alpha = try player("Alpha", connections: 3)
        #expect(try fiveWrong(alpha, "Alpha", connection: 1) == rounds)
        // Its next connection shows another code, and the first one is wrong there.
        #expect(waitUntil(timeout: 30) { !Self.codes(alpha, connection: 2).isEmpty }, "\(alpha.records())")
        let first = try #require(Self.codes(alpha, connection: 1).first), second = try #require(Self.codes(alpha, connection: 2).first)
        #expect(first != second, "a code belongs to its connection (equal by chance once in a million)")
        #expect(try fiveWrong(alpha, "Alpha", connection: 2, first: first) == rounds)
        // Ten wrong codes: the third connection is activated with nothing and waits for no code.
        #expect(waitUntil(timeout: 30) { Self.record(alpha, "connected", connection: 3) != nil }, "\(alpha.records())")
        #expect(Self.record(alpha, "connected", connection: 3)?["activities"]?.strings == [], "\(alpha.records())")
        #expect(Self.codes(alpha, connection: 3).isEmpty)
        #expect(!s.pending().contains { $0["name"]?.string == "Alpha" }, "\(s.pending())")
        #expect(s.refusal("123456", name: "Alpha")?.contains("Alpha") == true)

        // Another player from the same address still pairs by code (10 of the address's 20 spent)...
        let beta = try player("Beta", connections: 3)
        let betaRounds = rounds.map { $0.replacingOccurrences(of: "Alpha", with: "Beta") }
        #expect(try fiveWrong(beta, "Beta", connection: 1) == betaRounds)
        #expect(try fiveWrong(beta, "Beta", connection: 2) == betaRounds)
        #expect(waitUntil(timeout: 30) { Self.record(beta, "connected", connection: 3) != nil }, "\(beta.records())")
        #expect(Self.record(beta, "connected", connection: 3)?["activities"]?.strings == [], "\(beta.records())")
        // ...but with 20 spent there, a third gets no code attempt, though it has had no wrong code of its own.
        let gamma = try player("Gamma", connections: 1)
        #expect(waitUntil(timeout: 30) { Self.record(gamma, "connected", connection: 1) != nil }, "\(gamma.records()) \(gamma.stderr())")
        #expect(Self.record(gamma, "connected", connection: 1)?["activities"]?.strings == [], "\(gamma.records())")
        #expect(Self.codes(gamma, connection: 1).isEmpty)
        // Nothing paired: the trust file (written on the first change kept on disk) was never written.
        #expect(!FileManager.default.fileExists(atPath: s.dir + "/sendspin-trust.json"))
        for c in [alpha, beta, gamma] { #expect(!c.stderr().contains("Traceback"), "\(c.stderr())") }
    }

    /// The static method: a code typed before the owner's pairing gesture is
    /// kept for the player (the call says so after 5 s) and used once the
    /// gesture comes. Typed wrong, it ends that attempt but not the
    /// connection: the leader starts another (the player's pairing window
    /// admits 5), so a typo costs no second gesture; the next wrong one says
    /// 3 more tries are left, and the right one pairs.
    @Test func aStockPlayerPairsByTheCodePrintedOnItAndATypoCostsNoNewGesture() throws {
        let s = try Setup()
        defer { s.leader.stop() }
        let client = try SendspinScriptRun("sendspin_code_pairing_client.py", ["--url", s.url, "--name", "Hall", "--method", "static", "--code", "27183141",
                                                                              "--suite", "aesgcm", "--seconds", "10"], out: s.dir + "/static")
        #expect(waitUntil(timeout: 30) { s.pending().contains { $0["name"]?.string == "Hall" && $0["method"]?.string == "static_pairing_code" } },
                "\(s.pending()) \(client.records()) \(client.stderr())")
        #expect(s.refusal("271-831")?.contains("a pairing code of 6 digits") == true, "nobody waits for six digits")
        let early = try s.call("speakers.sendspinCode", ["code": "1111 1111"])
        #expect(early.object?["offered"]?.string == "Hall" && early.object?["waiting"]?.bool == true, "\(early)")
        #expect(!client.records().contains { $0["kind"]?.string == "abort" }, "nothing tried before the gesture")
        func aborts() -> [String] { client.records().filter { $0["kind"]?.string == "abort" }.compactMap { $0["reason"]?.string } }
        writeFile(s.dir + "/static.gesture", [])
        // The early code was wrong: the player aborts that attempt, and stays connected for the next.
        #expect(waitUntil(timeout: 20) { aborts() == ["pairing_code_mismatch"] }, "\(client.records()) \(client.stderr())")
        // Typed while the next attempt starts or once it waits: kept for it, or used at once; either way the call hears how it went.
        let second = s.refusal("2222-2222", name: "Hall")
        #expect(second == "that is not Hall's code (3 more tries on this connection)", "\(String(describing: second))")
        #expect(aborts() == ["pairing_code_mismatch", "pairing_code_mismatch"], "\(client.records())")
        let r = try s.call("speakers.sendspinCode", ["code": "2718-3141", "name": "Hall"])
        #expect(r.object?["paired"]?.string == "Hall", "\(r)")
        #expect(Self.record(client, "closed", connection: 1) == nil, "one connection, one gesture: \(client.records())")
        #expect(waitUntil(timeout: 20) { Self.record(client, "paired", connection: 1) != nil }, "\(client.records()) \(client.stderr())")
        let paired = try s.trustFile()["paired"]?.objectArray ?? []
        #expect(paired.count == 1 && paired.first?["pair_methods"]?.strings == ["static_pairing_code"], "\(paired)")
        #expect(waitUntil(timeout: 30) { Self.record(client, "connected", connection: 2)?["psk"]?.string == "long_term" }, "\(client.records())")
        #expect(waitUntil(timeout: 10) { s.leader.followerNames.contains("Hall") }, "\(s.leader.followerNames)")
        #expect(!client.records().contains { $0["kind"]?.string == "error" }, "\(client.records())")
        #expect(!client.stderr().contains("Traceback"), "\(client.stderr())")
    }
}
