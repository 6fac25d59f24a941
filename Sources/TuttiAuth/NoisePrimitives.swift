import CCrypto
import CSodium
import TuttiCore
import TuttiSystem

/// Noise's primitives for Sendspin (TuttiCore's `NoiseCrypto`): X25519,
/// SHA-256, HMAC-SHA-256 and ChaCha20-Poly1305 IETF from libsodium;
/// AES-256-GCM from libsodium where the processor has the AES instructions
/// it insists on, from libcrypto (opened at the first use) where not.
/// Stateless: safe from any thread.
public struct NoisePrimitives: NoiseCrypto {
    /// Where AES-256-GCM comes from.
    public enum AESGCMImplementation: Sendable, CaseIterable { case libsodium, libcrypto }

    /// The one `seal` and `open` use for AES-GCM.
    public let aesGCM: AESGCMImplementation

    public init() {
        _ = sodium_init() // idempotent and thread-safe; picks the CPU-specific code
        aesGCM = crypto_aead_aes256gcm_is_available() == 1 ? .libsodium : .libcrypto
    }

    /// For tests that compare the two AES-GCMs: nil when that one cannot run here.
    public init?(aesGCM: AESGCMImplementation) {
        _ = sodium_init()
        switch aesGCM {
        case .libsodium: guard crypto_aead_aes256gcm_is_available() == 1 else { return nil }
        case .libcrypto: guard case .success = Self.libcrypto else { return nil }
        }
        self.aesGCM = aesGCM
    }

    /// Whether AES-GCM can run at all here (libsodium's, or libcrypto 3 installed).
    public var canAESGCM: Bool {
        if aesGCM == .libsodium { return true }
        if case .success = Self.libcrypto { return true }
        return false
    }

    // X25519 and randomness are the speakers' handshake's (SodiumCrypto): one copy of each call.
    public func random(_ count: Int) -> [UInt8] { SodiumCrypto().random(count) }

    public func publicKey(secret: [UInt8]) -> [UInt8] { SodiumCrypto().publicKey(secret: secret) }

    public func dh(secret: [UInt8], public key: [UInt8]) -> [UInt8]? { SodiumCrypto().dh(secret: secret, public: key) }

    public func sha256(_ parts: [[UInt8]]) -> [UInt8] {
        var state = crypto_hash_sha256_state()
        _ = crypto_hash_sha256_init(&state)
        for part in parts where !part.isEmpty { _ = crypto_hash_sha256_update(&state, part, UInt64(part.count)) }
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_hash_sha256_final(&state, &out)
        return out
    }

    /// SHA-512 (libsodium), for CPace's generator, session key and tags.
    public static let sha512: CPace.SHA512 = { bytes in
        var out = [UInt8](repeating: 0, count: 64)
        _ = crypto_hash_sha512(&out, bytes, UInt64(bytes.count))
        return out
    }

    public func hmacSHA256(key: [UInt8], _ parts: [[UInt8]]) -> [UInt8] {
        var state = crypto_auth_hmacsha256_state()
        _ = crypto_auth_hmacsha256_init(&state, key, key.count)
        for part in parts where !part.isEmpty { _ = crypto_auth_hmacsha256_update(&state, part, UInt64(part.count)) }
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_auth_hmacsha256_final(&state, &out)
        return out
    }

