import TuttiDecode

/// MP3 and FLAC tags and exact length: read by TuttiDecode (which owns
/// libmpg123 and libFLAC), cleaned and kept here.
enum MP3Tags {
    static func read(path: String, fileSize: Int) -> Result<FileMetadata, SkipReason> {
        switch MP3FileTags.read(path: path, fileSize: fileSize, limits: DecodedTags.limits) {
        case .failure(let error): return .failure(DecodedTags.skipReason(error))
        case .success(let file):
            var tags = DecodedTags.common(file)
            tags.genre = TagText.genre(TagText.clean(file.genre)) // ID3's "(13)" and "Rock" alike
            if let v1 = file.id3v1 { tags.fillGaps(from: id3v1(v1)) }
            return .success(FileMetadata(format: .mp3, tags: tags, durationFrames: file.frames, sampleRate: file.sampleRate))
        }
    }

    /// ID3v1/1.1: fixed Latin-1 fields.
    static func id3v1(_ v1: FileTags.ID3v1) -> TagSet {
        func field(_ bytes: [UInt8]) -> String? { TagText.clean(TagText.latin1(bytes)) }
        var tags = TagSet()
        tags.title = field(v1.title)
        tags.artist = field(v1.artist)
        tags.album = field(v1.album)
        tags.year = TagText.year(field(v1.year))
        tags.trackNumber = v1.track
        tags.genre = TagText.id3v1Genre(v1.genre)
        return tags
    }
}

enum FLACTags {
    static func read(path: String) -> Result<FileMetadata, SkipReason> {
        switch FLACFileTags.read(path: path, limits: DecodedTags.limits) {
        case .failure(let error): return .failure(DecodedTags.skipReason(error))
        case .success(let file):
            var tags = DecodedTags.common(file)
            tags.genre = TagText.clean(file.genre)
            return .success(FileMetadata(format: .flac, tags: tags, durationFrames: file.frames, sampleRate: file.sampleRate))
        }
    }
}

/// Every other format, through FFmpeg (TuttiDecode's FFmpegFileTags: an
/// alias table over container and stream metadata).
enum FFmpegTags {
    static func read(path: String, format: AudioFormatKind) -> Result<FileMetadata, SkipReason> {
        switch FFmpegFileTags.read(path: path, limits: DecodedTags.limits) {
        case .failure(let error): return .failure(DecodedTags.skipReason(error))
        case .success(let file):
            var tags = DecodedTags.common(file)
            tags.genre = TagText.genre(TagText.clean(file.genre)) // MP4 and WMA may carry ID3-style "(17)"
            return .success(FileMetadata(format: format, tags: tags, durationFrames: file.frames, sampleRate: file.sampleRate))
        }
    }
}

/// What MP3, FLAC and the FFmpeg formats share once read.
private enum DecodedTags {
    static let limits = FileTags.Limits(pictureBytes: TagLimits.maxPictureBytes, textBytes: TagLimits.maxTagBlockBytes)

    static func skipReason(_ error: FileTagsError) -> SkipReason {
        switch error {
        case .unreadable(let why): .unreadable(why)
        case .corrupt(let why): .corrupt(why)
        }
    }

    /// Every field but the genre (whose reading differs by format), cleaned; the first year that reads as one.
    static func common(_ file: FileTags) -> TagSet {
        var tags = TagSet()
        tags.title = TagText.clean(file.title)
        tags.artist = TagText.clean(file.artist)
        tags.album = TagText.clean(file.album)
        tags.albumArtist = TagText.clean(file.albumArtist)
        tags.trackNumber = TagText.number(TagText.clean(file.track))
        tags.discNumber = TagText.number(TagText.clean(file.disc))
        for year in file.years {
            if let y = TagText.year(TagText.clean(year)) { tags.year = y; break }
        }
        for p in file.pictures {
            tags.offer(picture: .init(mime: TagText.imageMime(p.bytes, declared: TagText.clean(p.declaredMime)), bytes: p.bytes,
                                      isFrontCover: p.isFrontCover))
        }
        return tags
    }
}
