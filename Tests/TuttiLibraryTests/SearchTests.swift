import Foundation
import Testing
import TuttiCore
@testable import TuttiLibrary
import TuttiTestSupport

/// A library of tagged WAVs (RIFF INFO tags need no encoder, so this is fast).
private func searchLibrary(_ name: String = #function, extra: [(String, [String: String])] = []) throws -> Library {
    let dir = makeTemporaryDirectory(name)
    let media = MediaFactory(dir: dir + "/music", frames: 441)
    let songs: [(String, [String: String])] = [
        ("halo.wav", ["INAM": "Halo", "IART": "Beyoncé", "IPRD": "I Am... Sasha Fierce", "IGNR": "R&B"]),
        ("crazy.wav", ["INAM": "Crazy in Love", "IART": "Beyoncé", "IPRD": "Dangerously in Love", "IGNR": "R&B"]),
        ("highway.wav", ["INAM": "Highway to Hell", "IART": "AC/DC", "IPRD": "Highway to Hell", "IGNR": "Rock"]),
        ("tokyo.wav", ["INAM": "東京タワーの夜", "IART": "山田", "IPRD": "夜景"]),
        ("love.wav", ["INAM": "사랑의 노래", "IART": "아이유"]),
        ("jazz-title.wav", ["INAM": "Jazz Night", "IART": "Quartet", "IGNR": "Pop"]),
        ("jazz-genre.wav", ["INAM": "Other Song", "IART": "Trio", "IGNR": "Jazz"]),
        ("upbeat.wav", ["INAM": "Upbeat Morning", "IART": "Sunrise"]),
        ("beat.wav", ["INAM": "Beat It", "IART": "Michael Jackson"]),
    ] + extra
    for (name, info) in songs { media.wav(name, info: info) }
    let library = try Library(path: dir + "/library.db")
    let summary = try library.scan(folder: dir + "/music")
    precondition(summary.skipped.isEmpty && summary.added == songs.count, "\(summary)")
    return library
}

private func titles(_ library: Library, _ query: String, limit: Int = 50) throws -> [String] {
    try library.search(query, limit: limit).tracks.map(\.title)
}

@Suite struct SearchTests {
    @Test func prefixCaseAndDiacritics() throws {
        let library = try searchLibrary()
        #expect(Set(try titles(library, "bey")) == ["Halo", "Crazy in Love"])
        #expect(Set(try titles(library, "Beyonce")) == ["Halo", "Crazy in Love"])
        #expect(Set(try titles(library, "BEYONCÉ")) == ["Halo", "Crazy in Love"])
        #expect(try titles(library, "hal") == ["Halo"])
        #expect(try titles(library, "crazy lo") == ["Crazy in Love"]) // every term must match; the last is a prefix
        #expect(try titles(library, "crazy hell").isEmpty)
        #expect(try titles(library, "AC/DC") == ["Highway to Hell"])
        #expect(try titles(library, "acdc").isEmpty) // a different word, not an error
    }

    @Test func fieldFilters() throws {
        let library = try searchLibrary()
        #expect(Set(try titles(library, "artist:beyonce")) == ["Halo", "Crazy in Love"])
        #expect(try titles(library, "title:\"crazy in\"") == ["Crazy in Love"])
        #expect(try titles(library, "album:dangerously") == ["Crazy in Love"])
        #expect(try titles(library, "genre:jazz") == ["Other Song"])
        #expect(try titles(library, "title:jazz") == ["Jazz Night"])
        #expect(try titles(library, "artist:beyonce halo") == ["Halo"])
        #expect(try titles(library, "artist:\"michael jack\"") == ["Beat It"])
        #expect(try titles(library, "album:hell artist:beyonce").isEmpty)
    }

    @Test func titleOutranksGenre() throws {
        let library = try searchLibrary()
        #expect(try titles(library, "jazz") == ["Jazz Night", "Other Song"])
    }

    @Test func substringsInJapaneseKoreanAndLatin() throws {
        let library = try searchLibrary()
        #expect(try titles(library, "東京") == ["東京タワーの夜"])   // 2 characters: below trigram size
        #expect(try titles(library, "タワー") == ["東京タワーの夜"])  // in the middle of a run
        #expect(try titles(library, "夜") == ["東京タワーの夜"])     // also the album 夜景
        #expect(try titles(library, "사랑") == ["사랑의 노래"])
        #expect(try titles(library, "랑의") == ["사랑의 노래"])
        #expect(try titles(library, "노래") == ["사랑의 노래"])
        #expect(try titles(library, "아이유") == ["사랑의 노래"])
        #expect(try titles(library, "artist:山田") == ["東京タワーの夜"])
        // Word matches first, then substring matches the word index missed.
        #expect(try titles(library, "beat") == ["Beat It", "Upbeat Morning"])
    }

