import TuttiCore

/// A user's search box text, parsed. Pure: no SQLite here.
///
/// Syntax: words match anywhere (all must match); `"two words"` is a
/// phrase; `artist:`, `album:`, `title:`, `genre:` and `albumartist:`
/// restrict a word or a quoted value to a field (`artist:"daft punk"`).
/// The last term matches as a prefix, for search as you type. Everything
/// the user types becomes quoted FTS5 strings, so no input can produce an
/// FTS5 syntax error: `NOT`, `AC/DC`, a lone `"`, `*` or `(` are text.
public struct SearchQuery: Equatable, Sendable {
    public enum Field: String, Sendable, CaseIterable {
        case title, artist, album, albumArtist, genre

        init?(keyword: String) {
            switch keyword.lowercased() {
            case "title": self = .title
            case "artist": self = .artist
            case "album": self = .album
            case "albumartist", "album_artist": self = .albumArtist
            case "genre": self = .genre
            default: return nil
            }
        }

        /// FTS5 columns a filter searches; `artist:` also finds album artists.
        var columns: [String] {
            switch self {
            case .title: ["title"]
            case .artist: ["artist", "album_artist"]
            case .album: ["album"]
            case .albumArtist: ["album_artist"]
            case .genre: ["genre"]
            }
        }
    }

    public struct Term: Equatable, Sendable {
        public var field: Field?
        public var text: String
        public var prefix: Bool
    }

    public var terms: [Term]

    public init(_ input: String) {
        terms = Self.parse(input)
    }

    private static func parse(_ input: String) -> [Term] {
        var terms: [Term] = []
        var closedPhraseAtEnd = false
        let chars = Array(input)
        var i = 0
        func readQuoted() -> String {
            // After an opening quote: up to the closing one, or the end if it never comes.
            i += 1
            var s = ""
            while i < chars.count, chars[i] != "\"" { s.append(chars[i]); i += 1 }
            closedPhraseAtEnd = i < chars.count
            i += 1
            return s
        }
        while i < chars.count {
            if chars[i].isWhitespace { i += 1; continue }
            closedPhraseAtEnd = false
            if chars[i] == "\"" {
                terms.append(Term(field: nil, text: readQuoted(), prefix: false))
                continue
            }
            var word = ""
            while i < chars.count, !chars[i].isWhitespace {
                if chars[i] == ":", let field = Field(keyword: word) {
                    i += 1
                    if i < chars.count, chars[i] == "\"" {
                        terms.append(Term(field: field, text: readQuoted(), prefix: false))
                    } else {
                        var value = ""
                        while i < chars.count, !chars[i].isWhitespace { value.append(chars[i]); i += 1 }
                        terms.append(Term(field: field, text: value, prefix: false))
                    }
                    word = ""
                    break
                }
                word.append(chars[i])
                i += 1
            }
            if !word.isEmpty { terms.append(Term(field: nil, text: word, prefix: false)) }
        }
        // Punctuation-only terms tokenize to nothing and would match nothing.
        terms = terms.filter { $0.text.contains { $0.isLetter || $0.isNumber } }
        if !closedPhraseAtEnd, !terms.isEmpty { terms[terms.count - 1].prefix = true }
        return terms
    }

    public var isEmpty: Bool { terms.isEmpty }

    /// An FTS5 string literal: the only quoting FTS5 has is doubling `"`.
    static func literal(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }

    /// The MATCH expression for the word index (all terms, ANDed).
    var wordExpression: String? {
        guard !terms.isEmpty else { return nil }
        return terms.map { Self.filter($0.field) + Self.literal($0.text) + ($0.prefix ? "*" : "") }.joined(separator: " ")
    }

    /// The substring search: trigram MATCH for terms of 3+ characters, the
    /// CJK gram index for shorter CJK terms (a trigram index cannot look up
    /// 1–2 characters), with LIKE on the candidates where such a term names
    /// a field (the gram index has one column). Nil when some term is a short
    /// non-CJK word, which only the word index can serve without scanning every row.
    var substringPlan: (match: String?, grams: String?, likes: [(columns: [String], pattern: String)])? {
        guard !terms.isEmpty, terms.allSatisfy({ $0.text.count >= 3 || Self.containsCJK($0.text) }) else { return nil }
        var matches: [String] = []
        var grams: [String] = []
        var likes: [(columns: [String], pattern: String)] = []
        for term in terms {
            if term.text.count >= 3 {
                matches.append(Self.filter(term.field) + Self.literal(term.text))
            } else {
                // Each CJK piece of the term is a gram ("東京" is one; a 1–2 character term has at most two pieces).
                grams.append(Self.literal(term.text))
                if let field = term.field { likes.append((field.columns, "%" + Self.escapeLike(term.text) + "%")) }
            }
        }
        return (matches.isEmpty ? nil : matches.joined(separator: " "), grams.isEmpty ? nil : grams.joined(separator: " "), likes)
    }

