import Testing
import TuttiCore

struct WAVCase: Sendable, CustomTestStringConvertible {
    var bits: Int
    var float: Bool
    var channels: Int
    var rate: Int
    var testDescription: String { "\(bits)-bit \(float ? "float" : "int") ×\(channels) @\(rate)" }
}

let wavCases: [WAVCase] = [(16, false), (24, false), (32, false), (32, true)].flatMap { format in
    [1, 2].flatMap { channels in
        [44_100, 48_000].map { WAVCase(bits: format.0, float: format.1, channels: channels, rate: $0) }
    }
}

/// A RIFF/WAVE file from raw chunks (`id`, body); odd bodies are padded.
func riff(_ chunks: [(String, [UInt8])], riffSize: Int? = nil) -> [UInt8] {
    var body: [UInt8] = []
    body.appendTag("WAVE")
    for (id, bytes) in chunks {
        body.appendTag(id)
        body.appendLE32(UInt32(bytes.count))
        body += bytes
        if bytes.count % 2 == 1 { body.append(0) }
    }
    var out: [UInt8] = []
    out.appendTag("RIFF")
    out.appendLE32(UInt32(riffSize ?? body.count))
    return out + body
}

func fmtBody(tag: Int, channels: Int, rate: Int, bits: Int) -> [UInt8] {
    var b: [UInt8] = []
    b.appendLE16(tag); b.appendLE16(channels); b.appendLE32(UInt32(rate))
    b.appendLE32(UInt32(rate * channels * bits / 8)); b.appendLE16(channels * bits / 8); b.appendLE16(bits)
    return b
}

/// WAVE_FORMAT_EXTENSIBLE fmt body (40 bytes) with the given sub-format.
func extensibleFmtBody(subFormat: Int, channels: Int, rate: Int, bits: Int, validBits: Int) -> [UInt8] {
    var b = fmtBody(tag: 0xFFFE, channels: channels, rate: rate, bits: bits)
    b.appendLE16(22)                 // cbSize
    b.appendLE16(validBits)          // wValidBitsPerSample
    b.appendLE32(channels == 2 ? 3 : 4) // dwChannelMask
    b.appendLE16(subFormat)          // SubFormat GUID: xxxx0000-0000-0010-8000-00AA00389B71
    b += [0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]
    #expect(b.count == 40)
    return b
}

func convert(_ bytes: [UInt8], _ format: WAVFormat, appendingTo initial: [Float] = []) -> [Float] {
    var out = initial
    bytes.withUnsafeBytes { WAVParser.appendStereoFloats(from: $0, format: format, to: &out) }
    return out
}

/// WAVFormat has no public initialiser: parse a generated header instead.
func format(bits: Int, channels: Int, float: Bool = false) -> WAVFormat {
    let header = wavHeader(sampleRate: 48_000, channels: channels, bitsPerSample: bits, float: float, dataBytes: 0)
    return try! WAVParser.parse(header: header, fileSize: header.count)
}

func expectFormat(_ f: WAVFormat, rate: Int, channels: Int, bits: Int, encoding: WAVFormat.Encoding, dataOffset: Int, dataLength: Int,
                  sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(f.sampleRate == rate, sourceLocation: sourceLocation)
    #expect(f.channels == channels, sourceLocation: sourceLocation)
    #expect(f.bitsPerSample == bits, sourceLocation: sourceLocation)
    #expect(f.encoding == encoding, sourceLocation: sourceLocation)
    #expect(f.dataOffset == dataOffset, sourceLocation: sourceLocation)
    #expect(f.dataLength == dataLength, sourceLocation: sourceLocation)
}

@Suite("WAV parsing and conversion")
struct WAVTests {
    @Test("Headers from wavHeader() parse", arguments: wavCases)
    func generatedHeaders(_ c: WAVCase) throws {
        let bpf = c.channels * c.bits / 8
        let dataBytes = 1_000 * bpf
        let header = wavHeader(sampleRate: c.rate, channels: c.channels, bitsPerSample: c.bits, float: c.float, dataBytes: dataBytes)
        #expect(header.count == 44)
        let f = try WAVParser.parse(header: header, fileSize: 44 + dataBytes)
        expectFormat(f, rate: c.rate, channels: c.channels, bits: c.bits, encoding: c.float ? .float : .integer, dataOffset: 44, dataLength: dataBytes)
        #expect(f.bytesPerFrame == bpf)
        #expect(f.frameCount == 1_000)
    }

