import Glibc

/// What the scanner reads from one file, without a library: the tag
/// readers the scan uses, on their own. The fuzz targets (Fuzz/) call it;
/// it adds no reading logic of its own.
public struct AudioFileTags: Equatable, Sendable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var genre: String?
    public var trackNumber: Int?
    public var discNumber: Int?
    public var year: Int?
    public var pictureBytes: Int
    public var durationFrames: Int
    public var sampleRate: Int

    /// Reads `path` as `format` exactly as a scan does (tags, length, cover);
    /// a file the scan would skip comes back as its skip reason.
    public static func read(path: String, format: AudioFormatKind) -> Result<AudioFileTags, SkipReason> {
        let result: Result<FileMetadata, SkipReason>
        switch format {
        case .mp3, .flac:
            var st = stat()
            guard stat(path, &st) == 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
            result = format == .mp3 ? MP3Tags.read(path: path, fileSize: Int(st.st_size)) : FLACTags.read(path: path)
        case .wav:
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0 else { return .failure(.unreadable(String(cString: strerror(errno)))) }
            result = WAVTags.read(fd: fd, fileSize: Int(st.st_size))
        case .mp4, .aac, .ogg, .opus, .wma, .wavpack, .ape, .aiff, .dsd:
            result = FFmpegTags.read(path: path, format: format)
        }
        return result.map { m in
            AudioFileTags(title: m.tags.title, artist: m.tags.artist, album: m.tags.album, albumArtist: m.tags.albumArtist,
                          genre: m.tags.genre, trackNumber: m.tags.trackNumber, discNumber: m.tags.discNumber, year: m.tags.year,
                          pictureBytes: m.tags.picture?.bytes.count ?? 0, durationFrames: m.durationFrames, sampleRate: m.sampleRate)
        }
    }

    /// The tags of a RIFF `LIST`/`INFO` chunk's body (a WAV file's tags), as the scan reads them.
    public static func wavInfo(_ body: [UInt8]) -> AudioFileTags {
        let t = WAVTags.parseInfo(body)
        return AudioFileTags(title: t.title, artist: t.artist, album: t.album, albumArtist: t.albumArtist, genre: t.genre,
                             trackNumber: t.trackNumber, discNumber: t.discNumber, year: t.year,
                             pictureBytes: 0, durationFrames: 0, sampleRate: 0)
    }
}
