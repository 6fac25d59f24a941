/// A track's identity in the library. Kept when the file moves.
public struct TrackID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: Int64
    public init(_ rawValue: Int64) { self.rawValue = rawValue }
    public static func < (a: TrackID, b: TrackID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "track \(rawValue)" }
}

public struct PlaylistID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int64
    public init(_ rawValue: Int64) { self.rawValue = rawValue }
    public var description: String { "playlist \(rawValue)" }
}

/// One row of a playlist. The same track may appear more than once; each
/// appearance has its own entry id.
public struct PlaylistEntryID: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int64
    public init(_ rawValue: Int64) { self.rawValue = rawValue }
    public var description: String { "playlist entry \(rawValue)" }
}

public enum AudioFormatKind: String, Sendable, CaseIterable {
    case mp3, flac, wav
    /// Read through FFmpeg: MP4 (.m4a, .m4b, .mp4: AAC or ALAC), raw AAC
    /// (ADTS), Ogg (Vorbis, or another codec in Ogg), Opus, WMA, WavPack,
    /// Monkey's Audio, AIFF, DSD (.dsf, .dff).
    case mp4, aac, ogg, opus, wma, wavpack, ape, aiff, dsd

    /// Whether FFmpeg reads and decodes it (opened at the first such file).
    public var usesFFmpeg: Bool { ![.mp3, .flac, .wav].contains(self) }

    /// The kind a file name's extension stands for, or nil for files the scanner ignores.
    /// The format a file name's extension names (any case), from the name's bytes.
    init?(fileName: UnsafeBufferPointer<UInt8>) {
        guard let dot = fileName.lastIndex(of: 0x2E), dot > 0 else { return nil }
        self.init(pathExtension: String(decoding: UnsafeBufferPointer(rebasing: fileName[(dot + 1)...]), as: UTF8.self))
    }

    public init?(pathExtension ext: String) {
        switch ext.lowercased() {
        case "mp3": self = .mp3
        case "flac": self = .flac
        case "wav", "wave": self = .wav
        case "m4a", "m4b", "mp4": self = .mp4
        case "aac": self = .aac
        case "ogg", "oga": self = .ogg
        case "opus": self = .opus
        case "wma": self = .wma
        case "wv": self = .wavpack
        case "ape": self = .ape
        case "aif", "aiff", "aifc": self = .aiff
        case "dsf", "dff": self = .dsd
        default: return nil
        }
    }
}

/// What the library knows about one audio file.
public struct Track: Equatable, Sendable, Identifiable {
    public var id: TrackID
    /// Absolute path.
    public var path: String
    public var format: AudioFormatKind
    public var title: String
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var trackNumber: Int?
    public var discNumber: Int?
    public var year: Int?
    /// Exact decoded length (gapless: encoder delay and padding removed) at `sampleRate`.
    public var durationFrames: Int
    public var sampleRate: Int
    public var fileSize: Int
    /// Modification time in nanoseconds since 1970.
    public var modifiedNanoseconds: Int64
    /// See `ContentHash`.
    public var contentHash: String
    /// SHA-256 (hex) of the embedded cover; fetch it with `Library.cover(hash:)`.
    public var coverHash: String?

    public var durationSeconds: Double { sampleRate > 0 ? Double(durationFrames) / Double(sampleRate) : 0 }
}

/// A cover image, stored once per distinct image.
public struct Cover: Equatable, Sendable {
    public var hash: String
    public var mime: String
    public var bytes: [UInt8]
}

/// One page of search results.
public struct SearchResults: Sendable, Equatable {
    public var query: String
    public var tracks: [Track]
    public var offset: Int
    public var limit: Int
    /// True when a further page exists.
    public var hasMore: Bool
}

public struct Playlist: Equatable, Sendable, Identifiable {
    public var id: PlaylistID
    public var name: String
    public var entryCount: Int
    /// Unix milliseconds.
    public var createdAt: Int64
    public var updatedAt: Int64
}

public struct PlaylistEntry: Equatable, Sendable {
    public var id: PlaylistEntryID
    /// 0-based index in the playlist.
    public var index: Int
    public var track: Track
}

public struct Favourite: Equatable, Sendable {
    public var track: Track
    /// Unix milliseconds.
    public var likedAt: Int64
}

public struct Play: Equatable, Sendable {
    public var track: Track
    /// Unix milliseconds.
    public var startedAt: Int64
    public var playedMilliseconds: Int64
}

/// What a scan did. `filesRead` counts files whose tags were read, so an
/// incremental rescan of an unchanged folder reports 0.
public struct ScanSummary: Sendable, Equatable, CustomStringConvertible {
    public struct Skipped: Sendable, Equatable {
        public var path: String
        public var reason: SkipReason
    }

    public var root: String
    public var added = 0
    public var updated = 0
    public var unchanged = 0
    public var removed = 0
    public var moved = 0
    public var filesRead = 0
    /// The scan was asked to stop (`ScanOptions.shouldStop`) before it read
    /// every file: what it read is kept, and no track was removed.
    public var stopped = false
    public var skipped: [Skipped] = []
    /// Tracks that left the library, so queues can drop them.
    public var removedTrackIDs: [TrackID] = []
    /// Set when removal was held back (see `ScanOptions.removeMissing`).
    public var warnings: [String] = []
    public var elapsedSeconds: Double = 0
    /// The scan added more than the library held and built its indexes
    /// once at the end (`ScanOptions.bulkLoadMinimum`).
    public var bulkLoad = false

    public var description: String {
        var s = "\(added) added, \(updated) updated, \(unchanged) unchanged, \(moved) moved, \(removed) removed, \(skipped.count) skipped"
        s += " in \((elapsedSeconds * 100).rounded() / 100) s"
        return s
    }
}

/// Progress of a running scan, passed to the progress callback.
public struct ScanProgress: Sendable, Equatable {
    public var done: Int
    public var total: Int
    public var currentPath: String
    public var fraction: Double { total > 0 ? Double(done) / Double(total) : 1 }
}

/// An M3U line that did not resolve to a library track.
public struct UnresolvedEntry: Sendable, Equatable {
    /// 1-based line number in the file.
    public var line: Int
    public var entry: String
    public var reason: String
}

public struct M3UImportReport: Sendable, Equatable {
    public var playlist: Playlist
    public var added: Int
    public var unresolved: [UnresolvedEntry]
}
