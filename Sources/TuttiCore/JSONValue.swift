/// A JSON document as a value, for everything that reads JSON without
/// Foundation: the leader's control surfaces (JSON-RPC, Snapcast's API), its
/// saved state, the speaker's doctor asking the leader's `rooms.list`.
/// Pure, bounded: at most `maxDepth` levels of nesting.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public static let maxDepth = 64

    public struct Malformed: Error, Equatable, CustomStringConvertible {
        public var offset: Int
        public var description: String { "malformed JSON at byte \(offset)" }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let fields) = self { fields[key] } else { nil }
    }
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    public var number: Double? { if case .number(let n) = self { n } else { nil } }
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }

    /// A whole number within ±2^53 (exact in a Double), nil for anything else.
    public var integer: Int? {
        guard case .number(let n) = self, n.rounded() == n, abs(n) <= 9_007_199_254_740_992 else { return nil }
        return Int(n)
    }

    /// The value as compact JSON text, as `encoded()` writes it (so equal
    /// values write equal text).
    public var serialized: String { String(decoding: encoded(), as: UTF8.self) }

    public var object: [String: JSONValue]? { if case .object(let o) = self { o } else { nil } }
    /// An array of strings only.
    public var strings: [String]? { array.flatMap { a in Self.all(a, \.string) } }
    /// An array of numbers only (a boolean is no number).
    public var numbers: [Double]? { array.flatMap { a in Self.all(a, \.number) } }
    /// An array of whole numbers only.
    public var integers: [Int]? { array.flatMap { a in Self.all(a, \.integer) } }
    /// An object whose values are all strings.
    public var stringMap: [String: String]? {
        guard let o = object else { return nil }
        let m = o.compactMapValues(\.string)
        return m.count == o.count ? m : nil
    }
    private static func all<T>(_ items: [JSONValue], _ read: (JSONValue) -> T?) -> [T]? {
        let values = items.compactMap(read)
        return values.count == items.count ? values : nil
    }

    /// Parses `bytes` (or `text`) as JSON; nil when they are not.
    public static func parsing(_ bytes: [UInt8]) -> JSONValue? { try? parse(bytes) }
    public static func parsing(_ text: String) -> JSONValue? { try? parse(Array(text.utf8)) }

    /// Parses one JSON value (surrounding white space allowed, nothing else).
    public static func parse(_ bytes: [UInt8]) throws(Malformed) -> JSONValue {
        var reader = Reader(bytes: bytes)
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.at == bytes.count else { throw Malformed(offset: reader.at) }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        var at = 0

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
        }

        func fail() -> Malformed { Malformed(offset: at) }

        mutating func expect(_ word: String) throws(Malformed) {
            for b in word.utf8 {
                guard at < bytes.count, bytes[at] == b else { throw fail() }
                at += 1
            }
        }

        mutating func value(depth: Int) throws(Malformed) -> JSONValue {
            guard depth < JSONValue.maxDepth else { throw fail() }
            skipSpace()
            guard at < bytes.count else { throw fail() }
            switch bytes[at] {
            case UInt8(ascii: "n"): try expect("null"); return .null
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                at += 1
                var items: [JSONValue] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard at < bytes.count else { throw fail() }
                    if bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                    guard bytes[at] == UInt8(ascii: ",") else { throw fail() }
                    at += 1
                }
            case UInt8(ascii: "{"):
                at += 1
                var fields: [String: JSONValue] = [:]
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                while true {
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail() }
                    let key = try string()
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail() }
                    at += 1
                    fields[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard at < bytes.count else { throw fail() }
                    if bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                    guard bytes[at] == UInt8(ascii: ",") else { throw fail() }
                    at += 1
                }
            default:
                return .number(try number())
            }
        }

        mutating func number() throws(Malformed) -> Double {
            let start = at
            while at < bytes.count, "+-0123456789.eE".utf8.contains(bytes[at]) { at += 1 }
            guard at > start, let n = Double(String(decoding: bytes[start..<at], as: UTF8.self)), n.isFinite else {
                at = start
                throw fail()
            }
            return n
        }

        mutating func hex4() throws(Malformed) -> UInt32 {
            guard at + 4 <= bytes.count, let v = UInt32(String(decoding: bytes[at..<(at + 4)], as: UTF8.self), radix: 16),
                  bytes[at..<(at + 4)].allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }) else { throw fail() }
            at += 4
            return v
        }

        mutating func string() throws(Malformed) -> String {
            at += 1 // the opening quote
            var out: [UInt8] = []
            while true {
                guard at < bytes.count else { throw fail() }
                let b = bytes[at]
                at += 1
                switch b {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard at < bytes.count else { throw fail() }
                    let e = bytes[at]
                    at += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar), at + 6 <= bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") {
                            at += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw fail() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        out.append(contentsOf: String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8)
                    default: throw fail()
                    }
                case 0..<0x20:
                    throw fail()
                default:
                    out.append(b)
                }
            }
        }
    }
}
