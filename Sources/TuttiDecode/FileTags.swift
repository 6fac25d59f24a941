import CFLAC
import CMPG123
import TuttiAudio

/// What an MP3 or FLAC file says about itself: its exact length and rate,
/// its tag values as written, and its pictures. Read here, through the
/// decoders' own libmpg123 and TuttiAudio's libFLAC decoder (one owner per C library); the
/// music library cleans the values and keeps them (TuttiLibrary's Tags).
public struct FileTags: Sendable {
    public var sampleRate = 0
    /// Length in frames at `sampleRate`, exact (gapless).
    public var frames = 0
    /// Values as written, trailing NULs dropped; several values of one
    /// field are joined by NULs.
    public var title: String?, artist: String?, album: String?, albumArtist: String?, genre: String?
    public var track: String?, disc: String?
    /// Year values in the order to try them (MP3: the year field, then
    /// TDRC, TYER, TORY and TDOR frames as they come).
    public var years: [String] = []
    public var pictures: [Picture] = []
    /// ID3v1 (MP3 only), to fill what ID3v2 lacks.
    public var id3v1: ID3v1?

    public struct Picture: Sendable {
        /// The MIME type the file declares (not checked here).
        public var declaredMime: String?
        public var bytes: [UInt8]
        public var isFrontCover: Bool
    }

    /// ID3v1/1.1's fixed fields: Latin-1, padded with NULs or spaces.
    public struct ID3v1: Sendable {
        public var title: [UInt8], artist: [UInt8], album: [UInt8], year: [UInt8]
        /// ID3v1.1's track number (a zero byte then the number ends the comment).
        public var track: Int?
        public var genre: Int
    }

    /// Bounds on what is copied out of a file.
    public struct Limits: Sendable {
        /// Pictures above this are left out.
        public var pictureBytes: Int
        /// A text value, or a FLAC VORBIS_COMMENT block, above this is cut or not read.
        public var textBytes: Int
        public init(pictureBytes: Int, textBytes: Int) { self.pictureBytes = pictureBytes; self.textBytes = textBytes }
    }
}

/// Why a file's tags and length could not be read.
public enum FileTagsError: Error, Equatable, Sendable {
    /// The file could not be opened or the library could not start.
    case unreadable(String)
    /// It opened, but its audio is not what it claims (truncated, no frames).
    case corrupt(String)
}

/// MP3 through libmpg123: ID3v1 (read from the end at open), ID3v2.2/2.3/2.4
/// text frames and APIC pictures, and the length from the LAME/Info tag or
/// by counting frames.
public enum MP3FileTags {
    public static func read(path: String, fileSize: Int, limits: FileTags.Limits) -> Result<FileTags, FileTagsError> {
        let mh: MPG123Handle
        let rate: Int
        do {
            mh = try MPG123Handle()
            mh.keepPictures()
            try mh.open(path: path)
            // Reading the first frame also parses the ID3v2 tag in front of it.
            rate = try mh.format().rate
        } catch {
            switch error {
            case .cannotCreate, .cannotOpen: return .failure(.unreadable(error.description))
            case .noFormat, .notFloat: return .failure(.corrupt("no MPEG audio frames found"))
            }
        }

        var frames = mh.length
        switch lengthSource(mh, frames: frames, rate: rate, fileSize: fileSize) {
        case .header:
            break
        case .truncated:
            return .failure(.corrupt("audio ends before the length its LAME header promises (truncated?)"))
        case .scan:
            // No LAME/Info tag: count every frame. Reads the file, decodes nothing.
            guard mh.scan() else {
                return .failure(.corrupt("cannot walk MPEG frames: \(mh.lastError)"))
            }
            frames = mh.length
        }
        guard frames > 0 else { return .failure(.corrupt("no decodable audio")) }

        var tags = FileTags()
        tags.sampleRate = rate
        tags.frames = frames
        mh.withID3 { v1, v2 in
            if let v2 { id3v2(v2.pointee, into: &tags, limits: limits) }
            if let v1 { tags.id3v1 = id3v1(v1.pointee) }
        }
        return .success(tags)
    }

    private enum LengthSource { case header, scan, truncated }

    /// The LAME/Info tag gives the exact gapless length without reading
    /// the file. Without one, the frames must be counted. A constant-bitrate
    /// file clearly shorter than the length its tag claims was cut off.
    private static func lengthSource(_ mh: MPG123Handle, frames: Int, rate: Int, fileSize: Int) -> LengthSource {
        guard mh.encoderDelay != nil, frames > 0 else { return .scan }
        guard let info = mh.frameInfo else { return .scan }
        if info.isConstant, info.bitrateKbps > 0 {
            let expectedBytes = Double(frames) / Double(rate) * Double(info.bitrateKbps) * 125
            if Double(fileSize) < expectedBytes * 0.9 { return .truncated }
        }
        return .header
    }

