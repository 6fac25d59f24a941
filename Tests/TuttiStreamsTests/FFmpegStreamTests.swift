import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDecode
@testable import TuttiStreams
import TuttiTestSupport

/// AAC and Ogg radio: Icecast-style streams from the local test server,
/// decoded by FFmpeg reading the HTTP layer's bytes (ICY metadata cut out
/// by it, titles reported as for MP3).
@Suite struct FFmpegStreamTests {
    /// `seconds` of a tone encoded by ffmpeg with `args` into `name`.
    static func make(_ name: String, _ args: [String], seconds: Double = 8, rate: Int = 44_100) throws -> String {
        let dir = makeTemporaryDirectory("ffstream")
        let path = dir + "/" + name
        try runTool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=523:sample_rate=\(rate):duration=\(seconds)", "-ac", "2"]
                    + args + [path])
        return path
    }

    @Test func anAACIcecastStreamPlaysWithItsTitles() throws {
        let aac = try Self.make("radio.aac", ["-c:a", "aac", "-b:a", "128k"])
        let server = try TestServer(file: aac)
        let titles = Collector<String>()
        let source = try NetworkSource(url: server.url("/icy.mp3?type=audio%2Faacp"), options: testOptions(), onMetadata: { m in
            if let t = m.title, titles.all.last != t { titles.append(t) }
        })
        #expect(source.codec == "aac")
        #expect(source.sampleRate == 44_100)
        #expect(source.isLive)
        #expect(throws: AudioError.self) { try source.seek(toFrame: 10) }
        let decoded = try decodeAll(source)
        // The metadata blocks were cut out exactly: the same samples as the file decoded from disk.
        let local = try decodeAll(try AudioFile.open(aac))
        print("AAC over ICY: \(decoded.count / 2) frames, from disk \(local.count / 2)")
        #expect(decoded.count == local.count)
        #expect(maxAbsDifference(decoded, local) < 1e-6)
        let expected = ["Artist 0 - Song 0", "Guns N' Roses - Don't Cry", "Sigur Rós – Hoppípolla", "Björk - Jóga"]
        waitUntil(timeout: 2) { titles.all.count >= expected.count }
        #expect(titles.all == expected)
    }

    /// Served as audio/mpeg: libmpg123 finds no frame, FFmpeg probes the same bytes and plays them.
    @Test(arguments: [("radio.opus", ["-c:a", "libopus"], 48_000, "opus"), ("radio.ogg", ["-c:a", "libvorbis"], 44_100, "vorbis")])
    func anOggStreamUnderTheWrongTypeIsFoundByProbing(name: String, args: [String], rate: Int, codec: String) throws {
        let file = try Self.make(name, args, seconds: 3, rate: rate)
        let server = try TestServer(file: file)
        let source = try NetworkSource(url: server.url("/live?drop=100000000"), options: testOptions())
        #expect(source.codec == codec)
        #expect(source.sampleRate == rate)
        let decoded = try decodeAll(source)
        let local = try decodeAll(try AudioFile.open(file))
        print("\(codec) probed: \(decoded.count / 2) frames, from disk \(local.count / 2)")
        #expect(decoded.count == local.count)
        #expect(maxAbsDifference(decoded, local) < 1e-6)
    }

    /// A podcast-style M4A over HTTP whose index (moov) is at its end: FFmpeg reads
    /// it through Range requests, so the length is exact and seeking lands where a
    /// local file's does.
    @Test func anM4AFileOverHTTPSeeksAndKnowsItsLength() throws {
        let m4a = try Self.make("episode.m4a", ["-c:a", "aac", "-b:a", "128k", "-movie_timescale", "44100"], seconds: 4)
        let server = try TestServer(file: m4a)
        let source = try NetworkSource(url: server.url("/file.mp3?type=audio%2Fmp4"), options: testOptions())
        let local = try AudioFile.open(m4a)
        #expect(source.codec == "aac")
        #expect(!source.isLive)
        #expect(source.frameCount == local.frameCount)
        #expect(source.frameCount == 4 * 44_100)
        try source.seek(toFrame: 100_000)
        try local.seek(toFrame: 100_000)
        var a: [Float] = [], b: [Float] = []
        while a.count < 9_600, try source.read(into: &a, maxFrames: 4_800 - a.count / 2) > 0 {}
        while b.count < 9_600, try local.read(into: &b, maxFrames: 4_800 - b.count / 2) > 0 {}
        #expect(a.count == 9_600)
        #expect(maxAbsDifference(a, b) < 1e-6, "after a seek, the same samples as the local file")
        let rest = try decodeAll(source)
        #expect((a.count + rest.count) / 2 == 4 * 44_100 - 100_000)
        #expect(try server.connections("/file.mp3") >= 2, "a Range request for the index or the seek")
    }

    @Test func garbageUnderAnAudioTypeIsAClearError() throws {
        let dir = makeTemporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir + "/junk", contents: Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7_919) }))
        let server = try TestServer(file: dir + "/junk")
        #expect(throws: StreamError.self) { try NetworkSource(url: server.url("/file.mp3?type=audio%2Faac"), options: testOptions()) }
    }
}
