import Testing
import TuttiAuth
import TuttiCore

func hex(_ s: String) -> [UInt8] { bytes(fromHex: s)! }

/// Every primitive set this machine can run: libsodium's AES-GCM where the processor
/// has AES-NI, libcrypto's in any case (where libcrypto 3 loads).
let primitiveSets: [NoisePrimitives] = NoisePrimitives.AESGCMImplementation.allCases.compactMap { NoisePrimitives(aesGCM: $0) }

/// The cacophony vector for Noise_KKpsk2_25519_ChaChaPoly_SHA256 (prologue
/// "John Galt", PSK "This is my Austrian perspective!", payloads "Ludwig von
/// Mises" and "Murray Rothbard"), and the same inputs under AESGCM with
/// transport messages after it, as PyPI's noiseprotocol 0.3.1 computes them
/// (it also reproduces the cacophony ChaChaPoly vector byte for byte).
struct KKpsk2Vector {
    var cipher: NoiseCipher
    var message1: String
    var message2: String
    var handshakeHash: String
    /// "Ayn Rand" initiator→responder, "Friedrich Hayek" back, "Henry Hazlitt" initiator→responder.
    var transport: [String]

    static let prologue = hex("4a6f686e2047616c74")
    static let psk = hex("54686973206973206d7920417573747269616e20706572737065637469766521")
    static let initiatorStatic = hex("e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1")
    static let initiatorEphemeral = hex("893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a")
    static let responderStatic = hex("4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893")
    static let responderEphemeral = hex("bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b")

    static let all = [
        KKpsk2Vector(cipher: .chaChaPoly,
                     message1: "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944babf6443250c604872e33233c3b9a29df5c6d334ae2d53f1bd7f0b265a716b37",
                     message2: "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f14480884366a1f5f0d79fe93ae476bd1897a7a8ae92764898aa5d49e07b5849f35865ba",
                     handshakeHash: "7f3c5fdcdd3767e2835473a2683971490339f5bbeee82c3690bc606e14db70ed",
                     transport: ["29e5260af45581c598827957fd87ccfc4ff65562adf5cbde",
                                 "ebb66213cd33d97eaa87d825c1b7e1db3285c90ba82c03336fe714d46a2fdc",
                                 "a92e155d4ed8832cf7ce537dee232b6b6973b93a5ddc52eb1b5c397de4"]),
        KKpsk2Vector(cipher: .aesGCM,
                     message1: "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c794483cf298f1bfed916ea20d8f528bd30670670c7245e236a68f021b5a521d8bf31",
                     message2: "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f14480884332b32e0f483ae58a9c36e93390a9c2238918bda6ae0ebfe48a400b8f565f5f",
                     handshakeHash: "1d2be5b73c43962fa87db816e6b5a73a0d67053e29b3d89fcee6ae299b5a5c1f",
                     transport: ["f0985126f41e83fa6ef7fd8f5c7780cbb12d51546efd1b8d",
                                 "cb6ef9832f6bb954dc9e15425a7b8e003cffef528317585ecc5a40c340d980",
                                 "d8417cd9fee65c7c00ae7eadea6489ee576ac392162c000668af649c2e"]),
    ]
}

@Suite struct NoiseVectorTests {
    @Test(arguments: KKpsk2Vector.all)
    func kkpsk2MatchesTheVectorWithEveryPrimitiveSet(vector: KKpsk2Vector) throws {
        #expect(!primitiveSets.isEmpty)
        for crypto in primitiveSets {
            let iStatic = NoiseKeyPair(secret: KKpsk2Vector.initiatorStatic, crypto: crypto)
            let rStatic = NoiseKeyPair(secret: KKpsk2Vector.responderStatic, crypto: crypto)
            var initiator = NoiseKKpsk2Handshake(role: .initiator, cipher: vector.cipher, prologue: KKpsk2Vector.prologue, localStatic: iStatic,
                                                 remoteStatic: rStatic.publicKey, psk: KKpsk2Vector.psk, crypto: crypto,
                                                 ephemeral: NoiseKeyPair(secret: KKpsk2Vector.initiatorEphemeral, crypto: crypto))
            var responder = NoiseKKpsk2Handshake(role: .responder, cipher: vector.cipher, prologue: KKpsk2Vector.prologue, localStatic: rStatic,
                                                 remoteStatic: iStatic.publicKey, psk: KKpsk2Vector.psk, crypto: crypto,
                                                 ephemeral: NoiseKeyPair(secret: KKpsk2Vector.responderEphemeral, crypto: crypto))
            let m1 = try initiator.writeMessage(Array("Ludwig von Mises".utf8))
            #expect(hexString(m1) == vector.message1)
            #expect(try responder.readMessage(m1) == Array("Ludwig von Mises".utf8))
            let m2 = try responder.writeMessage(Array("Murray Rothbard".utf8))
            #expect(hexString(m2) == vector.message2)
            #expect(try initiator.readMessage(m2) == Array("Murray Rothbard".utf8))
            #expect(initiator.isComplete && responder.isComplete)
            #expect(hexString(initiator.handshakeHash) == vector.handshakeHash)
            #expect(hexString(responder.handshakeHash) == vector.handshakeHash)

            var i = try initiator.transport(), r = try responder.transport()
            #expect(i.handshakeHash == initiator.handshakeHash)
            let t1 = try i.seal(Array("Ayn Rand".utf8))
            #expect(hexString(t1) == vector.transport[0])
            #expect(try r.open(t1) == Array("Ayn Rand".utf8))
            let t2 = try r.seal(Array("Friedrich Hayek".utf8))
            #expect(hexString(t2) == vector.transport[1])
            #expect(try i.open(t2) == Array("Friedrich Hayek".utf8))
            let t3 = try i.seal(Array("Henry Hazlitt".utf8)) // nonce 1: the nonce's byte order shows here
            #expect(hexString(t3) == vector.transport[2])
            // A replayed message is refused (the receiver's nonce has moved on), and so is a changed one.
            _ = try r.open(t3)
            #expect(throws: NoiseError.authentication) { try r.open(t3) }
            var tampered = try i.seal([1, 2, 3])
            tampered[0] ^= 1
            #expect(throws: NoiseError.authentication) { try r.open(tampered) }
        }
    }

