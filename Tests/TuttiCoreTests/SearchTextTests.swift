import Testing
import TuttiCore

@Suite struct SearchTextTests {
    @Test func mpdFoldIsCaseOnly() {
        #expect(SearchText.mpdFold("CAFÉ") == "café")
        #expect(SearchText.mpdFold("Café") != "cafe") // MPD 0.23 keeps diacritics
        #expect(SearchText.mpdFold("STRASSE") == SearchText.mpdFold("Straße"))
        #expect(SearchText.mpdFold("ÀBC 東京") == "àbc 東京")
        #expect(SearchText.mpdFold("Hello World") == "hello world")
    }

    @Test func haystackKeepsValuesApart() {
        let h = SearchText.mpdHaystack(["Night", nil, "Drive", "12"])
        #expect(h == "night\ndrive\n12")
        #expect(!h.contains("nightdrive"))
        // A line break inside a value is a space: the first line is the whole title.
        #expect(SearchText.mpdHaystack(["Two\nLines", "Artist"]) == "two lines\nartist")
        #expect(SearchText.mpdHaystack(["Crlf\r\nTitle"]).split(separator: "\n").count == 1)
    }

    @Test func wordFoldComparesWholeTexts() {
        #expect(SearchText.wordFold("Song Number 1") == "song number 1")
        #expect(SearchText.wordFold("  song, number   1! ") == "song number 1")
        #expect(SearchText.wordFold("Beyoncé") == SearchText.wordFold("BEYONCE"))
        #expect(SearchText.wordFold("Sigur Rós") == "sigur ros")
        #expect(SearchText.wordFold("AC/DC") == "ac dc")
        // ASCII takes a path of its own: the same rules.
        #expect(SearchText.wordFold("--Hello__World--2000s!!") == "hello world 2000s")
        #expect(SearchText.wordFold("\t[Live]\n@ The 9:30 Club ") == "live the 9 30 club")
        #expect(SearchText.wordFold("!?*") == "")
        #expect(SearchText.wordFold("Zz") == "zz" && SearchText.wordFold("Zé") == "ze")
        #expect(SearchText.wordFold("東京タワー") == "東京タワー")
    }

    @Test func cjkGramsAreEveryOneAndTwoCharacterPiece() {
        #expect(SearchText.cjkGrams(["東京タワー"]) == "東 東京 京 京タ タ タワ ワ ワー ー")
        #expect(SearchText.cjkGrams(["Love 사랑", "Tokyo"]) == "사 사랑 랑")
        #expect(SearchText.cjkGrams(["Plain", nil]) == nil)
        #expect(SearchText.cjkGrams(["夜", "夜"]) == "夜") // each gram once
    }
}
