/// A podcast feed as Tutti keeps it: the show and its episodes that carry
/// audio (an enclosure), every string bounded.
public struct PodcastFeed: Sendable, Equatable {
    public var title = ""
    public var author: String?
    /// The show's artwork: `itunes:image`, else the RSS `image/url`, else Atom's `logo`/`icon`.
    public var image: String?
    /// Plain text (`PlainText.fromHTML`): never markup.
    public var description: String?
    public var link: String?
    /// In the feed's order (usually newest first); at most `FeedLimits.maxEpisodes`.
    public var episodes: [PodcastFeedEpisode] = []
    /// Items that had no usable enclosure (skipped).
    public var itemsWithoutAudio = 0

    public init() {}
}

public struct PodcastFeedEpisode: Sendable, Equatable {
    /// The item's `guid` (Atom `id`); the enclosure URL when it has none.
    public var guid = ""
    public var title = ""
    /// The enclosure: what plays.
    public var url = ""
    public var mimeType: String?
    /// Bytes, as the enclosure declares (often wrong or 0: a hint only).
    public var length: Int64?
    public var durationSeconds: Double?
    /// `pubDate` (RFC 822) or Atom's `published`/`updated`, Unix ms.
    public var publishedMs: Int64?
    /// Plain text: never markup.
    public var description: String?
    public var image: String?

    public init() {}
}

/// What a feed may hold: a peer controls every byte of it.
public enum FeedLimits {
    /// Largest feed read (the fetch stops at this many bytes, before parsing).
    public static let maxFeedBytes = 8 << 20
    public static let maxEpisodes = 2_000
    public static let maxTitleBytes = 1_024
    public static let maxURLBytes = 4_096
    public static let maxDescriptionBytes = 16_384
    /// Text gathered for one field before markup is stripped (a description full of HTML).
    public static let maxRawTextBytes = 262_144
    public static let maxDepth = 64
}

/// Why a feed was refused; nothing is changed when one is.
public enum FeedError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not well-formed XML (expat's message and where).
    case notXML(reason: String, line: Int, column: Int)
    /// Larger than `FeedLimits.maxFeedBytes`.
    case tooLarge(limit: Int)
    /// A DOCTYPE that declares entities (the billion-laughs attack and external entities).
    case entityDeclaration
    /// Well-formed XML that is not RSS or Atom (the root element is named).
    case notAFeed(root: String)
    /// An RSS or Atom feed with no item that has an audio enclosure.
    case noEpisodes(items: Int)
    /// Nesting deeper than `FeedLimits.maxDepth`.
    case tooDeep

    public var description: String { message.description }

    /// What the person is told (the catalogue's `feed.*`); expat's reason and the root element's name are data.
    public var message: UserMessage {
        switch self {
        case .notXML(let reason, let line, let column): UserMessage(.feedNotXML, ["reason": reason, "line": "\(line)", "column": "\(column)"])
        case .tooLarge(let limit): UserMessage(.feedTooLarge, ["limit": "\(limit >> 20)"])
        case .entityDeclaration: UserMessage(.feedEntityDeclaration)
        case .notAFeed(let root): UserMessage(.feedNotAFeed, ["root": String(root.prefix(64))])
        case .noEpisodes(let items): items == 0 ? UserMessage(.feedNoEpisodes) : UserMessage(.feedNoAudioEnclosure, ["items": "\(items)"])
        case .tooDeep: UserMessage(.feedTooDeep, ["depth": "\(FeedLimits.maxDepth)"])
        }
    }
}

/// Builds a `PodcastFeed` from an XML parser's events (RSS 2.0 with the
/// iTunes extensions, and Atom). Pure: TuttiStreams' expat wrapper feeds
/// it. Element names arrive as `namespace|local` (expat's namespace
/// processing with `|` as separator), or `local` without a namespace.
public struct FeedBuilder: Sendable {
    public static let itunes = "http://www.itunes.com/dtds/podcast-1.0.dtd"
    public static let atom = "http://www.w3.org/2005/Atom"

