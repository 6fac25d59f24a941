import CSodium
import Glibc
import TuttiCore

/// The handshake's primitives from libsodium: X25519 (crypto_scalarmult),
/// BLAKE2b (crypto_generichash), ChaCha20-Poly1305 IETF, ristretto255 for
/// CPace, randombytes and sodium_memcmp. Nothing here is a primitive of its own.
public struct SodiumCrypto: HandshakeCrypto {
    public init() { _ = sodium_init() } // idempotent and thread-safe

    public func random(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        if count > 0 { out.withUnsafeMutableBufferPointer { randombytes_buf($0.baseAddress!, $0.count) } }
        return out
    }

    public func publicKey(secret: [UInt8]) -> [UInt8] {
        precondition(secret.count == 32)
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_scalarmult_base(&out, secret)
        return out
    }

    public func dh(secret: [UInt8], public key: [UInt8]) -> [UInt8]? {
        guard secret.count == 32, key.count == 32 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        // Non-zero for a low-order point (an all-zero result): refused.
        guard crypto_scalarmult(&out, secret, key) == 0 else { return nil }
        return out
    }

    public func hash(_ parts: [[UInt8]], key: [UInt8]) -> [UInt8] {
        // The state is 64-byte aligned, which Swift imports as opaque: it lives in memory of its own.
        let memory = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        defer { memory.deallocate() }
        let state = OpaquePointer(memory)
        let k = Array(key.prefix(Int(crypto_generichash_KEYBYTES_MAX)))
        _ = k.withUnsafeBufferPointer { crypto_generichash_init(state, k.isEmpty ? nil : $0.baseAddress, k.count, 32) }
        for part in parts {
            // Length-prefixed, so no two different lists of parts hash alike.
            let n = UInt32(part.count)
            let length: [UInt8] = [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)]
            _ = crypto_generichash_update(state, length, 4)
            if !part.isEmpty { _ = part.withUnsafeBufferPointer { crypto_generichash_update(state, $0.baseAddress, UInt64($0.count)) } }
        }
        var out = [UInt8](repeating: 0, count: 32)
        _ = crypto_generichash_final(state, &out, 32)
        return out
    }

    private static func nonceBytes(_ n: UInt64) -> [UInt8] {
        var b = [UInt8](repeating: 0, count: Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES))
        for i in 0..<8 { b[4 + i] = UInt8(n >> UInt64(56 - 8 * i) & 0xff) }
        return b
    }

    public func seal(key: [UInt8], nonce: UInt64, _ plaintext: [UInt8], ad: [UInt8]) -> [UInt8] {
        precondition(key.count == 32)
        var out = [UInt8](repeating: 0, count: plaintext.count + Int(crypto_aead_chacha20poly1305_ietf_ABYTES))
        var written: UInt64 = 0
        _ = crypto_aead_chacha20poly1305_ietf_encrypt(&out, &written, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil,
                                                      Self.nonceBytes(nonce), key)
        return out
    }

    public func open(key: [UInt8], nonce: UInt64, _ sealed: [UInt8], ad: [UInt8]) -> [UInt8]? {
        guard key.count == 32, sealed.count >= Int(crypto_aead_chacha20poly1305_ietf_ABYTES) else { return nil }
        var out = [UInt8](repeating: 0, count: sealed.count - Int(crypto_aead_chacha20poly1305_ietf_ABYTES))
        var written: UInt64 = 0
        guard crypto_aead_chacha20poly1305_ietf_decrypt(&out, &written, nil, sealed, UInt64(sealed.count), ad, UInt64(ad.count),
                                                        Self.nonceBytes(nonce), key) == 0 else { return nil }
        return out
    }

    public func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return false }
        return sodium_memcmp(a, b, a.count) == 0
    }

    public func pakeGenerator(code: String, sessionID: [UInt8]) -> [UInt8] {
        // CPace: the generator is a hash of the code and the session to the group (64 uniform bytes in).
        let a = hash([Array("tutti cpace v7 generator a".utf8), Array(code.utf8), sessionID], key: [])
        let b = hash([Array("tutti cpace v7 generator b".utf8), Array(code.utf8), sessionID], key: [])
        var point = [UInt8](repeating: 0, count: Int(crypto_core_ristretto255_BYTES))
        _ = crypto_core_ristretto255_from_hash(&point, a + b)
        return point
    }

    public func pakeScalar() -> [UInt8] {
        var s = [UInt8](repeating: 0, count: Int(crypto_core_ristretto255_SCALARBYTES))
        crypto_core_ristretto255_scalar_random(&s)
        return s
    }

    public func pakeMultiply(_ scalar: [UInt8], _ point: [UInt8]) -> [UInt8]? {
        guard scalar.count == 32, point.count == 32, crypto_core_ristretto255_is_valid_point(point) == 1 else { return nil }
        var out = [UInt8](repeating: 0, count: 32)
        // Fails for the identity: a share that would fix the key is refused.
        guard crypto_scalarmult_ristretto255(&out, scalar, point) == 0 else { return nil }
        return out
    }

    /// A new static key pair.
    public func newKey() -> StaticKey {
        StaticKey(secret: random(32), crypto: self)
    }

    /// Six random digits (a pairing code).
    public func pairingCode() -> String {
        var s = String(randombytes_uniform(1_000_000))
        while s.count < 6 { s = "0" + s }
        return s
    }

    /// The legacy room key as a 32-byte PSK: Argon2id (crypto_pwhash,
    /// interactive limits) with a fixed salt, so both sides derive the same.
    /// Slow on purpose: it is what a dictionary attack pays per guess.
    public func preSharedKey(_ key: RoomKey) -> [UInt8] { key.stretched() }
}

