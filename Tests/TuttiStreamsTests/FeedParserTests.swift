import Foundation
import Testing
import TuttiCore
@testable import TuttiStreams

/// The feed parser (expat) and what it makes of RSS 2.0, iTunes tags and Atom.
@Suite struct FeedParserTests {
    static let rss = """
        <?xml version="1.0" encoding="UTF-8"?>
        <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" xmlns:content="http://purl.org/rss/1.0/modules/content/">
        <channel>
          <title>Morning &amp; Evening</title>
          <link>https://example.com/show</link>
          <description><![CDATA[<p>Talk about <b>music</b></p>]]></description>
          <itunes:author>Kim Ji-woo</itunes:author>
          <image><url>https://example.com/rss-image.png</url><title>x</title></image>
          <itunes:image href="https://example.com/cover.jpg"/>
          <item>
            <title>서울의 밤 — Episode 12</title>
            <guid isPermaLink="false">abc-12</guid>
            <pubDate>Tue, 05 Mar 2024 06:00:00 +0900</pubDate>
            <enclosure url="https://cdn.example.com/12.mp3" length="12345678" type="audio/mpeg"/>
            <itunes:duration>1:02:03</itunes:duration>
            <itunes:image href="https://example.com/12.jpg"/>
            <description>&lt;p&gt;Hello &amp;amp; &lt;a href="x"&gt;welcome&lt;/a&gt;&lt;/p&gt;&lt;script&gt;steal()&lt;/script&gt;</description>
          </item>
          <item>
            <title>Episode 11</title>
            <pubDate>Mon, 4 Mar 24 21:00 GMT</pubDate>
            <enclosure url="https://cdn.example.com/11.m4a" type="audio/x-m4a"/>
            <itunes:duration>754</itunes:duration>
          </item>
          <item><title>A blog post</title><description>no audio</description></item>
          <item>
            <title>Episode 10</title>
            <guid>ep-10</guid>
            <enclosure url="https://cdn.example.com/10.mp3" length="0" type="audio/mpeg"/>
            <itunes:duration>12:34</itunes:duration>
          </item>
        </channel>
        </rss>
        """

    @Test func readsRSSWithITunesTags() throws {
        let feed = try FeedParser.parse(Array(Self.rss.utf8))
        #expect(feed.title == "Morning & Evening")
        #expect(feed.author == "Kim Ji-woo")
        #expect(feed.image == "https://example.com/cover.jpg", "itunes:image wins over the RSS image")
        #expect(feed.description == "Talk about music")
        #expect(feed.link == "https://example.com/show")
        #expect(feed.episodes.count == 3)
        #expect(feed.itemsWithoutAudio == 1)
        let e = feed.episodes[0]
        #expect(e.title == "서울의 밤 — Episode 12")
        #expect(e.guid == "abc-12")
        #expect(e.url == "https://cdn.example.com/12.mp3")
        #expect(e.mimeType == "audio/mpeg")
        #expect(e.length == 12_345_678)
        #expect(e.durationSeconds == 3_723)
        #expect(e.image == "https://example.com/12.jpg")
        // 2024-03-05 06:00 +09:00 = 2024-03-04 21:00 UTC.
        #expect(e.publishedMs == 1_709_586_000_000)
        #expect(e.description == "Hello & welcome", "markup stripped, script dropped: \(e.description ?? "nil")")
        #expect(feed.episodes[1].guid == "https://cdn.example.com/11.m4a", "no guid: the enclosure URL")
        #expect(feed.episodes[1].publishedMs == 1_709_586_000_000, "two-digit year, no seconds, GMT")
        #expect(feed.episodes[1].durationSeconds == 754)
        #expect(feed.episodes[1].length == nil)
        #expect(feed.episodes[2].durationSeconds == 754)
        #expect(feed.episodes[2].length == nil, "length 0 is no length")
    }

    @Test func readsAtom() throws {
        let atom = """
            <?xml version="1.0" encoding="utf-8"?>
            <feed xmlns="http://www.w3.org/2005/Atom">
              <title type="text">An Atom Show</title>
              <author><name>Lee</name></author>
              <link href="https://example.org/" rel="alternate"/>
              <logo>https://example.org/logo.png</logo>
              <entry>
                <title>First</title>
                <id>tag:example.org,2024:1</id>
                <updated>2024-02-01T10:00:00Z</updated>
                <published>2024-01-31T23:30:00.5-01:00</published>
                <link rel="enclosure" href="https://example.org/1.ogg" type="audio/ogg" length="999"/>
                <summary type="html">&lt;b&gt;bold&lt;/b&gt; words</summary>
              </entry>
              <entry><title>Text only</title><id>2</id><updated>2024-02-02T00:00:00Z</updated><link href="https://example.org/post/2"/></entry>
              <entry><title>Unmarked</title><id>3</id><link href="https://example.org/3.mp3?x=1"/></entry>
            </feed>
            """
        let feed = try FeedParser.parse(Array(atom.utf8))
        #expect(feed.title == "An Atom Show")
        #expect(feed.author == "Lee")
        #expect(feed.image == "https://example.org/logo.png")
        #expect(feed.link == "https://example.org/")
        #expect(feed.episodes.count == 2 && feed.itemsWithoutAudio == 1)
        #expect(feed.episodes.last?.url == "https://example.org/3.mp3?x=1", "a link to an audio file, not marked as the enclosure")
        let e = try #require(feed.episodes.first)
        #expect(e.guid == "tag:example.org,2024:1")
        #expect(e.url == "https://example.org/1.ogg" && e.mimeType == "audio/ogg" && e.length == 999)
        #expect(e.publishedMs == 1_706_747_400_000, "published (2024-02-01 00:30 UTC), not updated")
        #expect(e.description == "bold words")
    }

