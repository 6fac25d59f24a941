import Glibc
import TuttiCore

/// WAV: length from the header (`WAVParser`), tags from a RIFF `LIST`
/// chunk of type `INFO` wherever it sits (often after the samples).
enum WAVTags {
    static func read(fd: Int32, fileSize: Int) -> Result<FileMetadata, SkipReason> {
        let header: [UInt8]
        do { header = try preadAll(fd, offset: 0, count: min(fileSize, 65_536)) } catch { return .failure(.unreadable(error)) }
        let format: WAVFormat
        do { format = try WAVParser.parse(header: header, fileSize: fileSize) } catch {
            return .failure(error == .notRIFF ? .notAudio(error.description) : .corrupt(error.description))
        }
        guard format.frameCount > 0 else { return .failure(.corrupt("WAV file holds no samples")) }
        var tags = TagSet()
        if let info = findInfoChunk(fd: fd, fileSize: fileSize) { tags = parseInfo(info) }
        return .success(FileMetadata(format: .wav, tags: tags, durationFrames: format.frameCount, sampleRate: format.sampleRate))
    }

    /// The body of the first LIST/INFO chunk, bounded in size; nil when absent.
    private static func findInfoChunk(fd: Int32, fileSize: Int) -> [UInt8]? {
        var offset = 12
        var visited = 0
        while offset + 12 <= fileSize, visited < 256 { // a real file has a handful of chunks
            visited += 1
            guard let head = try? preadAll(fd, offset: offset, count: 12), head.count == 12 else { return nil }
            let id = String(decoding: head[0..<4], as: UTF8.self)
            let size = Int(head[4]) | Int(head[5]) << 8 | Int(head[6]) << 16 | Int(head[7]) << 24
            if id == "LIST", String(decoding: head[8..<12], as: UTF8.self) == "INFO" {
                let body = min(size - 4, fileSize - offset - 12)
                guard body > 0, body <= TagLimits.maxTagBlockBytes else { return nil }
                return try? preadAll(fd, offset: offset + 12, count: body)
            }
            offset += 8 + size + (size & 1)
        }
        return nil
    }

    static func parseInfo(_ body: [UInt8]) -> TagSet {
        var tags = TagSet()
        var i = 0
        while i + 8 <= body.count {
            let id = String(decoding: body[i..<(i + 4)], as: UTF8.self)
            let size = Int(body[i + 4]) | Int(body[i + 5]) << 8 | Int(body[i + 6]) << 16 | Int(body[i + 7]) << 24
            let start = i + 8
            let end = min(body.count, start + size)
            guard start <= end else { break }
            let value = TagText.clean(TagText.utf8OrLatin1(Array(body[start..<end].prefix { $0 != 0 })))
            switch id {
            case "INAM": tags.title = value
            case "IART": tags.artist = value
            case "IPRD": tags.album = value
            case "IGNR": tags.genre = value
            case "ICRD": tags.year = TagText.year(value)
            case "ITRK", "IPRT", "TRCK": tags.trackNumber = TagText.number(value)
            default: break
            }
            i = start + size + (size & 1)
        }
        return tags
    }
}

/// Reads exactly `count` bytes at `offset` (fewer only at end of file).
func preadAll(_ fd: Int32, offset: Int, count: Int) throws(SkipReasonText) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: count)
    var got = 0
    while got < count {
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, count - got, off_t(offset + got)) }
        if n < 0 && errno == EINTR { continue }
        if n < 0 { throw SkipReasonText(String(cString: strerror(errno))) }
        if n == 0 { break }
        got += n
    }
    if got < count { buffer.removeSubrange(got...) }
    return buffer
}

/// An errno message, for `SkipReason.unreadable`.
struct SkipReasonText: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

extension SkipReason {
    static func unreadable(_ e: SkipReasonText) -> SkipReason { .unreadable(e.description) }
}
