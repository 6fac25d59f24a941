/// What a station URL may answer instead of audio: a playlist of streams.
/// Pure: which kind a response is (by Content-Type, then by its first
/// bytes, then by the URL's extension) and the entries of the text kinds
/// (PLS, M3U). The XML kinds (ASX, XSPF) are read with expat in
/// TuttiStreams (`StationPlaylistReader`).
public enum StationPlaylistKind: String, Sendable, Equatable {
    case pls, m3u, asx, xspf
    /// An HLS playlist (`#EXT-X-` tags): a stream of segments, not a list of stations.
    case hls
}

public enum StationPlaylist {
    /// Largest playlist read.
    public static let maxBytes = 256 << 10
    /// Entries tried from one playlist.
    public static let maxEntries = 16
    /// A playlist that points to a playlist…: at most this many levels.
    public static let maxDepth = 3

    /// The kind a Content-Type names, or nil (audio, or a type that says nothing).
    public static func kind(contentType: String?) -> StationPlaylistKind? {
        guard let type = contentType?.split(separator: ";").first.map({ FeedBuilder.trimmed(String($0)).lowercased() }) else { return nil }
        switch type {
        case "audio/x-scpls", "application/pls+xml", "audio/scpls": return .pls
        case "audio/x-mpegurl", "audio/mpegurl", "application/x-mpegurl", "application/vnd.apple.mpegurl", "application/mpegurl": return .m3u
        case "video/x-ms-asx", "audio/x-ms-asx", "video/x-ms-wvx", "audio/x-ms-wax", "video/x-ms-wmx": return .asx
        case "application/xspf+xml": return .xspf
        default: return nil
        }
    }

    /// The kind the URL's extension names (query and fragment ignored), or nil.
    public static func kind(url: String) -> StationPlaylistKind? {
        var path = Substring(url)
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<cut] }
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        switch path[path.index(after: dot)...].lowercased() {
        case "pls": return .pls
        case "m3u", "m3u8": return .m3u
        case "asx", "wax", "wvx": return .asx
        case "xspf": return .xspf
        default: return nil
        }
    }

    /// The kind the first bytes show (`[playlist]`, `#EXTM3U`, `<asx`, an
    /// XSPF `<playlist>`), after a byte-order mark and blank space; nil for
    /// anything else (audio among it).
    public static func kind(sniffing bytes: ArraySlice<UInt8>) -> StationPlaylistKind? {
        var start = bytes.startIndex
        if bytes.count >= 3, bytes[start] == 0xEF, bytes[start + 1] == 0xBB, bytes[start + 2] == 0xBF { start += 3 }
        while start < bytes.endIndex, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start]) { start += 1 }
        let head = String(decoding: bytes[start..<min(bytes.endIndex, start + 512)], as: UTF8.self).lowercased()
        if head.hasPrefix("[playlist]") { return .pls }
        if head.hasPrefix("#extm3u") { return .m3u }
        if head.hasPrefix("<asx") { return .asx }
        if head.hasPrefix("<?xml") || head.hasPrefix("<playlist") {
            if head.contains("<asx") { return .asx }
            if head.contains("<playlist") && head.contains("xspf.org") { return .xspf }
        }
        return nil
    }

    /// Whether M3U text is HLS (a media or master playlist: `#EXT-X-` tags), not a list of streams.
    public static func isHLS(_ text: String) -> Bool {
        for line in text.split(whereSeparator: \.isNewline).prefix(64) {
            let l = FeedBuilder.trimmed(String(line)).uppercased()
            if l.hasPrefix("#EXT-X-TARGETDURATION") || l.hasPrefix("#EXT-X-STREAM-INF") || l.hasPrefix("#EXT-X-MEDIA-SEQUENCE")
                || l.hasPrefix("#EXT-X-VERSION") || l.hasPrefix("#EXT-X-PLAYLIST-TYPE") { return true }
        }
        return false
    }

    /// PLS entries (`FileN=URL`) in N's order.
    public static func parsePLS(_ text: String, base: String) -> [String] {
        var numbered: [(Int, String)] = []
        for line in text.split(whereSeparator: \.isNewline) {
            guard let eq = line.firstIndex(of: "=") else { continue }
            let key = FeedBuilder.trimmed(String(line[..<eq])).lowercased()
            guard key.hasPrefix("file"), let n = Int(key.dropFirst(4)), n >= 0 else { continue }
            if let url = resolve(FeedBuilder.trimmed(String(line[line.index(after: eq)...])), base: base) { numbered.append((n, url)) }
            if numbered.count >= 4 * maxEntries { break }
        }
        return Array(numbered.sorted { $0.0 < $1.0 }.map(\.1).prefix(maxEntries))
    }

    /// M3U entries: every line that is not a comment, as a URL.
    public static func parseM3U(_ text: String, base: String) -> [String] {
        var out: [String] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let l = FeedBuilder.trimmed(String(line))
            guard !l.isEmpty, !l.hasPrefix("#"), let url = resolve(l, base: base) else { continue }
            out.append(url)
            if out.count >= maxEntries { break }
        }
        return out
    }

    /// An entry as an absolute http(s) URL: absolute as written, or
    /// relative to the playlist's own URL (`/path` from its host, `name`
    /// from its folder). Anything else (`file:`, `mms:`) is nil.
    public static func resolve(_ entry: String, base: String) -> String? {
        guard !entry.isEmpty, entry.utf8.count <= 4_096, !entry.contains(where: { $0.isWhitespace && !($0 == " ") }) else { return nil }
        let lower = entry.prefix(8).lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return entry }
        if entry.contains("://") || entry.hasPrefix("//") { return nil }
        guard let colon = base.firstIndex(of: ":"), base[colon...].hasPrefix("://") else { return nil }
        let afterScheme = base[base.index(colon, offsetBy: 3)...]
        let hostEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        let origin = String(base[..<hostEnd])
        if entry.hasPrefix("/") { return origin + entry }
        var path = String(afterScheme[hostEnd...])
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<cut]) }
        let folder = path.lastIndex(of: "/").map { String(path[...$0]) } ?? "/"
        return origin + folder + String(entry)
    }
}