/// ChaCha20-Poly1305 IETF for sealed frames, in place, detached tags.
public struct ChaChaFrameCipher: FrameCipher {
    private let key: [UInt8]
    public init(key: [UInt8]) { precondition(key.count == 32); self.key = key; _ = sodium_init() }

    /// 96 bits: four zero bytes, then the counter big-endian (three packed UInt32s, no padding).
    @inline(__always) private static func nonce(_ n: UInt64) -> (UInt32, UInt32, UInt32) {
        (0, UInt32(truncatingIfNeeded: n >> 32).bigEndian, UInt32(truncatingIfNeeded: n).bigEndian)
    }

    public func seal(_ text: UnsafeMutableRawPointer, count: Int, tag: UnsafeMutableRawPointer, nonce n: UInt64, ad: UnsafeRawBufferPointer) {
        var nonce = Self.nonce(n)
        var tagLength: UInt64 = 0
        key.withUnsafeBufferPointer { k in
            withUnsafeBytes(of: &nonce) { np in
                _ = crypto_aead_chacha20poly1305_ietf_encrypt_detached(
                    text.assumingMemoryBound(to: UInt8.self), tag.assumingMemoryBound(to: UInt8.self), &tagLength,
                    text.assumingMemoryBound(to: UInt8.self), UInt64(count),
                    ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count), nil,
                    np.baseAddress!.assumingMemoryBound(to: UInt8.self), k.baseAddress!)
            }
        }
    }

    public func open(_ text: UnsafeMutableRawPointer, count: Int, tag: UnsafeRawPointer, nonce n: UInt64, ad: UnsafeRawBufferPointer) -> Bool {
        var nonce = Self.nonce(n)
        return key.withUnsafeBufferPointer { k in
            withUnsafeBytes(of: &nonce) { np in
                crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                    text.assumingMemoryBound(to: UInt8.self), nil,
                    text.assumingMemoryBound(to: UInt8.self), UInt64(count), tag.assumingMemoryBound(to: UInt8.self),
                    ad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(ad.count),
                    np.baseAddress!.assumingMemoryBound(to: UInt8.self), k.baseAddress!) == 0
            }
        }
    }
}

/// Key files: a secret key (32 bytes, hex) or a pinned public key, mode 0600.
public enum KeyFile {
    /// The key pair in `path`, made (and written 0600) if the file does not exist.
    public static func loadOrCreate(_ path: String, crypto: SodiumCrypto = SodiumCrypto()) throws(KeyFileError) -> StaticKey {
        if let secret = try read(path) {
            guard secret.count == 32 else { throw .malformed(path) }
            return StaticKey(secret: secret, crypto: crypto)
        }
        let key = crypto.newKey()
        try write(path, key.secret)
        return key
    }

    /// 32 bytes from a hex file; nil if there is no file.
    public static func read(_ path: String) throws(KeyFileError) -> [UInt8]? {
        guard let f = fopen(path, "r") else {
            if errno == ENOENT { return nil }
            throw .unreadable(path, String(cString: strerror(errno)))
        }
        defer { fclose(f) }
        var buffer = [CChar](repeating: 0, count: 256)
        guard fgets(&buffer, Int32(buffer.count), f) != nil else { throw .malformed(path) }
        let text = String(decoding: buffer.prefix { $0 != 0 && $0 != 10 && $0 != 13 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let bytes = TuttiCore.bytes(fromHex: text), bytes.count == 32 else { throw .malformed(path) }
        return bytes
    }

    /// Writes 32 bytes as hex, mode 0600, through a temporary file and a rename.
    public static func write(_ path: String, _ bytes: [UInt8]) throws(KeyFileError) {
        let temporary = path + ".new"
        // Root writes here (`sudo tutti-follower pair`) into a folder the service's user owns:
        // never through a link that user left, nor into a file that was there.
        unlink(temporary)
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .unwritable(path, String(cString: strerror(errno))) }
        fchmod(fd, 0o600)
        // Written by root (`sudo tutti-follower pair`): the service's user, who owns the folder, must read it.
        if geteuid() == 0 {
            var folder = stat()
            let parent = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
            if stat(parent.isEmpty ? "/" : parent, &folder) == 0 { _ = fchown(fd, folder.st_uid, folder.st_gid) }
        }
        let text = Array((hexString(bytes) + "\n").utf8)
        let n = text.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        Glibc.close(fd)
        guard n == text.count, synced, rename(temporary, path) == 0 else {
            let e = String(cString: strerror(errno))
            unlink(temporary)
            throw .unwritable(path, e)
        }
    }

    public static func remove(_ path: String) { unlink(path) }
}

public enum KeyFileError: Error, CustomStringConvertible, Equatable {
    case unreadable(String, String)
    case unwritable(String, String)
    case malformed(String)
    public var description: String {
        switch self {
        case .unreadable(let p, let why): "cannot read the key file \(p): \(why)"
        case .unwritable(let p, let why): "cannot write the key file \(p): \(why)"
        case .malformed(let p): "the key file \(p) does not hold 64 hex digits (delete it to make a new key, then pair again)"
        }
    }
}
