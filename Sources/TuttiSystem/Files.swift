import Glibc

/// Why a whole file could not be read.
public enum FileReadError: Error, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case tooLarge(path: String, bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .unreadable(let path, let reason): "cannot read \(path): \(reason)"
        case .tooLarge(let path, let bytes, let limit): "\(path) is \(bytes) bytes, over the \(limit) a file of its kind may have"
        }
    }
}

/// Reads a whole file that a user names (a button mapping, a playlist), at
/// most `limit` bytes: anything larger is not a file of that kind.
public func readWholeFile(_ path: String, limit: Int) throws(FileReadError) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
    defer { close(fd) }
    var st = stat()
    if fstat(fd, &st) == 0 && Int(st.st_size) > limit { throw .tooLarge(path: path, bytes: Int(st.st_size), limit: limit) }
    // Read to the end rather than trust st_size (0 for /proc and pipes), one byte past the limit at most.
    var bytes = [UInt8](repeating: 0, count: min(limit + 1, max(Int(st.st_size) + 1, 4_096)))
    var got = 0
    while true {
        if got == bytes.count {
            guard bytes.count <= limit else { throw .tooLarge(path: path, bytes: got, limit: limit) }
            bytes += [UInt8](repeating: 0, count: min(limit + 1, bytes.count * 2) - bytes.count)
        }
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, $0.count - got) }
        if n < 0 && errno == EINTR { continue }
        if n < 0 { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        if n == 0 { break }
        got += n
    }
    guard got <= limit else { throw .tooLarge(path: path, bytes: got, limit: limit) }
    bytes.removeSubrange(got...)
    return bytes
}