    /// The text of an mpg123_string: `fill` bytes including the final NUL;
    /// ID3v2.4 multi-value frames have NULs inside (kept: the library joins them).
    private static func string(_ s: mpg123_string, limit: Int) -> String? {
        guard let p = s.p, s.fill > 0, s.fill <= s.size else { return nil }
        var n = min(s.fill, limit)
        return p.withMemoryRebound(to: UInt8.self, capacity: n) { bytes in
            // The final NUL (and any before it) go here, so most values need no cleaning later.
            while n > 0 && bytes[n - 1] == 0 { n -= 1 }
            return String(decoding: UnsafeBufferPointer(start: bytes, count: n), as: UTF8.self)
        }
    }

    private static func string(_ s: UnsafeMutablePointer<mpg123_string>?, limit: Int) -> String? {
        s.flatMap { string($0.pointee, limit: limit) }
    }

    /// A frame's four-character ID as one number: compared without a String per frame.
    private static func frameID(_ id: (CChar, CChar, CChar, CChar)) -> UInt32 {
        UInt32(UInt8(bitPattern: id.0)) << 24 | UInt32(UInt8(bitPattern: id.1)) << 16
            | UInt32(UInt8(bitPattern: id.2)) << 8 | UInt32(UInt8(bitPattern: id.3))
    }

    private static func frameID(_ name: String) -> UInt32 { name.utf8.reduce(0) { $0 << 8 | UInt32($1) } }
    private static let albumArtistFrame = frameID("TPE2"), trackFrame = frameID("TRCK"), discFrame = frameID("TPOS")
    private static let yearFrames = [frameID("TDRC"), frameID("TYER"), frameID("TORY"), frameID("TDOR")]

    private static func id3v2(_ v2: mpg123_id3v2, into tags: inout FileTags, limits: FileTags.Limits) {
        let limit = limits.textBytes
        tags.title = string(v2.title, limit: limit)
        tags.artist = string(v2.artist, limit: limit)
        tags.album = string(v2.album, limit: limit)
        tags.genre = string(v2.genre, limit: limit)
        if let year = string(v2.year, limit: limit) { tags.years.append(year) }
        if let texts = v2.text {
            for i in 0..<v2.texts {
                // Only the frames used are made text (TIT2, TPE1 and the like are above already).
                let field = texts[i]
                let id = frameID(field.id)
                if id == albumArtistFrame {
                    tags.albumArtist = string(field.text, limit: limit)
                } else if id == trackFrame {
                    tags.track = string(field.text, limit: limit)
                } else if id == discFrame {
                    tags.disc = string(field.text, limit: limit)
                } else if yearFrames.contains(id), let year = string(field.text, limit: limit) {
                    tags.years.append(year)
                }
            }
        }
        if let pictures = v2.picture {
            for i in 0..<v2.pictures {
                let pic = pictures[i]
                guard let data = pic.data, pic.size > 0, pic.size <= limits.pictureBytes else { continue }
                let mime = string(pic.mime_type, limit: limit)
                if mime == "-->" { continue } // a link to an image elsewhere, not the image
                tags.pictures.append(.init(declaredMime: mime, bytes: Array(UnsafeBufferPointer(start: data, count: pic.size)),
                                           isFrontCover: pic.type == CChar(mpg123_id3_pic_front_cover.rawValue)))
            }
        }
    }

    private static func id3v1(_ v1: mpg123_id3v1) -> FileTags.ID3v1 {
        func field<T>(_ tuple: T) -> [UInt8] { withUnsafeBytes(of: tuple) { Array($0.prefix { $0 != 0 }) } }
        let track: Int? = withUnsafeBytes(of: v1.comment) { c in c[28] == 0 && c[29] != 0 ? Int(c[29]) : nil }
        return .init(title: field(v1.title), artist: field(v1.artist), album: field(v1.album), year: field(v1.year),
                     track: track, genre: Int(v1.genre))
    }
}

/// FLAC through libFLAC's stream decoder, in one open: STREAMINFO (rate,
/// total samples), VORBIS_COMMENT and PICTURE blocks from the metadata
/// callback, then a seek to the last sample to prove the audio the header
/// promises is really there (a truncated file fails the seek). Files whose
/// STREAMINFO has no length are decoded once to count samples.
public enum FLACFileTags {
    private final class Context {
        var tags = FileTags()
        let limits: FileTags.Limits
        var totalSamples: UInt64 = 0
        var counted: UInt64 = 0
        var streamError: String?
        init(limits: FileTags.Limits) { self.limits = limits }
    }

