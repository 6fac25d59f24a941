import CSodium

/// SHA-256 (FIPS 180-4): the library's content hashes and cover identities.
///
/// The one SHA-256 in Tutti, and libsodium's: every leader links libsodium
/// already (the handshake, tokens, the room key), so hashing loads nothing.
/// libcrypto, which hashed here before behind a dlopen, is loaded on no path
/// that hashes (a leader that plays files never opens libcurl, which would
/// bring it), and opening it cost a leader about 1.4 MiB resident; a Swift
/// fallback kept beside it made three. libsodium's is portable C: about
/// 300 MB/s on the x86 machines here against libcrypto's 1.7 GB/s with the
/// SHA instructions, so a new file's 128 KiB content hash costs 0.43 ms of
/// CPU instead of 0.08; a Raspberry Pi 4 has no SHA instructions for either.
public enum SHA256 {
    /// Bytes in a digest.
    public static let byteCount = Int(crypto_hash_sha256_BYTES)

    /// The digest of `bytes`.
    public static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        // crypto_hash_sha256 needs no sodium_init: it uses no random numbers and picks no CPU-specific code.
        var out = [UInt8](repeating: 0, count: byteCount)
        let input = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let rc = out.withUnsafeMutableBufferPointer { crypto_hash_sha256($0.baseAddress!, input, UInt64(bytes.count)) }
        precondition(rc == 0, "libsodium's SHA-256 failed") // it has no failure but this signature's
        return out
    }

    /// The digest of `bytes` as 64 lowercase hex digits.
    public static func hash(_ bytes: some Collection<UInt8>) -> String {
        let result = bytes.withContiguousStorageIfAvailable { (buffer: UnsafeBufferPointer<UInt8>) -> [UInt8] in
            Self.digest(UnsafeRawBufferPointer(buffer))
        }
        return hex(result ?? Array(bytes).withUnsafeBytes { Self.digest($0) })
    }

    /// Lowercase hex of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
