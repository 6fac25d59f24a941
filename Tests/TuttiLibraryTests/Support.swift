import Foundation
import TuttiCore
import TuttiLibrary
import TuttiTestSupport

func write(_ path: String, _ bytes: [UInt8]) {
    let dir = (path as NSString).deletingLastPathComponent
    try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
}

func read(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path) ?? Data()) }

/// A 16-bit stereo WAV of a quiet tone, `frames` long, optionally with a
/// RIFF LIST/INFO tag chunk after the samples (where most taggers put it).
func wavBytes(frames: Int, rate: Int = 44_100, info: [String: String] = [:]) -> [UInt8] {
    let samples = TestSignal.sine(frequency: 440, seconds: Double(frames) / Double(rate), amplitude: 0.2, rate: rate)
    var stereo: [Float] = []
    stereo.reserveCapacity(frames * 2)
    for i in 0..<frames { let v = i < samples.count ? samples[i] : 0; stereo += [v, v] }
    var bytes = TestSignal.wav16(stereo, rate: rate)
    guard !info.isEmpty else { return bytes }
    var list: [UInt8] = Array("INFO".utf8)
    for (key, value) in info.sorted(by: { $0.key < $1.key }) {
        var v = Array(value.utf8) + [0]
        if v.count % 2 == 1 { v.append(0) }
        list += Array(key.utf8) + le32(v.count) + v
    }
    bytes += Array("LIST".utf8) + le32(list.count) + list
    // Fix the RIFF size to cover the new chunk.
    let riff = le32(bytes.count - 8)
    bytes.replaceSubrange(4..<8, with: riff)
    return bytes
}

func le32(_ n: Int) -> [UInt8] { [UInt8(n & 0xff), UInt8((n >> 8) & 0xff), UInt8((n >> 16) & 0xff), UInt8((n >> 24) & 0xff)] }

/// A valid RGB PNG of one colour (stored deflate), so each colour is a
/// distinct image that lame and metaflac accept as cover art.
func pngBytes(width: Int = 2, height: Int = 2, rgb: (UInt8, UInt8, UInt8)) -> [UInt8] {
    func be32(_ n: Int) -> [UInt8] { [UInt8((n >> 24) & 0xff), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)] }
    func crc32(_ data: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in data {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }
        return ~c
    }
    func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return be32(data.count) + body + be32(Int(crc32(body)))
    }
    var raw: [UInt8] = []
    for _ in 0..<height {
        raw.append(0) // filter: none
        for _ in 0..<width { raw += [rgb.0, rgb.1, rgb.2] }
    }
    var a: UInt32 = 1, b: UInt32 = 0
    for byte in raw { a = (a + UInt32(byte)) % 65_521; b = (b + a) % 65_521 }
    let n = raw.count
    let zlib: [UInt8] = [0x78, 0x01, 0x01, UInt8(n & 0xff), UInt8(n >> 8), UInt8(~n & 0xff), UInt8((~n >> 8) & 0xff)] + raw + be32(Int(b << 16 | a))
    let ihdr = be32(width) + be32(height) + [8, 2, 0, 0, 0]
    return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", zlib) + chunk("IEND", [])
}

/// Generated media for scan tests. Encoding is the slow part, so each
/// source WAV is made once per test folder.
struct MediaFactory {
    let dir: String
    let frames: Int
    let rate = 44_100

    init(dir: String, frames: Int = 22_050) {
        self.dir = dir
        self.frames = frames
        write(dir + "/.source.wav", wavBytes(frames: frames, rate: rate))
    }

    var sourceWAV: String { dir + "/.source.wav" }

    /// An MP3 through lame with its tag options (`--tt`, `--ta`, …).
    @discardableResult
    func mp3(_ relative: String, lameTags: [String] = []) throws -> String {
        let path = dir + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try runTool(["lame", "--quiet", "-b", "128"] + lameTags + [sourceWAV, path])
        return path
    }

    /// An MP3 with no tag, then an ID3v2 tag of `version` written by our writer.
    @discardableResult
    func mp3(_ relative: String, id3Version: Int, frames: [ID3v2Writer.Frame]) throws -> String {
        let path = try mp3(relative)
        write(path, ID3v2Writer.tag(version: id3Version, frames: frames) + read(path))
        return path
    }

    /// A FLAC through flac, tagged with metaflac.
    @discardableResult
    func flac(_ relative: String, tags: [String: String] = [:], picture: String? = nil) throws -> String {
        let path = dir + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try runTool(["flac", "--silent", "--force", "-o", path, sourceWAV])
        var args = ["metaflac"]
        for (k, v) in tags.sorted(by: { $0.key < $1.key }) { args.append("--set-tag=\(k)=\(v)") }
        if let picture { args.append("--import-picture-from=3||||\(picture)") }
        if args.count > 1 { try runTool(args + [path]) }
        return path
    }

    @discardableResult
    func wav(_ relative: String, info: [String: String] = [:], frames: Int? = nil) -> String {
        let path = dir + "/" + relative
        write(path, wavBytes(frames: frames ?? self.frames, rate: rate, info: info))
        return path
    }
}

/// Sets a file's modification time (seconds since 1970).
func setModificationTime(_ path: String, seconds: Int) {
    var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
    _ = utimensat(AT_FDCWD, path, &times, 0)
}
