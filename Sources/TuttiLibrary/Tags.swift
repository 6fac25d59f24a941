/// Tags read from one file, already cleaned: trimmed, empty strings as nil.
struct TagSet: Equatable {
    var title: String?
    var artist: String?
    var album: String?
    var albumArtist: String?
    var genre: String?
    var trackNumber: Int?
    var discNumber: Int?
    var year: Int?
    var picture: Picture?

    struct Picture: Equatable {
        var mime: String
        var bytes: [UInt8]
        var isFrontCover: Bool
    }

    /// Keeps a front cover over any other picture, and the first of each kind.
    mutating func offer(picture: Picture) {
        guard !picture.bytes.isEmpty, picture.bytes.count <= TagLimits.maxPictureBytes else { return }
        if let current = self.picture, current.isFrontCover || !picture.isFrontCover { return }
        self.picture = picture
    }

    /// Fills fields this set lacks from `other` (ID3v2 over ID3v1).
    mutating func fillGaps(from other: TagSet) {
        title = title ?? other.title
        artist = artist ?? other.artist
        album = album ?? other.album
        albumArtist = albumArtist ?? other.albumArtist
        genre = genre ?? other.genre
        trackNumber = trackNumber ?? other.trackNumber
        discNumber = discNumber ?? other.discNumber
        year = year ?? other.year
        if picture == nil { picture = other.picture }
    }
}

/// What reading one file produced.
struct FileMetadata {
    var format: AudioFormatKind
    var tags: TagSet
    var durationFrames: Int
    var sampleRate: Int
}

/// Bounds on everything read from a file, so a hostile or broken tag cannot
/// make the scanner allocate without limit.
enum TagLimits {
    /// Pictures above this are ignored (the track is kept, without cover).
    static let maxPictureBytes = 16 << 20
    /// Longer text values are cut.
    static let maxTextCharacters = 4_096
    /// A FLAC VORBIS_COMMENT or a WAV LIST chunk above this is not read.
    static let maxTagBlockBytes = 1 << 20
}

enum TagText {
    /// Trims whitespace and NULs, cuts very long values, and maps "" to nil.
    static func clean(_ s: String?) -> String? {
        guard let s else { return nil }
        // Most values have nothing to trim, no NUL and fewer bytes (so fewer
        // characters) than the limit: kept as they are, without walking
        // their scalars and characters (the path below was a tenth of a cold
        // scan's CPU, two thirds of it counting characters).
        if let first = s.unicodeScalars.first, let last = s.unicodeScalars.last,
           !first.properties.isWhitespace, !last.properties.isWhitespace, first != "\0", last != "\0",
           s.utf8.count <= TagLimits.maxTextCharacters, !s.utf8.contains(0) {
            return s
        }
        let trimmed = s.unicodeScalars.drop { $0.properties.isWhitespace || $0 == "\0" }
        var scalars = String.UnicodeScalarView(trimmed)
        while let last = scalars.last, last.properties.isWhitespace || last == "\0" { scalars.removeLast() }
        // ID3v2.4 separates multiple values with NUL; show them as a list.
        var out = String(scalars).replacingNULs()
        if out.count > TagLimits.maxTextCharacters { out = String(out.prefix(TagLimits.maxTextCharacters)) }
        return out.isEmpty ? nil : out
    }

    /// The leading number of "3", "03/12" or " 3 of 12"; nil if none or out of range.
    static func number(_ s: String?) -> Int? {
        guard let s else { return nil }
        let digits = s.drop { $0 == " " }.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 6, let n = Int(digits), n > 0 else { return nil }
        return n
    }

    /// The year of "2001", "2001-05-17" or "17 May 2001": the first run of four digits.
    static func year(_ s: String?) -> Int? {
        guard let s else { return nil }
        var run = ""
        for c in s {
            if c.isASCII && c.isNumber {
                run.append(c)
                if run.count == 4, let y = Int(run), y >= 1 { return y }
            } else {
                run = ""
            }
        }
        return nil
    }

    /// ISO-8859-1, which ID3v1 and RIFF INFO nominally use.
    static func latin1(_ bytes: some Collection<UInt8>) -> String {
        String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    /// UTF-8 when the bytes are valid UTF-8, else Latin-1 (old WAV taggers).
    static func utf8OrLatin1(_ bytes: [UInt8]) -> String {
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        return latin1(bytes)
    }

    /// A title and track number from a file name when a file has no tags:
    /// "03 - Some_Song.mp3" → ("Some Song", 3).
    static func fromFileName(_ path: String) -> (title: String, trackNumber: Int?) {
        var name = String(path.split(separator: "/").last ?? Substring(path))
        if let dot = name.lastIndex(of: "."), dot != name.startIndex { name = String(name[..<dot]) }
        name = name.replacingOccurrences(of: "_", with: " ")
        var track: Int?
        // A leading 1–3 digit number followed by a separator is a track number.
        let digits = name.prefix { $0.isASCII && $0.isNumber }
        if (1...3).contains(digits.count) {
            let rest = name.dropFirst(digits.count)
            let separators: Set<Character> = [" ", "-", ".", ")", "_"]
            if let first = rest.first, separators.contains(first) {
                let title = rest.drop { separators.contains($0) }
                if !title.isEmpty {
                    track = Int(digits)
                    name = String(title)
                }
            }
        }
        let title = clean(name) ?? "Untitled"
        return (title, track)
    }

    /// The MIME type from the image's first bytes; the declared type only
    /// when the bytes are not a format we know (taggers often write "image/jpg").
    static func imageMime(_ bytes: [UInt8], declared: String?) -> String {
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if bytes.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) { return "image/webp" }
        if bytes.starts(with: Array("BM".utf8)) { return "image/bmp" }
        let d = (declared ?? "").lowercased()
        if d == "image/jpg" { return "image/jpeg" }
        return d.hasPrefix("image/") ? d : "application/octet-stream"
    }