    public static func read(path: String, limits: FileTags.Limits) -> Result<FileTags, FileTagsError> {
        let decoder: FLACStreamDecoder
        do { decoder = try FLACStreamDecoder() } catch { return .failure(.unreadable(error.description)) }
        decoder.skipMD5Check()
        decoder.respond(to: FLAC__METADATA_TYPE_VORBIS_COMMENT)
        decoder.respond(to: FLAC__METADATA_TYPE_PICTURE)

        let context = Context(limits: limits)
        let client = Unmanaged.passUnretained(context).toOpaque()
        do {
            try decoder.open(path: path, write: { _, frame, _, client in
                guard let frame, let client else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
                Unmanaged<Context>.fromOpaque(client).takeUnretainedValue().counted += UInt64(frame.pointee.header.blocksize)
                return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
            }, metadata: { _, block, client in
                guard let block, let client else { return }
                FLACFileTags.metadata(block.pointee, into: Unmanaged<Context>.fromOpaque(client).takeUnretainedValue())
            }, error: { _, status, client in
                guard let client else { return }
                let context = Unmanaged<Context>.fromOpaque(client).takeUnretainedValue()
                if context.streamError == nil { context.streamError = FLACFileTags.describe(status) }
            }, client: client)
        } catch {
            return .failure(.unreadable(error.description))
        }

        // The metadata callback runs inside these calls (and the context stays alive across them).
        let metadataOK = withExtendedLifetime(context) { decoder.processMetadata() }
        guard context.tags.sampleRate > 0 else {
            return .failure(.corrupt(context.streamError.map { "no FLAC stream: \($0)" } ?? "no FLAC STREAMINFO block"))
        }
        guard metadataOK else { return .failure(.corrupt("metadata ends early (truncated?)")) }
        if context.totalSamples > 0 {
            let found = withExtendedLifetime(context) { decoder.seek(toSample: context.totalSamples - 1) }
            guard found else {
                return .failure(.corrupt("audio ends before the \(context.totalSamples) samples STREAMINFO promises (truncated?)"))
            }
            context.tags.frames = Int(context.totalSamples)
        } else {
            let ok = withExtendedLifetime(context) { decoder.processToEnd() }
            guard ok, context.counted > 0 else {
                return .failure(.corrupt(context.streamError ?? "no decodable audio frames"))
            }
            context.tags.frames = Int(context.counted)
        }
        return .success(context.tags)
    }

    private static func describe(_ status: FLAC__StreamDecoderErrorStatus) -> String {
        switch status {
        case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC: "lost sync"
        case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER: "bad frame header"
        case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH: "frame CRC mismatch"
        default: "unparseable stream (status \(status.rawValue))"
        }
    }

    private static func metadata(_ block: FLAC__StreamMetadata, into context: Context) {
        switch block.type {
        case FLAC__METADATA_TYPE_STREAMINFO:
            context.tags.sampleRate = Int(block.data.stream_info.sample_rate)
            context.totalSamples = block.data.stream_info.total_samples
        case FLAC__METADATA_TYPE_VORBIS_COMMENT:
            let vc = block.data.vorbis_comment
            guard let comments = vc.comments, block.length <= UInt32(clamping: context.limits.textBytes) else { return }
            var values: [String: [String]] = [:]
            for i in 0..<Int(vc.num_comments) {
                let c = comments[i]
                guard let entry = c.entry, c.length > 0 else { continue }
                let text = String(decoding: UnsafeBufferPointer(start: entry, count: Int(c.length)), as: UTF8.self)
                guard let eq = text.firstIndex(of: "=") else { continue }
                values[text[..<eq].uppercased(), default: []].append(String(text[text.index(after: eq)...]))
            }
            // Several values of one field (two ARTIST comments) are joined by NULs; the first key present counts.
            func value(_ keys: String...) -> String? {
                for key in keys { if let v = values[key] { return v.joined(separator: "\0") } }
                return nil
            }
            context.tags.title = value("TITLE")
            context.tags.artist = value("ARTIST")
            context.tags.album = value("ALBUM")
            context.tags.albumArtist = value("ALBUMARTIST", "ALBUM ARTIST", "ALBUM_ARTIST")
            context.tags.genre = value("GENRE")
            context.tags.track = value("TRACKNUMBER")
            context.tags.disc = value("DISCNUMBER")
            context.tags.years = value("DATE", "YEAR", "ORIGINALDATE").map { [$0] } ?? []
        case FLAC__METADATA_TYPE_PICTURE:
            let p = block.data.picture
            guard let data = p.data, p.data_length > 0, Int(p.data_length) <= context.limits.pictureBytes else { return }
            let mime = p.mime_type.map { String(cString: $0) }
            if mime == "-->" { return } // a URL, not an image
            context.tags.pictures.append(.init(declaredMime: mime, bytes: Array(UnsafeBufferPointer(start: data, count: Int(p.data_length))),
                                               isFrontCover: p.type == FLAC__STREAM_METADATA_PICTURE_TYPE_FRONT_COVER))
        default:
            break
        }
    }
}
