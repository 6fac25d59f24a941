/// CPace, the balanced PAKE of draft-irtf-cfrg-cpace, in the suite
/// aiosendspin 10 pairs with: CPACE-X25519-SHA512 (the generator mapped with
/// Elligator 2 onto Curve25519, shares and the shared point by X25519, the
/// session key and the confirmation tags by SHA-512 and HMAC-SHA-512), in
/// initiator–responder mode with explicit mutual confirmation. Both sides
/// know a low-entropy code (`prs`); neither learns the other's if it is
/// wrong, and an eavesdropper cannot test guesses offline.
///
/// Pure: X25519 and randomness come from the `NoiseCrypto` given, SHA-512
/// from the `sha512` closure (libsodium's in TuttiAuth). Checked against
/// PyPI's `cpace` 0.1.0, the implementation aiosendspin uses
/// (`CPaceTests`).
public struct CPace: Sendable {
    public enum Role: Sendable { case initiator, responder }

    public enum Failure: Error, Equatable, Sendable {
        /// The generator or a share is a low-order point (X25519 gave all zeros), or a share is not 32 bytes.
        case invalidShare
        /// `derive` a second time, or a tag before it.
        case outOfOrder
    }

    public typealias SHA512 = @Sendable ([UInt8]) -> [UInt8]

    public let role: Role
    public let sid: [UInt8]
    public let ad: [UInt8]
    /// This side's message: X25519(scalar, generator).
    public let publicShare: [UInt8]
    private var scalar: [UInt8]?
    private let crypto: any NoiseCrypto
    private let sha512: SHA512
    /// After `derive`: the intermediate session key and the confirmation key.
    public private(set) var isk: [UInt8]?
    private var macKey: [UInt8] = []
    /// ((Ya, ADa), (Yb, ADb)): the initiator's side first.
    private var sides: (a: ([UInt8], [UInt8]), b: ([UInt8], [UInt8]))?

    static let dsi = Array("CPace255".utf8)
    static let dsiISK = Array("CPace255_ISK".utf8)
    static let macLabel = Array("CPaceMac".utf8)

    /// Starts a run: a fresh scalar (or `scalar`, for tests) and its share.
    public init(role: Role, prs: [UInt8], sid: [UInt8], ci: [UInt8] = [], ad: [UInt8] = [], crypto: any NoiseCrypto, sha512: @escaping SHA512,
                scalar: [UInt8]? = nil) throws(Failure) {
        let s = scalar ?? crypto.random(32)
        guard let share = crypto.dh(secret: s, public: Self.generator(prs: prs, ci: ci, sid: sid, sha512: sha512)) else { throw .invalidShare }
        self.role = role; self.sid = sid; self.ad = ad; self.crypto = crypto; self.sha512 = sha512
        self.scalar = s
        publicShare = share
    }

    /// Takes the peer's share and associated data: the session key and confirmation key follow. Once.
    public mutating func derive(peerShare: [UInt8], peerAD: [UInt8] = []) throws(Failure) {
        guard let s = scalar else { throw .outOfOrder }
        scalar = nil // single use, even when it fails
        guard peerShare.count == 32, let shared = crypto.dh(secret: s, public: peerShare) else { throw .invalidShare }
        let sides = role == .initiator ? ((publicShare, ad), (peerShare, peerAD)) : ((peerShare, peerAD), (publicShare, ad))
        self.sides = sides
        let transcript = Self.lvCat([sides.0.0, sides.0.1]) + Self.lvCat([sides.1.0, sides.1.1])
        let key = sha512(Self.lvCat([Self.dsiISK, sid, shared]) + transcript)
        isk = key
        macKey = sha512(Self.macLabel + sid + key)
    }

    /// This side's confirmation tag (Ta for the initiator, Tb for the responder).
    public func tag() throws(Failure) -> [UInt8] {
        guard let sides else { throw .outOfOrder }
        let own = role == .initiator ? sides.a : sides.b
        return Self.hmacSHA512(key: macKey, Self.lvCat([own.0, own.1]), sha512: sha512)
    }