    private enum Kind { case unknown, rss, atom }
    private var kind = Kind.unknown
    private var root: String?
    private var path: [String] = []
    private var feed = PodcastFeed()
    private var item: PodcastFeedEpisode?
    private var items = 0
    /// Text of the element being gathered, and which field it goes to.
    private var text: [UInt8] = []
    private var gathering: Field?
    private var failure: FeedError?
    /// The entry's enclosure came from a link not marked as one (Atom).
    private var implicitEnclosure = false

    private enum Field { case showTitle, showAuthor, showDescription, showLink, showImageURL
        case title, guid, pubDate, atomDate, duration, description, summary, atomAuthorName }

    public init() {}

    /// Splits `namespace|local` into its two halves.
    public static func split(_ name: String) -> (namespace: String, local: String) {
        guard let bar = name.lastIndex(of: "|") else { return ("", name) }
        return (String(name[..<bar]), String(name[name.index(after: bar)...]))
    }

    public var failed: FeedError? { failure }

    public mutating func start(_ name: String, attributes: [(String, String)]) {
        guard failure == nil else { return }
        let (ns, local) = Self.split(name)
        if root == nil {
            root = local
            if ns.isEmpty && local == "rss" { kind = .rss } else if ns == Self.atom && local == "feed" { kind = .atom }
        }
        path.append(name)
        guard path.count <= FeedLimits.maxDepth else { failure = .tooDeep; return }
        func attribute(_ key: String) -> String? { attributes.first { $0.0 == key }?.1 }
        switch kind {
        case .unknown: return
        case .rss: startRSS(ns, local, attribute)
        case .atom: startAtom(ns, local, attribute)
        }
    }

    private mutating func startRSS(_ ns: String, _ local: String, _ attribute: (String) -> String?) {
        let inItem = item != nil
        switch (ns, local) {
        case ("", "item") where path.count == 3:
            items += 1
            item = PodcastFeedEpisode()
        case ("", "enclosure") where inItem:
            guard let url = attribute("url").map(Self.trimmed), !url.isEmpty, item?.url.isEmpty == true else { return }
            setEnclosure(url: url, type: attribute("type"), length: attribute("length"))
        case (Self.itunes, "image"):
            guard let href = attribute("href").map(Self.trimmed), !href.isEmpty, href.utf8.count <= FeedLimits.maxURLBytes else { return }
            if inItem { item?.image = href } else { feed.image = href }
        case ("", "title") where inItem: gathering = .title
        case ("", "title") where path.count == 3: gathering = .showTitle
        case ("", "guid") where inItem: gathering = .guid
        case ("", "pubDate") where inItem: gathering = .pubDate
        case (Self.itunes, "duration") where inItem: gathering = .duration
        case ("", "description") where inItem: gathering = .description
        case (Self.itunes, "summary") where inItem: gathering = .summary
        case ("", "description") where path.count == 3: gathering = .showDescription
        case (Self.itunes, "summary") where path.count == 3 && feed.description == nil: gathering = .showDescription
        case (Self.itunes, "author") where !inItem: gathering = .showAuthor
        case ("", "link") where path.count == 3: gathering = .showLink
        case ("", "url") where path.count == 4 && Self.split(path[2]).local == "image": gathering = .showImageURL
        default: return
        }
        if gathering != nil { text.removeAll(keepingCapacity: true) }
    }

