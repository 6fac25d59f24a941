/// The folders a network client may name files in: the music folder, the
/// offline cache, the playlist folder; and single files, the ones the
/// leader was started with (each file alone, never its folder: `tuttid
/// leader --play ~/song.mp3` must not open `~/.ssh`). Pure: the caller resolves symlinks and `..` first
/// (realpath), so a link inside the music folder that points out of it is
/// judged by where it points.
public struct MediaFolders: Sendable, Equatable {
    /// Canonical absolute folders, without a trailing slash.
    public private(set) var roots: [String]
    /// Canonical absolute paths of files allowed by themselves.
    public private(set) var files: Set<String>

    public init(roots: [String], files: [String] = []) {
        self.roots = roots.map { $0.count > 1 && $0.hasSuffix("/") ? String($0.dropLast()) : $0 }.filter { $0.hasPrefix("/") }
        self.files = Set(files.filter { $0.hasPrefix("/") && !$0.hasSuffix("/") })
    }

    /// Whether canonical path `path` is one of the folders, lies under one, or is one of the single files.
    public func contains(canonical path: String) -> Bool {
        files.contains(path) || roots.contains { root in root == "/" || path == root || path.hasPrefix(root + "/") }
    }

    /// The innermost folder that canonical path `path` lies under, if any.
    public func root(containing path: String) -> String? {
        roots.filter { root in root == "/" || path.hasPrefix(root + "/") }.max { $0.count < $1.count }
    }

    /// A URI that is no file here (a stream on the web): nothing to confine.
    public static func isRemote(_ uri: String) -> Bool {
        let lower = uri.prefix(8).lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }
}

/// A path a client named that lies outside the folders it may use.
/// Or a URL whose host the leader does not fetch from (`refusal`), or a
/// capture device the settings do not name as a line input (`notLineInput`).
public struct PathConfinementError: Error, CustomStringConvertible, Equatable {
    public let path: String
    public let refusal: StreamDestinationRefusal?
    /// The device of a `line-in:` source that is not one of the leader's line inputs.
    public let notLineInput: String?
    public init(path: String, refusal: StreamDestinationRefusal? = nil, notLineInput: String? = nil) {
        self.path = path
        self.refusal = refusal
        self.notLineInput = notLineInput
    }
    public var description: String { message.description }

    /// What the person is told: the refusal, the line input to name, or that the path is outside the folders.
    public var message: UserMessage {
        if let refusal { return refusal.message(at: path) }
        if let device = notLineInput { return UserMessage(.pathNotLineInput, ["path": path, "device": device]) }
        return UserMessage(.pathOutsideFolders, ["path": path])
    }
}
