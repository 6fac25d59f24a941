import Testing
import TuttiCore

@Suite struct PipeSourceSpecTests {
    @Test func theFormatIsDeclaredWithShairportSyncsDefaults() throws {
        let d = try PipeSourceSpec(parsing: "pipe:/run/tutti/airplay")
        #expect(d.path == "/run/tutti/airplay" && d.sampleRate == 44_100 && d.format == .s16le && d.channels == 2 && d.name == "airplay")
        let s = try PipeSourceSpec(parsing: "pipe:///tmp/spotify?rate=48000&format=f32le&channels=1&name=Spotify+Connect")
        #expect(s.path == "/tmp/spotify" && s.sampleRate == 48_000 && s.format == .f32le && s.channels == 1 && s.name == "Spotify Connect")
        #expect(s.bytesPerFrame == 4)
        #expect(throws: PipeSourceError.badPath("pipe:relative")) { try PipeSourceSpec(parsing: "pipe:relative") }
        #expect(throws: PipeSourceError.badValue(key: "rate", value: "fast", expected: "a sample rate 8000…384000")) { try PipeSourceSpec(parsing: "pipe:/p?rate=fast") }
        #expect { try PipeSourceSpec(parsing: "pipe:/p?format=u8") } throws: { "\($0)".contains("s16le, s24le, s32le, f32le") }
        #expect { try PipeSourceSpec(parsing: "pipe:/p?volume=3") } throws: { "\($0)".contains("one of rate, format, channels, name") }
    }

    @Test func samplesBecomeStereoFloatsAndPartialFramesWait() throws {
        let s16 = try PipeSourceSpec(parsing: "pipe:/p")
        var out: [Float] = []
        // Two frames (16384, -32768) (0, 32767) and one byte of a third.
        let bytes: [UInt8] = [0x00, 0x40, 0x00, 0x80, 0x00, 0x00, 0xff, 0x7f, 0x12]
        let used = bytes.withUnsafeBytes { s16.convert($0, into: &out) }
        #expect(used == 8)
        #expect(out == [0.5, -1, 0, Float(32_767) / 32_768])
        let mono24 = try PipeSourceSpec(parsing: "pipe:/p?format=s24le&channels=1")
        out = []
        _ = [UInt8]([0x00, 0x00, 0xc0]).withUnsafeBytes { mono24.convert($0, into: &out) } // -0.5, doubled to both sides
        #expect(out == [-0.5, -0.5])
        let f32 = try PipeSourceSpec(parsing: "pipe:/p?format=f32le&channels=2")
        out = []
        var raw: [UInt8] = []
        for v in [Float(0.25), .nan, 3, -0.75] { withUnsafeBytes(of: v.bitPattern.littleEndian) { raw += $0 } }
        _ = raw.withUnsafeBytes { f32.convert($0, into: &out) }
        #expect(out == [0.25, 0, 1, -0.75], "NaN is silence, overs are clipped")
    }
}