    private mutating func startAtom(_ ns: String, _ local: String, _ attribute: (String) -> String?) {
        guard ns == Self.atom else { return }
        let inItem = item != nil
        switch local {
        case "entry" where path.count == 2:
            items += 1
            item = PodcastFeedEpisode()
            implicitEnclosure = false
        case "link" where inItem && attribute("rel") == "enclosure":
            guard let url = attribute("href").map(Self.trimmed), !url.isEmpty, item?.url.isEmpty == true || implicitEnclosure else { return }
            implicitEnclosure = false
            setEnclosure(url: url, type: attribute("type"), length: attribute("length"))
        case "link" where inItem && item?.url.isEmpty == true && Self.looksLikeAudio(href: attribute("href"), type: attribute("type")):
            // Not marked as the enclosure (feedgen writes Atom enclosures so), but audio by its type or name: taken
            // until a link marked rel="enclosure" comes.
            if let href = attribute("href").map(Self.trimmed) { setEnclosure(url: href, type: attribute("type"), length: attribute("length")) }
            implicitEnclosure = true
        case "link" where !inItem && path.count == 2 && (attribute("rel") ?? "alternate") == "alternate":
            if let href = attribute("href"), href.utf8.count <= FeedLimits.maxURLBytes { feed.link = href }
        case "title": gathering = inItem ? .title : (path.count == 2 ? .showTitle : nil)
        case "id" where inItem: gathering = .guid
        case "updated" where inItem, "published" where inItem: gathering = .atomDate
        case "summary" where inItem: gathering = .summary
        case "content" where inItem: gathering = .description
        case "subtitle" where path.count == 2: gathering = .showDescription
        case "logo" where path.count == 2, "icon" where path.count == 2 && feed.image == nil: gathering = .showImageURL
        case "name" where !inItem && path.count == 3 && Self.split(path[1]).local == "author": gathering = .atomAuthorName
        default: return
        }
        if gathering != nil { text.removeAll(keepingCapacity: true) }
    }

    private mutating func setEnclosure(url: String, type: String?, length: String?) {
        guard url.utf8.count <= FeedLimits.maxURLBytes else { return }
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return }
        let type = type.map(Self.trimmed).flatMap { $0.isEmpty || $0.utf8.count > 128 ? nil : $0.lowercased() }
        // Video enclosures are not audio Tutti plays; images are not episodes.
        if let type, type.hasPrefix("image/") || type.hasPrefix("text/") { return }
        item?.url = url
        item?.mimeType = type
        item?.length = length.flatMap { Int64(Self.trimmed($0)) }.flatMap { $0 > 0 ? $0 : nil }
    }

    static let audioExtensions: Set<String> = ["mp3", "m4a", "mp4", "aac", "ogg", "oga", "opus", "flac", "wav", "m4b"]

    /// An Atom link that is audio though not marked as the enclosure: its type says so, or its file name.
    static func looksLikeAudio(href: String?, type: String?) -> Bool {
        if let type = type?.lowercased() { return type.hasPrefix("audio/") }
        guard let href else { return false }
        var path = Substring(href)
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<cut] }
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return false }
        return audioExtensions.contains(path[path.index(after: dot)...].lowercased())
    }

    /// Character data: gathered only for a field being read, up to `FeedLimits.maxRawTextBytes`.
    public mutating func characters(_ bytes: UnsafeRawBufferPointer) {
        guard gathering != nil, failure == nil else { return }
        let room = FeedLimits.maxRawTextBytes - text.count
        if room > 0 { text.append(contentsOf: bytes.prefix(room)) }
    }

    public mutating func end(_ name: String) {
        guard failure == nil else { return }
        if let field = gathering {
            gathering = nil
            finish(field, String(decoding: text, as: UTF8.self))
            text.removeAll(keepingCapacity: true)
        }
        let (ns, local) = Self.split(name)
        let closesItem = (kind == .rss && ns.isEmpty && local == "item" && path.count == 3)
            || (kind == .atom && ns == Self.atom && local == "entry" && path.count == 2)
        if closesItem, var done = item {
            item = nil
            if done.url.isEmpty { feed.itemsWithoutAudio += 1 }
            else if feed.episodes.count < FeedLimits.maxEpisodes {
                if done.guid.isEmpty { done.guid = done.url }
                if done.title.isEmpty { done.title = done.publishedMs.map { "Episode of \(Self.dayText($0))" } ?? "Episode \(items)" }
                feed.episodes.append(done)
            }
        }
        if !path.isEmpty { path.removeLast() }
    }

    private mutating func finish(_ field: Field, _ raw: String) {
        switch field {
        case .showTitle: feed.title = Self.line(raw, max: FeedLimits.maxTitleBytes)
        case .showAuthor, .atomAuthorName: feed.author = Self.optionalLine(raw, max: FeedLimits.maxTitleBytes)
        case .showDescription: feed.description = Self.optionalText(raw)
        case .showLink:
            let link = Self.trimmed(raw)
            if !link.isEmpty, link.utf8.count <= FeedLimits.maxURLBytes { feed.link = link }
        case .showImageURL:
            let url = Self.trimmed(raw)
            if feed.image == nil, !url.isEmpty, url.utf8.count <= FeedLimits.maxURLBytes { feed.image = url }
        case .title: item?.title = Self.line(raw, max: FeedLimits.maxTitleBytes)
        case .guid:
            let guid = Self.trimmed(raw)
            if guid.utf8.count <= FeedLimits.maxURLBytes { item?.guid = guid }
        case .pubDate: item?.publishedMs = FeedDates.rfc822(raw) ?? FeedDates.iso8601(raw)
        case .atomDate:
            // `published` wins over `updated` (an edit does not make an episode new).
            if let ms = FeedDates.iso8601(raw), item?.publishedMs == nil || Self.split(path.last ?? "").local == "published" { item?.publishedMs = ms }
        case .duration: item?.durationSeconds = FeedDates.duration(raw)
        case .description: item?.description = Self.optionalText(raw)
        case .summary: if item?.description == nil { item?.description = Self.optionalText(raw) }
        }
    }

    /// The feed, once the document ended; throws when it is not a podcast.
    public func result() throws(FeedError) -> PodcastFeed {
        if let failure { throw failure }
        guard kind != .unknown else { throw .notAFeed(root: root ?? "") }
        guard !feed.episodes.isEmpty else { throw .noEpisodes(items: items) }
        var feed = feed
        if feed.title.isEmpty { feed.title = feed.link ?? "Podcast" }
        return feed
    }

    public static func trimmed(_ s: String) -> String {
        var s = Substring(s)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }

    /// One line of plain text (markup stripped, spaces collapsed), at most `max` bytes.
    static func line(_ raw: String, max: Int) -> String {
        PlainText.truncated(PlainText.fromHTML(raw).split(whereSeparator: \.isNewline).joined(separator: " "), maxBytes: max)
    }

    static func optionalLine(_ raw: String, max: Int) -> String? {
        let s = line(raw, max: max)
        return s.isEmpty ? nil : s
    }

    static func optionalText(_ raw: String) -> String? {
        let s = PlainText.truncated(PlainText.fromHTML(raw), maxBytes: FeedLimits.maxDescriptionBytes)
        return s.isEmpty ? nil : s
    }

    static func dayText(_ ms: Int64) -> String {
        let (y, m, d) = FeedDates.civil(fromDays: Int64((Double(ms) / 86_400_000).rounded(.down)))
        return "\(y)-\(m < 10 ? "0" : "")\(m)-\(d < 10 ? "0" : "")\(d)"
    }
}

