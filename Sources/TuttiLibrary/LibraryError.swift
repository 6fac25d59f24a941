import TuttiCore

/// Errors from the music library: what failed, on which file or object,
/// and what SQLite or the file system said. `description` is a sentence a
/// user can act on.
public enum LibraryError: Error, CustomStringConvertible, Equatable, Sendable {
    /// An SQLite call failed. `code` is SQLite's extended result code.
    case sqlite(operation: String, code: Int32, message: String)
    /// The database file could not be opened or created.
    case cannotOpenDatabase(path: String, reason: String)
    /// The database was written by a newer Tutti whose schema this build does not know.
    case databaseTooNew(path: String, found: Int, supported: Int, writtenBy: String?)
    /// The database's schema is not one Tutti recognises (not a Tutti library?).
    case corruptSchema(path: String, reason: String)
    /// The music folder to scan is missing or is not a folder.
    case musicFolder(path: String, reason: String)
    /// A scan of the same library is already running.
    case scanInProgress
    /// A track, playlist or entry that does not exist.
    case notFound(String)
    /// A caller passed a value that cannot be used (empty name, index out of range…).
    case invalidArgument(String)
    /// Reading or writing a file (M3U, …) failed.
    case io(path: String, reason: String)
    /// What a person asked cannot be done as asked (a playlist entry that is
    /// not there, a playlist without a name…), said in the catalogue's words.
    case refused(UserMessage)

    public var description: String {
        switch self {
        case .sqlite(let operation, let code, let message):
            "library database: \(operation) failed: \(message) (SQLite code \(code))"
                + (code & 0xff == 13 ? "; free some space on the disk that holds it" : "")
        case .cannotOpenDatabase(let path, let reason):
            "cannot open the library database \(path): \(reason)"
        case .databaseTooNew(let path, let found, let supported, let writtenBy):
            "the library database \(path) has schema version \(found), but this Tutti understands up to version \(supported). "
                + "It was written by \(writtenBy.map { "Tutti \($0)" } ?? "a newer Tutti"): "
                + "use \(writtenBy.map { "Tutti \($0) or later" } ?? "that newer Tutti") with it, or pass --db with another file to start a new library"
        case .corruptSchema(let path, let reason):
            "\(path) is not a usable Tutti library: \(reason)"
        case .musicFolder(let path, let reason):
            "music folder \(path): \(reason)"
        case .scanInProgress:
            "a library scan is already running; wait for it to finish"
        case .notFound(let what):
            "\(what) not found"
        case .invalidArgument(let what):
            what
        case .io(let path, let reason):
            "\(path): \(reason)"
        case .refused(let message):
            message.description
        }
    }

    /// What the person is told (the catalogue's `library.*`): what a surface
    /// writes in the person's language; `description` stays the English, for logs.
    public var message: UserMessage {
        switch self {
        case .sqlite(let operation, let code, let message):
            UserMessage(code & 0xff == 13 ? .libraryDiskFull : .libraryDatabase, ["operation": operation, "reason": message, "code": "\(code)"])
        case .cannotOpenDatabase(let path, let reason):
            UserMessage(.libraryCannotOpen, ["path": path, "reason": reason])
        case .databaseTooNew(let path, let found, let supported, let writtenBy):
            UserMessage(writtenBy == nil ? .libraryTooNew : .libraryTooNewBy,
                        ["path": path, "found": "\(found)", "supported": "\(supported)", "writer": writtenBy ?? ""])
        case .corruptSchema(let path, let reason):
            UserMessage(.libraryNotUsable, ["path": path, "reason": reason])
        case .musicFolder(let path, let reason):
            UserMessage(.libraryMusicFolder, ["path": path, "reason": reason])
        case .scanInProgress:
            UserMessage(.libraryScanRunning)
        case .notFound(let what):
            Self.notFound(what)
        case .invalidArgument(let what):
            UserMessage(.libraryDetail, ["detail": what])
        case .io(let path, let reason):
            UserMessage(.libraryFile, ["path": path, "reason": reason])
        case .refused(let message):
            message
        }
    }

    /// "track 5", "playlist 3", "podcast 2", "episode 9" (the ids' descriptions) by kind; anything else as given.
    private static func notFound(_ what: String) -> UserMessage {
        let parts = what.split(separator: " ", maxSplits: 1).map(String.init)
        let keys: [String: MessageKey] = ["track": .libraryNoTrack, "playlist": .libraryNoPlaylist, "podcast": .libraryNoPodcast,
                                          "episode": .libraryNoEpisode]
        if parts.count == 2, let key = keys[parts[0]], Int64(parts[1]) != nil { return UserMessage(key, ["id": parts[1]]) }
        return UserMessage(.libraryNotFound, ["what": what])
    }
}

/// Why one file was left out of a scan. The scan carries on after it.
public enum SkipReason: Error, Equatable, Sendable, CustomStringConvertible {
    case unreadable(String)
    case notAudio(String)
    case corrupt(String)

    public var description: String {
        switch self {
        case .unreadable(let why): "cannot read: \(why)"
        case .notAudio(let why): "not an audio file: \(why)"
        case .corrupt(let why): "corrupt: \(why)"
        }
    }
}
