import Testing
import TuttiCore

/// The one FNV-1a (offline cache names, the leader's id, entity tags, AirPlay cover ids).
@Suite struct FNV1aTests {
    /// The reference vectors of FNV's authors (64-bit FNV-1a).
    @Test func matchesTheReferenceVectors() {
        #expect(FNV1a.hash([UInt8]()) == 0xcbf2_9ce4_8422_2325)
        #expect(FNV1a.hash("a".utf8) == 0xaf63_dc4c_8601_ec8c)
        #expect(FNV1a.hash("foobar".utf8) == 0x8594_4171_f739_67e8)
        // Contiguous or not, in one piece or several: the same value.
        var pieces = FNV1a()
        pieces.update("foo".utf8)
        pieces.update(repeatElement(UInt8(ascii: "b"), count: 1))
        pieces.update(Array("ar".utf8)[...])
        #expect(pieces.value == 0x8594_4171_f739_67e8)
    }

    @Test func hexKeepsLeadingZeros() {
        #expect(FNV1a.hex(0xabc) == "0000000000000abc")
        #expect(FNV1a.hex("foobar".utf8) == "85944171f73967e8")
    }

    /// A phone's cover id is worked out when the picture arrives (not per
    /// request), follows the picture, and goes with it.
    @Test func anAirPlayCoverIDComesWithItsPicture() {
        var s = AirPlaySession(releaseGrace: 1_000)
        _ = s.handle(AirPlayMetadataItem(type: "ssnc", code: "pbeg", data: []), now: 0)
        #expect(s.nowPlaying.artworkID == nil)
        let art: [UInt8] = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        _ = s.handle(AirPlayMetadataItem(type: "ssnc", code: "PICT", data: art), now: 1)
        let id = s.nowPlaying.artworkID
        #expect(id == "a1a1a1a1" + FNV1a.hex(art))
        #expect(id.map(AirPlayArtwork.isID) == true)
        _ = s.handle(AirPlayMetadataItem(type: "ssnc", code: "PICT", data: [1, 2, 3]), now: 2)
        #expect(s.nowPlaying.artworkID == AirPlayArtwork.id(of: [1, 2, 3]))
        _ = s.handle(AirPlayMetadataItem(type: "ssnc", code: "PICT", data: []), now: 3)
        #expect(s.nowPlaying.artworkID == nil)
    }
}