    /// Whether the peer's tag proves it knew the code (false for a reflected share).
    public func verify(_ peerTag: [UInt8]) -> Bool {
        guard let sides, sides.a.0 != sides.b.0 || sides.a.1 != sides.b.1 else { return false }
        let peer = role == .initiator ? sides.b : sides.a
        let expected = Self.hmacSHA512(key: macKey, Self.lvCat([peer.0, peer.1]), sha512: sha512)
        return constantTimeEqual(peerTag, expected)
    }

    // MARK: The draft's encodings

    /// The length as LEB128, then the bytes (`prepend_len`).
    static func prependLength(_ data: [UInt8]) -> [UInt8] {
        var length = data.count
        var out: [UInt8] = []
        repeat {
            var byte = UInt8(length & 0x7f)
            length >>= 7
            if length > 0 { byte |= 0x80 }
            out.append(byte)
        } while length > 0
        return out + data
    }

    static func lvCat(_ parts: [[UInt8]]) -> [UInt8] { parts.flatMap(prependLength) }

    /// The generator: Elligator 2 of the first 32 bytes of SHA-512 of the
    /// generator string (`DSI`, `PRS`, zero padding to SHA-512's block, `CI`, `sid`).
    static func generator(prs: [UInt8], ci: [UInt8], sid: [UInt8], sha512: SHA512) -> [UInt8] {
        let pad = max(0, 128 - 1 - prependLength(prs).count - prependLength(dsi).count)
        let hash = sha512(lvCat([dsi, prs, [UInt8](repeating: 0, count: pad), ci, sid]))
        return Field25519.elligator2(Array(hash.prefix(32)))
    }

    static func hmacSHA512(key: [UInt8], _ message: [UInt8], sha512: SHA512) -> [UInt8] {
        var k = key.count > 128 ? sha512(key) : key
        k += [UInt8](repeating: 0, count: 128 - k.count)
        let inner = sha512(k.map { $0 ^ 0x36 } + message)
        return sha512(k.map { $0 ^ 0x5c } + inner)
    }
}

/// Equal bytes, in time that depends on the length only.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var d: UInt8 = 0
    for i in a.indices { d |= a[i] ^ b[i] }
    return d == 0
}

/// Integers modulo p = 2^255 − 19 for Elligator 2, in constant time: five
/// 51-bit limbs (a value, not necessarily below p, until `bytes` reduces it),
/// products in 128 bits, carries by shifts and masks, selections by masks,
/// and the exponentiations (inverse, Legendre symbol) by one fixed addition
/// chain. No branch and no memory index depends on a value, so the time taken
/// says nothing of the pairing code the generator is derived from.
///
/// Hand-written because no Debian library exposes the map CPace's X25519
/// suite needs: libsodium's `crypto_core_ed25519_from_uniform` runs
/// Elligator 2 but returns the Edwards point times the cofactor 8 (another
/// point; its u-coordinate is not the draft's generator), and its
/// `from_hash` is RFC 9380's hash to curve; OpenSSL has no map at all.
struct Field25519: Equatable {
    var l0, l1, l2, l3, l4: UInt64

    static let mask: UInt64 = (1 << 51) - 1
    static let zero = Field25519(0)
    static let one = Field25519(1)

    init(_ l0: UInt64, _ l1: UInt64, _ l2: UInt64, _ l3: UInt64, _ l4: UInt64) {
        self.l0 = l0; self.l1 = l1; self.l2 = l2; self.l3 = l3; self.l4 = l4
    }

    /// A small constant (below 2^51).
    init(_ small: UInt64) { self.init(small, 0, 0, 0, 0) }

