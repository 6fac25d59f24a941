/// Text rules of library search, pure: how tag values are folded for the
/// MPD port's substring search, for ranking's "exact match" test, and how
/// CJK runs are cut into the one- and two-character grams that a word
/// index can look up.
public enum SearchText {
    /// Case folding as MPD 0.23 does it for `search` (ICU full case
    /// folding, no diacritics removed): "CAFÉ" finds "café", "cafe" does
    /// not; "STRASSE" finds "Straße".
    public static func mpdFold(_ s: String) -> String {
        if s.utf8.allSatisfy({ $0 < 0x80 }) {
            // The common case, without the Unicode machinery.
            var bytes = Array(s.utf8)
            for i in bytes.indices where bytes[i] >= 0x41 && bytes[i] <= 0x5A { bytes[i] += 0x20 }
            return String(decoding: bytes, as: UTF8.self)
        }
        var out = s.lowercased()
        if out.contains("ß") { out = out.replacing("ß", with: "ss") }
        if out.contains("ς") { out = out.replacing("ς", with: "σ") }
        return out
    }

    /// What the MPD port's `search any` looks in: every tag value it
    /// shows, folded, one a line, so a needle never spans two values.
    /// Line breaks inside a value become spaces (MPD replaces control
    /// characters in tags), so each value is one line and the first is the title.
    public static func mpdHaystack(_ values: [String?]) -> String {
        values.compactMap { v in
            v.map { value in
                guard value.utf8.contains(0x0A) else { return mpdFold(value) }
                return mpdFold(String(String.UnicodeScalarView(value.unicodeScalars.map { $0 == "\n" ? " " : $0 })))
            }
        }.joined(separator: "\n")
    }

    /// Folded for comparing whole texts the way the word index compares
    /// words: lower case, Latin diacritics removed, anything that is not a
    /// letter or digit a single space, trimmed. "Song Number 1" and
    /// "song  number 1!" are the same; so are "Beyoncé" and "BEYONCE".
    public static func wordFold(_ s: String) -> String {
        if s.utf8.allSatisfy({ $0 < 0x80 }) {
            // ASCII, the common case, byte by byte: letters lowered, digits
            // kept, anything else a separator (what the scalar rules below do
            // to ASCII, without a property lookup per character).
            var out: [UInt8] = []
            out.reserveCapacity(s.utf8.count)
            var pendingSpace = false
            for b in s.utf8 {
                let lower = b >= 0x41 && b <= 0x5A ? b + 0x20 : b
                if (lower >= 0x61 && lower <= 0x7A) || (b >= 0x30 && b <= 0x39) {
                    if pendingSpace && !out.isEmpty { out.append(0x20) }
                    pendingSpace = false
                    out.append(lower)
                } else {
                    pendingSpace = true
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
        var out = ""
        out.reserveCapacity(s.utf8.count)
        var pendingSpace = false
        for scalar in s.lowercased().unicodeScalars {
            let props = scalar.properties
            if props.isAlphabetic || props.numericType != nil {
                if props.generalCategory == .nonspacingMark { continue } // combining accents
                if pendingSpace && !out.isEmpty { out.append(" ") }
                pendingSpace = false
                if let plain = latinBase(scalar) { out.append(plain) } else { out.unicodeScalars.append(scalar) }
            } else if props.generalCategory == .nonspacingMark {
                continue
            } else {
                pendingSpace = true
            }
        }
        return out
    }

    /// The letter under a precomposed Latin letter with a diacritic, as
    /// SQLite's unicode61 tokenizer (`remove_diacritics 2`) sees it.
    static func latinBase(_ u: Unicode.Scalar) -> String? {
        let v = u.value
        guard v >= 0xC0, v <= 0x24F else { return nil }
        switch v {
        case 0xE0...0xE5: return "a"
        case 0xE6: return nil // æ stays a letter of its own
        case 0xE7: return "c"
        case 0xE8...0xEB: return "e"
        case 0xEC...0xEF: return "i"
        case 0xF1: return "n"
        case 0xF2...0xF6, 0xF8: return "o"
        case 0xF9...0xFC: return "u"
        case 0xFD, 0xFF: return "y"
        case 0x101, 0x103, 0x105: return "a"
        case 0x107, 0x109, 0x10B, 0x10D: return "c"
        case 0x10F, 0x111: return "d"
        case 0x113, 0x115, 0x117, 0x119, 0x11B: return "e"
        case 0x11D, 0x11F, 0x121, 0x123: return "g"
        case 0x125, 0x127: return "h"
        case 0x129, 0x12B, 0x12D, 0x12F, 0x131: return "i"
        case 0x135: return "j"
        case 0x137: return "k"
        case 0x13A, 0x13C, 0x13E, 0x140, 0x142: return "l"
        case 0x144, 0x146, 0x148: return "n"
        case 0x14D, 0x14F, 0x151: return "o"
        case 0x155, 0x157, 0x159: return "r"
        case 0x15B, 0x15D, 0x15F, 0x161: return "s"
        case 0x163, 0x165, 0x167: return "t"
        case 0x169, 0x16B, 0x16D, 0x16F, 0x171, 0x173: return "u"
        case 0x175: return "w"
        case 0x177: return "y"
        case 0x17A, 0x17C, 0x17E: return "z"
        default: return nil
        }
    }

    /// Whether a scalar belongs to a script written without spaces
    /// (Chinese, Japanese) or in syllable blocks (Korean).
    public static func isCJK(_ u: Unicode.Scalar) -> Bool {
        switch u.value {
        case 0x1100...0x11FF, 0x3040...0x30FF, 0x3130...0x318F, 0x31F0...0x31FF, 0x3400...0x4DBF,
             0x4E00...0x9FFF, 0xA960...0xA97F, 0xAC00...0xD7AF, 0xF900...0xFAFF, 0xFF65...0xFFDC,
             0x20000...0x2FA1F:
            true
        default:
            false
        }
    }

    /// Every one- and two-character piece of the CJK runs in `values`,
    /// space-separated, for a word index to hold: "東京タワー" gives
    /// "東 東京 京 京タ タ タワ ワ ワー ー". Nil when there is no CJK text.
    /// A word index cannot find "東京" inside the token "東京タワーの夜",
    /// and a trigram index cannot look up fewer than three characters.
    public static func cjkGrams(_ values: [String?]) -> String? {
        var grams: [String] = []
        var seen = Set<String>()
        func add(_ g: String) { if seen.insert(g).inserted { grams.append(g) } }
        for value in values {
            // Characters (grapheme breaking) only for a value with CJK in it.
            guard let value, value.unicodeScalars.contains(where: isCJK) else { continue }
            var run: [Character] = []
            func flush() {
                for i in run.indices {
                    add(String(run[i]))
                    if i + 1 < run.count { add(String(run[i]) + String(run[i + 1])) }
                }
                run.removeAll()
            }
            for c in value {
                if let u = c.unicodeScalars.first, isCJK(u) { run.append(c) } else { flush() }
            }
            flush()
        }
        return grams.isEmpty ? nil : grams.joined(separator: " ")
    }
}
