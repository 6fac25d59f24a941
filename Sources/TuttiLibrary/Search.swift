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

    private static func filter(_ field: Field?) -> String {
        field.map { "{" + $0.columns.joined(separator: " ") + "} : " } ?? ""
    }

    /// The MATCH expression for the word index (all terms, ANDed).
    var wordExpression: String? {
        guard !terms.isEmpty else { return nil }
        return terms.map { Self.filter($0.field) + Self.literal($0.text) + ($0.prefix ? "*" : "") }.joined(separator: " ")
    }

    /// The substring search: trigram MATCH for terms of 3+ characters, LIKE
    /// for shorter CJK terms (a trigram index cannot look up 1–2
    /// characters). Nil when some term is a short non-CJK word, which only
    /// the word index can serve without scanning every row.
    var substringPlan: (match: String?, likes: [(columns: [String], pattern: String)])? {
        guard !terms.isEmpty, terms.allSatisfy({ $0.text.count >= 3 || Self.containsCJK($0.text) }) else { return nil }
        var matches: [String] = []
        var likes: [(columns: [String], pattern: String)] = []
        for term in terms {
            if term.text.count >= 3 {
                matches.append(Self.filter(term.field) + Self.literal(term.text))
            } else {
                let columns = term.field?.columns ?? ["title", "artist", "album", "album_artist", "genre"]
                likes.append((columns, "%" + Self.escapeLike(term.text) + "%"))
            }
        }
        return (matches.isEmpty ? nil : matches.joined(separator: " "), likes)
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
        s.unicodeScalars.contains { u in
            switch u.value {
            case 0x1100...0x11FF, 0x3040...0x30FF, 0x3130...0x318F, 0x31F0...0x31FF, 0x3400...0x4DBF,
                 0x4E00...0x9FFF, 0xA960...0xA97F, 0xAC00...0xD7AF, 0xF900...0xFAFF, 0xFF65...0xFFDC,
                 0x20000...0x2FA1F:
                true
            default:
                false
            }
        }
    }
}

/// Column weights for bm25: title and artist first, genre last.
enum SearchRanking {
    static let weights = "10.0, 8.0, 4.0, 3.0, 1.0" // title, artist, album, album_artist, genre
}

extension Library {
    /// Searches title, artist, album, album artist and genre.
    ///
    /// Results come in two tiers: word matches (prefix on the last term,
    /// case- and diacritic-insensitive) ranked by bm25 with title and artist
    /// weighted highest; then substring matches the word index missed
    /// (CJK words inside longer runs, "beat" inside "Upbeat"). Ties are
    /// broken by track id so pages are stable. Never throws for any text
    /// the user typed; throws only when the database itself fails.
    /// Does not record the query: call `recordSearch` when the user commits to it.
    public func search(_ text: String, limit: Int = 50, offset: Int = 0) throws(LibraryError) -> SearchResults {
        let query = SearchQuery(text)
        let limit = max(0, min(limit, 1_000))
        let offset = max(0, offset)
        var page = SearchResults(query: text, tracks: [], offset: offset, limit: limit, hasMore: false)
        guard let word = query.wordExpression, limit > 0 else { return page }
        do {
            try locked { db throws(LibraryError) in
                // Tier 1. Only ids are ranked and paged; rows are fetched for the page alone.
                var ids = try db.query("""
                    SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ? ORDER BY bm25(tracks_fts, \(SearchRanking.weights)), rowid LIMIT ? OFFSET ?
                    """, [.text(word), .int(Int64(limit + 1)), .int(Int64(offset))]) { $0.int(0) }
                // Tier 2 only when tier 1 cannot fill the page: most queries stop here.
                if ids.count <= limit, let plan = query.substringPlan {
                    let wordTotal = ids.isEmpty && offset > 0
                        ? Int(try db.scalarInt("SELECT count(*) FROM tracks_fts WHERE tracks_fts MATCH ?", [.text(word)]) ?? 0)
                        : offset + ids.count
                    ids += try Self.substringIDs(plan, word: word, limit: limit + 1 - ids.count, offset: max(0, offset - wordTotal), db)
                }
                page.hasMore = ids.count > limit
                ids = Array(ids.prefix(limit))
                let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
                let rows = try db.query("SELECT \(TrackStore.columns) FROM tracks WHERE id IN (\(placeholders))", ids.map { .int($0) }) { TrackStore.track($0) }
                let byID = Dictionary(rows.map { ($0.id.rawValue, $0) }, uniquingKeysWith: { a, _ in a })
                page.tracks = ids.compactMap { byID[$0] }
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

    /// Tier 2: substring matches that are not word matches, in trigram bm25 order.
    private static func substringIDs(_ plan: (match: String?, likes: [(columns: [String], pattern: String)]), word: String,
                                     limit: Int, offset: Int, _ db: Database) throws(LibraryError) -> [Int64] {
        var conditions = ["t.id NOT IN (SELECT rowid FROM tracks_fts WHERE tracks_fts MATCH ?)"]
        var values: [SQLValue] = [.text(word)]
        for like in plan.likes {
            conditions.append("(" + like.columns.map { "t.\($0) LIKE ? ESCAPE '\\'" }.joined(separator: " OR ") + ")")
            values += Array(repeating: .text(like.pattern), count: like.columns.count)
        }
        let sql: String
        if let match = plan.match {
            sql = """
                SELECT t.id FROM tracks_trigram JOIN tracks t ON t.id = tracks_trigram.rowid
                WHERE tracks_trigram MATCH ? AND \(conditions.joined(separator: " AND "))
                ORDER BY bm25(tracks_trigram, \(SearchRanking.weights)), t.id LIMIT ? OFFSET ?
                """
            values.insert(.text(match), at: 0)
        } else {
            sql = "SELECT t.id FROM tracks t WHERE \(conditions.joined(separator: " AND ")) ORDER BY t.id LIMIT ? OFFSET ?"
        }
        return try db.query(sql, values + [.int(Int64(limit)), .int(Int64(offset))]) { $0.int(0) }
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
