import TuttiAudio
import Glibc
import TuttiCore

/// A source of interleaved stereo float frames at the file's own rate.
/// Not thread-safe: one decoder belongs to one reader.
public protocol AudioDecoder: AnyObject {
    var path: String { get }
    var sampleRate: Int { get }
    /// Appends up to `maxFrames` stereo frames to `output`; returns how many
    /// (0 at the end). Throws when the file turns out to be corrupt.
    func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int
    /// Moves to `frame` (at the file's own rate), clamped to the end.
    func seek(toFrame frame: Int) throws(AudioError)
    /// Length in frames at the file's own rate, if known.
    var frameCount: Int? { get }
}

public enum AudioFile {
    /// Opens a decoder for `path`, chosen by content (RIFF header, "fLaC",
    /// the signatures of the containers FFmpeg reads) then by extension
    /// (`FFmpegFormats`); everything else is tried as MPEG audio. FFmpeg is
    /// opened only for a file that needs it.
    public static func open(_ path: String) throws(AudioError) -> any AudioDecoder {
        guard let file = fopen(path, "rb") else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        var magic = [UInt8](repeating: 0, count: 12)
        let n = fread(&magic, 1, 12, file)
        fclose(file)
        if n == 12 && magic[0..<4] == [0x52, 0x49, 0x46, 0x46] { return try WAVDecoder(path: path) }
        if n >= 4 && magic[0..<4] == [0x66, 0x4C, 0x61, 0x43] { return try FLACDecoder(path: path) } // "fLaC"
        if n == 0 { throw .undecodable(path: path, reason: "file is empty") }
        if FFmpegFormats.isContainer(magic: magic[0..<n]) || FFmpegFormats.handles(pathExtension: FFmpegFormats.pathExtension(path)) {
            return try FFmpegDecoder(path: path)
        }
        return try MP3Decoder(path: path)
    }
}

/// Reads PCM and IEEE-float WAV files (16/24/32-bit, mono or stereo).
public final class WAVDecoder: AudioDecoder {
    public let path: String
    public let format: WAVFormat
    public var sampleRate: Int { format.sampleRate }
    private let file: UnsafeMutablePointer<FILE>
    private var remaining: Int
    private var scratch: [UInt8] = []

    public init(path: String) throws(AudioError) {
        guard let f = fopen(path, "rb") else { throw .cannotOpen(path: path, reason: String(cString: strerror(errno))) }
        var st = stat()
        fstat(fileno(f), &st)
        var header = [UInt8](repeating: 0, count: 65_536)
        let got = fread(&header, 1, header.count, f)
        header.removeSubrange(got...)
        do {
            format = try WAVParser.parse(header: header, fileSize: Int(st.st_size))
        } catch {
            fclose(f)
            throw .undecodable(path: path, reason: error.description)
        }
        fseek(f, format.dataOffset, SEEK_SET)
        self.path = path
        self.file = f
        self.remaining = format.dataLength
    }

    deinit { fclose(file) }

    public var frameCount: Int? { format.frameCount }

    public func seek(toFrame frame: Int) throws(AudioError) {
        let target = min(max(0, frame), format.frameCount)
        guard fseek(file, format.dataOffset + target * format.bytesPerFrame, SEEK_SET) == 0 else {
            throw .undecodable(path: path, reason: "seek failed: \(String(cString: strerror(errno)))")
        }
        remaining = format.dataLength - target * format.bytesPerFrame
    }

    public func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        let want = min(maxFrames * format.bytesPerFrame, remaining)
        guard want > 0 else { return 0 }
        if scratch.count < want { scratch = [UInt8](repeating: 0, count: want) }
        let got = scratch.withUnsafeMutableBytes { fread($0.baseAddress, 1, want, file) }
        let whole = got - got % format.bytesPerFrame
        remaining = got < want ? 0 : remaining - got
        scratch.withUnsafeBytes { WAVParser.appendStereoFloats(from: UnsafeRawBufferPointer(rebasing: $0[0..<whole]), format: format, to: &output) }
        return whole / format.bytesPerFrame
    }
}

/// Appends `frames` frames of libmpg123's float output (mono or stereo)
/// as interleaved stereo; mono is duplicated.
public func appendStereo(decodedFloats raw: UnsafeRawBufferPointer, frames: Int, channels: Int, to output: inout [Float]) {
    let floats = raw.bindMemory(to: Float.self)
    output.reserveCapacity(output.count + frames * 2)
    for i in 0..<frames {
        if channels == 1 {
            output.append(floats[i]); output.append(floats[i])
        } else {
            output.append(floats[2 * i]); output.append(floats[2 * i + 1])
        }
    }
}

/// MPEG audio (MP3) through libmpg123, gapless: the LAME/Xing header's
/// encoder delay and padding are removed so consecutive files join exactly.
public final class MP3Decoder: AudioDecoder {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    private let handle: MPG123Handle
    private var bytes: [UInt8] = []
    private var finished = false

