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

/// Integers modulo p = 2^255 − 19, four 64-bit limbs (little-endian), kept
/// below p. Only what Elligator 2 needs; not constant-time (the input is a
/// hash of a code both sides already hold, and the result is public).
struct Field25519: Equatable {
    var limbs: [UInt64]

    static let p: [UInt64] = [0xffff_ffff_ffff_ffed, 0xffff_ffff_ffff_ffff, 0xffff_ffff_ffff_ffff, 0x7fff_ffff_ffff_ffff]
    static let zero = Field25519(0)
    static let one = Field25519(1)

    init(_ small: UInt64) { limbs = [small, 0, 0, 0] }
    init(reducing l: [UInt64]) { limbs = l; reduceOnce(); reduceOnce() }

    /// 32 little-endian bytes, the top bit dropped (RFC 7748's u decoding), reduced.
    init(bytes: [UInt8]) {
        var l = [UInt64](repeating: 0, count: 4)
        for i in 0..<32 { l[i / 8] |= UInt64(bytes[i]) << (8 * UInt64(i % 8)) }
        l[3] &= 0x7fff_ffff_ffff_ffff
        self.init(reducing: l)
    }

    var bytes: [UInt8] { (0..<32).map { UInt8(truncatingIfNeeded: limbs[$0 / 8] >> (8 * UInt64($0 % 8))) } }

    /// Subtracts p when the value is at least p.
    private mutating func reduceOnce() {
        var geq = true
        for i in (0..<4).reversed() where limbs[i] != Self.p[i] { geq = limbs[i] > Self.p[i]; break }
        if geq { limbs = Self.subtract(limbs, Self.p).0 }
    }

    static func subtract(_ a: [UInt64], _ b: [UInt64]) -> ([UInt64], Bool) {
        var out = a
        var borrow = false
        for i in 0..<4 {
            let (d1, o1) = a[i].subtractingReportingOverflow(b[i])
            let (d2, o2) = d1.subtractingReportingOverflow(borrow ? 1 : 0)
            out[i] = d2
            borrow = o1 || o2
        }
        return (out, borrow)
    }

    /// A value below 2^256 plus `carry` × 2^256, folded (2^256 ≡ 38) and reduced below p.
    static func fold(_ l: [UInt64], carry: UInt64) -> Field25519 {
        var out = l
        var c = carry &* 38
        for i in 0..<4 {
            let (s, o) = out[i].addingReportingOverflow(c)
            out[i] = s
            c = o ? 1 : 0
        }
        if c > 0 { // wrapped past 2^256 once more: add 38 again (the low limb cannot overflow now)
            out[0] &+= 38
        }
        // Below 2^256: take bit 255 off as 19.
        let top = out[3] >> 63
        out[3] &= 0x7fff_ffff_ffff_ffff
        var add = top * 19
        for i in 0..<4 {
            let (s, o) = out[i].addingReportingOverflow(add)
            out[i] = s
            add = o ? 1 : 0
        }
        return Field25519(reducing: out)
    }

    static func + (a: Field25519, b: Field25519) -> Field25519 {
        var out = [UInt64](repeating: 0, count: 4)
        var carry: UInt64 = 0
        for i in 0..<4 {
            let (s1, o1) = a.limbs[i].addingReportingOverflow(b.limbs[i])
            let (s2, o2) = s1.addingReportingOverflow(carry)
            out[i] = s2
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return fold(out, carry: carry)
    }

    static prefix func - (a: Field25519) -> Field25519 { zero - a }

    static func - (a: Field25519, b: Field25519) -> Field25519 {
        let (d, borrow) = subtract(a.limbs, b.limbs)
        guard borrow else { return Field25519(reducing: d) }
        // Negative: add p back (wrapping past 2^256 cancels the borrow).
        var out = d
        var carry: UInt64 = 0
        for i in 0..<4 {
            let (s1, o1) = out[i].addingReportingOverflow(p[i])
            let (s2, o2) = s1.addingReportingOverflow(carry)
            out[i] = s2
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return Field25519(reducing: out)
    }

    static func * (a: Field25519, b: Field25519) -> Field25519 {
        var t = [UInt64](repeating: 0, count: 8)
        for i in 0..<4 {
            var carry: UInt64 = 0
            for j in 0..<4 {
                let (high, low) = a.limbs[i].multipliedFullWidth(by: b.limbs[j])
                let (s1, o1) = t[i + j].addingReportingOverflow(low)
                let (s2, o2) = s1.addingReportingOverflow(carry)
                t[i + j] = s2
                carry = high &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
            }
            t[i + 4] = carry
        }
        // low + 38 × high.
        var out = [UInt64](repeating: 0, count: 4)
        var carry: UInt64 = 0
        for i in 0..<4 {
            let (high, low) = t[i + 4].multipliedFullWidth(by: 38)
            let (s1, o1) = t[i].addingReportingOverflow(low)
            let (s2, o2) = s1.addingReportingOverflow(carry)
            out[i] = s2
            carry = high &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0)
        }
        return fold(out, carry: carry)
    }

    /// self^e, e as four little-endian limbs.
    func power(_ e: [UInt64]) -> Field25519 {
        var result = Field25519.one
        for i in (0..<256).reversed() {
            result = result * result
            if (e[i / 64] >> UInt64(i % 64)) & 1 == 1 { result = result * self }
        }
        return result
    }

    /// 1/x, and 0 for 0 (x^(p−2)).
    var inverse: Field25519 { power(Field25519.subtract(Self.p, [2, 0, 0, 0]).0) }

    /// x^((p−1)/2): 1 for a square, p − 1 for a non-square, 0 for 0.
    var legendre: Field25519 {
        let pMinus1 = Field25519.subtract(Self.p, [1, 0, 0, 0]).0
        let half = [pMinus1[0] >> 1 | pMinus1[1] << 63, pMinus1[1] >> 1 | pMinus1[2] << 63, pMinus1[2] >> 1 | pMinus1[3] << 63, pMinus1[3] >> 1]
        return power(half)
    }

    /// Elligator 2 onto Curve25519 (A = 486662, Z = 2), as the draft's
    /// X25519 suite maps: the u-coordinate, 32 little-endian bytes.
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
