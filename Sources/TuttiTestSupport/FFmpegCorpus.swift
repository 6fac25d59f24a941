import Foundation

/// One short file per format FFmpeg decodes for Tutti, made at test time by
/// Debian's `ffmpeg` (no binary fixtures): a 440 Hz tone, tagged with
/// `-metadata` in Korean and accented text, and a cover where the container
/// keeps one that ffmpeg can write (MP4, AIFF's ID3; Ogg and Opus as a FLAC
/// picture comment), raw AAC's tags in an ID3v2 tag.
public struct FFmpegCorpus {
    public struct Entry: Sendable {
        /// Path under the corpus folder.
        public var file: String
        /// The encoder's arguments.
        public var args: [String]
        public var rate: Int
        public var hasCover: Bool
        /// Its AudioFormatKind's raw value.
        public var kind: String
    }

    public static let entries: [Entry] = [
        Entry(file: "AAC/aac.m4a", args: ["-c:a", "aac", "-b:a", "128k", "-movie_timescale", "44100"], rate: 44_100, hasCover: true, kind: "mp4"),
        Entry(file: "ALAC/alac.m4a", args: ["-c:a", "alac"], rate: 44_100, hasCover: true, kind: "mp4"),
        Entry(file: "ADTS/raw.aac", args: ["-c:a", "aac", "-b:a", "128k", "-write_id3v2", "1"], rate: 44_100, hasCover: false, kind: "aac"),
        Entry(file: "Vorbis/vorbis.ogg", args: ["-c:a", "libvorbis"], rate: 44_100, hasCover: true, kind: "ogg"),
        Entry(file: "Opus/opus.opus", args: ["-c:a", "libopus"], rate: 48_000, hasCover: true, kind: "opus"),
        // ffmpeg writes a picture into ASF as a video stream, not the WM/Picture that players read.
        Entry(file: "WMA/wma.wma", args: ["-c:a", "wmav2"], rate: 44_100, hasCover: false, kind: "wma"),
        Entry(file: "WavPack/wavpack.wv", args: ["-c:a", "wavpack"], rate: 44_100, hasCover: false, kind: "wavpack"),
        Entry(file: "AIFF/aiff.aiff", args: ["-c:a", "pcm_s16be", "-write_id3v2", "1"], rate: 44_100, hasCover: true, kind: "aiff"),
    ]

    /// Tags written to every file; each title ends with the entry's kind, so
    /// a search finds one file (`title(of:)`).
    public static let artist = "김민준 & Zoë"
    public static let album = "Été 앨범"
    public static func title(of entry: Entry) -> String { "서울의 밤 Déjà \(entry.file.split(separator: "/")[0])" }

    public let dir: String
    public let cover: [UInt8]

    /// Writes the corpus under `dir` (`seconds` of tone each); throws when ffmpeg fails.
    public init(dir: String, seconds: Double = 1.5) throws {
        self.dir = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try runTool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=8x8:d=1", "-frames:v", "1", dir + "/cover.png"])
        cover = [UInt8](FileManager.default.contents(atPath: dir + "/cover.png") ?? Data())
        for entry in Self.entries {
            let out = dir + "/" + entry.file
            try FileManager.default.createDirectory(atPath: (out as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var args = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(entry.rate):duration=\(seconds)"]
            let usesPictureStream = entry.hasCover && !["ogg", "opus"].contains(entry.kind)
            if usesPictureStream { args += ["-i", dir + "/cover.png", "-map", "0:a", "-map", "1", "-c:v", "copy", "-disposition:v", "attached_pic"] }
            args += ["-ac", "2"] + entry.args
            args += ["-metadata", "title=\(Self.title(of: entry))", "-metadata", "artist=\(Self.artist)", "-metadata", "album=\(Self.album)",
                     "-metadata", "album_artist=Various", "-metadata", "track=3/9", "-metadata", "disc=1/2",
                     "-metadata", "date=2020-05-01", "-metadata", "genre=Ambient"]
            if entry.hasCover && !usesPictureStream {
                args += ["-metadata", "METADATA_BLOCK_PICTURE=\(Data(Self.flacPicture(cover)).base64EncodedString())"]
            }
            try runTool(args + [out])
        }
    }

    /// A FLAC PICTURE block (front cover, PNG): what Ogg comments carry base64-encoded.
    static func flacPicture(_ png: [UInt8]) -> [UInt8] {
        func be32(_ n: Int) -> [UInt8] { [UInt8((n >> 24) & 0xff), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)] }
        let mime = Array("image/png".utf8)
        return be32(3) + be32(mime.count) + mime + be32(0) + be32(8) + be32(8) + be32(24) + be32(0) + be32(png.count) + png
    }
}