/// Text from a feed's HTML: tags dropped (with what `<script>` and
/// `<style>` hold), character references decoded, blank runs collapsed
/// (paragraph and line breaks kept as one newline). The result is shown
/// as text, never parsed as markup: the web app puts it in `textContent`,
/// so a tag that survived would only be seen, not run. Written here rather
/// than taken from an HTML library: nothing is rendered, and Debian's
/// HTML parsers (libxml2's, gumbo) would be a large library for a summary.
public enum PlainText {
    public static func fromHTML(_ html: String) -> String {
        var out = ""
        out.reserveCapacity(min(html.utf8.count, 1 << 16))
        var pendingSpace = false, pendingBreak = false
        func emit(_ c: Character) {
            if c.isWhitespace {
                if c.isNewline { pendingBreak = true } else { pendingSpace = true }
                return
            }
            if !out.isEmpty {
                if pendingBreak { out.append("\n") } else if pendingSpace { out.append(" ") }
            }
            pendingSpace = false
            pendingBreak = false
            out.append(c)
        }
        let scalars = Array(html.unicodeScalars)
        var i = 0
        var skippingUntil: String? = nil
        while i < scalars.count {
            let c = scalars[i]
            if c == "<" {
                // A tag: find its end and its name.
                var j = i + 1
                while j < scalars.count, scalars[j] != ">" { j += 1 }
                guard j < scalars.count else {
                    // No '>' follows: not a tag but text ("a < b", "Me <3").
                    if skippingUntil == nil { emit("<") }
                    i += 1
                    continue
                }
                let inside = String(String.UnicodeScalarView(scalars[(i + 1)..<j]))
                let name = inside.drop { $0 == "/" }.prefix { $0.isLetter || $0.isNumber }.lowercased()
                let closing = inside.hasPrefix("/")
                if let until = skippingUntil {
                    if closing && name == until { skippingUntil = nil }
                } else if !closing && (name == "script" || name == "style") && !inside.hasSuffix("/") {
                    skippingUntil = name
                } else if ["br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "blockquote"].contains(name) {
                    pendingBreak = !out.isEmpty
                } else {
                    pendingSpace = pendingSpace || (!out.isEmpty && ["td", "th", "img"].contains(name))
                }
                i = j + 1
                continue
            }
            if skippingUntil != nil { i += 1; continue }
            if c == "&", let (decoded, next) = entity(scalars, at: i) {
                emit(Character(decoded))
                i = next
                continue
            }
            emit(Character(c))
            i += 1
        }
        return out
    }

