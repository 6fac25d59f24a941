import Testing
import TuttiCore

/// HLS playlists parsed and the client's decisions (which segment, when to
/// reload, the sliding window, the end) on a fake clock.
@Suite struct HLSTests {
    static let base = "http://radio.example/live/index.m3u8"

    static func live(first: Int, count: Int, target: Double = 6, ended: Bool = false) -> HLSMediaPlaylist {
        var text = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:\(Int(target))\n#EXT-X-MEDIA-SEQUENCE:\(first)\n"
        for s in first..<(first + count) { text += "#EXTINF:\(target),Song \(s)\nseg\(s).ts\n" }
        if ended { text += "#EXT-X-ENDLIST\n" }
        guard case .media(let m) = try! HLSPlaylist.parse(text, url: base) else { fatalError("not a media playlist") }
        return m
    }

    @Test func aMediaPlaylistReadsSegmentsTitlesAndItsInitSection() throws {
        let text = """
        #EXTM3U
        #EXT-X-VERSION:7
        #EXT-X-TARGETDURATION:4
        #EXT-X-MEDIA-SEQUENCE:120
        #EXT-X-MAP:URI="init.mp4"
        #EXT-X-PROGRAM-DATE-TIME:2026-12-06T05:00:00Z
        #EXTINF:3.968,Artist - Title
        a/seg120.m4s
        #EXT-X-DISCONTINUITY
        #EXTINF:4.011,
        /abs/seg121.m4s?token=x
        #EXTINF:4,
        https://cdn.example/seg122.m4s
        #EXT-X-ENDLIST
        """
        guard case .media(let m) = try HLSPlaylist.parse(text, url: Self.base) else { Issue.record("not media"); return }
        #expect(m.targetDuration == 4)
        #expect(m.mediaSequence == 120)
        #expect(m.hasEnded)
        #expect(m.initSection == "http://radio.example/live/init.mp4")
        #expect(m.segments.map(\.sequence) == [120, 121, 122])
        #expect(m.segments.map(\.url) == ["http://radio.example/live/a/seg120.m4s", "http://radio.example/abs/seg121.m4s?token=x",
                                          "https://cdn.example/seg122.m4s"])
        #expect(m.segments[0].title == "Artist - Title")
        #expect(m.segments[0].programDateTime == "2026-12-06T05:00:00Z")
        #expect(m.segments[1].discontinuity)
        #expect(m.segments[1].duration == 4.011)
    }

    @Test func theBestAudioVariantIsChosenElseTheAudioRendition() throws {
        let text = """
        #EXTM3U
        #EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS="mp4a.40.5"
        low/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS="avc1.4d401f,mp4a.40.2",RESOLUTION=1280x720
        video/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=128000,CODECS="mp4a.40.2"
        high/index.m3u8
        """
        guard case .multivariant(let v) = try HLSPlaylist.parse(text, url: Self.base) else { Issue.record("not multivariant"); return }
        #expect(v.count == 3)
        #expect(HLSVariant.choose(v) == "http://radio.example/live/high/index.m3u8")
        let videoOnly = """
        #EXTM3U
        #EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS="avc1.4d401f,mp4a.40.2",AUDIO="aud"
        video/index.m3u8
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",DEFAULT=YES,URI="audio/en.m3u8"
        """
        guard case .multivariant(let w) = try HLSPlaylist.parse(videoOnly, url: Self.base) else { Issue.record("not multivariant"); return }
        #expect(HLSVariant.choose(w) == "http://radio.example/live/audio/en.m3u8")
    }

    @Test func whatCannotBePlayedIsRefusedClearlyAndSizesAreBounded() throws {
        #expect(throws: HLSPlaylistError.self) { try HLSPlaylist.parse("seg1.ts\n", url: Self.base) }
        let encrypted = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:6,\ns.ts\n"
        do { _ = try HLSPlaylist.parse(encrypted, url: Self.base); Issue.record("encrypted accepted") } catch {
            #expect(error.description.contains("AES-128"))
        }
        #expect(throws: HLSPlaylistError.self) { try HLSPlaylist.parse("#EXTM3U\n#EXTINF:6,\ns.ts\n", url: Self.base) } // no target duration
        // Numbers that would trap or hang further on are refused where they enter.
        for bad in ["#EXT-X-MEDIA-SEQUENCE:9223372036854775807", "#EXT-X-MEDIA-SEQUENCE:-5"] {
            #expect(throws: HLSPlaylistError.self) { try HLSPlaylist.parse("#EXTM3U\n#EXT-X-TARGETDURATION:6\n\(bad)\n#EXTINF:6,\ns.ts\n", url: Self.base) }
        }
        for bad in ["inf", "nan", "1e12"] {
            #expect(throws: HLSPlaylistError.self) { try HLSPlaylist.parse("#EXTM3U\n#EXT-X-TARGETDURATION:\(bad)\n#EXTINF:6,\ns.ts\n", url: Self.base) }
        }
        var huge = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n"
        for i in 0..<20_000 { huge += "#EXTINF:1,\ns\(i).ts\n" }
        guard case .media(let m) = try HLSPlaylist.parse(huge, url: Self.base) else { return }
        #expect(m.segments.count == HLSPlaylist.maxSegments)
    }

    @Test func aLiveStreamStartsNearItsEndAndReloadsEveryTargetDuration() {
        var session = HLSSession()
        session.update(Self.live(first: 100, count: 10), now: 0)
        // Three target durations (18 s of 6 s segments) from the end: 107, 108, 109.
        var fetched: [Int] = []
        while case .fetch(let s, _) = session.step(now: 0) { fetched.append(s.sequence) }
        #expect(fetched == [107, 108, 109])
        #expect(session.step(now: 0) == .reload(at: 6))
        // The window slid by one: the new segment, then a reload a target duration later.
        session.update(Self.live(first: 101, count: 10), now: 6)
        #expect(session.step(now: 6) == .fetch(Self.live(first: 101, count: 10).segments.last!, initSection: nil))
        #expect(session.step(now: 6) == .reload(at: 12))
        // Nothing new: half a target duration.
        session.update(Self.live(first: 101, count: 10), now: 12)
        #expect(session.step(now: 12) == .reload(at: 15))
        #expect(session.missedSegments == 0)
    }

    @Test func aClientThatFellOutOfTheWindowJumpsAheadAndCountsWhatItMissed() {
        var session = HLSSession()
        session.update(Self.live(first: 0, count: 3), now: 0)
        while case .fetch = session.step(now: 0) {}
        session.update(Self.live(first: 10, count: 3), now: 30)
        guard case .fetch(let s, _) = session.step(now: 30) else { Issue.record("no segment"); return }
        #expect(s.sequence == 10)
        #expect(session.missedSegments == 7)
    }

    @Test func vodPlaysFromTheStartToTheEndAndADeadStreamStalls() {
        var vod = HLSSession()
        vod.update(Self.live(first: 5, count: 4, ended: true), now: 0)
        var fetched: [Int] = []
        while case .fetch(let s, _) = vod.step(now: 0) { fetched.append(s.sequence) }
        #expect(fetched == [5, 6, 7, 8])
        #expect(vod.step(now: 0) == .finished)

        var dead = HLSSession()
        dead.update(Self.live(first: 0, count: 2, target: 2), now: 0)
        while case .fetch = dead.step(now: 0) {}
        var now = 0.0
        while case .reload(let at) = dead.step(now: now) {
            now = at
            dead.update(Self.live(first: 0, count: 2, target: 2), now: now)
            if now > 100 { break }
        }
        guard case .stalled(let seconds) = dead.step(now: now) else { Issue.record("never stalled"); return }
        #expect(seconds > 12 && seconds <= 14)
    }

    @Test func theInitSectionComesBeforeTheFirstSegmentOnly() throws {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2,\na.m4s\n#EXTINF:2,\nb.m4s\n#EXT-X-ENDLIST\n"
        guard case .media(let m) = try HLSPlaylist.parse(text, url: Self.base) else { return }
        var session = HLSSession()
        session.update(m, now: 0)
        guard case .fetch(_, let first) = session.step(now: 0), case .fetch(_, let second) = session.step(now: 0) else {
            Issue.record("no segments"); return
        }
        #expect(first == "http://radio.example/live/init.mp4")
        #expect(second == nil)
    }
}

