/// The ID3 tag at the start of an HLS packed-audio segment (RFC 8216
/// 3.4: AAC, MP3 or AC-3 segments each begin with one, carrying the
/// timestamp and, at many stations, the song): its title and artist, and
/// how many bytes it takes (the audio follows). Pure and bounded: a tag
/// larger than the segment or than `maxBytes` is skipped whole, unread.
public enum HLSTimedMetadata {
    public static let maxBytes = 256 * 1_024

    public struct Tag: Equatable, Sendable {
        /// Bytes the tag takes at the segment's start (header, frames, footer).
        public var length: Int
        public var title: String?
        public var artist: String?

        public init(length: Int, title: String? = nil, artist: String? = nil) {
            self.length = length
            self.title = title
            self.artist = artist
        }

        /// "Artist - Title", as ICY titles read; the title alone without an artist.
        public var streamTitle: String? {
            guard let title else { return artist }
            return artist.map { "\($0) - \(title)" } ?? title
        }
    }

    /// The tag at the start of `bytes`, nil when they do not start with one.
    public static func read(_ bytes: ArraySlice<UInt8>) -> Tag? {
        let b = Array(bytes.prefix(10))
        guard b.count == 10, b[0] == 0x49, b[1] == 0x44, b[2] == 0x33, b[3] == 3 || b[3] == 4,
              b[6] & 0x80 == 0, b[7] & 0x80 == 0, b[8] & 0x80 == 0, b[9] & 0x80 == 0 else { return nil }
        let version = b[3], flags = b[5]
        let size = Int(b[6]) << 21 | Int(b[7]) << 14 | Int(b[8]) << 7 | Int(b[9])
        var tag = Tag(length: 10 + size + (flags & 0x10 != 0 ? 10 : 0))
        guard size <= maxBytes, bytes.count >= 10 + size else { return tag }
        let body = Array(bytes.dropFirst(10).prefix(size))
        var i = 0
        if flags & 0x40 != 0, body.count >= 4 { // an extended header: skipped
            let n = version == 4 ? (Int(body[0]) << 21 | Int(body[1]) << 14 | Int(body[2]) << 7 | Int(body[3]))
                : (Int(body[0]) << 24 | Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3])) + 4
            i = n
        }
        while i + 10 <= body.count, body[i] != 0 {
            let id = String(decoding: body[i..<(i + 4)], as: UTF8.self)
            let n = version == 4 ? (Int(body[i + 4] & 0x7F) << 21 | Int(body[i + 5] & 0x7F) << 14 | Int(body[i + 6] & 0x7F) << 7 | Int(body[i + 7] & 0x7F))
                : (Int(body[i + 4]) << 24 | Int(body[i + 5]) << 16 | Int(body[i + 6]) << 8 | Int(body[i + 7]))
            let start = i + 10
            guard n >= 0, start + n <= body.count else { break }
            if id == "TIT2" { tag.title = text(body[start..<(start + n)]) }
            if id == "TPE1" { tag.artist = text(body[start..<(start + n)]) }
            i = start + n
        }
        return tag
    }

    /// A text frame's first value: its encoding byte, then Latin-1, UTF-16 (with a BOM), UTF-16BE or UTF-8.
    static func text(_ frame: ArraySlice<UInt8>) -> String? {
        guard let encoding = frame.first else { return nil }
        var data = Array(frame.dropFirst().prefix(4_096))
        let value: String
        switch encoding {
        case 0: value = String(String.UnicodeScalarView(data.prefix { $0 != 0 }.map { Unicode.Scalar($0) }))
        case 1, 2:
            var bigEndian = encoding == 2
            if data.count >= 2, encoding == 1 {
                bigEndian = !(data[0] == 0xFF && data[1] == 0xFE)
                if (data[0] == 0xFF && data[1] == 0xFE) || (data[0] == 0xFE && data[1] == 0xFF) { data.removeFirst(2) }
            }
            var units: [UInt16] = []
            var j = 0
            while j + 1 < data.count {
                let u = bigEndian ? UInt16(data[j]) << 8 | UInt16(data[j + 1]) : UInt16(data[j + 1]) << 8 | UInt16(data[j])
                if u == 0 { break }
                units.append(u)
                j += 2
            }
            value = String(decoding: units, as: UTF16.self)
        default: value = String(decoding: data.prefix { $0 != 0 }, as: UTF8.self)
        }
        let trimmed = FeedBuilder.trimmed(value)
        return trimmed.isEmpty ? nil : trimmed
    }
}
