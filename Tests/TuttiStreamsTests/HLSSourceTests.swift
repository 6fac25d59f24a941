import Foundation
import Testing
import TuttiAudio
import TuttiCore
import TuttiDecode
@testable import TuttiStreams
import TuttiTestSupport


/// HLS radio from a local server: VOD in MPEG-TS and fMP4 segments, and a
/// live sliding window played as it grows; a tone's frequency and length
/// come out right and no segment is lost.
@Suite struct HLSSourceTests {
    /// `seconds` of a 1 kHz tone cut by ffmpeg into HLS segments of one second in `dir`.
    static func makeHLS(_ dir: String, seconds: Double, fmp4: Bool) throws {
        var args = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=44100:duration=\(seconds)", "-ac", "2",
                    "-c:a", "aac", "-b:a", "96k", "-f", "hls", "-hls_time", "1", "-hls_list_size", "0", "-hls_playlist_type", "vod"]
        if fmp4 { args += ["-hls_segment_type", "fmp4", "-hls_fmp4_init_filename", "init.mp4"] }
        try runTool(args + [dir + "/index.m3u8"])
    }

    static func serve(_ dir: String) throws -> TestServer {
        try hlsTestServerScript.write(toFile: dir + "/server.py", atomically: true, encoding: .utf8)
        return try TestServer(script: dir + "/server.py", arguments: [dir])
    }

    /// Seconds of audio and the tone's frequency (zero crossings of the left channel).
    static func measure(_ samples: [Float], rate: Int) -> (seconds: Double, hertz: Double) {
        let frames = samples.count / 2
        var crossings = 0
        for f in 1..<frames where (samples[2 * f] < 0) != (samples[2 * f - 2] < 0) { crossings += 1 }
        let seconds = Double(frames) / Double(rate)
        return (seconds, Double(crossings) / 2 / seconds)
    }

    @Test(arguments: [false, true])
    func aVODStreamPlaysWhole(fmp4: Bool) throws {
        let dir = makeTemporaryDirectory("hls-vod-\(fmp4)")
        try Self.makeHLS(dir, seconds: 5, fmp4: fmp4)
        let server = try Self.serve(dir)
        defer { server.stop() }
        // Through the opener: an .m3u8 URL resolves to an HLS source.
        let decoder = try SourceOpener(options: testOptions()).open(server.url("/index.m3u8"))
        let hls = try #require(decoder as? HLSSource)
        #expect(hls.codec == "aac")
        #expect(hls.sampleRate == 44_100)
        let (seconds, hertz) = Self.measure(try decodeAll(hls), rate: hls.sampleRate)
        print("HLS VOD (\(fmp4 ? "fMP4" : "TS")): \(seconds) s of a \(hertz) Hz tone for 5 s of 1000 Hz")
        #expect(abs(seconds - 5) < 0.1)
        #expect(abs(hertz - 1_000) < 2)
        #expect(hls.skippedSegments == 0)
    }

    @Test func aLiveSlidingWindowPlaysAsItGrows() throws {
        let dir = makeTemporaryDirectory("hls-live")
        try Self.makeHLS(dir, seconds: 3, fmp4: false)
        let server = try Self.serve(dir)
        defer { server.stop() }
        let titles = Collector<String>()
        let started = Date()
        let hls = try HLSSource(url: server.url("/live.m3u8"), options: testOptions(), onMetadata: { m in
            if let t = m.title { titles.append(t) }
        })
        let (seconds, hertz) = Self.measure(try decodeAll(hls), rate: hls.sampleRate)
        let took = Date().timeIntervalSince(started)
        print("HLS live: \(seconds) s of a \(hertz) Hz tone for 3 s of 1000 Hz, in \(took) s, \(hls.skippedSegments) segments skipped")
        #expect(abs(seconds - 3) < 0.1)
        #expect(abs(hertz - 1_000) < 2)
        #expect(hls.skippedSegments == 0)
        // It waited for the segments to appear (two at start, one a second after).
        #expect(took > 0.9)
        #expect(titles.all.first == "Live index0.ts")
    }

    /// The server is down for 1.2 s while a live playlist plays: its
    /// reloads fail and are tried again after a back-off (not at once, five
    /// times in a few milliseconds, which ended the stream), and the stream
    /// plays on whole.
    @Test func aLivePlaylistOutlivesAShortOutage() throws {
        let dir = makeTemporaryDirectory("hls-outage")
        try Self.makeHLS(dir, seconds: 3, fmp4: false)
        let server = try Self.serve(dir)
        defer { server.stop() }
        let warnings = Collector<String>()
        let log = Logger(label: "test") { level, _, message in if level >= .warning { warnings.append(message) } }
        let hls = try HLSSource(url: server.url("/outage.m3u8"), options: testOptions(), log: log)
        let (seconds, _) = Self.measure(try decodeAll(hls), rate: hls.sampleRate)
        let retries = warnings.all.filter { $0.contains("HLS playlist reload failed") }
        print("HLS outage: \(seconds) s of 3 s; \(retries)")
        #expect(abs(seconds - 3) < 0.1)
        #expect(hls.skippedSegments == 0)
        #expect(!retries.isEmpty && retries.count < 5, "\(warnings.all)")
        #expect(retries.first?.contains("retry 1 in 0.4") == true || retries.first?.contains("retry 1 in 0.5") == true, "\(retries)")
    }

    /// Packed audio: ADTS segments, each after an ID3 tag naming its song,
    /// as stations serve them: the songs are reported in order and the audio
    /// plays whole (the tags left out of what FFmpeg reads).
    @Test func packedAudioSegmentsReportTheirSongs() throws {
        let dir = makeTemporaryDirectory("hls-packed")
        try runTool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=44100:duration=2", "-ac", "2",
                     "-c:a", "aac", "-b:a", "96k", dir + "/all.aac"])
        let adts = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/all.aac")))
        // ADTS frames, cut into two segments at a frame boundary.
        var starts: [Int] = [], at = 0
        while at + 7 <= adts.count {
            starts.append(at)
            at += Int(adts[at + 3] & 0x03) << 11 | Int(adts[at + 4]) << 3 | Int(adts[at + 5]) >> 5
        }
        let cut = starts[starts.count / 2]
        func id3(_ title: String, _ artist: String) -> [UInt8] {
            func synchsafe(_ n: Int) -> [UInt8] { [UInt8(n >> 21 & 0x7F), UInt8(n >> 14 & 0x7F), UInt8(n >> 7 & 0x7F), UInt8(n & 0x7F)] }
            var body: [UInt8] = []
            for (id, text) in [("TIT2", title), ("TPE1", artist)] {
                let payload: [UInt8] = [3] + Array(text.utf8)
                body += Array(id.utf8) + synchsafe(payload.count) + [0, 0] + payload
            }
            return Array("ID3".utf8) + [4, 0, 0] + synchsafe(body.count) + body
        }
        try Data(id3("Jóga", "Björk") + adts[..<cut]).write(to: URL(fileURLWithPath: dir + "/s0.aac"))
        try Data(id3("서울의 밤", "김민준") + adts[cut...]).write(to: URL(fileURLWithPath: dir + "/s1.aac"))
        try "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\ns0.aac\n#EXTINF:1,\ns1.aac\n#EXT-X-ENDLIST\n"
            .write(toFile: dir + "/index.m3u8", atomically: true, encoding: .utf8)
        let server = try Self.serve(dir)
        defer { server.stop() }
        let titles = Collector<String>()
        let hls = try HLSSource(url: server.url("/index.m3u8"), options: testOptions(), onMetadata: { m in
            if let t = m.title { titles.append(t) }
        })
        let decoded = try decodeAll(hls)
        #expect(decoded.count / 2 == starts.count * 1_024, "every ADTS frame decoded: \(decoded.count / 2) frames")
        #expect(titles.all == ["Björk - Jóga", "김민준 - 서울의 밤"])
    }

    @Test func aMissingSegmentOrAnEncryptedStreamIsAClearError() throws {
        let dir = makeTemporaryDirectory("hls-bad")
        try "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\ngone.ts\n".write(toFile: dir + "/index.m3u8", atomically: true, encoding: .utf8)
        try "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:1,\na.ts\n".write(toFile: dir + "/secret.m3u8", atomically: true, encoding: .utf8)
        let server = try Self.serve(dir)
        defer { server.stop() }
        do { _ = try HLSSource(url: server.url("/index.m3u8"), options: testOptions()); Issue.record("opened") } catch {
            #expect(error.description.contains("HLS segment"), "\(error)")
        }
        do { _ = try HLSSource(url: server.url("/secret.m3u8"), options: testOptions()); Issue.record("opened") } catch {
            #expect(error.description.contains("AES-128"), "\(error)")
        }
    }
}
