import CSodium
import TuttiCore

/// Login tokens for the control surfaces: 32 random bytes (libsodium),
/// sent as 64 hex digits, kept by the leader only as a keyed BLAKE2b digest.
/// The key is derived from the control password, so a token issued under
/// one password is void under another (changing the password revokes every
/// token), and the stored digests are useless without the tokens.
public enum ControlToken {
    /// Bytes of randomness in a token.
    public static let bytes = 32

    /// A fresh token, hex.
    public static func fresh() -> String {
        _ = sodium_init() // idempotent and thread-safe
        var raw = [UInt8](repeating: 0, count: bytes)
        raw.withUnsafeMutableBufferPointer { randombytes_buf($0.baseAddress!, $0.count) }
        return hex(raw)
    }

    /// The key digests are made with, from the password (BLAKE2b-256 of it, with a label).
    public static func key(password: String) -> [UInt8] {
        digest(Array("tutti control token key v1".utf8) + [0] + Array(password.utf8), key: [])
    }

    /// What is stored for `token`: BLAKE2b-256 keyed by `key`.
    public static func digest(token: String, key: [UInt8]) -> [UInt8] {
        digest(Array(token.utf8), key: key)
    }

    /// Compares two digests in constant time (false when their lengths differ).
    public static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return false }
        return sodium_memcmp(a, b, a.count) == 0
    }

    /// Whether `text` has a token's shape (64 lower-case hex digits): anything else is refused unhashed.
    public static func wellFormed(_ text: String) -> Bool {
        text.utf8.count == 2 * bytes && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    private static func digest(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        _ = sodium_init()
        var out = [UInt8](repeating: 0, count: 32)
        // Keys longer than libsodium's maximum never occur (ours are 32 bytes); an empty key is unkeyed.
        message.withUnsafeBufferPointer { m in
            key.withUnsafeBufferPointer { k in
                _ = crypto_generichash(&out, out.count, m.baseAddress, UInt64(m.count), k.isEmpty ? nil : k.baseAddress, k.count)
            }
        }
        return out
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
