import Testing
import TuttiCore
@testable import TuttiDaemon

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
        let reply: [String: Any] = ["i": 3, "whole": 12.0, "half": 0.5, "big": 1e20, "small": 1.5e-7, "neg": -2.25,
                                    "list": [0.1, 2.0], "none": JSONValue.null, "id": JSONValue.number(7), "ok": true,
                                    "s": "a\"b\\c\n/é", "nested": ["z": 1, "a": [String: Any]()] as [String: Any]]
        let text = String(decoding: try #require(ReplyJSON.encode(reply)), as: UTF8.self)
        #expect(text == #"{"big":1e+20,"half":0.5,"i":3,"id":7,"list":[0.1,2],"neg":-2.25,"nested":{"a":{},"z":1},"none":null,"ok":true,"s":"a\"b\\c\n/é","small":1.5e-07,"whole":12}"#)
        // Parsed back, the same values.
        let parsed = try #require(JSONValue.parsing(Array(text.utf8))?.object)
        #expect(parsed["whole"]?.integer == 12 && parsed["half"]?.number == 0.5 && parsed["ok"]?.bool == true)
        #expect(parsed["ok"]?.number == nil, "a boolean is no number")
        #expect(parsed["list"]?.numbers == [0.1, 2] && parsed["none"] == .null)
    }
}