/// The ID3 tag that starts a packed-audio segment: the song, and the bytes to leave out.
@Suite struct HLSTimedMetadataTests {
    static func synchsafe(_ n: Int) -> [UInt8] { [UInt8(n >> 21 & 0x7F), UInt8(n >> 14 & 0x7F), UInt8(n >> 7 & 0x7F), UInt8(n & 0x7F)] }

    /// An ID3v2.4 tag of UTF-8 text frames (and a PRIV frame, as HLS' timestamp).
    static func id3v24(_ frames: [(String, String)]) -> [UInt8] {
        var body: [UInt8] = Array("PRIV".utf8) + synchsafe(8) + [0, 0] + Array("com.app\0".utf8)
        for (id, text) in frames {
            let payload: [UInt8] = [3] + Array(text.utf8)
            body += Array(id.utf8) + synchsafe(payload.count) + [0, 0] + payload
        }
        return Array("ID3".utf8) + [4, 0, 0] + synchsafe(body.count) + body
    }

    @Test func titleAndArtistAreReadAndTheTagsLengthGiven() {
        let tag = Self.id3v24([("TIT2", "Hoppípolla"), ("TPE1", "Sigur Rós")])
        let segment = tag + [0xFF, 0xF1, 0x50, 0x80]
        let read = HLSTimedMetadata.read(segment[...])
        #expect(read?.length == tag.count)
        #expect(read?.streamTitle == "Sigur Rós - Hoppípolla")
        #expect(HLSTimedMetadata.read([0xFF, 0xF1, 0x50, 0x80][...]) == nil)
    }

    @Test func utf16AndABrokenTagAreHandled() {
        // ID3v2.3, UTF-16 with a little-endian BOM.
        let text: [UInt8] = [1, 0xFF, 0xFE] + Array("서울".utf16).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let frame = Array("TIT2".utf8) + [0, 0, 0, UInt8(text.count), 0, 0] + text
        let tag = Array("ID3".utf8) + [3, 0, 0] + Self.synchsafe(frame.count) + frame
        #expect(HLSTimedMetadata.read(tag[...])?.title == "서울")
        // A tag that claims more than the segment holds: its length, nothing read.
        let broken = Array("ID3".utf8) + [4, 0, 0] + Self.synchsafe(100_000) + [1, 2, 3]
        #expect(HLSTimedMetadata.read(broken[...]) == .init(length: 100_010, title: nil, artist: nil))
    }
}
