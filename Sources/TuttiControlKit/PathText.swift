import Glibc

/// File path arithmetic on strings, as NSString's path methods did it
/// (the leader does not load Foundation): "/music/a/b.mp3" has the parent
/// "/music/a", the last component "b.mp3" and the title "b".
public enum PathText {
    /// The path with every symlink and `..` resolved (nil: it does not exist).
    public static func canonical(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    /// Without trailing slashes ("/" stays "/").
    private static func trimmed(_ path: String) -> Substring {
        var p = Substring(path)
        while p.count > 1, p.hasSuffix("/") { p.removeLast() }
        return p
    }

    /// The last component: "/a/b/" → "b", "/" → "/", "" → "".
    public static func lastComponent(_ path: String) -> String {
        let p = trimmed(path)
        guard p != "/", let slash = p.lastIndex(of: "/") else { return String(p) }
        return String(p[p.index(after: slash)...])
    }

    /// The folder holding it: "/a/b" → "/a", "/a" → "/", "b" → "", "/" → "/".
    public static func parent(_ path: String) -> String {
        let p = trimmed(path)
        guard p != "/", let slash = p.lastIndex(of: "/") else { return p == "/" ? "/" : "" }
        if slash == p.startIndex { return "/" }
        var parent = p[..<slash]
        while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }
        return String(parent)
    }

    /// The last component without its extension: "/m/Song.mp3" → "Song", "/m/.hidden" → ".hidden".
    public static func title(_ path: String) -> String {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// The extension without its dot: "a/b.flac" → "flac"; "" for none, "/m/.hidden" and "a.d/b".
    public static func fileExtension(_ path: String) -> String {
        let name = lastComponent(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }

    /// `.` and `..` folded in and doubled slashes removed, without looking
    /// at the disk: "/a/./b/../c//" → "/a/c".
    public static func standardized(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            switch part {
            case ".": continue
            case "..": if let last = parts.last, last != ".." { parts.removeLast() } else if !absolute { parts.append(part) }
            default: parts.append(part)
            }
        }
        let joined = parts.joined(separator: "/")
        return absolute ? "/" + joined : (joined.isEmpty ? "." : joined)
    }
}
