import CCrypto
import CSodium
import TuttiSystem

/// SHA-256 (FIPS 180-4): the library's content hashes and cover identities.
///
/// The one SHA-256 type in Tutti, over the field's libraries only (the
/// Swift implementation beside them is gone). libcrypto's code where it
/// can be opened: the library scan hashes up to 128 KiB of every new file,
/// and with the processor's SHA instructions libcrypto does it in 0.08 ms
/// against libsodium's portable 0.43 ms (x86 here; 100,000 new files would
/// have cost about 8 s more CPU). It is opened at the first hash (dlopen),
/// so a leader that scans nothing new never loads it (about 1.4 MiB
/// resident). Where libcrypto 3 is not installed, libsodium's, which every
/// leader links already: the same digest, slower.
public enum SHA256 {
    /// Bytes in a digest.
    public static let byteCount = Int(crypto_hash_sha256_BYTES)

    /// libcrypto's SHA256_* functions (not EVP's provider: see CCrypto's shim), opened at the first hash.
    private static let libcrypto = Result { () throws(SharedLibraryError) in
        try FunctionTable<tutti_crypto>.open("libcrypto.so.3", symbols: ["SHA256_Init", "SHA256_Update", "SHA256_Final"])
    }

    /// The libraries a digest can come from (the same digest from either).
    public enum Implementation: CaseIterable, Sendable { case libcrypto, libsodium }

    /// The one `digest` uses: libcrypto where libcrypto 3 loads.
    public static var implementation: Implementation {
        if case .success = libcrypto { return .libcrypto }
        return .libsodium
    }

    /// The digest of `bytes`.
    public static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        digest(bytes, by: implementation)!
    }

    /// The digest of `bytes` by `implementation`; nil when that library is not there (libcrypto 3 only).
    public static func digest(_ bytes: UnsafeRawBufferPointer, by implementation: Implementation) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: byteCount)
        switch implementation {
        case .libcrypto:
            guard case .success(let table) = libcrypto else { return nil }
            let crypto = table.functions
            var context = SHA256_CTX()
            let ok = out.withUnsafeMutableBufferPointer { o in
                crypto.begin(&context) == 1 && crypto.update(&context, bytes.baseAddress, bytes.count) == 1 && crypto.finish(o.baseAddress!, &context) == 1
            }
            precondition(ok, "libcrypto's SHA-256 failed") // no input can make it fail
        case .libsodium:
            // crypto_hash_sha256 needs no sodium_init: it uses no random numbers and picks no CPU-specific code.
            let input = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let rc = out.withUnsafeMutableBufferPointer { crypto_hash_sha256($0.baseAddress!, input, UInt64(bytes.count)) }
            precondition(rc == 0, "libsodium's SHA-256 failed") // it has no failure but this signature's
        }
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