    /// An ID3 genre: "(17)", "17", "(17)Rock" and "Rock" all name Rock;
    /// ID3v2.4 lists several separated by NUL (cleaned to "; ").
    static func genre(_ raw: String?) -> String? {
        guard let raw = clean(raw) else { return nil }
        var s = Substring(raw)
        if s.first == "(" {
            let inner = s.dropFirst().prefix { $0 != ")" }
            let after = s.dropFirst(inner.count + 2)
            if !after.isEmpty, s.dropFirst(inner.count + 1).first == ")" { return clean(String(after)) }
            s = inner
        }
        if s == "RX" { return "Remix" }
        if s == "CR" { return "Cover" }
        if s.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(s) { return id3v1Genre(n) }
        return raw
    }

    static func id3v1Genre(_ index: Int) -> String? {
        index >= 0 && index < genres.count ? genres[index] : nil
    }

    /// The ID3v1 genre list with the Winamp extensions (0–191).
    static let genres: [String] = [
        "Blues", "Classic Rock", "Country", "Dance", "Disco", "Funk", "Grunge", "Hip-Hop", "Jazz", "Metal",
        "New Age", "Oldies", "Other", "Pop", "R&B", "Rap", "Reggae", "Rock", "Techno", "Industrial",
        "Alternative", "Ska", "Death Metal", "Pranks", "Soundtrack", "Euro-Techno", "Ambient", "Trip-Hop", "Vocal", "Jazz+Funk",
        "Fusion", "Trance", "Classical", "Instrumental", "Acid", "House", "Game", "Sound Clip", "Gospel", "Noise",
        "Alternative Rock", "Bass", "Soul", "Punk", "Space", "Meditative", "Instrumental Pop", "Instrumental Rock", "Ethnic", "Gothic",
        "Darkwave", "Techno-Industrial", "Electronic", "Pop-Folk", "Eurodance", "Dream", "Southern Rock", "Comedy", "Cult", "Gangsta",
        "Top 40", "Christian Rap", "Pop/Funk", "Jungle", "Native US", "Cabaret", "New Wave", "Psychedelic", "Rave", "Showtunes",
        "Trailer", "Lo-Fi", "Tribal", "Acid Punk", "Acid Jazz", "Polka", "Retro", "Musical", "Rock & Roll", "Hard Rock",
        "Folk", "Folk-Rock", "National Folk", "Swing", "Fast Fusion", "Bebop", "Latin", "Revival", "Celtic", "Bluegrass",
        "Avantgarde", "Gothic Rock", "Progressive Rock", "Psychedelic Rock", "Symphonic Rock", "Slow Rock", "Big Band", "Chorus", "Easy Listening", "Acoustic",
        "Humour", "Speech", "Chanson", "Opera", "Chamber Music", "Sonata", "Symphony", "Booty Bass", "Primus", "Porn Groove",
        "Satire", "Slow Jam", "Club", "Tango", "Samba", "Folklore", "Ballad", "Power Ballad", "Rhythmic Soul", "Freestyle",
        "Duet", "Punk Rock", "Drum Solo", "A Cappella", "Euro-House", "Dance Hall", "Goa", "Drum & Bass", "Club-House", "Hardcore Techno",
        "Terror", "Indie", "BritPop", "Negerpunk", "Polsk Punk", "Beat", "Christian Gangsta Rap", "Heavy Metal", "Black Metal", "Crossover",
        "Contemporary Christian", "Christian Rock", "Merengue", "Salsa", "Thrash Metal", "Anime", "Jpop", "Synthpop", "Abstract", "Art Rock",
        "Baroque", "Bhangra", "Big Beat", "Breakbeat", "Chillout", "Downtempo", "Dub", "EBM", "Eclectic", "Electro",
        "Electroclash", "Emo", "Experimental", "Garage", "Global", "IDM", "Illbient", "Industro-Goth", "Jam Band", "Krautrock",
        "Leftfield", "Lounge", "Math Rock", "New Romantic", "Nu-Breakz", "Post-Punk", "Post-Rock", "Psytrance", "Shoegaze", "Space Rock",
        "Trop Rock", "World Music", "Neoclassical", "Audiobook", "Audio Theatre", "Neue Deutsche Welle", "Podcast", "Indie Rock", "G-Funk", "Dubstep",
        "Garage Rock", "Psybient",
    ]
}

extension String {
    /// "a\0b" → "a; b": ID3v2.4 and multi-valued tags.
    fileprivate func replacingNULs() -> String {
        guard contains("\0") else { return self }
        return split(separator: "\0", omittingEmptySubsequences: true).joined(separator: "; ")
    }
}
