// Icecast/SHOUTcast "ICY" metadata: pure value types, no I/O.
//
// With `Icy-MetaData: 1` in the request, a server that answers
// `icy-metaint: N` inserts a metadata block after every N audio bytes: one
// length byte L, then L×16 bytes of text (`StreamTitle='…';StreamUrl='…';`,
// padded with NULs). L = 0 means "no change".

/// What a station says about itself (response headers) and about what is
/// playing (in-band `StreamTitle`). Values are nil when never sent.
public struct StreamMetadata: Sendable, Equatable, CustomStringConvertible {
    /// `icy-name`: the station.
    public var stationName: String?
    /// `icy-genre`.
    public var genre: String?
    /// `icy-url`: the station's web page.
    public var stationURL: String?
    /// `icy-br`: nominal bitrate in kbit/s.
    public var bitrateKbps: Int?
    /// The latest in-band `StreamTitle` (usually "Artist - Title").
    public var title: String?
    /// The latest in-band `StreamUrl`.
    public var titleURL: String?

    public init(stationName: String? = nil, genre: String? = nil, stationURL: String? = nil, bitrateKbps: Int? = nil,
                title: String? = nil, titleURL: String? = nil) {
        self.stationName = stationName
        self.genre = genre
        self.stationURL = stationURL
        self.bitrateKbps = bitrateKbps
        self.title = title
        self.titleURL = titleURL
    }

    /// The station fields from response headers (names compared case-insensitively).
    public init(headers: [String: String]) {
        func value(_ name: String) -> String? {
            guard let v = headers.first(where: { $0.key.lowercased() == name })?.value else { return nil }
            let t = v.trimmingWhitespace()
            return t.isEmpty ? nil : ICYText.repairLatin1(t)
        }
        self.init(stationName: value("icy-name"), genre: value("icy-genre"), stationURL: value("icy-url"),
                  bitrateKbps: value("icy-br").flatMap { Int($0.split(separator: ",").first ?? "") })
    }

    public var description: String {
        [stationName.map { "station '\($0)'" }, title.map { "title '\($0)'" }].compactMap { $0 }.joined(separator: ", ")
    }
}

/// Splits a byte stream with ICY metadata into audio bytes and metadata
/// blocks. Feed it whatever the network delivers, in any chunking.
public struct ICYDemuxer: Sendable {
    public let metaint: Int
    private enum Phase: Sendable { case audio(remaining: Int), length, metadata(remaining: Int) }
    private var phase: Phase
    private var block: [UInt8] = []

    /// Largest block the format can describe: 255 × 16.
    public static let maxBlock = 4_080

    public init(metaint: Int) {
        precondition(metaint > 0, "icy-metaint must be positive")
        self.metaint = metaint
        self.phase = .audio(remaining: metaint)
    }

    /// Calls `audio` with each run of audio bytes in `bytes` (slices of it,
    /// valid only during the call) and `metadata` with each complete,
    /// non-empty metadata block.
    public mutating func process(_ bytes: UnsafeRawBufferPointer,
                                 audio: (UnsafeRawBufferPointer) -> Void,
                                 metadata: ([UInt8]) -> Void) {
        var i = 0
        while i < bytes.count {
            switch phase {
            case .audio(let remaining):
                let n = min(remaining, bytes.count - i)
                audio(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]))
                i += n
                phase = n == remaining ? .length : .audio(remaining: remaining - n)
            case .length:
                let length = Int(bytes[i]) * 16
                i += 1
                phase = length == 0 ? .audio(remaining: metaint) : .metadata(remaining: length)
                block.removeAll(keepingCapacity: true)
            case .metadata(let remaining):
                let n = min(remaining, bytes.count - i)
                block.append(contentsOf: bytes[i..<(i + n)])
                i += n
                if n == remaining {
                    metadata(block)
                    phase = .audio(remaining: metaint)
                } else {
                    phase = .metadata(remaining: remaining - n)
                }
            }
        }
    }
}

