import CFFmpeg
import TuttiCore

/// What a file FFmpeg reads says about itself (AAC/ALAC in MP4, Ogg
/// Vorbis, Opus, WMA, WavPack, APE, AIFF, DSF/DFF): its length and rate as
/// `FFmpegDecoder` will decode them, its tags and pictures. Tags come from
/// the container's metadata and then the audio stream's (Ogg keeps its
/// comments on the stream), under the first name of each alias list found
/// (WavPack and APE use APEv2's names, WMA its "WM/" ones, MP4 its atoms as
/// libavformat names them). Pictures are libavformat's attached pictures
/// (MP4 `covr`, ID3 and APE covers, FLAC-style pictures in Ogg comments).
public enum FFmpegFileTags {
    enum Field: Sendable { case title, artist, album, albumArtist, genre, track, disc }

    /// Tag names by field, in the order tried; libavformat compares them ignoring case.
    static let aliases: [(field: Field, keys: [String])] = [
        (.title, ["title", "WM/Title"]),
        (.artist, ["artist", "author", "WM/Author"]),
        (.album, ["album", "WM/AlbumTitle"]),
        (.albumArtist, ["album_artist", "albumartist", "album artist", "WM/AlbumArtist", "aART"]),
        (.genre, ["genre", "WM/Genre"]),
        (.track, ["track", "tracknumber", "WM/TrackNumber"]),
        (.disc, ["disc", "discnumber", "disk", "WM/PartOfSet"]),
    ]
    static let yearKeys = ["date", "year", "WM/Year", "originaldate", "TDRC", "TYER"]

    public static func read(path: String, limits: FileTags.Limits) -> Result<FileTags, FileTagsError> {
        let input: FFmpegInput
        do { input = try FFmpegInput(path: path, analyse: false) } catch {
            switch error {
            case .undecodable(_, let reason): return .failure(.corrupt(reason))
            case .cannotOpen(_, let reason), .codec(_, let reason): return .failure(.unreadable(reason))
            default: return .failure(.unreadable(error.description))
            }
        }
        var audio: Int?
        for i in 0..<input.streamCount where input.stream(i).pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO {
            audio = i
            break
        }
        guard let audio, let par = input.stream(audio).pointee.codecpar, par.pointee.sample_rate > 0 else {
            return .failure(.corrupt("no audio stream"))
        }
        var tags = FileTags()
        tags.sampleRate = Int(par.pointee.sample_rate)
        let containerName = input.context.pointee.iformat?.pointee.name.map { String(cString: $0) } ?? ""
        let stream = input.stream(audio)
        let end = FFmpegGapless.iTunesEnd(input.tag(["iTunSMPB"], audioStream: audio))
            ?? (containerName.hasPrefix("mov") ? FFmpegGapless.length(input: input, stream: stream, rate: tags.sampleRate) : nil)
        guard let frames = FFmpegGapless.length(input: input, stream: stream, rate: tags.sampleRate, end: end), frames > 0 else {
            return .failure(.corrupt("no length in its headers"))
        }
        tags.frames = frames
        if [AV_CODEC_ID_WMAV1, AV_CODEC_ID_WMAV2, AV_CODEC_ID_WMAPRO].contains(par.pointee.codec_id) {
            // ASF declares a play time the decoder does not produce (its delay, millisecond
            // rounding): counted by decoding, which WMA does hundreds of times faster than real time.
            guard let counted = try? FFmpegDecoder(path: path).decodedLength() else { return .failure(.corrupt("its WMA audio does not decode")) }
            tags.frames = counted
        }
        for (field, keys) in aliases {
            let value = input.tag(keys, audioStream: audio).map { PlainText.truncated($0, maxBytes: limits.textBytes) }
            switch field {
            case .title: tags.title = value
            case .artist: tags.artist = value
            case .album: tags.album = value
            case .albumArtist: tags.albumArtist = value
            case .genre: tags.genre = value
            case .track: tags.track = value
            case .disc: tags.disc = value
            }
        }
        for key in yearKeys { if let y = input.tag([key], audioStream: audio) { tags.years.append(y) } }
        for i in 0..<input.streamCount {
            let s = input.stream(i).pointee
            guard s.disposition & AV_DISPOSITION_ATTACHED_PIC != 0, let data = s.attached_pic.data, s.attached_pic.size > 0,
                  Int(s.attached_pic.size) <= limits.pictureBytes else { continue }
            let mime: String? = switch s.codecpar.pointee.codec_id {
            case AV_CODEC_ID_MJPEG: "image/jpeg"
            case AV_CODEC_ID_PNG: "image/png"
            case AV_CODEC_ID_GIF: "image/gif"
            case AV_CODEC_ID_BMP: "image/bmp"
            case AV_CODEC_ID_WEBP: "image/webp"
            default: nil
            }
            // libavformat names the picture type in the stream's "comment" (ID3, FLAC pictures); an MP4 cover is the front.
            let kind = s.metadata.flatMap { input.ff.dict_get($0, "comment", nil, 0) }.flatMap { $0.pointee.value.map { String(cString: $0) } }
            tags.pictures.append(.init(declaredMime: mime, bytes: Array(UnsafeBufferPointer(start: data, count: Int(s.attached_pic.size))),
                                       isFrontCover: kind == nil || kind == "Cover (front)"))
        }
        return .success(tags)
    }
}
