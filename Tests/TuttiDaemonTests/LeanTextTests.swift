import Testing
import TuttiCore
@testable import TuttiLibrary
@testable import TuttiDaemon
@testable import TuttiLeader
@testable import TuttiControlKit
@testable import TuttiMPD
@testable import TuttiJSONRPC

/// What replaced Foundation in the leader: path arithmetic as NSString did
/// it, and JSON written the way clients have always read it.
struct LeanTextTests {
    @Test func pathsSplitAsNSStringSplitThem() {
        #expect(PathText.parent("/music/a/b.mp3") == "/music/a")
        #expect(PathText.parent("/music/a/") == "/music")
        #expect(PathText.parent("/b.mp3") == "/")
        #expect(PathText.parent("/") == "/")
        #expect(PathText.parent("state.db") == "")
        #expect(PathText.lastComponent("/music/a/b.mp3") == "b.mp3")
        #expect(PathText.lastComponent("/music/a/") == "a")
        #expect(PathText.title("/music/x.y/Song.name.flac") == "Song.name")
        #expect(PathText.title("/music/.hidden") == ".hidden")
        #expect(PathText.standardized("/a/./b/../c//") == "/a/c")
        #expect(PathText.standardized("/../a") == "/a")
        #expect(PathText.fileExtension("/m/b.FLAC") == "FLAC")
        #expect(PathText.fileExtension("/m/.hidden") == "" && PathText.fileExtension("/m/a.d/b") == "")
        #expect(PathText.fileExtension("c.tar.gz") == "gz" && PathText.fileExtension("") == "")
    }

    @Test func repliesWriteNumbersAsBefore() throws {
        let reply: JSONValue = ["i": 3, "whole": 12.0, "half": 0.5, "big": 1e20, "small": 1.5e-7, "neg": -2.25,
                                "list": [0.1, 2.0], "none": JSONValue.null, "id": JSONValue.number(7), "ok": true,
                                "s": "a\"b\\c\n/é", "nested": ["z": 1, "a": [:]]]
        let text = String(decoding: reply.encoded(), as: UTF8.self)
        #expect(text == #"{"big":1e+20,"half":0.5,"i":3,"id":7,"list":[0.1,2],"neg":-2.25,"nested":{"a":{},"z":1},"none":null,"ok":true,"s":"a\"b\\c\n/é","small":1.5e-07,"whole":12}"#)
        // Parsed back, the same values.
        let parsed = try #require(JSONValue.parsing(Array(text.utf8))?.object)
        #expect(parsed["whole"]?.integer == 12 && parsed["half"]?.number == 0.5 && parsed["ok"]?.bool == true)
        #expect(parsed["ok"]?.number == nil, "a boolean is no number")
        #expect(parsed["list"]?.numbers == [0.1, 2] && parsed["none"] == .null)
    }

    /// A search's tracks are written straight into bytes: exactly what the
    /// generic encoder made of `trackObject`'s dictionaries.
    @Test func tracksEncodeAsTheirObjectsDid() throws {
        let full = Track(id: TrackID(42), path: "/music/a \"b\"\\c\n.flac", format: .flac, title: "Song Nümber 1\t", artist: "Björk",
                         album: "東京", albumArtist: "Various", genre: "Pop", trackNumber: 3, discNumber: 2, year: 1999,
                         durationFrames: 441_000 + 7, sampleRate: 44_100, fileSize: 10, modifiedNanoseconds: 0, contentHash: "h", coverHash: "abc")
        let bare = Track(id: TrackID(-1), path: "/m/x.wav", format: .wav, title: "", artist: nil, album: nil, albumArtist: nil, genre: nil,
                         trackNumber: nil, discNumber: nil, year: nil, durationFrames: 0, sampleRate: 0, fileSize: 0,
                         modifiedNanoseconds: 0, contentHash: "", coverHash: nil)
        for tracks in [[], [full], [bare, full, bare]] {
            let expected = JSONValue.array(tracks.map { .object(ControlServer.trackObject($0)) }).encoded()
            #expect(String(decoding: ControlServer.encodeTracks(tracks).bytes, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
        }
        // Inside a reply, in place.
        let reply = EncodedJSON(object: ["a": 1], encoded: ["tracks": ControlServer.encodeTracks([bare])]).bytes
        #expect(String(decoding: reply, as: UTF8.self).hasPrefix(#"{"a":1,"tracks":[{"duration":0,"format":"wav","id":-1,"#))
    }
}
