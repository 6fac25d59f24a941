import CZlib
import Glibc
import TuttiCore

/// The web app's files, read once at start and kept in memory with a
/// gzip copy of each text file (compressed once, not per request) and an
/// entity tag, so a page load costs no disk read and a reload costs a 304.
public struct WebAssets: Sendable {
    public struct Asset: Sendable {
        public var contentType: String
        public var bytes: [UInt8]
        /// The gzip encoding, when it is smaller.
        public var gzipped: [UInt8]?
        public var etag: String
    }

    public enum LoadError: Error, CustomStringConvertible {
        case notFound(String)
        case tooLarge(String, limit: Int)
        public var description: String {
            switch self {
            case .notFound(let dir): "no web app in \(dir) (index.html is missing): give --web-root DIR, or --web off"
            case .tooLarge(let path, let limit): "\(path) is larger than \(limit) bytes"
            }
        }
    }

    /// By URL path ("/index.html", "/js/app.js").
    public private(set) var files: [String: Asset] = [:]
    public let root: String

    /// The web app's files may not exceed this in all.
    public static let maximumTotalBytes = 32 << 20

    /// Reads every file under `root` (no hidden files, no symlinks out of it).
    public init(root: String) throws(LoadError) {
        self.root = root
        guard access(root + "/index.html", R_OK) == 0 else { throw .notFound(root) }
        var total = 0
        var pending = [""]
        while let relative = pending.popLast() {
            guard let dir = opendir(root + relative) else { continue }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                guard !name.hasPrefix(".") else { continue }
                let path = relative + "/" + name
                var info = stat()
                guard lstat(root + path, &info) == 0 else { continue }
                if info.st_mode & S_IFMT == S_IFDIR { pending.append(path); continue }
                guard info.st_mode & S_IFMT == S_IFREG else { continue }
                total += Int(info.st_size)
                guard total <= Self.maximumTotalBytes else { throw .tooLarge(root, limit: Self.maximumTotalBytes) }
                guard let bytes = Self.read(root + path) else { continue }
                files[path] = Self.asset(path: path, bytes: bytes)
            }
        }
    }

    static func asset(path: String, bytes: [UInt8]) -> Asset {
        let type = contentType(of: path)
        let compressible = type.hasPrefix("text/") || type.contains("javascript") || type.contains("json") || type.contains("svg")
        let gz = compressible ? gzip(bytes) : nil
        return Asset(contentType: type, bytes: bytes, gzipped: gz.flatMap { $0.count < bytes.count ? $0 : nil },
                     etag: "\"" + String(FNV1a.hash(bytes), radix: 16) + "\"")
    }

    private static func read(_ path: String) -> [UInt8]? {
        guard let f = fopen(path, "rb") else { return nil }
        defer { fclose(f) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
            if n == 0 { break }
            out += chunk[0..<n]
        }
        return out
    }

    public static func contentType(of path: String) -> String {
        switch path.split(separator: ".").last.map({ $0.lowercased() }) ?? "" {
        case "html": "text/html; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "js", "mjs": "text/javascript; charset=utf-8"
        case "json": "application/json"
        case "webmanifest": "application/manifest+json"
        case "svg": "image/svg+xml"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "ico": "image/x-icon"
        case "txt": "text/plain; charset=utf-8"
        default: "application/octet-stream"
        }
    }

    /// gzip (RFC 1952) at the best compression; nil if zlib fails.
    public static func gzip(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        guard deflateInit2_(&stream, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 32)
        var input = input
        let rc = input.withUnsafeMutableBufferPointer { inp in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = inp.baseAddress
                stream.avail_in = UInt32(inp.count)
                stream.next_out = out.baseAddress
                stream.avail_out = UInt32(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard rc == Z_STREAM_END else { return nil }
        return Array(output.prefix(Int(stream.total_out)))
    }

    /// Answers a GET for `path`: the file (gzipped when the client takes
    /// it), 304 when the client's copy is current, nil when there is none.
    /// `/` is index.html.
    public func response(for path: String, acceptEncoding: String?, ifNoneMatch: String?) -> WebResponse? {
        let key = path == "/" || path.isEmpty ? "/index.html" : path
        guard let asset = files[key] else { return nil }
        // The page and its modules revalidate on every load (cheap: a 304),
        // so an upgraded leader is never shown with yesterday's script.
        var headers: [(String, String)] = [("Content-Type", asset.contentType), ("ETag", asset.etag),
                                           ("Cache-Control", "no-cache"), ("X-Content-Type-Options", "nosniff")]
        if ifNoneMatch == asset.etag { return WebResponse(status: 304, headers: headers) }
        if let gz = asset.gzipped, acceptEncoding?.contains("gzip") == true {
            headers += [("Content-Encoding", "gzip"), ("Vary", "Accept-Encoding")]
            return WebResponse(status: 200, headers: headers, body: gz)
        }
        if asset.gzipped != nil { headers.append(("Vary", "Accept-Encoding")) }
        return WebResponse(status: 200, headers: headers, body: asset.bytes)
    }
}