    @Test func refusesWhatIsNotAPodcast() {
        func error(_ text: String) -> FeedError? {
            do { _ = try FeedParser.parse(Array(text.utf8)); return nil } catch { return error }
        }
        guard case .notXML(_, let line, _)? = error("{\"json\": true}\n") else { Issue.record("JSON is not XML"); return }
        #expect(line == 1)
        guard case .notXML? = error("<rss><channel><title>unclosed") else { Issue.record("an unclosed document is not XML"); return }
        #expect(error("<html><body>hi</body></html>") == .notAFeed(root: "html"))
        #expect(error("<rss version=\"2.0\"><channel><title>t</title></channel></rss>") == .noEpisodes(items: 0))
        #expect(error("<rss><channel><item><title>t</title><enclosure url=\"ftp://x/y.mp3\"/></item></channel></rss>") == .noEpisodes(items: 1),
                "only http(s) enclosures play")
        let bomb = """
            <?xml version="1.0"?>
            <!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
            <rss><channel><title>&c;</title></channel></rss>
            """
        #expect(error(bomb) == .entityDeclaration)
        let external = "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><rss><channel><title>&x;</title></channel></rss>"
        #expect(error(external) == .entityDeclaration, "external entities are refused, never read")
        let deep = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
        #expect(error("<rss>" + deep + "</rss>") == .tooDeep)
    }

    @Test func refusesAFeedLargerThanTheLimit() {
        let item = "<item><title>x</title><enclosure url=\"http://e.com/x.mp3\"/></item>"
        var text = "<rss><channel><title>big</title>"
        while text.utf8.count <= FeedLimits.maxFeedBytes { text += String(repeating: item, count: 1_000) }
        text += "</channel></rss>"
        #expect(throws: FeedError.tooLarge(limit: FeedLimits.maxFeedBytes)) { try FeedParser.parse(Array(text.utf8)) }
    }

    @Test func keepsAtMostTheEpisodeLimitAndBoundsStrings() throws {
        let longTitle = String(repeating: "é", count: 5_000)
        var text = "<rss><channel><title>\(longTitle)</title>"
        for i in 0..<(FeedLimits.maxEpisodes + 10) { text += "<item><title>\(i)</title><enclosure url=\"http://e.com/\(i).mp3\"/></item>" }
        text += "</channel></rss>"
        let feed = try FeedParser.parse(Array(text.utf8))
        #expect(feed.episodes.count == FeedLimits.maxEpisodes)
        #expect(feed.title.utf8.count <= FeedLimits.maxTitleBytes && feed.title.utf8.count >= FeedLimits.maxTitleBytes - 1)
    }

    @Test func durationsAndDates() {
        #expect(FeedDates.duration("01:02:03") == 3_723)
        #expect(FeedDates.duration("2:03") == 123)
        #expect(FeedDates.duration(" 90 ") == 90)
        #expect(FeedDates.duration("90.5") == 90.5)
        #expect(FeedDates.duration("1:75") == nil)
        #expect(FeedDates.duration("abc") == nil)
        #expect(FeedDates.duration("1:2:3:4") == nil)
        #expect(FeedDates.duration("-5") == nil)
        #expect(FeedDates.rfc822("Wed, 02 Oct 2002 13:00:00 GMT") == 1_033_563_600_000)
        #expect(FeedDates.rfc822("Wed, 02 Oct 2002 15:00:00 +0200") == 1_033_563_600_000)
        #expect(FeedDates.rfc822("02 Oct 2002 08:00:00 EST") == 1_033_563_600_000)
        #expect(FeedDates.rfc822("Thursday") == nil)
        #expect(FeedDates.iso8601("2002-10-02T13:00:00Z") == 1_033_563_600_000)
        #expect(FeedDates.iso8601("2002-10-02T14:30:00+01:30") == 1_033_563_600_000)
        #expect(FeedDates.iso8601("2002-10-02") == 1_033_516_800_000)
        #expect(FeedDates.iso8601("yesterday") == nil)
        #expect(EpisodeProgress.isPlayed(positionSeconds: 3_571, durationSeconds: 3_600))
        #expect(!EpisodeProgress.isPlayed(positionSeconds: 3_560, durationSeconds: 3_600))
        #expect(!EpisodeProgress.isPlayed(positionSeconds: 1, durationSeconds: 20), "a short clip is not played as it starts")
        #expect(EpisodeProgress.isPlayed(positionSeconds: 18, durationSeconds: 20))
    }

    @Test func plainTextFromHTML() {
        #expect(PlainText.fromHTML("<p>One</p><p>Two &amp; three</p>") == "One\nTwo & three")
        #expect(PlainText.fromHTML("a<br/>b") == "a\nb")
        #expect(PlainText.fromHTML("x<script>alert('<b>')</script>y") == "xy")
        #expect(PlainText.fromHTML("&lt;img src=x onerror=alert(1)&gt;") == "<img src=x onerror=alert(1)>", "decoded text stays text (the page shows it as text)")
        #expect(PlainText.fromHTML("caf&#233; &#x1F600;") == "café 😀")
        #expect(PlainText.truncated("ééé", maxBytes: 5) == "éé")
        #expect(PlainText.fromHTML("Tom & Jerry <3") == "Tom & Jerry <3", "a '<' that opens no tag is text")
    }
}
