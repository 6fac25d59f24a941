import CMPG123

/// MP3 tags and exact length through libmpg123: ID3v1 (read from the end
/// at open), ID3v2.2/2.3/2.4 text frames and APIC pictures.
enum MP3Tags {
    static func read(path: String, fileSize: Int) -> Result<FileMetadata, SkipReason> {
        var err: Int32 = 0
        guard let mh = mpg123_new(nil, &err) else {
            return .failure(.unreadable("libmpg123: \(String(cString: mpg123_plain_strerror(err)))"))
        }
        defer { mpg123_delete(mh) }
        tutti_mpg123_configure(mh) // gapless, quiet
        mpg123_param2(mh, Int32(MPG123_ADD_FLAGS.rawValue), Int(MPG123_PICTURE.rawValue), 0)
        guard tutti_mpg123_open(mh, path) == MPG123_OK.rawValue else {
            return .failure(.unreadable(String(cString: mpg123_strerror(mh))))
        }
        defer { mpg123_close(mh) }
        // Reading the first frame also parses the ID3v2 tag in front of it.
        var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
        guard mpg123_getformat(mh, &rate, &channels, &encoding) == MPG123_OK.rawValue, rate > 0 else {
            return .failure(.corrupt("no MPEG audio frames found"))
        }

        var frames = Int(tutti_mpg123_length(mh))
        switch lengthSource(mh, frames: frames, rate: rate, fileSize: fileSize) {
        case .header:
            break
        case .truncated:
            return .failure(.corrupt("audio ends before the length its LAME header promises (truncated?)"))
        case .scan:
            // No LAME/Info tag: count every frame. Reads the file, decodes nothing.
            guard mpg123_scan(mh) == MPG123_OK.rawValue else {
                return .failure(.corrupt("cannot walk MPEG frames: \(String(cString: mpg123_strerror(mh)))"))
            }
            frames = Int(tutti_mpg123_length(mh))
        }
        guard frames > 0 else { return .failure(.corrupt("no decodable audio")) }

        var tags = TagSet()
        var v1: UnsafeMutablePointer<mpg123_id3v1>?
        var v2: UnsafeMutablePointer<mpg123_id3v2>?
        if mpg123_meta_check(mh) & MPG123_ID3 != 0, mpg123_id3(mh, &v1, &v2) == MPG123_OK.rawValue {
            if let v2 { tags = id3v2(v2.pointee) }
            if let v1 { tags.fillGaps(from: id3v1(v1.pointee)) }
        }
        return .success(FileMetadata(format: .mp3, tags: tags, durationFrames: frames, sampleRate: rate))
    }

    private enum LengthSource { case header, scan, truncated }

    /// The LAME/Info tag gives the exact gapless length without reading
    /// the file. Without one, the frames must be counted. A constant-bitrate
    /// file clearly shorter than the length its tag claims was cut off.
    private static func lengthSource(_ mh: OpaquePointer, frames: Int, rate: Int, fileSize: Int) -> LengthSource {
        var delay = -1
        var ignored = 0.0
        mpg123_getstate2(mh, Int32(MPG123_ENC_DELAY.rawValue), &delay, &ignored)
        guard delay >= 0, frames > 0 else { return .scan }
        var info = mpg123_frameinfo2()
        guard mpg123_info2(mh, &info) == MPG123_OK.rawValue else { return .scan }
        if info.vbr == Int32(MPG123_CBR.rawValue), info.bitrate > 0 {
            let expectedBytes = Double(frames) / Double(rate) * Double(info.bitrate) * 125
            if Double(fileSize) < expectedBytes * 0.9 { return .truncated }
        }
        return .header
    }