    /// Whether the query has CJK text: those scripts are written without
    /// spaces, so a word in them is usually a substring of a longer token
    /// that only the substring tier can find.
    var hasCJK: Bool { terms.contains { Self.containsCJK($0.text) } }

    static func escapeLike(_ s: String) -> String {
        var out = ""
        for c in s {
            if c == "%" || c == "_" || c == "\\" { out.append("\\") }
            out.append(c)
        }
        return out
    }

    static func containsCJK(_ s: String) -> Bool {
        s.unicodeScalars.contains(where: SearchText.isCJK)
    }
}

/// The order of ranked results: one tier after another, each a cheap
/// indexed lookup in track id order that stops once the page is full, so a
/// one-letter prefix costs no more than a rare word (no scoring of every
/// match). A track is listed in the first tier that finds it.
enum SearchTier: Hashable, Sendable {
    /// The whole text is the artist's (or album artist's) name: their tracks first.
    case exactArtist
    /// The whole text is the title.
    case exactTitle
    /// Every term a whole word: in the title, then in any field.
    case words(titleOnly: Bool)
    /// The last term a prefix (search as you type): in the title, then in any field.
    case prefix(titleOnly: Bool)
    /// Substrings the word index cannot find: CJK pieces, "beat" in "Upbeat".
    case substring
}

extension SearchQuery {
    /// Whether the query has no field filters: only then do the exact and
    /// title tiers apply (a filter already says where to look).
    var isPlain: Bool { terms.allSatisfy { $0.field == nil } }

    /// The whole typed text, as one phrase.
    var wholeText: String { terms.map(\.text).joined(separator: " ") }

    /// The tiers for this query, best first. `namesArtist`: the whole text
    /// is an artist's name (found by the caller).
    func tiers(namesArtist: Bool) -> [SearchTier] {
        var out: [SearchTier] = []
        if isPlain {
            if namesArtist { out.append(.exactArtist) }
            out += [.exactTitle, .words(titleOnly: true), .words(titleOnly: false), .prefix(titleOnly: true), .prefix(titleOnly: false)]
        } else {
            out += [.words(titleOnly: false), .prefix(titleOnly: false)]
        }
        if substringPlan != nil { out.append(.substring) }
        return out
    }

    /// The MATCH expression of a word tier.
    func expression(for tier: SearchTier) -> String? {
        guard !terms.isEmpty else { return nil }
        switch tier {
        case .exactTitle, .exactArtist: return nil // looked up by key (`title_key`, `artist_key`), not in the word index
        case .words(let titleOnly), .prefix(let titleOnly):
            let prefix = tier == .prefix(titleOnly: titleOnly)
            let body = terms.map { term in
                Self.filter(titleOnly ? .title : term.field) + Self.literal(term.text) + (prefix && term.prefix ? "*" : "")
            }
            return body.joined(separator: " ")
        case .substring: return nil
        }
    }

    static func filter(_ field: Field?) -> String {
        field.map { "{" + $0.columns.joined(separator: " ") + "} : " } ?? ""
    }

    /// The word tiers, broadest last: every row any of them finds, the
    /// last one finds.
    var wordTiers: [SearchTier] {
        isPlain ? [.words(titleOnly: true), .words(titleOnly: false), .prefix(titleOnly: true), .prefix(titleOnly: false)]
            : [.words(titleOnly: false), .prefix(titleOnly: false)]
    }

    /// Each term's words as the word index sees them (`SearchText.wordFold`).
    var termWords: [[Substring]] { terms.map { SearchText.wordFold($0.text).split(separator: " ") } }

