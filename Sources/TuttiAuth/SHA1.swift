import CCrypto
import TuttiSystem

/// SHA-1, for RFC 6455's `Sec-WebSocket-Accept` only (a Tutti speaker that
/// plays for a Sendspin server checks the server's answer to its key): never
/// for anything that must resist forgery. libcrypto's one-shot `SHA1`,
/// opened at the first use; libsodium, which the speaker links, has no SHA-1.
public enum SHA1 {
    public static let byteCount = 20

    private static let libcrypto = Result { () throws(SharedLibraryError) in
        try FunctionTable<tutti_sha1>.open("libcrypto.so.3", symbols: ["SHA1"])
    }

    /// The digest of `bytes`; nil where libcrypto 3 is not installed.
    public static func digest(_ bytes: [UInt8]) -> [UInt8]? {
        guard case .success(let table) = libcrypto else { return nil }
        var out = [UInt8](repeating: 0, count: byteCount)
        let ok = bytes.withUnsafeBufferPointer { b in
            out.withUnsafeMutableBufferPointer { o in table.functions.digest(b.baseAddress, b.count, o.baseAddress) != nil }
        }
        precondition(ok, "libcrypto's SHA-1 failed") // it fails only without an output buffer
        return out
    }
}
