import Glibc
import TuttiCore

// Text without Foundation: printf's number formats, and JSON as `--json`
// has always printed it (JSONSerialization's `.prettyPrinted, .sortedKeys`).

/// `snprintf` into a String: numbers only (`%d` takes an Int, `%f`/`%g` a
/// Double). The C locale (tutti never calls setlocale): a point for decimals.
func cFormat(_ format: String, _ arguments: any CVarArg...) -> String {
    withVaList(arguments) { list in
        var buffer = [CChar](repeating: 0, count: 256)
        // `list` can be walked once: a longer text is formatted again with a fresh copy.
        let needed = Int(vsnprintf(&buffer, buffer.count, format.replacingLongInts(), list))
        if needed < buffer.count { return String(decoding: buffer[0..<max(needed, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return withVaList(arguments) { again in
            var longer = [CChar](repeating: 0, count: needed + 1)
            _ = vsnprintf(&longer, longer.count, format.replacingLongInts(), again)
            return String(decoding: longer[0..<needed].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}

private extension String {
    /// `%d` and `%3d` are given Swift Ints (64 bits): C reads them as `%ld`.
    func replacingLongInts() -> String {
        var out = ""
        var inSpec = false
        for c in self {
            if inSpec {
                if c == "d" { out += "ld"; inSpec = false; continue }
                if c.isLetter || c == "%" { inSpec = false }
            } else if c == "%" {
                inSpec = true
            }
            out.append(c)
        }
        return out
    }
}

/// A JSON-RPC result as `--json` prints it: indented by two spaces,
/// `"key" : value`, keys in the order JSONSerialization's `.sortedKeys`
/// gave them (`JSONKeyOrder`), `/` escaped as `\/`.
public func jsonText(_ value: JSONValue) -> String {
    var out = ""
    writeJSON(value, indent: "", into: &out)
    return out
}

private func writeJSON(_ value: JSONValue, indent: String, into out: inout String) {
    switch value {
    case .null: out += "null"
    case .bool(let b): out += b ? "true" : "false"
    case .number(let n): out += jsonNumber(n)
    case .string(let s): writeJSONString(s, into: &out)
    case .array(let items):
        let inner = indent + "  "
        out += "[\n"
        for (i, item) in items.enumerated() {
            if i > 0 { out += ",\n" }
            out += inner
            writeJSON(item, indent: inner, into: &out)
        }
        out += "\n" + indent + "]"
    case .object(let fields):
        let inner = indent + "  "
        out += "{\n"
        for (i, key) in fields.keys.sorted(by: JSONKeyOrder.precedes).enumerated() {
            if i > 0 { out += ",\n" }
            out += inner
            writeJSONString(key, into: &out)
            out += " : "
            writeJSON(fields[key]!, indent: inner, into: &out)
        }
        out += "\n" + indent + "}"
    }
}

/// Shortest text that reads back as the same Double; whole numbers without `.0`.
func jsonNumber(_ n: Double) -> String {
    guard n.isFinite else { return "null" }
    let text = n.description // 2.5, 1e-05, 1e+16
    return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
}

private func writeJSONString(_ s: String, into out: inout String) {
    out += "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "/": out += "\\/"
        case "\u{08}": out += "\\b"
        case "\u{0C}": out += "\\f"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case "\u{00}"..."\u{1F}": out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
        default: out.unicodeScalars.append(scalar)
        }
    }
    out += "\""
}

/// The order of an object's keys in `--json`: what JSONSerialization's
/// `.sortedKeys` did (a collation: numeric, case-insensitive), for the ASCII
/// keys the leader sends. Punctuation before digits before letters; digit
/// runs by value; letters without case, then lower case first. Other
/// characters come after letters, by code point (ICU would interleave them).
enum JSONKeyOrder {
    private enum Element: Comparable {
        case punctuation(Int), digits(UInt64), letter(UInt32), other(UInt32)
    }

    /// ASCII punctuation and symbols in the root collation's order.
    private static let punctuation = Array(" _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$".unicodeScalars)

    private static func elements(_ key: String) -> [Element] {
        var out: [Element] = []
        var digits: UInt64? = nil
        for scalar in key.unicodeScalars {
            if ("0"..."9").contains(scalar) {
                let (times, o1) = (digits ?? 0).multipliedReportingOverflow(by: 10)
                let (sum, o2) = times.addingReportingOverflow(UInt64(scalar.value - 48))
                digits = o1 || o2 ? .max : sum
                continue
            }
            if let d = digits { out.append(.digits(d)); digits = nil }
            if ("a"..."z").contains(scalar) { out.append(.letter(scalar.value)) }
            else if ("A"..."Z").contains(scalar) { out.append(.letter(scalar.value + 32)) }
            else if let p = punctuation.firstIndex(of: scalar) { out.append(.punctuation(p)) }
            else { out.append(.other(scalar.value)) }
        }
        if let d = digits { out.append(.digits(d)) }
        return out
    }

    /// Whether `a` comes before `b`: by the collation's elements, then lower
    /// case before upper case, then fewer leading zeros, then code points.
    static func precedes(_ a: String, _ b: String) -> Bool {
        let ea = elements(a), eb = elements(b)
        if ea != eb { return ea.lexicographicallyPrecedes(eb) }
        for (x, y) in zip(a.unicodeScalars, b.unicodeScalars) where x != y {
            let xLower = ("a"..."z").contains(x), yLower = ("a"..."z").contains(y)
            if xLower != yLower, x.properties.isAlphabetic, y.properties.isAlphabetic { return xLower }
            break
        }
        if a.unicodeScalars.count != b.unicodeScalars.count { return a.unicodeScalars.count < b.unicodeScalars.count }
        return a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
    }
}