    private static let named: [String: Unicode.Scalar] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": " ", "hellip": "…", "mdash": "—", "ndash": "–",
        "rsquo": "’", "lsquo": "‘", "rdquo": "”", "ldquo": "“", "copy": "©", "reg": "®", "eacute": "é", "egrave": "è", "agrave": "à",
    ]

    /// A character reference at `i` (`&amp;`, `&#233;`, `&#xE9;`): the character and the index after `;`.
    private static func entity(_ s: [Unicode.Scalar], at i: Int) -> (Unicode.Scalar, Int)? {
        var j = i + 1
        var name = ""
        while j < s.count, j - i <= 10, s[j] != ";" { name.unicodeScalars.append(s[j]); j += 1 }
        guard j < s.count, s[j] == ";", !name.isEmpty else { return nil }
        if name.hasPrefix("#") {
            let digits = name.dropFirst()
            let value = digits.first == "x" || digits.first == "X" ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits, radix: 10)
            guard let value, value != 0, let scalar = Unicode.Scalar(value) else { return nil }
            return (scalar, j + 1)
        }
        return named[name].map { ($0, j + 1) }
    }

    /// `s` cut to at most `maxBytes` of UTF-8, at a character boundary.
    public static func truncated(_ s: String, maxBytes: Int) -> String {
        guard s.utf8.count > maxBytes else { return s }
        var out = ""
        var bytes = 0
        for c in s {
            let n = c.utf8.count
            if bytes + n > maxBytes { break }
            out.append(c)
            bytes += n
        }
        return out
    }
}