    /// Whether a row matches a word tier's MATCH expression, tested here
    /// instead of in the index: `fields` are the row's five indexed fields'
    /// words, in the index's column order (`SearchRowWords`). Only for rows the
    /// broadest tier found: if this and the tokenizer ever disagreed, a row
    /// would move between tiers, never in or out of the results.
    func matches(_ tier: SearchTier, row: SearchRowWords, termWords: [[Substring]]) -> Bool {
        let titleOnly: Bool, prefix: Bool
        switch tier {
        case .words(let t): titleOnly = t; prefix = false
        case .prefix(let t): titleOnly = t; prefix = true
        default: return false
        }
        for (term, words) in zip(terms, termWords) {
            guard !words.isEmpty else { return false }
            let columns = titleOnly ? [0] : term.field?.columnIndexes ?? Array(0..<SearchRowWords.columnCount)
            let asPrefix = prefix && term.prefix
            guard columns.contains(where: { row.fields[$0].containsPhrase(words, lastAsPrefix: asPrefix) }) else { return false }
        }
        return true
    }
}

extension SearchQuery.Field {
    /// `columns` as indexes into `SearchRowWords.fields`.
    var columnIndexes: [Int] { columns.compactMap { SearchRowWords.columnNames.firstIndex(of: $0) } }
}

/// One row's indexed fields (title, artist, album, album artist, genre),
/// each as its words (`SearchText.wordFold`), for `SearchQuery.matches`.
struct SearchRowWords: Sendable {
    static let columnNames = ["title", "artist", "album", "album_artist", "genre"]
    static var columnCount: Int { columnNames.count }
    var fields: [[Substring]]

    /// From fields already folded (the keys the scan stores) or not yet.
    init(folded: [String?]) {
        fields = folded.map { $0?.split(separator: " ") ?? [] }
    }
}

extension Array where Element == Substring {
    /// Whether `phrase` occurs here as consecutive words; with
    /// `lastAsPrefix` its last word need only begin one (FTS5's `"a b"*`).
    func containsPhrase(_ phrase: [Substring], lastAsPrefix: Bool) -> Bool {
        guard !phrase.isEmpty, phrase.count <= count else { return false }
        let last = phrase.count - 1
        for start in 0...(count - phrase.count) {
            var k = 0
            while k < phrase.count {
                let word = self[start + k]
                if k == last && lastAsPrefix ? !word.hasPrefix(phrase[k]) : word != phrase[k] { break }
                k += 1
            }
            if k == phrase.count { return true }
        }
        return false
    }
}

extension Library {
    /// Searches title, artist, album, album artist and genre.
    ///
    /// Order (`SearchTier`): the artist's tracks when the text is an
    /// artist's name; titles equal to the whole text; every word whole in
    /// the title, then in any field; the last word as a prefix in the title,
    /// then in any field; then substrings (CJK, "beat" in "Upbeat"). Within
    /// a tier, by track id (scan order: folder, then file), so pages are
    /// stable. Case and diacritics are ignored. Never throws for any text
    /// the user typed; throws only when the database itself fails.
    /// Does not record the query: call `recordSearch` when the user commits to it.
    public func search(_ text: String, limit: Int = 50, offset: Int = 0) throws(LibraryError) -> SearchResults {
        try search(text, limit: limit, offset: offset, classifyingUpTo: Self.classifiedSearchLimit)
    }