    @Test("Parsing only needs the header; trailing sample bytes in the buffer are ignored")
    func headerWithSamples() throws {
        let header = wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 16, dataBytes: 400) + [UInt8](repeating: 7, count: 400)
        let f = try WAVParser.parse(header: header, fileSize: header.count)
        #expect(f.dataOffset == 44 && f.dataLength == 400 && f.frameCount == 100)
    }

    @Test("WAVE_FORMAT_EXTENSIBLE with PCM and IEEE float sub-formats")
    func extensible() throws {
        let pcm = riff([("fmt ", extensibleFmtBody(subFormat: 1, channels: 2, rate: 96_000, bits: 24, validBits: 24)),
                        ("data", [UInt8](repeating: 0, count: 60))])
        let f = try WAVParser.parse(header: pcm, fileSize: pcm.count)
        expectFormat(f, rate: 96_000, channels: 2, bits: 24, encoding: .integer, dataOffset: 12 + 48 + 8, dataLength: 60)
        #expect(f.frameCount == 10)

        let float = riff([("fmt ", extensibleFmtBody(subFormat: 3, channels: 1, rate: 44_100, bits: 32, validBits: 32)),
                          ("data", [UInt8](repeating: 0, count: 8))])
        let g = try WAVParser.parse(header: float, fileSize: float.count)
        #expect(g.encoding == .float && g.channels == 1 && g.sampleRate == 44_100 && g.bitsPerSample == 32 && g.frameCount == 2)

        // Extensible with an unsupported sub-format (A-law = 6).
        let alaw = riff([("fmt ", extensibleFmtBody(subFormat: 6, channels: 2, rate: 48_000, bits: 16, validBits: 16)), ("data", [])])
        #expect(throws: WAVError.unsupported("format tag 6 with 16 bits per sample")) { try WAVParser.parse(header: alaw, fileSize: alaw.count) }

        // Extensible tag in a 16-byte fmt chunk is truncated.
        let short = riff([("fmt ", fmtBody(tag: 0xFFFE, channels: 2, rate: 48_000, bits: 16)), ("data", [])])
        #expect(throws: WAVError.truncatedHeader) { try WAVParser.parse(header: short, fileSize: short.count) }
    }

    @Test("Odd-sized and unknown chunks before data are skipped with padding")
    func oddChunks() throws {
        let fmt = fmtBody(tag: 1, channels: 2, rate: 48_000, bits: 16)
        // JUNK before fmt, odd LIST (5 bytes + pad) and fact between fmt and data.
        let file = riff([("JUNK", [UInt8](repeating: 0, count: 28)), ("fmt ", fmt), ("LIST", [1, 2, 3, 4, 5]),
                         ("fact", [0, 1, 0, 0]), ("data", [UInt8](repeating: 0, count: 16))])
        let f = try WAVParser.parse(header: file, fileSize: file.count)
        // 12 RIFF + 36 JUNK + 24 fmt + 14 LIST (incl. pad) + 12 fact + 8 data header.
        #expect(f.dataOffset == 12 + 36 + 24 + 14 + 12 + 8)
        #expect(f.dataLength == 16)
        #expect(Array(file[f.dataOffset...]) == [UInt8](repeating: 0, count: 16))

        // An 18-byte fmt (cbSize = 0, common for float files) is fine.
        var fmt18 = fmtBody(tag: 3, channels: 2, rate: 48_000, bits: 32)
        fmt18.appendLE16(0)
        let file18 = riff([("fmt ", fmt18), ("data", [UInt8](repeating: 0, count: 8))])
        let g = try WAVParser.parse(header: file18, fileSize: file18.count)
        #expect(g.encoding == .float && g.dataOffset == 12 + 26 + 8 && g.frameCount == 1)
    }

    @Test("Data length is clamped to the file and to whole frames")
    func lyingLength() throws {
        let header = wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 16, dataBytes: 1_000_000)
        #expect(try WAVParser.parse(header: header, fileSize: 44 + 1_000).dataLength == 1_000)
        #expect(try WAVParser.parse(header: header, fileSize: 44 + 1_003).dataLength == 1_000) // partial frame dropped
        #expect(try WAVParser.parse(header: header, fileSize: 44).dataLength == 0)
        #expect(try WAVParser.parse(header: header, fileSize: 10).dataLength == 0) // file smaller than header
        #expect(try WAVParser.parse(header: header, fileSize: 44 + 2_000_000).dataLength == 1_000_000) // honest shorter length

        // 24-bit stereo: 6 bytes per frame.
        let h24 = wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 24, dataBytes: 1_000_000)
        let f24 = try WAVParser.parse(header: h24, fileSize: 44 + 1_000)
        #expect(f24.dataLength == 996 && f24.frameCount == 166)

        // Streamed files: 0 or 0xFFFFFFFF mean "to the end of the file".
        for unknown in [0, 0xFFFF_FFFF] {
            let h = wavHeader(sampleRate: 44_100, channels: 1, bitsPerSample: 16, dataBytes: unknown)
            let f = try WAVParser.parse(header: h, fileSize: 44 + 88_201)
            #expect(f.dataLength == 88_200 && f.frameCount == 44_100)
        }
    }

    @Test("Not RIFF/WAVE")
    func notRIFF() {
        let good = wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 16, dataBytes: 4)
        var rifx = good; rifx[3] = UInt8(ascii: "X")
        var avi = good; avi.replaceSubrange(8..<12, with: Array("AVI ".utf8))
        for bad in [rifx, avi, Array(good[0..<11]), [], Array("ID3\u{3}\0\0\0\0\0\0\0\0\0\0".utf8)] {
            #expect(throws: WAVError.notRIFF) { try WAVParser.parse(header: bad, fileSize: 1_000) }
        }
    }

    @Test("Missing fmt or data chunk")
    func missingChunks() {
        let fmt = fmtBody(tag: 1, channels: 2, rate: 48_000, bits: 16)
        let dataFirst = riff([("data", [0, 0, 0, 0]), ("fmt ", fmt)])
        #expect(throws: WAVError.noFormatChunk) { try WAVParser.parse(header: dataFirst, fileSize: dataFirst.count) }
        let onlyList = riff([("LIST", [1, 2, 3])])
        #expect(throws: WAVError.noFormatChunk) { try WAVParser.parse(header: onlyList, fileSize: onlyList.count) }
        let bare = riff([])
        #expect(throws: WAVError.noFormatChunk) { try WAVParser.parse(header: bare, fileSize: bare.count) }
        let noData = riff([("fmt ", fmt), ("LIST", [1, 2, 3])])
        #expect(throws: WAVError.noDataChunk) { try WAVParser.parse(header: noData, fileSize: noData.count) }
        // Header cut inside the fmt body.
        let cut = Array(wavHeader(sampleRate: 48_000, channels: 2, bitsPerSample: 16, dataBytes: 4)[0..<30])
        #expect(throws: WAVError.truncatedHeader) { try WAVParser.parse(header: cut, fileSize: 1_000) }
        // fmt chunk claiming fewer than 16 bytes.
        let tiny = riff([("fmt ", Array(fmt[0..<14])), ("data", [])])
        #expect(throws: WAVError.truncatedHeader) { try WAVParser.parse(header: tiny, fileSize: tiny.count) }
        // A chunk size that runs off the end of the header.
        let runaway = riff([("fmt ", fmt)]) + Array("LIST".utf8) + [0xFF, 0xFF, 0xFF, 0x7F]
        #expect(throws: WAVError.noDataChunk) { try WAVParser.parse(header: runaway, fileSize: 1 << 31) }
    }

    @Test("Unsupported formats")
    func unsupported() {
        func parse(tag: Int = 1, channels: Int = 2, rate: Int = 48_000, bits: Int = 16) throws(WAVError) -> WAVFormat {
            let file = riff([("fmt ", fmtBody(tag: tag, channels: channels, rate: rate, bits: bits)), ("data", [])])
            return try WAVParser.parse(header: file, fileSize: file.count)
        }
        #expect(throws: WAVError.unsupported("format tag 1 with 8 bits per sample")) { try parse(bits: 8) }
        #expect(throws: WAVError.unsupported("3 channels (mono or stereo only)")) { try parse(channels: 3) }
        #expect(throws: WAVError.unsupported("0 channels (mono or stereo only)")) { try parse(channels: 0) }
        #expect(throws: WAVError.unsupported("format tag 3 with 64 bits per sample")) { try parse(tag: 3, bits: 64) }
        #expect(throws: WAVError.unsupported("format tag 3 with 16 bits per sample")) { try parse(tag: 3, bits: 16) }
        #expect(throws: WAVError.unsupported("format tag 85 with 16 bits per sample")) { try parse(tag: 0x55) } // MP3
        #expect(throws: WAVError.unsupported("sample rate 4000 Hz")) { try parse(rate: 4_000) }
        #expect(throws: WAVError.unsupported("sample rate 768000 Hz")) { try parse(rate: 768_000) }
        #expect(throws: Never.self) { _ = try parse(rate: 8_000) }
        #expect(throws: Never.self) { _ = try parse(rate: 384_000) }
    }

    // MARK: Sample conversion

    @Test("Every 16-bit value converts to s/32768 and back through sampleToInt16 exactly")
    func sixteenBitExact() {
        var bytes: [UInt8] = []
        for v in Int(Int16.min)...Int(Int16.max) { bytes.appendLE16(v) }
        let out = convert(bytes, format(bits: 16, channels: 2))
        #expect(out.count == 65_536)
        var mismatches = 0
        for (i, v) in (Int(Int16.min)...Int(Int16.max)).enumerated() {
            if out[i] != Float(v) / 32_768 || sampleToInt16(out[i]) != Int16(v) { mismatches += 1 }
        }
        #expect(mismatches == 0)
        #expect(out.first == -1.0)
        #expect(out.last == Float(32_767) / 32_768)
    }

    @Test("sampleToInt16 clamps, rounds and maps NaN to 0")
    func toInt16() {
        #expect(sampleToInt16(1.0) == 32_767)
        #expect(sampleToInt16(2.5) == 32_767)
        #expect(sampleToInt16(.infinity) == 32_767)
        #expect(sampleToInt16(-1.0) == -32_768)
        #expect(sampleToInt16(-7.0) == -32_768)
        #expect(sampleToInt16(-.infinity) == -32_768)
        #expect(sampleToInt16(.nan) == 0)
        #expect(sampleToInt16(0) == 0)
        #expect(sampleToInt16(0.4 / 32_768) == 0)
        #expect(sampleToInt16(0.6 / 32_768) == 1)
        #expect(sampleToInt16(-0.6 / 32_768) == -1)
        #expect(sampleToInt16(0.5) == 16_384)
    }

    @Test("sampleToInt16 rounds half away from zero, as Float.rounded() does, on halves, their neighbours and the clamp edges")
    func toInt16MatchesRounded() {
        func reference(_ v: Float) -> Int16 {
            let scaled = (v * 32_768).rounded()
            return scaled.isNaN ? 0 : scaled >= 32_767 ? 32_767 : scaled <= -32_768 ? -32_768 : Int16(scaled)
        }
        var values: [Float] = []
        for k in stride(from: -32_770, through: 32_770, by: 1) {
            let half = (Float(k) + 0.5) / 32_768
            values += [half, half.nextUp, half.nextDown, Float(k) / 32_768]
        }
        var generator = SplitMix64(seed: 7)
        for _ in 0..<100_000 { values.append(Float(Double(generator.next() % 2_000_001) / 1_000_000 - 1)) }
        let mismatches = values.filter { sampleToInt16($0) != reference($0) }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
    }

    @Test("Mono is duplicated into both channels")
    func monoDuplicates() {
        var bytes: [UInt8] = []
        for v in [1_000, -2_000, 32_767, -32_768] { bytes.appendLE16(v) }
        let out = convert(bytes, format(bits: 16, channels: 1))
        let expected: [Float] = [1_000, 1_000, -2_000, -2_000, 32_767, 32_767, -32_768, -32_768].map { $0 / 32_768 }
        #expect(out == expected)

        var fbytes: [UInt8] = []
        for v in [Float(0.25), -0.5] { fbytes.appendLE32(v.bitPattern) }
        #expect(convert(fbytes, format(bits: 32, channels: 1, float: true)) == [0.25, 0.25, -0.5, -0.5])
    }

    @Test("Stereo order is preserved and output is appended to")
    func stereoAppend() {
        var bytes: [UInt8] = []
        for v in [100, -100, 200, -200] { bytes.appendLE16(v) }
        bytes.append(0x55) // partial frame: ignored
        let out = convert(bytes, format(bits: 16, channels: 2), appendingTo: [9, 9])
        #expect(out == [9, 9] + [100, -100, 200, -200].map { Float($0) / 32_768 })
    }

    @Test("24-bit samples are sign-extended")
    func twentyFourBit() {
        let values = [0, 1, -1, 0x7F_FFFF, -0x80_0000, 0x40_0000, -0x40_0000, 0x12_3456, -0x12_3456]
        var bytes: [UInt8] = []
        for v in values { bytes.appendLE24(v) }
        let out = convert(bytes, format(bits: 24, channels: 1))
        #expect(out.count == 2 * values.count)
        for (i, v) in values.enumerated() {
            #expect(out[2 * i] == Float(v) / 8_388_608)
            #expect(out[2 * i + 1] == out[2 * i])
        }
        #expect(out[4] == -1.0 / 8_388_608)   // 0xFFFFFF
        #expect(out[8] == -1.0)               // 0x800000
        #expect(out[6] == 8_388_607.0 / 8_388_608)
    }

    @Test("32-bit integer samples")
    func thirtyTwoBit() {
        let values: [Int32] = [0, 1, -1, .min, 1 << 30, -(1 << 30), 0x1234_5678]
        var bytes: [UInt8] = []
        for v in values { bytes.appendLE32(UInt32(bitPattern: v)) }
        let out = convert(bytes, format(bits: 32, channels: 1))
        for (i, v) in values.enumerated() { #expect(out[2 * i] == Float(Double(v) / 2_147_483_648)) }
        #expect(out[6] == -1.0)
        #expect(out[8] == 0.5)
        #expect(out[2] == Float(0x1p-31))
        // Int32.max rounds to exactly 1.0 in Float (outside the documented [-1, 1)); harmless: it clamps to 32767.
        let top = convert(be32le(Int32.max), format(bits: 32, channels: 1))
        #expect(top[0] <= 1.0 && sampleToInt16(top[0]) == 32_767)
    }

    @Test("Float samples: finite values pass through, NaN and infinities become 0")
    func floatSamples() {
        let values: [Float] = [0.5, -0.25, 1.0, -1.0, .nan, .infinity, -.infinity, Float(bitPattern: 0x7FC0_0001), 1e-30, 1.5]
        var bytes: [UInt8] = []
        for v in values { bytes.appendLE32(v.bitPattern) }
        let out = convert(bytes, format(bits: 32, channels: 2, float: true))
        #expect(out == [0.5, -0.25, 1.0, -1.0, 0, 0, 0, 0, 1e-30, 1.5])
    }

    @Test("Round trip: header + samples parsed and converted")
    func endToEnd() throws {
        var samples: [UInt8] = []
        var rng = SplitMix64(seed: 7)
        var ints: [Int16] = []
        for _ in 0..<512 { let v = Int16(truncatingIfNeeded: rng.next()); ints.append(v); samples.appendLE16(Int(v)) }
        let file = wavHeader(sampleRate: 44_100, channels: 2, bitsPerSample: 16, dataBytes: samples.count) + samples
        let f = try WAVParser.parse(header: Array(file.prefix(64)), fileSize: file.count)
        let out = convert(Array(file[f.dataOffset..<(f.dataOffset + f.dataLength)]), f)
        #expect(out.map(sampleToInt16) == ints)
    }
}

private func be32le(_ v: Int32) -> [UInt8] { var b: [UInt8] = []; b.appendLE32(UInt32(bitPattern: v)); return b }
