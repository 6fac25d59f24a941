import Foundation
import Synchronization
import Testing
import TuttiAuth
import TuttiCore
import TuttiTestSupport

@Suite struct SendspinTrustTests {
    let crypto = NoisePrimitives()
    func id(_ n: UInt8) -> String { Base64URL.encode(crypto.publicKey(secret: [UInt8](repeating: n, count: 32))) }
    let second: Int64 = 1_000_000_000

    @Test func joinRequestsAreBoundedAnsweredAndExpire() throws {
        var t = SendspinTrust()
        #expect(try t.noteJoinRequest(clientID: id(1), name: "Kitchen\n\u{7}tablet", address: "10.0.0.5", now: 0))
        #expect(t.requests.first?.name == "Kitchentablet")
        #expect(try !t.noteJoinRequest(clientID: id(1), name: "Kitchen", address: "10.0.0.5", now: 5 * second)) // refreshed, not added
        _ = try t.noteJoinRequest(clientID: id(2), name: "B", address: "10.0.0.5", now: 0)
        _ = try t.noteJoinRequest(clientID: id(3), name: "C", address: "10.0.0.5", now: 0)
        do { try t.noteJoinRequest(clientID: id(4), name: "D", address: "10.0.0.5", now: 0); Issue.record("a fourth request from one address") } catch {
            #expect(error == .tooManyFromAddress("10.0.0.5"))
        }
        for n in 4..<17 { _ = try t.noteJoinRequest(clientID: id(UInt8(n)), name: "R\(n)", address: "10.0.1.\(n)", now: 0) }
        #expect(t.requests.count == 16)
        do { try t.noteJoinRequest(clientID: id(40), name: "X", address: "10.0.2.1", now: 0); Issue.record("a 17th request") } catch {
            #expect(error == .tooMany)
        }

        // Allow by name: approved (unpaired access), the request gone; the peer may play.
        let allowed = t.decide(name: "Kitchen", .allow, unixSeconds: 1_700_000_000)
        #expect(allowed == 1)
        #expect(t.isApproved(id(1)) && t.requests.count == 15)
        let peer = SendspinPeer(id: id(1), cipher: .chaChaPoly, category: .sentinel, handshakeHash: [], credentialMismatch: false)
        #expect(t.mayPlay(peer))
        #expect(!t.mayPlay(SendspinPeer(id: id(2), cipher: .chaChaPoly, category: .sentinel, handshakeHash: [], credentialMismatch: false)))
        #expect(t.credentials(for: id(1), crypto: crypto) == SendspinCredentials(psk: nil, known: true))
        // Deny: the request stays (denied) so a reconnecting player does not ask again, until it expires.
        let denied = t.decide(clientID: id(2), .deny, unixSeconds: 0)
        #expect(denied)
        do { try t.noteJoinRequest(clientID: id(2), name: "B", address: "10.0.0.5", now: 10 * second); Issue.record("a denied player asked again") } catch {
            #expect(error == .denied)
        }
        #expect(t.summary()["pending"]?.array?.count == 14)
        t.expire(now: 300 * second)
        #expect(t.requests.isEmpty)
        #expect(try t.noteJoinRequest(clientID: id(2), name: "B", address: "10.0.0.5", now: 301 * second))
    }

    @Test func pairingRecordsSupersedeAndRefuseTheSentinel() throws {
        var t = SendspinTrust()
        let pairingPSK = [UInt8](repeating: 3, count: 32)
        try t.stage(clientID: id(1), psk: pairingPSK, unixSeconds: 10)
        #expect(t.credentials(for: id(1), crypto: crypto).psk?.category == .pairing)
        for reused in [pairingPSK, SendspinPSK.sentinel(crypto: crypto).key] {
            do { try t.finalizePairing(clientID: id(1), psk: reused, method: .pairingPSK, name: "Den", unixSeconds: 20, crypto: crypto); Issue.record("reused PSK stored") } catch {
                #expect(error == .sentinelOrPairingPSK)
            }
        }
        t.approve(clientID: id(1), name: "Den", unixSeconds: 15)
        let longTerm = [UInt8](repeating: 4, count: 32)
        try t.finalizePairing(clientID: id(1), psk: longTerm, method: .pairingPSK, name: "Den", unixSeconds: 20, crypto: crypto)
        #expect(t.staged.isEmpty && t.approvals.isEmpty)
        let c = t.credentials(for: id(1), crypto: crypto)
        #expect(c.psk?.key == longTerm && c.psk?.category == .longTerm && c.known)
        try t.finalizePairing(clientID: id(1), psk: [UInt8](repeating: 5, count: 32), method: .staticPairingCode, name: "", unixSeconds: 30, crypto: crypto)
        #expect(t.records.count == 1 && t.records[0].methods == [.pairingPSK, .staticPairingCode] && t.records[0].name == "Den")

        // The file form round-trips; entries it cannot read are skipped.
        t.approve(clientID: id(2), name: "Phone", unixSeconds: 40)
        try t.stage(clientID: id(3), psk: pairingPSK, unixSeconds: 50)
        let back = try SendspinTrust(parsing: Array(t.rendered().utf8))
        #expect(back.records == t.records && back.approvals == t.approvals && back.staged == t.staged)
        let damaged = try SendspinTrust(parsing: Array(#"{"paired":[{"client_id":"nope","psk":"AA"}],"approved":[{"client_id":"\#(id(2))"}]}"#.utf8))
        #expect(damaged.skipped == 1 && damaged.approvals.count == 1)
        let forgot = t.forget(clientID: id(1))
        #expect(forgot && t.records.isEmpty)
    }

    @Test func theStoreKeepsItsKeyAndTrustInFilesOnlyItsUserReads() throws {
        let folder = makeTemporaryDirectory()
        let store = try SendspinTrustStore(stateDirectory: folder)
        _ = try store.noteJoinRequest(clientID: id(1), name: "Kitchen", address: "10.0.0.5", now: 0)
        let changes = Mutex(0)
        store.onChange { changes.withLock { $0 += 1 } }
        #expect(try store.decide(name: "Kitchen", .allow) == 1)
        try store.finalizePairing(clientID: id(2), psk: [UInt8](repeating: 6, count: 32), method: .pairingPSK, name: "Den")
        #expect(changes.withLock { $0 } == 2)
        for file in ["sendspin-server.key", "sendspin-trust.json"] {
            let mode = try FileManager.default.attributesOfItem(atPath: folder + "/" + file)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
        let again = try SendspinTrustStore(stateDirectory: folder)
        #expect(again.identity == store.identity && again.serverID == store.serverID)
        #expect(again.trust.isApproved(id(1)) && again.credentials(for: id(2)).psk?.category == .longTerm)
        #expect(again.trust.requests.isEmpty) // requests are not kept
        _ = FileManager.default.createFile(atPath: folder + "/sendspin-trust.json", contents: Data("{oops".utf8))
        #expect(throws: SendspinStoreError.self) { try SendspinTrustStore(stateDirectory: folder) }
    }
}