    /// `classifyingUpTo`: the deepest page whose word tiers are sorted out
    /// from one probe of the index (`classify`); 0 runs each tier in the
    /// index, which the tests compare against.
    func search(_ text: String, limit: Int, offset: Int, classifyingUpTo classifiedLimit: Int) throws(LibraryError) -> SearchResults {
        let query = SearchQuery(text)
        let limit = max(0, min(limit, 1_000))
        let offset = max(0, offset)
        var page = SearchResults(query: text, tracks: [], offset: offset, limit: limit, hasMore: false)
        guard !query.isEmpty, limit > 0 else { return page }
        do {
            page.tracks = try reading { db throws(LibraryError) -> [Track] in
                let wanted = offset + limit + 1
                var ids: [Int64] = []
                var seen = Set<Int64>()
                let whole = SearchText.wordFold(query.wholeText)
                // "Beatles" names "The Beatles" too.
                let names: [SQLValue] = [.text(whole), .text("the " + whole)]
                // During a bulk load the key indexes are not there yet and the
                // word index holds the tracks from before it: the exact tiers
                // would read every row, so only the word tiers run.
                let exactTiers = !self.bulkLoading.load(ordering: .acquiring)
                let artistTracks = exactTiers && query.isPlain && !whole.isEmpty ? try db.query("""
                    SELECT id FROM tracks WHERE artist_key IN (?1, ?2) UNION SELECT id FROM tracks WHERE album_artist_key IN (?1, ?2)
                    ORDER BY 1 LIMIT ?3
                    """, names + [.int(Int64(wanted))]) { $0.int(0) } : []
                let namesArtist = !artistTracks.isEmpty
                // When the first word tier has not filled the page, the broadest
                // is read far enough to see whether its matches are few. When
                // they are, they hold every word tier's: each row is put in its
                // tier here, and the tiers between need no walk of the same
                // doclists of their own (a query that finds little walked them
                // four times: the slowest searches).
                let broadest = query.wordTiers.last.flatMap { query.expression(for: $0) }
                let probeLimit = 2 * wanted + 1 // enough for the broadest tier's own turn, whatever came before
                var probe: [Int64]?
                var classified: [SearchTier: [Int64]]?
                // A tier whose expression an earlier one ran (a query ending in a
                // closed phrase has no prefix) finds nothing new.
                var ran: [String] = []
                for tier in query.tiers(namesArtist: namesArtist) {
                    guard ids.count < wanted else { break }
                    if !exactTiers, tier == .exactTitle { continue }
                    let found: [Int64]
                    switch tier {
                    case .exactArtist:
                        found = artistTracks
                    case .exactTitle:
                        found = try db.query("SELECT id FROM tracks WHERE title_key = ? ORDER BY id LIMIT ?",
                                             [.text(whole), .int(Int64(wanted))]) { $0.int(0) }
                    case .words, .prefix:
                        guard let expression = query.expression(for: tier), !ran.contains(expression) else { continue }
                        ran.append(expression)
                        if tier != query.wordTiers.first, probe == nil, let broadest, wanted <= classifiedLimit {
                            let rows = try db.query("SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ? LIMIT ?",
                                                    [.text(broadest), .int(Int64(probeLimit))]) { $0.int(0) }
                            if rows.count < probeLimit { classified = try Self.classify(rows, query, db) }
                            probe = rows
                        }
                        if let classified {
                            found = classified[tier] ?? []
                        } else if let probe, expression == broadest {
                            found = Array(probe.prefix(wanted + ids.count))
                        } else {
                            found = try db.query("SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ? LIMIT ?",
                                                 [.text(expression), .int(Int64(wanted + ids.count))]) { $0.int(0) }
                        }
                    case .substring:
                        found = try Self.substringIDs(query, limit: wanted + ids.count, db)
                    }
                    for id in found where seen.insert(id).inserted { ids.append(id) }
                }
                page.hasMore = ids.count > offset + limit
                let slice = Array(ids.dropFirst(offset).prefix(limit))
                guard !slice.isEmpty else { return [] }
                let placeholders = Array(repeating: "?", count: slice.count).joined(separator: ",")
                let rows = try db.query("SELECT \(TrackStore.columns) FROM tracks WHERE id IN (\(placeholders))", slice.map { .int($0) }) { TrackStore.track($0) }
                let byID = Dictionary(rows.map { ($0.id.rawValue, $0) }, uniquingKeysWith: { a, _ in a })
                return slice.compactMap { byID[$0] }
            }
            return page
        } catch {
            // Defence in depth: the quoting above makes FTS5 syntax errors
            // impossible, but if one slipped through it means "no match",
            // not a failure the user should see.
            if case .sqlite(_, _, let message) = error, message.hasPrefix("fts5:") || message.contains("syntax error") {
                logger.warning("search for \(text) produced an FTS5 error: \(message)")
                page.tracks = []
                page.hasMore = false
                return page
            }
            throw error
        }
    }

    /// Pages deeper than this are not classified (`classify`): the probe
    /// would read twice that many rows.
    static let classifiedSearchLimit = 500

