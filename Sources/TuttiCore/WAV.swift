/// What a WAV file holds, read from its RIFF header.
public struct WAVFormat: Equatable, Sendable {
    public enum Encoding: Equatable, Sendable { case integer, float }
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int
    public var encoding: Encoding
    /// Byte offset of the first sample in the file.
    public var dataOffset: Int
    /// Bytes of sample data (clamped to what the file holds when known).
    public var dataLength: Int

    public var bytesPerFrame: Int { channels * bitsPerSample / 8 }
    public var frameCount: Int { dataLength / bytesPerFrame }
}

public enum WAVError: Error, Equatable, CustomStringConvertible {
    case notRIFF
    case noFormatChunk
    case noDataChunk
    case unsupported(String)
    case truncatedHeader

    public var description: String {
        switch self {
        case .notRIFF: "not a RIFF/WAVE file"
        case .noFormatChunk: "WAV file has no 'fmt ' chunk"
        case .noDataChunk: "WAV file has no 'data' chunk"
        case .unsupported(let what): "unsupported WAV format: \(what)"
        case .truncatedHeader: "WAV header is truncated"
        }
    }
}

public enum WAVParser {
    /// Parses the header from the first bytes of a file (64 KiB is plenty
    /// for any real file). `fileSize` clamps a data length that lies.
    public static func parse(header: [UInt8], fileSize: Int) throws(WAVError) -> WAVFormat {
        func u16(_ i: Int) -> Int { Int(header[i]) | Int(header[i + 1]) << 8 }
        func u32(_ i: Int) -> Int { u16(i) | u16(i + 2) << 16 }
        func tag(_ i: Int) -> String { String(decoding: header[i..<(i + 4)], as: UTF8.self) }

        guard header.count >= 12, tag(0) == "RIFF", tag(8) == "WAVE" else { throw .notRIFF }
        var offset = 12
        var format: (rate: Int, channels: Int, bits: Int, encoding: WAVFormat.Encoding)?
        while offset + 8 <= header.count {
            let id = tag(offset)
            let size = u32(offset + 4)
            let body = offset + 8
            if id == "fmt " {
                guard body + 16 <= header.count, size >= 16 else { throw .truncatedHeader }
                var formatTag = u16(body)
                let channels = u16(body + 2)
                let rate = u32(body + 4)
                let bits = u16(body + 14)
                if formatTag == 0xFFFE { // WAVE_FORMAT_EXTENSIBLE: the sub-format GUID's first two bytes
                    guard size >= 40, body + 26 <= header.count else { throw .truncatedHeader }
                    formatTag = u16(body + 24)
                }
                let encoding: WAVFormat.Encoding
                switch (formatTag, bits) {
                case (1, 16), (1, 24), (1, 32): encoding = .integer
                case (3, 32): encoding = .float
                default: throw .unsupported("format tag \(formatTag) with \(bits) bits per sample")
                }
                guard channels == 1 || channels == 2 else { throw .unsupported("\(channels) channels (mono or stereo only)") }
                guard rate >= 8_000, rate <= 384_000 else { throw .unsupported("sample rate \(rate) Hz") }
                format = (rate, channels, bits, encoding)
            } else if id == "data" {
                guard let f = format else { throw .noFormatChunk }
                let available = max(0, fileSize - body)
                // Streams written without a known length carry 0 or 0xFFFFFFFF.
                let length = (size == 0 || size == 0xFFFF_FFFF) ? available : min(size, available)
                let bytesPerFrame = f.channels * f.bits / 8
                return WAVFormat(sampleRate: f.rate, channels: f.channels, bitsPerSample: f.bits, encoding: f.encoding,
                                 dataOffset: body, dataLength: length - length % bytesPerFrame)
            }
            offset = body + size + (size & 1)
        }
        throw format == nil ? .noFormatChunk : .noDataChunk
    }

    /// Converts whole frames of raw sample bytes to interleaved stereo
    /// floats in [-1, 1), appending to `output`. Mono is duplicated.
    /// 16-bit samples map to `s / 32768`, so converting back is bit-exact.
    public static func appendStereoFloats(from bytes: UnsafeRawBufferPointer, format: WAVFormat, to output: inout [Float]) {
        let frames = bytes.count / format.bytesPerFrame
        let samples = frames * format.channels
        output.reserveCapacity(output.count + frames * 2)
        @inline(__always) func emit(_ v: Float) {
            output.append(v)
            if format.channels == 1 { output.append(v) }
        }
        switch (format.encoding, format.bitsPerSample) {
        case (.integer, 16):
            for i in 0..<samples {
                let v = Int16(bitPattern: UInt16(bytes[2 * i]) | UInt16(bytes[2 * i + 1]) << 8)
                emit(Float(v) / 32768)
            }
        case (.integer, 24):
            for i in 0..<samples {
                let raw = Int32(bytes[3 * i]) | Int32(bytes[3 * i + 1]) << 8 | Int32(bytes[3 * i + 2]) << 16
                let v = (raw << 8) >> 8
                emit(Float(v) / 8_388_608)
            }
        case (.integer, 32):
            for i in 0..<samples {
                let v = Int32(bitPattern: bytes.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self).littleEndian)
                emit(Float(Double(v) / 2_147_483_648))
            }
        default: // 32-bit float
            for i in 0..<samples {
                let bits = bytes.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self).littleEndian
                let v = Float(bitPattern: bits)
                emit(v.isFinite ? v : 0)
            }
        }
    }
}

/// Float to S16 conversion used on every output path; the exact inverse of
/// the 16-bit WAV reading above for values that came from 16-bit samples.
/// Rounds half away from zero, clamps, and maps NaN to 0. Inlinable and
/// without a libm call: the playout thread runs it 96,000 times a second.
@inlinable @inline(__always)
public func sampleToInt16(_ v: Float) -> Int16 {
    // Exact in Double (a float times a power of two), so adding 0.5 and
    // truncating rounds exactly as `.rounded()` would.
    let scaled = Double(v) * 32768
    if scaled.isNaN { return 0 }
    if scaled >= 32767 { return 32767 }
    if scaled <= -32768 { return -32768 }
    return Int16(truncatingIfNeeded: Int32(scaled >= 0 ? scaled + 0.5 : scaled - 0.5))
}

/// Writes a 16-bit PCM WAV header (for generated test tracks).
public func wavHeader(sampleRate: Int, channels: Int, bitsPerSample: Int, float: Bool = false, dataBytes: Int) -> [UInt8] {
    var w = [UInt8]()
    func tag(_ s: String) { w.append(contentsOf: Array(s.utf8)) }
    func u16(_ v: Int) { w.append(UInt8(v & 0xff)); w.append(UInt8((v >> 8) & 0xff)) }
    func u32(_ v: Int) { u16(v & 0xffff); u16((v >> 16) & 0xffff) }
    tag("RIFF"); u32(36 + dataBytes); tag("WAVE")
    tag("fmt "); u32(16); u16(float ? 3 : 1); u16(channels); u32(sampleRate)
    u32(sampleRate * channels * bitsPerSample / 8); u16(channels * bitsPerSample / 8); u16(bitsPerSample)
    tag("data"); u32(dataBytes)
    return w
}
