import Glibc
import TuttiAuth

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
        return buffer.withUnsafeBytes { SHA256.hex(SHA256.digest($0)) }
    }
}