    public init(path: String) throws(AudioError) {
        do {
            handle = try MPG123Handle()
            try handle.open(path: path)
            (sampleRate, channels) = try handle.format()
        } catch {
            switch error {
            case .cannotCreate(let reason): throw .undecodable(path: path, reason: reason)
            case .cannotOpen(let reason): throw .cannotOpen(path: path, reason: reason)
            case .noFormat, .notFloat: throw .undecodable(path: path, reason: error.description)
            }
        }
        handle.fixFormat(rate: sampleRate, channels: channels)
        self.path = path
    }

    private var scanned: Int??

    /// Exact decoded length in frames (gapless), scanning the file once.
    public var frameCount: Int? {
        if let scanned { return scanned }
        handle.scan()
        let n = handle.length
        scanned = .some(n >= 0 ? n : nil)
        return scanned!
    }

    public func seek(toFrame frame: Int) throws(AudioError) {
        _ = frameCount // a scanned file seeks sample-accurately
        guard handle.seek(toFrame: frame) else { throw .undecodable(path: path, reason: "seek failed: \(handle.lastError)") }
        finished = false
    }

    public func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        guard !finished else { return 0 }
        let bytesPerFrame = 4 * channels
        let want = maxFrames * bytesPerFrame
        if bytes.count < want { bytes = [UInt8](repeating: 0, count: want) }
        var total = 0
        while total == 0 {
            let (done, status) = bytes.withUnsafeMutableBytes { handle.read(into: $0, count: want) }
            let frames = done / bytesPerFrame
            if frames > 0 {
                bytes.withUnsafeBytes { appendStereo(decodedFloats: $0, frames: frames, channels: channels, to: &output) }
                total += frames
            }
            switch status {
            case .done: finished = true; return total
            case .newFormat, .ok: continue
            case .needMore, .failed:
                finished = true
                throw .undecodable(path: path, reason: handle.lastError)
            }
        }
        return total
    }
}

/// MPEG audio fed in pieces as it arrives (a network stream) through
/// libmpg123's feed API: float output, gapless, like `MP3Decoder`. The
/// caller owns the bytes and the waiting; this only decodes.
///
/// Thread contract: one thread at a time, like every decoder.
public final class MP3FeedDecoder {
    /// What `decode` stopped at: `.needMore` wants `feed`, `.newFormat` a look at `format`.
    public typealias Status = MPG123ReadStatus

    private let handle: MPG123Handle
    private var bytes: [UInt8] = []
    /// Channels of the decoded frames, once the format is known.
    public private(set) var channels = 2

    public init() throws(AudioError) {
        do {
            handle = try MPG123Handle()
            try handle.openFeed()
        } catch {
            switch error {
            case .cannotCreate(let reason): throw .codec(operation: "mpg123_new", reason: reason)
            default: throw .codec(operation: "mpg123_open_feed", reason: error.description)
            }
        }
    }

    public func feed(_ input: UnsafeRawBufferPointer) { handle.feed(input) }

    /// Decodes up to `maxFrames` (0: only look for the format) and appends
    /// them to `output` as interleaved stereo; returns how many and why it stopped.
    public func decode(into output: inout [Float], maxFrames: Int) -> (frames: Int, status: Status) {
        let bytesPerFrame = 4 * channels
        let want = maxFrames * bytesPerFrame
        if bytes.count < max(want, 1) { bytes = [UInt8](repeating: 0, count: max(want, 1)) }
        let (done, status) = bytes.withUnsafeMutableBytes { handle.read(into: $0, count: want) }
        let frames = done / bytesPerFrame
        if frames > 0 {
            let channels = channels
            bytes.withUnsafeBytes { appendStereo(decodedFloats: $0, frames: frames, channels: channels, to: &output) }
        }
        return (frames, status)
    }

    /// The format libmpg123 announced: rate and channels, or why there is
    /// none usable (not yet known, or not 32-bit float).
    public func format() -> Result<(rate: Int, channels: Int), AudioError> {
        do { return .success(try handle.format()) } catch {
            switch error {
            case .noFormat(let reason): return .failure(.undecodable(path: "", reason: reason))
            default: return .failure(.undecodable(path: "", reason: error.description))
            }
        }
    }

    /// Keeps the output at this format from now on (after `format`).
    public func fixFormat(rate: Int, channels: Int) {
        self.channels = channels
        handle.fixFormat(rate: rate, channels: channels)
    }

    /// Starts afresh on bytes that do not continue the ones before (a
    /// reconnect), keeping the fixed format.
    public func restart(rate: Int) {
        if (try? handle.openFeed()) != nil { fixFormat(rate: rate, channels: channels) }
    }

    /// Exact length (gapless) with a LAME/Xing header, else libmpg123's estimate.
    public var frameCount: Int? {
        let n = handle.length
        return n > 0 ? n : nil
    }

    /// Prepares to continue at `frame`: the byte offset in the stream to feed from.
    public func seek(toFrame frame: Int) -> Result<Int64, AudioError> {
        guard let inputOffset = handle.feedSeek(toFrame: frame) else {
            return .failure(.undecodable(path: "", reason: handle.lastError))
        }
        return .success(inputOffset)
    }
}