    public func seal(_ cipher: NoiseCipher, key: [UInt8], nonce: [UInt8], _ plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == 12)
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: UInt64 = 0
        switch (cipher, aesGCM) {
        case (.chaChaPoly, _):
            _ = crypto_aead_chacha20poly1305_ietf_encrypt(&out, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce, key)
        case (.aesGCM, .libsodium):
            _ = crypto_aead_aes256gcm_encrypt(&out, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce, key)
        case (.aesGCM, .libcrypto):
            out = Self.libcryptoSeal(key: key, nonce: nonce, plaintext, ad: ad)
        }
        return out
    }

    public func open(_ cipher: NoiseCipher, key: [UInt8], nonce: [UInt8], _ sealed: [UInt8], ad: [UInt8]) -> [UInt8]? {
        guard key.count == 32, nonce.count == 12, sealed.count >= 16 else { return nil }
        var out = [UInt8](repeating: 0, count: sealed.count - 16)
        var written: UInt64 = 0
        switch (cipher, aesGCM) {
        case (.chaChaPoly, _):
            guard crypto_aead_chacha20poly1305_ietf_decrypt(&out, &written, nil, sealed, UInt64(sealed.count), ad, UInt64(ad.count), nonce, key) == 0 else { return nil }
        case (.aesGCM, .libsodium):
            guard crypto_aead_aes256gcm_decrypt(&out, &written, nil, sealed, UInt64(sealed.count), ad, UInt64(ad.count), nonce, key) == 0 else { return nil }
        case (.aesGCM, .libcrypto):
            return Self.libcryptoOpen(key: key, nonce: nonce, sealed, ad: ad)
        }
        return out
    }

    // MARK: libcrypto's AES-256-GCM

    private static let libcrypto = Result { () throws(SharedLibraryError) in
        try FunctionTable<tutti_aes_gcm>.open("libcrypto.so.3", symbols: [
            "EVP_CIPHER_CTX_new", "EVP_CIPHER_CTX_free", "EVP_aes_256_gcm",
            "EVP_EncryptInit_ex", "EVP_EncryptUpdate", "EVP_EncryptFinal_ex",
            "EVP_DecryptInit_ex", "EVP_DecryptUpdate", "EVP_DecryptFinal_ex", "EVP_CIPHER_CTX_ctrl",
        ])
    }

    private static func table() -> tutti_aes_gcm {
        switch libcrypto {
        case .success(let t): return t.functions
        // A client can pick AES-GCM only where `canAESGCM` said yes (the channel offers what runs).
        case .failure(let e): preconditionFailure("AES-GCM needs libcrypto 3 on this processor: \(e)")
        }
    }

    private static func libcryptoSeal(key: [UInt8], nonce: [UInt8], _ plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        let f = table()
        guard let context = f.newContext() else { preconditionFailure("EVP_CIPHER_CTX_new failed: out of memory") }
        defer { f.freeContext(context) }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var n: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            guard f.encryptInit(context, f.aes256gcm(), nil, key, nonce) == 1 else { return false }
            if !ad.isEmpty { guard f.encryptUpdate(context, nil, &n, ad, Int32(ad.count)) == 1 else { return false } }
            var total: Int32 = 0
            if !plaintext.isEmpty {
                guard f.encryptUpdate(context, o.baseAddress, &n, plaintext, Int32(plaintext.count)) == 1 else { return false }
                total = n
            }
            guard f.encryptFinal(context, o.baseAddress! + Int(total), &n) == 1 else { return false }
            return f.control(context, tutti_gcm_get_tag, 16, o.baseAddress! + plaintext.count) == 1
        }
        precondition(ok, "libcrypto's AES-256-GCM failed to seal") // no input of the right sizes makes it fail
        return out
    }

    private static func libcryptoOpen(key: [UInt8], nonce: [UInt8], _ sealed: [UInt8], ad: [UInt8]) -> [UInt8]? {
        let f = table()
        guard let context = f.newContext() else { preconditionFailure("EVP_CIPHER_CTX_new failed: out of memory") }
        defer { f.freeContext(context) }
        let count = sealed.count - 16
        var out = [UInt8](repeating: 0, count: count + 16) // room for a final block that GCM never writes
        var tag = Array(sealed[count...])
        var n: Int32 = 0
        let ok = out.withUnsafeMutableBufferPointer { o -> Bool in
            guard f.decryptInit(context, f.aes256gcm(), nil, key, nonce) == 1 else { return false }
            if !ad.isEmpty { guard f.decryptUpdate(context, nil, &n, ad, Int32(ad.count)) == 1 else { return false } }
            var total: Int32 = 0
            if count > 0 {
                guard sealed.withUnsafeBufferPointer({ f.decryptUpdate(context, o.baseAddress, &n, $0.baseAddress, Int32(count)) }) == 1 else { return false }
                total = n
            }
            guard f.control(context, tutti_gcm_set_tag, 16, &tag) == 1 else { return false }
            return f.decryptFinal(context, o.baseAddress! + Int(total), &n) == 1
        }
        return ok ? Array(out.prefix(count)) : nil
    }
}