/// The dates and durations feeds write.
public enum FeedDates {
    /// RFC 822 / RFC 1123 as RSS writes it: `Wed, 02 Oct 2002 13:00:00 GMT`
    /// (weekday and seconds optional, two-digit years, zone names, `+hhmm`).
    public static func rfc822(_ raw: String) -> Int64? {
        var words = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).map(String.init)
        if let first = words.first, first.hasSuffix(",") || first.count == 3 && first.allSatisfy(\.isLetter) { words.removeFirst() }
        if let first = words.first, first.hasSuffix(",") { words[0] = String(first.dropLast()) }
        guard words.count >= 4, let day = Int(words[0]), (1...31).contains(day) else { return nil }
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        guard let month = months.firstIndex(of: String(words[1].prefix(3)).lowercased()), var year = Int(words[2]) else { return nil }
        if words[2].count == 2 { year += year < 50 ? 2000 : 1900 }
        guard (1900...9999).contains(year) else { return nil }
        let time = words[3].split(separator: ":").map { Int($0) }
        guard time.count == 2 || time.count == 3, let h = time[0], let mi = time[1], (0...23).contains(h), (0...59).contains(mi) else { return nil }
        let s = time.count == 3 ? time[2] : 0
        guard let s, (0...60).contains(s) else { return nil }
        let offset = words.count > 4 ? zoneOffsetMinutes(words[4]) : 0
        guard let offset else { return nil }
        let days = days(fromCivil: year, month + 1, day)
        return ((days * 86_400) + Int64(h * 3_600 + mi * 60 + s) - Int64(offset * 60)) * 1_000
    }

    private static func zoneOffsetMinutes(_ zone: String) -> Int? {
        if let sign = zone.first, sign == "+" || sign == "-", zone.count == 5, let v = Int(zone.dropFirst()) {
            return (sign == "-" ? -1 : 1) * ((v / 100) * 60 + v % 100)
        }
        switch zone.uppercased() {
        case "GMT", "UT", "UTC", "Z": return 0
        case "EST": return -300
        case "EDT": return -240
        case "CST": return -360
        case "CDT": return -300
        case "MST": return -420
        case "MDT": return -360
        case "PST": return -480
        case "PDT": return -420
        default: return zone.count == 1 && zone.first!.isLetter ? 0 : nil // military zones: read as UTC (RFC 1123 says their signs are unreliable)
        }
    }

    /// ISO 8601 / RFC 3339 as Atom writes it: `2003-12-13T18:30:02Z`, with fractions and `±hh:mm`.
    public static func iso8601(_ raw: String) -> Int64? {
        let s = Array(PlainText.truncated(FeedBuilder.trimmed(raw), maxBytes: 64).utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= s.count else { return nil }
            var v = 0
            for b in s[from..<(from + count)] {
                guard b >= 48 && b <= 57 else { return nil }
                v = v * 10 + Int(b - 48)
            }
            return v
        }
        guard let y = number(0, 4), s.count >= 10, s[4] == UInt8(ascii: "-"), let mo = number(5, 2), s[7] == UInt8(ascii: "-"), let d = number(8, 2),
              (1...12).contains(mo), (1...31).contains(d) else { return nil }
        var seconds = 0
        var i = 10
        var offset = 0
        if s.count > 10, s[10] == UInt8(ascii: "T") || s[10] == UInt8(ascii: " ") {
            guard let h = number(11, 2), s.count > 13, s[13] == UInt8(ascii: ":"), let mi = number(14, 2), h < 24, mi < 60 else { return nil }
            seconds = h * 3_600 + mi * 60
            i = 16
            if i < s.count, s[i] == UInt8(ascii: ":"), let sec = number(17, 2), sec <= 60 { seconds += sec; i = 19 }
            if i < s.count, s[i] == UInt8(ascii: ".") { i += 1; while i < s.count, s[i] >= 48 && s[i] <= 57 { i += 1 } }
            if i < s.count {
                if s[i] == UInt8(ascii: "Z") || s[i] == UInt8(ascii: "z") { offset = 0 }
                else if s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-") {
                    guard let oh = number(i + 1, 2) else { return nil }
                    let om = (i + 3 < s.count && s[i + 3] == UInt8(ascii: ":")) ? number(i + 4, 2) : number(i + 3, 2)
                    offset = (s[i] == UInt8(ascii: "-") ? -1 : 1) * (oh * 60 + (om ?? 0))
                } else { return nil }
            }
        }
        return (days(fromCivil: y, mo, d) * 86_400 + Int64(seconds) - Int64(offset * 60)) * 1_000
    }

    /// `itunes:duration`: `HH:MM:SS`, `MM:SS` or seconds (fractions allowed); nil when not one of these or over 1000 hours.
    public static func duration(_ raw: String) -> Double? {
        let parts = FeedBuilder.trimmed(raw).split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.count <= 12 }) else { return nil }
        var total = 0.0
        for (i, part) in parts.enumerated() {
            let last = i == parts.count - 1
            guard let v = last ? Double(part) : Double(Int(part) ?? -1), v.isFinite, v >= 0 else { return nil }
            if i > 0 && v >= 60 { return nil }
            total = total * 60 + v
        }
        return total <= 3_600_000 ? total : nil
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let m = Int64(month)
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + Int64(day) - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Year, month, day of a day count since 1970-01-01.
    public static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp + (mp < 10 ? 3 : -9)
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

/// When an episode counts as played: heard to within 30 s of its end (or
/// its last tenth, for one shorter than five minutes, so a short clip is
/// not marked played as soon as it starts).
public enum EpisodeProgress {
    public static func isPlayed(positionSeconds: Double, durationSeconds: Double) -> Bool {
        guard durationSeconds > 0, positionSeconds.isFinite else { return false }
        return positionSeconds >= max(durationSeconds - 30, durationSeconds * 0.9)
    }
}