    @Test func exactTitleBeforeLongerTitlesWithTheSamePrefix() throws {
        let extra = ["Song Number 12", "Song Number 11", "Song Number 10", "Song Number 1", "Song Number 1 (Live)", "Another Song Number 1"]
            .enumerated().map { ("n\($0.offset).wav", ["INAM": $0.element, "IART": "Numbers"]) }
        let library = try searchLibrary(extra: extra)
        // Exact whole text, then the same words whole (title first), then "1" as a prefix.
        #expect(try titles(library, "song number 1") == ["Song Number 1", "Song Number 1 (Live)", "Another Song Number 1",
                                                         "Song Number 12", "Song Number 11", "Song Number 10"])
        #expect(try titles(library, "SONG NUMBER 1").first == "Song Number 1")
        #expect(try titles(library, "song number 11") == ["Song Number 11"])
    }

    @Test func wholeWordsBeforePrefixesAndTitlesBeforeOtherFields() throws {
        let library = try searchLibrary(extra: [
            ("a.wav", ["INAM": "Lovely Day", "IART": "Bill"]),
            ("b.wav", ["INAM": "Quiet", "IART": "Love Inc", "IPRD": "Other"]),
            ("c.wav", ["INAM": "Love Me Do", "IART": "Four"]),
            ("d.wav", ["INAM": "Calm", "IART": "Nobody", "IPRD": "Love Songs"]),
        ])
        // Title with the whole word, then other fields with the whole word, then title prefixes.
        #expect(try titles(library, "love") == ["Love Me Do", "Crazy in Love", "Quiet", "Calm", "Lovely Day"])
    }

    @Test func anArtistsNameListsTheirTracksFirst() throws {
        let library = try searchLibrary(extra: [
            ("p1.wav", ["INAM": "Prince Song", "IART": "Someone"]),
            ("p2.wav", ["INAM": "Purple Rain", "IART": "Prince"]),
            ("p3.wav", ["INAM": "Kiss", "IART": "Prince"]),
        ])
        // "prince" is an artist's whole name: their tracks before a title that has the word.
        #expect(try titles(library, "prince") == ["Purple Rain", "Kiss", "Prince Song"])
        // Not a whole name: titles first.
        #expect(try titles(library, "prin") == ["Prince Song", "Purple Rain", "Kiss"])
        // "The" may be left out.
        let beatles = try searchLibrary("beatles", extra: [("x.wav", ["INAM": "Help", "IART": "The Beatles"]),
                                                          ("y.wav", ["INAM": "Beatles Medley", "IART": "Band"])])
        #expect(try titles(beatles, "beatles") == ["Help", "Beatles Medley"])
    }

    @Test func oneAndTwoCharacterCJKTermsUseTheGramIndex() throws {
        let library = try searchLibrary()
        #expect(try titles(library, "京") == ["東京タワーの夜"])
        #expect(try titles(library, "タワ") == ["東京タワーの夜"])
        #expect(try titles(library, "의") == ["사랑의 노래"])
        #expect(try titles(library, "東京 夜") == ["東京タワーの夜"])
        #expect(try titles(library, "artist:山").isEmpty == false)
        #expect(try titles(library, "title:山").isEmpty) // the gram index has every field: the filter is checked on the row
    }

    @Test func paginationIsStableAndComplete() throws {
        let extra = (0..<25).map { ("page\($0).wav", ["INAM": "Paged Song \($0)", "IART": "Pager"]) }
        let library = try searchLibrary(extra: extra)
        var seen: [TrackID] = []
        var pages: [SearchResults] = []
        for offset in stride(from: 0, to: 30, by: 10) {
            let page = try library.search("paged", limit: 10, offset: offset)
            pages.append(page)
            seen += page.tracks.map(\.id)
        }
        #expect(pages.map(\.tracks.count) == [10, 10, 5])
        #expect(pages.map(\.hasMore) == [true, true, false])
        #expect(Set(seen).count == 25)
        #expect(try library.search("paged", limit: 10, offset: 0) == pages[0]) // same query, same page
        #expect(try library.search("paged", limit: 10, offset: 100).tracks.isEmpty)
    }

    @Test(arguments: ["\"AC/DC", "NOT", "AND", "OR", "NEAR", "NEAR(a b)", "*", "(", ")", "\")", "a OR", "\"", "\"\"", "^", "-",
                      "title:", "title:\"", "artist:\"ac", "{title}:x", "title : x", "a:b", "\\", "%", "_", "'", "''", "😀",
                      "col:", ":", "a*b", "+", "hello world \"unclosed phrase", "   ", "", "NOT halo", "halo NOT", "x AND NOT y"])
    func hostileInputNeverThrows(query: String) throws {
        let library = try searchLibrary()
        _ = try library.search(query)
    }

    @Test func hostileInputStillFindsText() throws {
        let library = try searchLibrary(extra: [("not.wav", ["INAM": "Not Fade Away", "IART": "NOT"])])
        #expect(try titles(library, "\"AC/DC") == ["Highway to Hell"])
        #expect(try titles(library, "NOT") == ["Not Fade Away"])
        #expect(try titles(library, "NOT fade") == ["Not Fade Away"])
    }

    @Test func recentSearchesAreDistinctNewestFirstAndClearable() throws {
        let library = try searchLibrary()
        for q in ["one", "two", "three", "ONE", "  two  ", ""] { try library.recordSearch(q) }
        #expect(try library.recentSearches() == ["two", "ONE", "three"])
        for i in 0..<12 { try library.recordSearch("query \(i)") }
        let recent = try library.recentSearches()
        #expect(recent.count == 10)
        #expect(recent.first == "query 11")
        #expect(recent.last == "query 2")
        try library.clearRecentSearches()
        #expect(try library.recentSearches().isEmpty)
    }
}

