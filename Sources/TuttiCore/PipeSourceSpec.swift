/// A raw PCM pipe or FIFO as a source, so any player (shairport-sync for
/// AirPlay, librespot for Spotify Connect, anything that writes PCM) plays
/// in every room: `pipe:/run/tutti/airplay?rate=44100&format=s16le&channels=2&name=AirPlay`.
/// The format is declared, not guessed; the defaults are shairport-sync's
/// (44.1 kHz, 16-bit little-endian, stereo). Pure: parsing and sample conversion.
public struct PipeSourceSpec: Equatable, Sendable {
    public enum SampleFormat: String, Sendable, CaseIterable {
        case s16le, s24le, s32le, f32le
        public var bytes: Int {
            switch self {
            case .s16le: 2
            case .s24le: 3
            case .s32le, .f32le: 4
            }
        }
    }

    public var path: String
    public var sampleRate: Int
    public var format: SampleFormat
    public var channels: Int
    /// What now playing calls it (default: the file's name).
    public var name: String

    public static func isPipe(_ uri: String) -> Bool { uri.hasPrefix("pipe:") }

    public var bytesPerFrame: Int { format.bytes * channels }

    public init(parsing uri: String) throws(PipeSourceError) {
        guard Self.isPipe(uri) else { throw .notAPipe(uri) }
        var rest = Substring(uri.dropFirst("pipe:".count))
        if rest.hasPrefix("//") { rest = rest.dropFirst(2) }
        let parts = rest.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        guard path.hasPrefix("/"), path.count > 1 else { throw .badPath(uri) }
        self.path = path
        sampleRate = 44_100
        format = .s16le
        channels = 2
        name = String(path.split(separator: "/").last ?? "pipe")
        for pair in (parts.count > 1 ? parts[1] : "").split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            let key = String(kv[0]), value = kv.count > 1 ? String(kv[1]) : ""
            switch key {
            case "rate":
                guard let r = Int(value), (8_000...384_000).contains(r) else { throw .badValue(key: key, value: value, expected: "a sample rate 8000…384000") }
                sampleRate = r
            case "format":
                guard let f = SampleFormat(rawValue: value.lowercased()) else {
                    throw .badValue(key: key, value: value, expected: SampleFormat.allCases.map(\.rawValue).joined(separator: ", "))
                }
                format = f
            case "channels":
                guard let c = Int(value), (1...8).contains(c) else { throw .badValue(key: key, value: value, expected: "1…8 (the first two are played)") }
                channels = c
            case "name":
                guard !value.isEmpty, value.utf8.count <= 128 else { throw .badValue(key: key, value: value, expected: "a name of 1…128 bytes") }
                name = value.replacingPercentAndPlus()
            default:
                throw .badValue(key: key, value: value, expected: "one of rate, format, channels, name")
            }
        }
    }

    /// Appends the whole frames in `bytes` to `output` as interleaved stereo
    /// floats (mono is doubled, channels past two are dropped); returns the
    /// bytes used (a partial frame is left for the next read).
    public func convert(_ bytes: UnsafeRawBufferPointer, into output: inout [Float]) -> Int {
        let frames = bytes.count / bytesPerFrame
        output.reserveCapacity(output.count + frames * 2)
        for f in 0..<frames {
            let base = f * bytesPerFrame
            let left = sample(bytes, at: base)
            let right = channels > 1 ? sample(bytes, at: base + format.bytes) : left
            output.append(left)
            output.append(right)
        }
        return frames * bytesPerFrame
    }

    private func sample(_ b: UnsafeRawBufferPointer, at i: Int) -> Float {
        switch format {
        case .s16le:
            return Float(Int16(bitPattern: UInt16(b[i]) | UInt16(b[i + 1]) << 8)) / 32_768
        case .s24le:
            let u = UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16
            return Float(Int32(bitPattern: u << 8) >> 8) / 8_388_608
        case .s32le:
            let u = UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
            return Float(Double(Int32(bitPattern: u)) / 2_147_483_648)
        case .f32le:
            let u = UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
            let v = Float(bitPattern: u)
            return v.isFinite ? max(-1, min(1, v)) : 0
        }
    }
}

public enum PipeSourceError: Error, Equatable, CustomStringConvertible {
    case notAPipe(String)
    case badPath(String)
    case badValue(key: String, value: String, expected: String)
    public var description: String {
        switch self {
        case .notAPipe(let u): "\(u) is not a pipe: source (pipe:/path?rate=44100&format=s16le&channels=2)"
        case .badPath(let u): "\(u): a pipe source needs an absolute path, as in pipe:/run/tutti/airplay"
        case .badValue(let k, let v, let e): "pipe source \(k)=\(v): expected \(e)"
        }
    }
}

extension String {
    /// "My%20Radio" and "My+Radio" → "My Radio" (query values).
    func replacingPercentAndPlus() -> String {
        var out: [UInt8] = []
        var bytes = Array(utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "+") { out.append(32); continue }
            if b == UInt8(ascii: "%"), bytes.count >= 2, let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(v); bytes = bytes.dropFirst(2); continue
            }
            out.append(b)
        }
        return String(decoding: out, as: UTF8.self)
    }
}
