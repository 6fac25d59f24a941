/// 64-bit FNV-1a: a small, fast hash that is the same on every machine and
/// in every release, for names and identities that must stay put (offline
/// cache file names, a leader's id, entity tags, an AirPlay cover's id).
/// Not for security: anyone can make two inputs collide.
public struct FNV1a: Sendable, Equatable {
    public static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    public static let prime: UInt64 = 0x0000_0100_0000_01b3

    public private(set) var value = offsetBasis

    public init() {}

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        var h = value
        // Contiguous bytes (arrays, most strings' UTF-8) without an iterator per byte.
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            for b in buffer { h = (h ^ UInt64(b)) &* Self.prime }
        }
        if done == nil {
            for b in bytes { h = (h ^ UInt64(b)) &* Self.prime }
        }
        value = h
    }

    /// The hash of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var h = FNV1a()
        h.update(bytes)
        return h.value
    }

    /// The hash of `bytes` as 16 lowercase hex digits (leading zeros kept).
    public static func hex(_ bytes: some Sequence<UInt8>) -> String { hex(hash(bytes)) }

    /// `value` as 16 lowercase hex digits.
    public static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
