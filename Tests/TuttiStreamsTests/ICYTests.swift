import Testing
@testable import TuttiStreams

@Suite struct ICYTests {
    /// Builds an ICY byte stream of `audio` with `blocks[k]` after the k-th interval.
    func interleave(_ audio: [UInt8], metaint: Int, blocks: [Int: String]) -> [UInt8] {
        var out: [UInt8] = []
        var k = 0, i = 0
        while i < audio.count {
            let n = min(metaint, audio.count - i)
            out += audio[i..<(i + n)]
            i += n
            guard n == metaint else { break }
            if let text = blocks[k] {
                var bytes = Array(text.utf8)
                let l = (bytes.count + 15) / 16
                bytes += [UInt8](repeating: 0, count: l * 16 - bytes.count)
                out += [UInt8(l)] + bytes
            } else {
                out.append(0)
            }
            k += 1
        }
        return out
    }

    @Test func demuxerSplitsAudioFromMetadataInAnyChunking() {
        let audio = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let stream = interleave(audio, metaint: 100, blocks: [0: "StreamTitle='A';", 5: "StreamTitle='B';", 99: "StreamTitle='C';"])
        for chunk in [1, 3, 17, 100, 101, 4_096] {
            var demuxer = ICYDemuxer(metaint: 100)
            var gotAudio: [UInt8] = []
            var titles: [String] = []
            var i = 0
            while i < stream.count {
                let slice = Array(stream[i..<min(stream.count, i + chunk)])
                slice.withUnsafeBytes { demuxer.process($0, audio: { gotAudio += $0 }, metadata: { block in
                    var m = StreamMetadata()
                    ICYText.apply(block, to: &m)
                    titles.append(m.title ?? "?")
                }) }
                i += chunk
            }
            #expect(gotAudio == audio, "chunk \(chunk)")
            #expect(titles == ["A", "B", "C"], "chunk \(chunk)")
        }
    }

    @Test func titlesWithQuotesAndSemicolons() {
        func title(_ s: String) -> String? {
            var m = StreamMetadata()
            ICYText.apply(Array(s.utf8) + [0, 0, 0], to: &m)
            return m.title
        }
        #expect(title("StreamTitle='Guns N' Roses - Don't Cry';StreamUrl='';") == "Guns N' Roses - Don't Cry")
        #expect(title("StreamTitle='It's; a trap';") == "It's; a trap")
        #expect(title("StreamTitle='a';b';StreamUrl='x';") == "a';b")
        #expect(title("StreamTitle='';") == "")
        #expect(title("StreamTitle='unterminated") == "unterminated")
        let fields = ICYText.fields(Array("StreamTitle='T';StreamUrl='http://x/?a=1;b=2';".utf8))
        #expect(fields.map(\.key) == ["StreamTitle", "StreamUrl"])
        #expect(fields.last?.value == "http://x/?a=1;b=2")
    }

    @Test func latin1AndUTF8() {
        var m = StreamMetadata()
        ICYText.apply([UInt8]("StreamTitle='Bj".utf8) + [0xF6] + [UInt8]("rk';".utf8), to: &m)
        #expect(m.title == "Björk")
        ICYText.apply(Array("StreamTitle='Sigur Rós';".utf8), to: &m)
        #expect(m.title == "Sigur Rós")
        #expect(ICYText.repairLatin1("Sigur RÃ³s") == "Sigur Rós")
        #expect(ICYText.repairLatin1("Björk") == "Björk")
    }

    @Test func stationHeaders() {
        let m = StreamMetadata(headers: ["Icy-Name": " Radio X ", "icy-genre": "Jazz", "icy-br": "128,128", "icy-url": "http://x"])
        #expect(m == StreamMetadata(stationName: "Radio X", genre: "Jazz", stationURL: "http://x", bitrateKbps: 128))
    }

    @Test func contentRange() {
        #expect(HTTPStream.rangeStart("bytes 100-199/1000") == 100)
        #expect(HTTPStream.rangeStart("bytes */1000") == nil)
    }
}
