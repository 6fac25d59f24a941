/// Writes ID3v2.3 or ID3v2.4 tags: for generated test and benchmark
/// files (copies of one MP3 with different tags), not for editing users'
/// files. v2.3 text is ISO-8859-1 when it fits, else UTF-16 with a BOM;
/// v2.4 text is UTF-8 and frame sizes are sync-safe, as the versions require.
public enum ID3v2Writer {
    public struct Frame: Sendable {
        public var id: String
        public var text: String?
        public var picture: (mime: String, bytes: [UInt8])?

        public static func text(_ id: String, _ value: String) -> Frame { Frame(id: id, text: value, picture: nil) }
        public static func frontCover(mime: String, bytes: [UInt8]) -> Frame { Frame(id: "APIC", text: nil, picture: (mime, bytes)) }
    }

    /// A complete tag (header and frames) to put in front of MPEG audio.
    public static func tag(version: Int, frames: [Frame]) -> [UInt8] {
        precondition(version == 3 || version == 4, "ID3v2.\(version) is not written")
        var body: [UInt8] = []
        for frame in frames {
            var content: [UInt8] = []
            if let text = frame.text {
                content = encode(text, version: version)
            } else if let picture = frame.picture {
                // encoding, MIME (Latin-1, NUL), picture type 3 (front cover), empty description, data
                content = [0] + Array(picture.mime.utf8) + [0, 3, 0] + picture.bytes
            }
            body += Array(frame.id.utf8.prefix(4))
            body += version == 4 ? syncsafe(content.count) : bigEndian(content.count)
            body += [0, 0] // flags
            body += content
        }
        return Array("ID3".utf8) + [UInt8(version), 0, 0] + syncsafe(body.count) + body
    }

    private static func encode(_ text: String, version: Int) -> [UInt8] {
        if version == 4 { return [3] + Array(text.utf8) }
        if text.unicodeScalars.allSatisfy({ $0.value <= 0xFF }) { return [0] + text.unicodeScalars.map { UInt8($0.value) } }
        var out: [UInt8] = [1, 0xFF, 0xFE]
        for unit in text.utf16 { out += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        return out
    }

    private static func syncsafe(_ n: Int) -> [UInt8] {
        [UInt8((n >> 21) & 0x7F), UInt8((n >> 14) & 0x7F), UInt8((n >> 7) & 0x7F), UInt8(n & 0x7F)]
    }

    private static func bigEndian(_ n: Int) -> [UInt8] {
        [UInt8((n >> 24) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
    }
}
