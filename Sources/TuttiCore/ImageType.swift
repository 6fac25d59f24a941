/// The image formats Tutti serves as cover art, decided from the bytes
/// alone. A tag's declared type is never trusted: a cover declared
/// `image/svg+xml` (or `text/html`) would be a page on the web app's origin,
/// whose script could read the login token a phone keeps.
public enum ImageType: String, Sendable, CaseIterable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case gif = "image/gif"
    case webp = "image/webp"

    /// The MIME type to send.
    public var mime: String { rawValue }

    /// The format the first bytes say, or nil for anything else (SVG, HTML,
    /// BMP, text, a truncated header).
    public static func sniff<C: Collection>(_ bytes: C) -> ImageType? where C.Element == UInt8 {
        let head = Array(bytes.prefix(12))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.starts(with: Array("GIF87a".utf8)) || head.starts(with: Array("GIF89a".utf8)) { return .gif }
        if head.count == 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) { return .webp }
        return nil
    }
}
