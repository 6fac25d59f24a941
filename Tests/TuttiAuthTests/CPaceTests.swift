import Testing
@testable import TuttiCore
import TuttiAuth

/// CPACE-X25519-SHA512 as aiosendspin pairs with it: every value below was
/// computed by PyPI's `cpace` 0.1.0 (the package aiosendspin 10.2.1 uses)
/// with the same inputs and fixed scalars.
struct CPaceTests {
    func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = s.startIndex
        while i < s.endIndex { let j = s.index(i, offsetBy: 2); out.append(UInt8(s[i..<j], radix: 16)!); i = j }
        return out
    }
    let crypto = NoisePrimitives()

    @Test func theGeneratorIsElligator2OfTheHashedCodeAsAiosendspinsCPaceMapsIt() {
        let sha = NoisePrimitives.sha512
        #expect(CPace.generator(prs: Array("123456".utf8), ci: [], sid: Array(0..<16), sha512: sha)
                == hex("d1529383fa7707ab9482cfefc1aee151f049366b38afcb1e255a03ca940a524b"))
        #expect(CPace.generator(prs: [], ci: Array("ci".utf8), sid: Array("s".utf8), sha512: sha)
                == hex("bd1bccca442e3f6a97263069bc28b09bbbe87ce25835131a8e643c2e37bfb21f"))
        #expect(CPace.generator(prs: Array("12345678".utf8), ci: Array("ci".utf8), sid: Array("s".utf8), sha512: sha)
                == hex("7839ae5987a95f6e44e23c1b03432ee0a9eca422f88e30ad628a00b766197a72"))
        // A code longer than SHA-512's block: no zero padding.
        #expect(CPace.generator(prs: [UInt8](repeating: 0x78, count: 200), ci: Array("ci".utf8), sid: Array("s".utf8), sha512: sha)
                == hex("57cd246e55866b64db0b8729484c9ffe93dd238fb866a0c3c1a2996fdbbba976"))
        #expect(CPace.prependLength([UInt8](repeating: 1, count: 200)).prefix(2) == [0xc8, 0x01])
    }

    @Test func bothSidesDeriveAiosendspinsKeyAndTagsAndAWrongCodeFailsConfirmation() throws {
        let sid = Array<UInt8>(0..<16)
        let sa = (0..<32).map { UInt8(($0 * 7) % 256) }, sb = (0..<32).map { UInt8(($0 * 13 + 5) % 256) }
        var server = try CPace(role: .initiator, prs: Array("123456".utf8), sid: sid, ad: Array("server".utf8), crypto: crypto,
                               sha512: NoisePrimitives.sha512, scalar: sa)
        var client = try CPace(role: .responder, prs: Array("123456".utf8), sid: sid, ad: Array("client".utf8), crypto: crypto,
                               sha512: NoisePrimitives.sha512, scalar: sb)
        #expect(server.publicShare == hex("b7aa3bc5e4d5d16cf8ab22f1bf75c28a0050e661ba424349542e3aa97b913245"))
        #expect(client.publicShare == hex("ebc2e47db9c8f08ac359d582f35ba5d53acdd71548182ae590ecaf47119ace6c"))
        try server.derive(peerShare: client.publicShare, peerAD: Array("client".utf8))
        try client.derive(peerShare: server.publicShare, peerAD: Array("server".utf8))
        let isk = hex("d2ca30beb0715f7220c2bd33c8d43729776cc2bbd6e6f17811bcfc8853306ae70f0a8081ee401f747921412876c6ac9a9fe4f22a4a08ce6b03cde6b660453412")
        #expect(server.isk == isk && client.isk == isk)
        let ta = hex("b1ab6689c54eea649cb15cba42a129116806a1ff1c37a8e47c1a8b525242a4f66c707fef89d478108ad9ec0ae29a84464d2f15f0a48491d0fc6cf35e69dd4ace")
        let tb = hex("bea0f9bfa18bc4d652deb094a8f5fba96f23db7945c0447d0381c8470b8c9746a88ca1f9d5c0f477c837d217fc87b149c4a7624e50c1e93b092ff8fb1b87dd6c")
        #expect(try server.tag() == ta && client.tag() == tb)
        #expect(server.verify(tb) && client.verify(ta))
        #expect(!server.verify(ta)) // its own tag reflected
        #expect(throws: CPace.Failure.outOfOrder) { try server.derive(peerShare: client.publicShare) }

        // A wrong code: keys differ, neither tag verifies.
        var wrong = try CPace(role: .responder, prs: Array("123457".utf8), sid: sid, ad: Array("client".utf8), crypto: crypto, sha512: NoisePrimitives.sha512)
        var fresh = try CPace(role: .initiator, prs: Array("123456".utf8), sid: sid, ad: Array("server".utf8), crypto: crypto, sha512: NoisePrimitives.sha512)
        try wrong.derive(peerShare: fresh.publicShare, peerAD: Array("server".utf8))
        try fresh.derive(peerShare: wrong.publicShare, peerAD: Array("client".utf8))
        #expect(wrong.isk != fresh.isk)
        #expect(try !fresh.verify(wrong.tag()) && !wrong.verify(fresh.tag()))
        // A low-order share (0) is refused.
        var low = try CPace(role: .initiator, prs: [1], sid: sid, crypto: crypto, sha512: NoisePrimitives.sha512)
        #expect(throws: CPace.Failure.invalidShare) { try low.derive(peerShare: [UInt8](repeating: 0, count: 32)) }
    }

    /// The field arithmetic under Elligator 2, against identities.
    @Test func fieldArithmeticModuloTwoToThe255Minus19() {
        let x = Field25519(bytes: hex("d1529383fa7707ab9482cfefc1aee151f049366b38afcb1e255a03ca940a524b"))
        #expect(x * x.inverse == .one)
        #expect(x - x == .zero && (x + (-x)) == .zero)
        #expect(Field25519.zero.inverse == .zero)
        #expect(Field25519(4).legendre == .one)
        #expect(Field25519(2).legendre == -Field25519.one) // 2 is the non-square Z
        // p itself reads as 0; p − 1 + 1 wraps to 0.
        #expect(Field25519(bytes: hex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")) == .zero)
        #expect(Field25519(bytes: hex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")) + .one == .zero)
        // Against Python's integers (pow, %), a value read from all-ones bytes (2^255 − 1, above p) included.
        let y = Field25519(bytes: [UInt8](repeating: 0xff, count: 32))
        #expect((x * y).bytes == hex("70d35b409d6f8606742e97dca249dec1e532d189f751522a9c563c3476bec44b"))
        #expect(y.inverse.bytes == hex("89e3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388ee3388e23"))
        #expect((x - y).bytes == hex("bf529383fa7707ab9482cfefc1aee151f049366b38afcb1e255a03ca940a524b"))
        #expect(x.legendre == -Field25519.one && y.legendre == -Field25519.one && (x * x).legendre == .one)
        // Long chains stay reduced: (x·y)^(2^1000) two ways.
        #expect((x * y).squared(times: 1_000) == x.squared(times: 1_000) * y.squared(times: 1_000))
    }

    /// The map alone, against PyPI `cpace` 0.1.0's `_elligator2(_decode_u(bytes))`:
    /// zero, one, p, p ± 1, 2^256 − 1 (its top bit dropped) and random hashes.
    @Test func elligator2MapsAsCPaceZeroOneZeroDoes() {
        let vectors = [
            ("0000000000000000000000000000000000000000000000000000000000000000", "0000000000000000000000000000000000000000000000000000000000000000"),
            ("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", "1e5942dd97c756040d27755f1e5b11349cd47d796c45d07052f7e5b11541c349"),
            ("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "0000000000000000000000000000000000000000000000000000000000000000"),
            ("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "9cdb525555555555555555555555555555555555555555555555555555555555"),
            ("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", "9cdb525555555555555555555555555555555555555555555555555555555555"),
            ("0100000000000000000000000000000000000000000000000000000000000000", "9cdb525555555555555555555555555555555555555555555555555555555555"),
            ("8c135899d89b491682ed58646a04f9081ad871a639cd5915ff7f54ea9b8a6bd6", "56891b656cadb89ba137103942c4b4e88ce0e89cbdc9be9d4a4ef636ac72da49"),
            ("ba3372fa2b386fc868accaaf9086328bac6c4c4783c038d169f5c9788424c04e", "90d642f3e29c03c359772d98d12a6ff037fb45406d88782321ab25f547e36254"),
            ("c14c96b5a57865d29ed9c6e519bbf0e35edb234326b057cd118d65296aa0a76d", "06eb651c18e5c7c9c072ebd72bf216c0a8aebb42cfb604bf3c4079df634e0051"),
            ("7748ef9ea82752bedfd8b2f9f7a2bbbbf7ac34ab4703f8c10566ec6ae98c226f", "04f680eaddeda38fe386b9879a1969ef5ee97e29de184132351b77688fcdab79"),
        ]
        for (input, output) in vectors { #expect(Field25519.elligator2(hex(input)) == hex(output), "\(input)") }
    }
}