    @Test func aWrongPSKOrKeyFailsMessage2() throws {
        let crypto = NoisePrimitives()
        let iStatic = NoiseKeyPair(secret: KKpsk2Vector.initiatorStatic, crypto: crypto)
        let rStatic = NoiseKeyPair(secret: KKpsk2Vector.responderStatic, crypto: crypto)
        var initiator = NoiseKKpsk2Handshake(role: .initiator, cipher: .chaChaPoly, prologue: [], localStatic: iStatic,
                                             remoteStatic: rStatic.publicKey, psk: KKpsk2Vector.psk, crypto: crypto)
        var responder = NoiseKKpsk2Handshake(role: .responder, cipher: .chaChaPoly, prologue: [], localStatic: rStatic,
                                             remoteStatic: iStatic.publicKey, psk: [UInt8](repeating: 9, count: 32), crypto: crypto)
        let m1 = try initiator.writeMessage([])
        _ = try responder.readMessage(m1) // message 1 does not use the PSK
        let copy = initiator
        let m2 = try responder.writeMessage([])
        #expect(throws: NoiseError.authentication) { try initiator.readMessage(m2) }
        // The same message 2 read from the copy with the PSK the responder used: accepted.
        var retry = copy
        retry.psk = [UInt8](repeating: 9, count: 32)
        _ = try retry.readMessage(m2)
        #expect(retry.isComplete)

        // A responder that expects another initiator fails message 1.
        var stranger = NoiseKKpsk2Handshake(role: .responder, cipher: .chaChaPoly, prologue: [], localStatic: rStatic,
                                            remoteStatic: crypto.publicKey(secret: crypto.random(32)), psk: KKpsk2Vector.psk, crypto: crypto)
        #expect(throws: NoiseError.authentication) { try stranger.readMessage(m1) }
        // Out of order, too short, a low-order point.
        #expect(throws: NoiseError.outOfOrder) { try initiator.writeMessage([]) }
        var fresh = NoiseKKpsk2Handshake(role: .responder, cipher: .chaChaPoly, prologue: [], localStatic: rStatic,
                                         remoteStatic: iStatic.publicKey, psk: KKpsk2Vector.psk, crypto: crypto)
        #expect(throws: NoiseError.malformedMessage) { try fresh.readMessage(Array(m1.prefix(47))) }
        #expect(throws: NoiseError.badKey) { try fresh.readMessage([UInt8](repeating: 0, count: 48)) }
    }

    @Test func bothAESGCMsAgreeAndRefuseTampering() throws {
        let crypto = primitiveSets
        #expect(crypto.contains { $0.aesGCM == .libcrypto }, "libcrypto 3 should load here (libssl-dev is in setup.sh)")
        let key = (0..<32).map { UInt8($0) }, nonce = NoiseCipher.aesGCM.nonce(0x0102030405060708)
        #expect(nonce == [0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(NoiseCipher.chaChaPoly.nonce(0x0102030405060708) == [0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1])
        for size in [0, 1, 15, 16, 17, 1000, 65519] {
            let plaintext = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let sealed = crypto.map { $0.seal(.aesGCM, key: key, nonce: nonce, plaintext, ad: [9, 9]) }
            #expect(Set(sealed.map(hexString)).count == 1)
            for c in crypto {
                #expect(c.open(.aesGCM, key: key, nonce: nonce, sealed[0], ad: [9, 9]) == plaintext)
                #expect(c.open(.aesGCM, key: key, nonce: nonce, sealed[0], ad: [9]) == nil)
                var bad = sealed[0]
                bad[bad.count - 1] ^= 0x80
                #expect(c.open(.aesGCM, key: key, nonce: nonce, bad, ad: [9, 9]) == nil)
            }
        }
    }

    @Test func hmacAndSHA256MatchRFC4231AndFIPS() {
        let crypto = NoisePrimitives()
        // RFC 4231 test case 2.
        #expect(hexString(crypto.hmacSHA256(key: Array("Jefe".utf8), [Array("what do ya want ".utf8), Array("for nothing?".utf8)]))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // RFC 4231 test case 6: a key longer than the block.
        #expect(hexString(crypto.hmacSHA256(key: [UInt8](repeating: 0xaa, count: 131), [Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)]))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
        #expect(hexString(crypto.sha256([Array("ab".utf8), Array("c".utf8)])) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