    /// The text of an mpg123_string: `fill` bytes including the final NUL;
    /// ID3v2.4 multi-value frames have NULs inside (TagText.clean joins them).
    private static func string(_ s: UnsafeMutablePointer<mpg123_string>?) -> String? {
        guard let s, let p = s.pointee.p, s.pointee.fill > 0, s.pointee.fill <= s.pointee.size else { return nil }
        var n = min(s.pointee.fill, TagLimits.maxTagBlockBytes)
        return TagText.clean(p.withMemoryRebound(to: UInt8.self, capacity: n) { bytes in
            // The final NUL (and any before it) go here, so `clean` finds most values with nothing to do.
            while n > 0 && bytes[n - 1] == 0 { n -= 1 }
            return String(decoding: UnsafeBufferPointer(start: bytes, count: n), as: UTF8.self)
        })
    }

    private static func string(_ s: mpg123_string) -> String? {
        var copy = s
        return withUnsafeMutablePointer(to: &copy) { string($0) }
    }

    /// A frame's four-character ID as one number: compared without a String per frame.
    private static func frameID(_ id: (CChar, CChar, CChar, CChar)) -> UInt32 {
        UInt32(UInt8(bitPattern: id.0)) << 24 | UInt32(UInt8(bitPattern: id.1)) << 16
            | UInt32(UInt8(bitPattern: id.2)) << 8 | UInt32(UInt8(bitPattern: id.3))
    }

    private static func frameID(_ name: String) -> UInt32 { name.utf8.reduce(0) { $0 << 8 | UInt32($1) } }
    private static let albumArtistFrame = frameID("TPE2"), trackFrame = frameID("TRCK"), discFrame = frameID("TPOS")
    private static let yearFrames = [frameID("TDRC"), frameID("TYER"), frameID("TORY"), frameID("TDOR")]

    static func id3v2(_ v2: mpg123_id3v2) -> TagSet {
        var tags = TagSet()
        tags.title = string(v2.title)
        tags.artist = string(v2.artist)
        tags.album = string(v2.album)
        tags.genre = TagText.genre(string(v2.genre))
        tags.year = TagText.year(string(v2.year))
        if let texts = v2.text {
            for i in 0..<v2.texts {
                // Only the frames used here are made text (TIT2, TPE1 and the like are above already).
                let field = texts[i]
                let id = frameID(field.id)
                if id == albumArtistFrame {
                    tags.albumArtist = string(field.text)
                } else if id == trackFrame {
                    tags.trackNumber = TagText.number(string(field.text))
                } else if id == discFrame {
                    tags.discNumber = TagText.number(string(field.text))
                } else if yearFrames.contains(id), tags.year == nil {
                    tags.year = TagText.year(string(field.text))
                }
            }
        }
        if let pictures = v2.picture {
            for i in 0..<v2.pictures {
                let pic = pictures[i]
                guard let data = pic.data, pic.size > 0, pic.size <= TagLimits.maxPictureBytes else { continue }
                let mime = string(pic.mime_type)
                if mime == "-->" { continue } // a link to an image elsewhere, not the image
                let bytes = Array(UnsafeBufferPointer(start: data, count: pic.size))
                tags.offer(picture: .init(mime: TagText.imageMime(bytes, declared: mime), bytes: bytes,
                                          isFrontCover: pic.type == CChar(mpg123_id3_pic_front_cover.rawValue)))
            }
        }
        return tags
    }

    /// ID3v1/1.1: fixed Latin-1 fields padded with NULs or spaces.
    static func id3v1(_ v1: mpg123_id3v1) -> TagSet {
        func field<T>(_ tuple: T) -> String? {
            withUnsafeBytes(of: tuple) { raw in
                TagText.clean(TagText.latin1(raw.prefix { $0 != 0 }))
            }
        }
        var tags = TagSet()
        tags.title = field(v1.title)
        tags.artist = field(v1.artist)
        tags.album = field(v1.album)
        tags.year = TagText.year(field(v1.year))
        withUnsafeBytes(of: v1.comment) { c in
            // ID3v1.1: a zero byte then the track number ends the comment.
            if c[28] == 0 && c[29] != 0 { tags.trackNumber = Int(c[29]) }
        }
        tags.genre = TagText.id3v1Genre(Int(v1.genre))
        return tags
    }
}
