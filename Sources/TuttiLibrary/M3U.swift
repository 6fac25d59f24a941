/// M3U/M3U8 playlists as text. Pure: parsing, rendering and path
/// arithmetic; the library resolves the paths to tracks.
public enum M3U {
    public struct Item: Equatable, Sendable {
        /// 1-based line number of the location line.
        public var line: Int
        /// The location as written (a path, a file:// URL or a network URL).
        public var location: String
        /// From the preceding `#EXTINF:seconds,title`.
        public var title: String?
        public var durationSeconds: Int?
    }

    /// Parses a playlist file's bytes: UTF-8 when valid, else Latin-1 (old
    /// players wrote .m3u in the system's 8-bit code page).
    public static func parse(bytes: [UInt8]) -> [Item] { parse(TagText.utf8OrLatin1(bytes)) }

    /// Parses M3U text (UTF-8; an initial BOM is ignored). Comment lines
    /// other than `#EXTINF` are skipped; CRLF and CR line ends are accepted.
    public static func parse(_ text: String) -> [Item] {
        var items: [Item] = []
        var pending: (title: String?, duration: Int?)?
        var body = Substring(text)
        if body.first == "\u{FEFF}" { body = body.dropFirst() }
        // "\r\n" is one Character in Swift, so split on any line break, not on "\n".
        for (index, line) in body.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let trimmed = line.trimmingSpaces()
            if trimmed.isEmpty { continue }
            if trimmed.hasPrefix("#") {
                if trimmed.uppercased().hasPrefix("#EXTINF:") {
                    let info = trimmed.dropFirst(8)
                    let comma = info.firstIndex(of: ",")
                    // Attributes (tvg-id="…") may follow the duration before the comma.
                    let durationText = comma.map { info[..<$0] } ?? info[...]
                    let duration = Int(durationText.prefix { $0 == "-" || $0.isNumber })
                    let title = comma.map { String(info[info.index(after: $0)...]).trimmingSpaces() }
                    pending = (title?.isEmpty == false ? title : nil, duration.flatMap { $0 >= 0 ? $0 : nil })
                }
                continue
            }
            items.append(Item(line: index + 1, location: trimmed, title: pending?.title, durationSeconds: pending?.duration))
            pending = nil
        }
        return items
    }

    /// File extensions of audio (what a playlist entry names), whether or not Tutti decodes them.
    public static let audioExtensions: Set<String> = ["mp3", "mp2", "flac", "wav", "wave", "ogg", "oga", "opus", "m4a", "aac",
                                                      "mp4", "wma", "aif", "aiff", "ape", "wv", "mpc", "alac", "dsf", "dff", "mka", "webm"]

    /// Whether parsed lines are a playlist: at least one entry, and every
    /// entry an http(s) stream or a file with an audio extension. A file
    /// that is not (a web page kept in the cache, a key, notes) is refused
    /// whole, so none of its lines is ever reported back to a client.
    public static func isPlaylist(_ items: [Item]) -> Bool {
        !items.isEmpty && items.allSatisfy { isAudioLocation($0.location) }
    }

    static func isAudioLocation(_ location: String) -> Bool {
        let lower = location.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return !lower.contains(where: \.isWhitespace) }
        var path = Substring(lower)
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }), lower.hasPrefix("file://") { path = path[..<cut] }
        let name = path.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return false }
        return audioExtensions.contains(String(name[name.index(after: dot)...]))
    }

    public struct Row: Sendable {
        public var path: String
        public var title: String
        public var durationSeconds: Int
        public init(path: String, title: String, durationSeconds: Int) {
            self.path = path
            self.title = title
            self.durationSeconds = durationSeconds
        }
    }

    /// Extended M3U text. With `relativeTo`, paths are written relative to
    /// that folder (the playlist's own), so the playlist and music can move together.
    public static func render(_ rows: [Row], relativeTo directory: String?) -> String {
        var out = "#EXTM3U\n"
        for row in rows {
            // A line break in a title would end the #EXTINF line early.
            let title = row.title.split(whereSeparator: \.isNewline).joined(separator: " ")
            out += "#EXTINF:\(row.durationSeconds),\(title)\n"
            out += (directory.map { relativePath(from: $0, to: row.path) } ?? row.path) + "\n"
        }
        return out
    }

    /// The absolute, normalised path a location names, or nil for network
    /// URLs. Relative locations are taken from `baseDirectory`; `file://`
    /// URLs are percent-decoded; Windows separators are accepted.
    public static func resolve(_ location: String, baseDirectory: String) -> String? {
        var path = location
        let lower = path.lowercased()
        if lower.hasPrefix("file://") {
            path = percentDecoded(String(path.dropFirst(7)))
            if !path.hasPrefix("/") { // file://host/path
                path = "/" + path.drop { $0 != "/" }.dropFirst()
            }
        } else if lower.contains("://") {
            return nil
        }
        if path.contains("\\") && !path.contains("/") { path = path.replacingOccurrences(of: "\\", with: "/") }
        if !path.hasPrefix("/") { path = baseDirectory + "/" + path }
        return normalize(path)
    }

    /// Removes `.`, `..` and repeated separators.
    public static func normalize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." { continue }
            if part == ".." { if !parts.isEmpty { parts.removeLast() }; continue }
            parts.append(part)
        }
        return "/" + parts.joined(separator: "/")
    }

    /// `path` relative to `directory` ("../Music/a.mp3"); both absolute.
    public static func relativePath(from directory: String, to path: String) -> String {
        let from = normalize(directory).split(separator: "/")
        let to = normalize(path).split(separator: "/")
        var common = 0
        while common < from.count, common < to.count - 1, from[common] == to[common] { common += 1 }
        let ups = Array(repeating: "..", count: from.count - common)
        let relative = (ups + to[common...].map(String.init)).joined(separator: "/")
        // A lone name with a backslash would read back as a Windows path ("a\\b" → "a/b").
        return relative.contains("\\") && !relative.contains("/") ? "./" + relative : relative
    }

    static func percentDecoded(_ s: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(s.utf8)[...]
        while let b = utf8.first {
            utf8 = utf8.dropFirst()
            if b == UInt8(ascii: "%"), utf8.count >= 2,
               let v = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(v)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
