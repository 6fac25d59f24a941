import CSodium
import TuttiCore

/// The legacy room key (a passphrase or a key file's contents) a home's
/// speakers and leader share: stretched with Argon2id into the pre-shared
/// key the v7 handshake mixes in (docs/security.md). Also the helpers the
/// control surfaces use for passwords (libsodium).
public struct RoomKey: Sendable {
    private let secret: [UInt8]

    /// `text`: a password, or a key file's contents (surrounding blanks and newlines dropped).
    public init(_ text: String) throws(RoomKeyError) {
        var t = Substring(text)
        while let c = t.first, c.isWhitespace { t.removeFirst() }
        while let c = t.last, c.isWhitespace { t.removeLast() }
        guard t.utf8.count >= 8 else { throw .tooShort }
        guard t.utf8.count <= 1_024 else { throw .tooLong }
        secret = Array(t.utf8)
        Self.start()
    }

    /// The key as a 32-byte pre-shared key for the v7 handshake: Argon2id
    /// (crypto_pwhash, interactive limits) with a fixed salt, so leader and
    /// speakers derive the same bytes. Slow on purpose: it is what each
    /// guess of a dictionary attack costs.
    public func stretched() -> [UInt8] {
        Self.start()
        var out = [UInt8](repeating: 0, count: 32)
        let salt = Array("tutti room key 7".utf8) // crypto_pwhash_SALTBYTES (16)
        let rc = secret.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { c in
                crypto_pwhash(&out, 32, c.baseAddress!, UInt64(c.count), salt, UInt64(crypto_pwhash_OPSLIMIT_INTERACTIVE),
                              Int(crypto_pwhash_MEMLIMIT_INTERACTIVE), crypto_pwhash_ALG_ARGON2ID13)
            }
        }
        // Only fails without the memory: a keyed hash then still keeps the key out of the wire.
        if rc != 0 { out = SodiumCrypto().hash([Array("tutti room key fallback".utf8), secret], key: []) }
        return out
    }

    /// A random password for a control surface: 20 characters from an alphabet without look-alikes.
    public static func randomPassword() -> String {
        start()
        let alphabet = Array("abcdefghjkmnpqrstuvwxyz23456789")
        return String((0..<20).map { _ in alphabet[Int(randombytes_uniform(UInt32(alphabet.count)))] })
    }

    /// Compares two secrets in constant time (for passwords and tokens).
    public static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count, !x.isEmpty else { return false }
        return sodium_memcmp(x, y, x.count) == 0
    }

    private static func start() { _ = sodium_init() } // idempotent and thread-safe
}

public enum RoomKeyError: Error, CustomStringConvertible, Equatable {
    case tooShort, tooLong
    public var description: String {
        switch self {
        case .tooShort: "the room key must be at least 8 characters"
        case .tooLong: "the room key must be at most 1024 bytes"
        }
    }
}