    /// 32 little-endian bytes, the top bit dropped (RFC 7748's u decoding); p to 2^255 − 1 read as themselves, mod p.
    init(bytes: [UInt8]) {
        precondition(bytes.count == 32, "a field element is 32 bytes")
        func word(_ i: Int) -> UInt64 {
            var w: UInt64 = 0
            for k in 0..<8 { w |= UInt64(bytes[8 * i + k]) << UInt64(8 * k) }
            return w
        }
        let w0 = word(0), w1 = word(1), w2 = word(2), w3 = word(3) & 0x7fff_ffff_ffff_ffff
        self.init(w0 & Self.mask, (w0 >> 51 | w1 << 13) & Self.mask, (w1 >> 38 | w2 << 26) & Self.mask,
                  (w2 >> 25 | w3 << 39) & Self.mask, w3 >> 12)
    }

    /// The value below p, 32 little-endian bytes.
    var bytes: [UInt8] {
        var h = carried().carried() // every limb below 2^51 + 2^13·19, then below 2^51: h < 2^255
        // q = 1 exactly when h ≥ p (h + 19 reaches 2^255); then h − p is h + 19 − 2^255.
        var q = (h.l0 &+ 19) >> 51
        q = (h.l1 &+ q) >> 51
        q = (h.l2 &+ q) >> 51
        q = (h.l3 &+ q) >> 51
        q = (h.l4 &+ q) >> 51
        h.l0 &+= 19 &* q
        h.l1 &+= h.l0 >> 51; h.l0 &= Self.mask
        h.l2 &+= h.l1 >> 51; h.l1 &= Self.mask
        h.l3 &+= h.l2 >> 51; h.l2 &= Self.mask
        h.l4 &+= h.l3 >> 51; h.l3 &= Self.mask
        h.l4 &= Self.mask // drops the 2^255
        let w0 = h.l0 | h.l1 << 51, w1 = h.l1 >> 13 | h.l2 << 38, w2 = h.l2 >> 26 | h.l3 << 25, w3 = h.l3 >> 39 | h.l4 << 12
        var out = [UInt8](repeating: 0, count: 32)
        for (i, w) in [w0, w1, w2, w3].enumerated() {
            for k in 0..<8 { out[8 * i + k] = UInt8(truncatingIfNeeded: w >> UInt64(8 * k)) }
        }
        return out
    }

    /// The same value with each limb's excess carried up (the top's as 19 × 2^0): limbs below 2^51 + 2^18.
    func carried() -> Field25519 {
        var h = self
        h.l1 &+= h.l0 >> 51; h.l0 &= Self.mask
        h.l2 &+= h.l1 >> 51; h.l1 &= Self.mask
        h.l3 &+= h.l2 >> 51; h.l2 &= Self.mask
        h.l4 &+= h.l3 >> 51; h.l3 &= Self.mask
        h.l0 &+= 19 &* (h.l4 >> 51); h.l4 &= Self.mask
        return h
    }

    /// Equal modulo p, compared in constant time.
    static func == (a: Field25519, b: Field25519) -> Bool { constantTimeEqual(a.bytes, b.bytes) }

    static func + (a: Field25519, b: Field25519) -> Field25519 {
        Field25519(a.l0 &+ b.l0, a.l1 &+ b.l1, a.l2 &+ b.l2, a.l3 &+ b.l3, a.l4 &+ b.l4).carried()
    }

    /// a + 2p − b limb by limb (b's limbs are below 2^51 + 2^18 < 2p's), so no limb goes below zero.
    static func - (a: Field25519, b: Field25519) -> Field25519 {
        let twoP0: UInt64 = 0xf_ffff_ffff_ffda, twoP: UInt64 = 0xf_ffff_ffff_fffe
        return Field25519(a.l0 &+ twoP0 &- b.l0, a.l1 &+ twoP &- b.l1, a.l2 &+ twoP &- b.l2,
                          a.l3 &+ twoP &- b.l3, a.l4 &+ twoP &- b.l4).carried()
    }

    static prefix func - (a: Field25519) -> Field25519 { zero - a }

