import FoundationEssentials
import TuttiSystem

// The few Foundation spellings the MPD port (MPD/) still uses, kept
// working without Foundation so the leader loads neither it nor ICU:
// Thread.detachNewThread, NSString's path methods, ObjCBool and
// FileManager's directory walker. They go once the MPD code calls
// startThread, PathText and FileManager.subpathsOfDirectory itself.

/// `Thread.detachNewThread`: a TuttiSystem thread (the body names it).
enum Thread {
    static func detachNewThread(_ body: @escaping @Sendable () -> Void) { startThread(name: "tutti-worker", body) }
}

/// `path as NSString` is the path itself; the methods below are PathText's.
typealias NSString = String

extension String {
    /// The extension without its dot ("a/b.flac" → "flac"; "" when none).
    var pathExtension: String {
        let name = PathText.lastComponent(self)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return String(name[name.index(after: dot)...])
    }
    var deletingLastPathComponent: String { PathText.parent(self) }
    var lastPathComponent: String { PathText.lastComponent(self) }
}

/// Foundation's out-parameter for `fileExists(atPath:isDirectory:)`.
struct ObjCBool: ExpressibleByBooleanLiteral {
    var boolValue: Bool
    init(booleanLiteral value: Bool) { boolValue = value }
}

extension FileManager {
    func fileExists(atPath path: String, isDirectory: inout ObjCBool) -> Bool {
        var folder = false
        defer { isDirectory.boolValue = folder }
        return fileExists(atPath: path, isDirectory: &folder)
    }

    /// Every file and folder under `path`, relative to it, one at a time (`nextObject`).
    func enumerator(atPath path: String) -> PathWalker? {
        guard let paths = try? subpathsOfDirectory(atPath: path) else { return nil }
        return PathWalker(paths: paths)
    }

    final class PathWalker {
        private var paths: IndexingIterator<[String]>
        init(paths: [String]) { self.paths = paths.makeIterator() }
        func nextObject() -> Any? { paths.next() }
    }
}