/// Parsing of one metadata block's text.
public enum ICYText {
    /// The `Key='value';` pairs of a block, in order. Quotes inside values
    /// are kept: a value ends only at a `';` that is followed by the end of
    /// the block or by another `Key=`. Text is UTF-8 when valid, else Latin-1.
    public static func fields(_ block: [UInt8]) -> [(key: String, value: String)] {
        var bytes = block[...]
        while let last = bytes.last, last == 0 || last == 0x20 || last == 0x0a || last == 0x0d { bytes.removeLast() }
        let text = decode(Array(bytes))
        let s = Array(text.unicodeScalars)
        var out: [(key: String, value: String)] = []
        var i = 0
        func isKeyChar(_ c: Unicode.Scalar) -> Bool { c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "_" || c == "-" }
        /// At `j`, is there `Key=` (a plausible start of the next field)?
        func keyStarts(at j: Int) -> Bool {
            var k = j
            while k < s.count && s[k] == " " { k += 1 }
            let start = k
            while k < s.count && isKeyChar(s[k]) { k += 1 }
            return k > start && k < s.count && s[k] == "="
        }
        while i < s.count {
            while i < s.count && (s[i] == " " || s[i] == ";") { i += 1 }
            let keyStart = i
            while i < s.count && s[i] != "=" { i += 1 }
            guard i < s.count else { break }
            let key = String(String.UnicodeScalarView(s[keyStart..<i])).trimmingWhitespace()
            i += 1
            let quoted = i < s.count && s[i] == "'"
            if quoted { i += 1 }
            let valueStart = i
            var valueEnd = s.count
            var next = s.count
            var j = i
            while j < s.count {
                if quoted {
                    if s[j] == "'" && (j + 1 == s.count || (s[j + 1] == ";" && (j + 2 == s.count || keyStarts(at: j + 2)))) {
                        valueEnd = j; next = min(s.count, j + 2); break
                    }
                } else if s[j] == ";" && (j + 1 == s.count || keyStarts(at: j + 1)) {
                    valueEnd = j; next = j + 1; break
                }
                j += 1
            }
            var value = String(String.UnicodeScalarView(s[valueStart..<valueEnd]))
            if quoted && valueEnd == s.count && value.hasSuffix("'") { value.removeLast() }
            if !key.isEmpty { out.append((key, value)) }
            i = next
        }
        return out
    }

    /// Applies a block to `metadata`: `StreamTitle` and `StreamUrl`.
    /// Returns whether anything changed.
    @discardableResult
    public static func apply(_ block: [UInt8], to metadata: inout StreamMetadata) -> Bool {
        let before = metadata
        for (key, value) in fields(block) {
            switch key.lowercased() {
            case "streamtitle": metadata.title = value.trimmingWhitespace()
            case "streamurl": metadata.titleURL = value.isEmpty ? nil : value
            default: break
            }
        }
        return metadata != before
    }

    /// `icy-metaint` from response headers (names lower-cased): the audio
    /// bytes between two metadata blocks; nil when absent or not positive.
    public static func metaint(_ headers: [String: String]) -> Int? {
        headers["icy-metaint"].flatMap { Int($0.trimmingWhitespace()) }.flatMap { $0 > 0 ? $0 : nil }
    }

    /// UTF-8 if the bytes are valid UTF-8, else ISO-8859-1 (each byte one scalar).
    public static func decode(_ bytes: [UInt8]) -> String {
        if let s = String(validating: bytes, as: UTF8.self) { return s }
        return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    /// Header values arrive through Foundation as Latin-1-decoded strings;
    /// if every scalar is < 256 and the bytes form valid UTF-8, re-decode.
    static func repairLatin1(_ s: String) -> String {
        let scalars = s.unicodeScalars
        guard scalars.contains(where: { $0.value >= 0x80 }), scalars.allSatisfy({ $0.value < 256 }) else { return s }
        return String(validating: scalars.map { UInt8($0.value) }, as: UTF8.self) ?? s
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