    static func * (a: Field25519, b: Field25519) -> Field25519 {
        func m(_ x: UInt64, _ y: UInt64) -> UInt128 { UInt128(x) * UInt128(y) }
        // 2^255 ≡ 19: the limbs past the top fold back times 19.
        let b1 = 19 &* b.l1, b2 = 19 &* b.l2, b3 = 19 &* b.l3, b4 = 19 &* b.l4
        let r0 = m(a.l0, b.l0) + m(a.l1, b4) + m(a.l2, b3) + m(a.l3, b2) + m(a.l4, b1)
        var r1 = m(a.l0, b.l1) + m(a.l1, b.l0) + m(a.l2, b4) + m(a.l3, b3) + m(a.l4, b2)
        var r2 = m(a.l0, b.l2) + m(a.l1, b.l1) + m(a.l2, b.l0) + m(a.l3, b4) + m(a.l4, b3)
        var r3 = m(a.l0, b.l3) + m(a.l1, b.l2) + m(a.l2, b.l1) + m(a.l3, b.l0) + m(a.l4, b4)
        var r4 = m(a.l0, b.l4) + m(a.l1, b.l3) + m(a.l2, b.l2) + m(a.l3, b.l1) + m(a.l4, b.l0)
        let mask = UInt128(Self.mask)
        r1 += r0 >> 51
        r2 += r1 >> 51
        r3 += r2 >> 51
        r4 += r3 >> 51
        let top = UInt64(truncatingIfNeeded: r4 >> 51) // below 2^64 / 19
        return Field25519(UInt64(truncatingIfNeeded: r0 & mask) &+ 19 &* top, UInt64(truncatingIfNeeded: r1 & mask),
                          UInt64(truncatingIfNeeded: r2 & mask), UInt64(truncatingIfNeeded: r3 & mask),
                          UInt64(truncatingIfNeeded: r4 & mask)).carried()
    }

    /// self^(2^n): n squarings (n is a constant of the chain, never a secret).
    func squared(times n: Int) -> Field25519 {
        var x = self
        for _ in 0..<n { x = x * x }
        return x
    }

    /// self^(2^250 − 1), with self^11 and self^2 met on the way: the common
    /// start of the inverse and the Legendre symbol (ref10's chain).
    private func chain() -> (z250: Field25519, z11: Field25519, z2: Field25519) {
        let z2 = self * self
        let z9 = z2.squared(times: 2) * self
        let z11 = z9 * z2
        let z5 = (z11 * z11) * z9 // 2^5 − 1
        let z10 = z5.squared(times: 5) * z5
        let z20 = z10.squared(times: 10) * z10
        let z40 = z20.squared(times: 20) * z20
        let z50 = z40.squared(times: 10) * z10
        let z100 = z50.squared(times: 50) * z50
        let z200 = z100.squared(times: 100) * z100
        let z250 = z200.squared(times: 50) * z50
        return (z250, z11, z2)
    }

    /// 1/x, and 0 for 0: x^(p − 2) = x^(2^255 − 21).
    var inverse: Field25519 {
        let c = chain()
        return c.z250.squared(times: 5) * c.z11
    }

    /// x^((p − 1)/2) = x^(2^254 − 10): 1 for a square, p − 1 for a non-square, 0 for 0.
    var legendre: Field25519 {
        let c = chain()
        return c.z250.squared(times: 4) * c.z2.squared(times: 1) * c.z2 // (2^250 − 1)·2^4 + 4 + 2
    }

    /// Elligator 2 onto Curve25519 (A = 486662, Z = 2), as the draft's
    /// X25519 suite maps: the u-coordinate, 32 little-endian bytes. Both
    /// branches of the map are computed from the Legendre symbol as a field
    /// element (1, −1, or 0), so no branch is taken on the input.
    static func elligator2(_ hash: [UInt8]) -> [UInt8] {
        let a = Field25519(486_662), z = Field25519(2)
        let r = Field25519(bytes: hash)
        let v = -(a * (one + z * r * r).inverse)
        let eps = (v * v * v + a * v * v + v).legendre
        let halfA = a * Field25519(2).inverse
        let x = eps * v - (one - eps) * halfA
        return x.bytes
    }
}
