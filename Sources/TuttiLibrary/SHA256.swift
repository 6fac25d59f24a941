import CCrypto
import Glibc
import TuttiSystem

/// SHA-256 (FIPS 180-4), for cover identities and content hashes. The
/// one-shot `hash` and `ContentHash` use libcrypto; the incremental form
/// below is Swift, checked against the standard test vectors and against libcrypto.
/// libcrypto, loaded at the first hash (a leader that scans nothing new never loads it: about 1.4 MiB resident).
private let libcrypto = Result { () throws(SharedLibraryError) in
    try FunctionTable<tutti_crypto>.open("libcrypto.so.3", symbols: ["SHA256_Init", "SHA256_Update", "SHA256_Final"])
}

public struct SHA256 {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    private var buffer: [UInt8] = []
    private var length: UInt64 = 0

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    public init() { buffer.reserveCapacity(64) }

    public mutating func update(_ bytes: some Collection<UInt8>) {
        length &+= UInt64(bytes.count)
        var rest = bytes[...]
        if !buffer.isEmpty {
            let take = min(64 - buffer.count, rest.count)
            buffer.append(contentsOf: rest.prefix(take))
            rest = rest.dropFirst(take)
            if buffer.count == 64 {
                let block = buffer
                block.withUnsafeBytes { compress($0) }
                buffer.removeAll(keepingCapacity: true)
            }
        }
        // Whole blocks straight from the input, without copying.
        let whole = rest.count - rest.count % 64
        if whole > 0 {
            let head = Array(rest.prefix(whole))
            head.withUnsafeBytes { raw in
                var offset = 0
                while offset < whole {
                    compress(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + 64)]))
                    offset += 64
                }
            }
            rest = rest.dropFirst(whole)
        }
        buffer.append(contentsOf: rest)
    }

    public mutating func update(_ string: String) { update(Array(string.utf8)) }

    public mutating func finish() -> [UInt8] {
        let bits = length &* 8
        var tail = buffer
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for i in (0..<8).reversed() { tail.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i)))) }
        tail.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                compress(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + 64)]))
                offset += 64
            }
        }
        buffer.removeAll()
        var out: [UInt8] = []
        for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
            out += [UInt8(word >> 24), UInt8((word >> 16) & 0xff), UInt8((word >> 8) & 0xff), UInt8(word & 0xff)]
        }
        return out
    }

    public mutating func finishHex() -> String { Self.hex(finish()) }

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

    /// The hex digest of `bytes`, by libcrypto (the processor's SHA
    /// instructions where it has them: ten times this file's speed).
    public static func hash(_ bytes: some Collection<UInt8>) -> String {
        let contiguous = Array(bytes)
        return contiguous.withUnsafeBytes { hex(systemDigest($0)) }
    }

    /// SHA-256 by libcrypto's SHA256_* functions (not EVP's provider: see
    /// CCrypto's shim); by this file's code where libcrypto 3 cannot be
    /// loaded (same digest, a tenth of the speed).
    static func systemDigest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        guard case .success(let table) = libcrypto else {
            var h = SHA256()
            h.update(bytes)
            return h.finish()
        }
        let crypto = table.functions
        var out = [UInt8](repeating: 0, count: 32)
        var context = SHA256_CTX()
        let ok = out.withUnsafeMutableBufferPointer { o in
            crypto.begin(&context) == 1 && crypto.update(&context, bytes.baseAddress, bytes.count) == 1 && crypto.finish(o.baseAddress!, &context) == 1
        }
        precondition(ok, "libcrypto's SHA-256 failed") // no input can make it fail
        return out
    }

    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        @inline(__always) func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
        // The message schedule lives on the stack: no allocation per block.
        state = withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 { w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)) }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            Self.k.withUnsafeBufferPointer { k in
                for i in 0..<64 {
                    let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
                    let ch = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
                    let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
                    let maj = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ maj
                    h = g; g = f; f = e; e = d &+ t1
                    d = c; c = b; b = a; a = t1 &+ t2
                }
            }
            return (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
        }
    }
}

/// A file's content identity for move detection: SHA-256 over the file
/// size (8 bytes, little-endian), its first 64 KiB and its last 64 KiB.
/// A moved or renamed file keeps it; so does a copy, which is why a new
/// path only takes over a track whose old path has disappeared. Reading
/// at most 128 KiB keeps hashing cheap on large FLACs; editing tags changes
/// the first (ID3v2, FLAC metadata) or last (ID3v1) bytes and so the hash,
/// which only matters if the file is also moved in the same scan.
public enum ContentHash {
    public static let edgeBytes = 65_536

    /// Hashes the file open on `fd` whose size is `size`.
    static func compute(fd: Int32, size: Int) throws(LibraryError) -> String {
        // One buffer: size, head and tail, hashed in one call.
        let head = min(size, edgeBytes)
        let tail = size > edgeBytes ? min(edgeBytes, size - edgeBytes) : 0 // the two ranges never overlap
        var buffer = [UInt8](repeating: 0, count: 8 + head + tail)
        withUnsafeBytes(of: UInt64(size).littleEndian) { le in
            for i in 0..<8 { buffer[i] = le[i] }
        }
        func readAt(_ offset: Int, _ count: Int, into start: Int) throws(LibraryError) {
            var got = 0
            while got < count {
                let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + start + got, count - got, off_t(offset + got)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw .io(path: "", reason: n == 0 ? "file shrank while reading" : String(cString: strerror(errno))) }
                got += n
            }
        }
        try readAt(0, head, into: 8)
        if tail > 0 { try readAt(size - tail, tail, into: 8 + head) }
        return buffer.withUnsafeBytes { SHA256.hex(SHA256.systemDigest($0)) }
    }
}