    /// Every row of the broadest word tier (`ids`, in id order), put in the
    /// word tiers it matches: the rows' fields read once, from the keys the
    /// scan folded (title, artist, album artist) or folded here.
    private static func classify(_ ids: [Int64], _ query: SearchQuery, _ db: Database) throws(LibraryError) -> [SearchTier: [Int64]] {
        var out: [SearchTier: [Int64]] = [:]
        guard !ids.isEmpty else { return out }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
        let rows = try db.query("SELECT id, title_key, artist_key, album, album_artist_key, genre FROM tracks WHERE id IN (\(placeholders)) ORDER BY id",
                                ids.map { .int($0) }) { s in
            (s.int(0), SearchRowWords(folded: [s.optionalText(1), s.optionalText(2), s.optionalText(3).map(SearchText.wordFold),
                                               s.optionalText(4), s.optionalText(5).map(SearchText.wordFold)]))
        }
        let termWords = query.termWords
        let tiers = query.wordTiers
        for (id, row) in rows {
            for tier in tiers.dropLast() where query.matches(tier, row: row, termWords: termWords) { out[tier, default: []].append(id) }
        }
        // The broadest tier is the index's own answer, whatever the test above says.
        if let broadest = tiers.last { out[broadest] = ids }
        return out
    }

    /// Substring matches: trigram MATCH for terms of 3+ characters, the CJK
    /// gram index for shorter CJK terms, the word index for other short
    /// terms; a field filter on a short CJK term is checked with LIKE on
    /// those candidates only.
    private static func substringIDs(_ query: SearchQuery, limit: Int, _ db: Database) throws(LibraryError) -> [Int64] {
        guard let plan = query.substringPlan else { return [] }
        var sets: [String] = []
        var values: [SQLValue] = []
        if let match = plan.match {
            sets.append("SELECT rowid FROM tracks_trigram WHERE tracks_trigram MATCH ?")
            values.append(.text(match))
        }
        if let grams = plan.grams {
            sets.append("SELECT rowid FROM tracks_grams WHERE tracks_grams MATCH ?")
            values.append(.text(grams))
        }
        guard !sets.isEmpty else { return [] }
        if sets.count == 1, plan.likes.isEmpty {
            // One index and nothing to check: FTS5 yields its rowids in order
            // and stops at the limit ("sho" in a third of the library: 60 rows
            // read, not 18,000 gathered into a temporary table first).
            return try db.query(sets[0] + " LIMIT ?", values + [.int(Int64(limit))]) { $0.int(0) }
        }
        var conditions: [String] = []
        for like in plan.likes {
            conditions.append("(" + like.columns.map { "t.\($0) LIKE ? ESCAPE '\\'" }.joined(separator: " OR ") + ")")
            values += Array(repeating: .text(like.pattern), count: like.columns.count)
        }
        let sql = "SELECT t.id FROM tracks t WHERE t.id IN (\(sets.joined(separator: " INTERSECT ")))"
            + conditions.map { " AND " + $0 }.joined() + " ORDER BY t.id LIMIT ?"
        return try db.query(sql, values + [.int(Int64(limit))]) { $0.int(0) }
    }

    // MARK: Recent searches

    public static let recentSearchLimit = 10

    /// Remembers a search the user committed to (pressed enter, opened a
    /// result). The same query in another case moves to the top, once.
    /// Returns after the change has committed.
    public func recordSearch(_ text: String) throws(LibraryError) {
        let trimmed = TagText.clean(text) ?? ""
        guard !trimmed.isEmpty else { return }
        try locked { db throws(LibraryError) in
            try db.transaction { () throws(LibraryError) in
                try db.run("""
                    INSERT INTO recent_searches(key, query, seq)
                    VALUES (?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM recent_searches))
                    ON CONFLICT(key) DO UPDATE SET query = excluded.query, seq = excluded.seq
                    """, [.text(trimmed.lowercased()), .text(trimmed)])
                try db.run("DELETE FROM recent_searches WHERE key NOT IN (SELECT key FROM recent_searches ORDER BY seq DESC LIMIT ?)",
                           [.int(Int64(Self.recentSearchLimit))])
            }
        }
    }

    /// The last 10 distinct searches, newest first.
    public func recentSearches() throws(LibraryError) -> [String] {
        try locked { db throws(LibraryError) in
            try db.query("SELECT query FROM recent_searches ORDER BY seq DESC LIMIT ?", [.int(Int64(Self.recentSearchLimit))]) { $0.text(0) }
        }
    }

    public func clearRecentSearches() throws(LibraryError) {
        try locked { db throws(LibraryError) in try db.run("DELETE FROM recent_searches") }
    }
}

extension String {
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty, contains(target) else { return self }
        return split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }

}

extension StringProtocol {
    /// Without leading and trailing whitespace.
    func trimmingSpaces() -> String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}