@Suite struct SearchQueryTests {
    @Test func parsesFieldsPhrasesAndPrefix() {
        let q = SearchQuery("artist:\"daft punk\" album:discovery one mo")
        #expect(q.terms == [
            .init(field: .artist, text: "daft punk", prefix: false),
            .init(field: .album, text: "discovery", prefix: false),
            .init(field: nil, text: "one", prefix: false),
            .init(field: nil, text: "mo", prefix: true),
        ])
        #expect(q.wordExpression == "{artist album_artist} : \"daft punk\" {album} : \"discovery\" \"one\" \"mo\"*")
    }

    @Test func quotesAreEscapedAndPunctuationDropped() {
        #expect(SearchQuery("say \"hi").terms == [.init(field: nil, text: "say", prefix: false), .init(field: nil, text: "hi", prefix: true)])
        #expect(SearchQuery("a\"b").wordExpression == "\"a\"\"b\"*")
        #expect(SearchQuery("- * ( ) \"\"").isEmpty)
        #expect(SearchQuery("\"closed phrase\"").terms.last?.prefix == false)
        #expect(SearchQuery("unknown:field").terms == [.init(field: nil, text: "unknown:field", prefix: true)])
    }

    @Test func tiersPutExactMatchesFirst() {
        #expect(SearchQuery("song number 1").tiers(namesArtist: false) == [
            .exactTitle, .words(titleOnly: true), .words(titleOnly: false), .prefix(titleOnly: true), .prefix(titleOnly: false),
        ])
        #expect(SearchQuery("prince").tiers(namesArtist: true).first == .exactArtist)
        #expect(SearchQuery("artist:x love").tiers(namesArtist: false) == [.words(titleOnly: false), .prefix(titleOnly: false)])
        #expect(SearchQuery("beat").tiers(namesArtist: false).last == .substring)
        #expect(SearchQuery("song number 1").expression(for: .exactTitle) == nil)
        #expect(SearchQuery("song nu").expression(for: .prefix(titleOnly: true)) == "{title} : \"song\" {title} : \"nu\"*")
    }

    @Test func substringPlanUsesGramsForShortCJK() {
        #expect(SearchQuery("ab").substringPlan == nil) // short Latin: word index only
        let tokyo = SearchQuery("東京")
        #expect(tokyo.hasCJK)
        #expect(tokyo.substringPlan?.match == nil)
        #expect(tokyo.substringPlan?.grams == "\"東京\"")
        #expect(tokyo.substringPlan?.likes.isEmpty == true)
        #expect(SearchQuery("artist:東京").substringPlan?.likes.first?.pattern == "%東京%")
        #expect(SearchQuery("タワー").substringPlan?.match == "\"タワー\"")
        #expect(SearchQuery("100%").substringPlan?.match == "\"100%\"")
        #expect(SearchQuery.escapeLike("5%_\\") == "5\\%\\_\\\\")
    }

    @Test func aRowIsPutInTheWordTiersItsFieldsMatch() {
        func row(_ title: String, artist: String? = nil, album: String? = nil, albumArtist: String? = nil, genre: String? = nil) -> SearchRowWords {
            SearchRowWords(folded: [title, artist, album, albumArtist, genre].map { $0.map(SearchText.wordFold) })
        }
        let query = SearchQuery("crazy lo")
        let words = query.termWords
        let title = row("Crazy in Love", artist: "Beyoncé")
        #expect(query.matches(.prefix(titleOnly: true), row: title, termWords: words))
        #expect(!query.matches(.words(titleOnly: true), row: title, termWords: words)) // "lo" is no whole word
        #expect(SearchQuery("crazy love").matches(.words(titleOnly: true), row: title, termWords: SearchQuery("crazy love").termWords))
        // One term in the title, the other in the artist: any field, not title only.
        let split = SearchQuery("crazy beyonce")
        #expect(split.matches(.words(titleOnly: false), row: title, termWords: split.termWords))
        #expect(!split.matches(.words(titleOnly: true), row: title, termWords: split.termWords))
        // A phrase's words must be adjacent, in order; punctuation splits words as the tokenizer does.
        let phrase = SearchQuery("\"in crazy\"")
        #expect(!phrase.matches(.words(titleOnly: false), row: title, termWords: phrase.termWords))
        let acdc = SearchQuery("AC/DC")
        #expect(acdc.termWords == [["ac", "dc"]])
        #expect(acdc.matches(.prefix(titleOnly: false), row: row("Highway", artist: "AC/DC"), termWords: acdc.termWords))
        // A field filter looks only in its columns (artist: also finds the album artist).
        let filtered = SearchQuery("artist:beyonce crazy")
        #expect(filtered.matches(.words(titleOnly: false), row: title, termWords: filtered.termWords))
        #expect(!filtered.matches(.words(titleOnly: false), row: row("Crazy", album: "Beyoncé"), termWords: filtered.termWords))
        #expect(filtered.matches(.words(titleOnly: false), row: row("Crazy", albumArtist: "Beyoncé"), termWords: filtered.termWords))
        // Diacritics and case are folded, as the index folds them.
        let accented = SearchQuery("SCHÖN")
        #expect(accented.matches(.words(titleOnly: true), row: row("Schon Dream"), termWords: accented.termWords))
        #expect(!accented.matches(.exactTitle, row: row("Schon"), termWords: accented.termWords)) // not a word tier
    }

    @Test func classifiedTiersListWhatTheIndexTiersList() throws {
        // Enough rows that common words take the index path (more matches than the probe reads)
        // and rare ones the classified path, with phrases, diacritics, punctuation and CJK.
        let words = ["love", "lovely", "night", "Nights", "city", "Schön", "dream", "fire", "Été", "AC/DC", "rock", "東京", "glove"]
        var extra: [(String, [String: String])] = []
        for i in 0..<150 {
            let w = { (k: Int) in words[(i * k + k) % words.count] }
            extra.append(("x\(i).wav", ["INAM": "\(w(1)) \(w(3)) \(i)", "IART": i % 7 == 0 ? "Love Inc" : "\(w(5)) Band",
                                        "IPRD": "\(w(2)) \(w(7))", "IGNR": i % 2 == 0 ? "Rock" : "Dream Pop"]))
        }
        let library = try searchLibrary(extra: extra)
        let queries = ["love", "lov", "l", "lo", "love night", "dream lo", "schon", "SCHÖN dream", "ete", "ac/dc", "acdc", "rock city",
                       "\"love night\"", "artist:love", "artist:love night", "album:dream fire", "genre:pop lo", "東京", "glove",
                       "night 1", "city 14", "love inc", "beyonce", "crazy in love", "zzz", "fire Été rock"]
        var classifiedPaths = 0
        for query in queries {
            for (limit, offset) in [(50, 0), (10, 0), (10, 20), (200, 0)] {
                let classified = try library.search(query, limit: limit, offset: offset)
                let indexed = try library.search(query, limit: limit, offset: offset, classifyingUpTo: 0)
                #expect(classified.tracks.map(\.id) == indexed.tracks.map(\.id), "\(query) limit \(limit) offset \(offset)")
                #expect(classified.hasMore == indexed.hasMore, "\(query) limit \(limit) offset \(offset)")
                if !classified.tracks.isEmpty, classified.tracks.count < limit { classifiedPaths += 1 }
            }
        }
        #expect(classifiedPaths > 20) // the sparse path was taken, not only the index one
        #expect(try library.search("l", limit: 50).tracks.count == 50) // and the dense one too
    }
}
