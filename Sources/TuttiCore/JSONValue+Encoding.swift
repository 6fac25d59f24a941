/// JSON text written straight into bytes, without Foundation: the
/// leader's replies and notifications (JSON-RPC, Snapcast's API), its saved
/// state. Foundation's JSONSerialization would load ICU into the leader, and
/// its `.sortedKeys` compared keys through NSString with a locale (85 % of a
/// ranked search's time when it was used).
///
/// What clients have always read: compact; an object's keys in the order
/// of their UTF-8 bytes, so equal values write equal bytes; strings escape
/// `"`, `\`, and control characters (`\n`, `\r`, `\t` by name, the others
/// as `\u00XX`); a whole number below 10^15 as an integer ("3", not "3.0"),
/// other numbers in Swift's shortest form that reads back exactly ("0.1",
/// "1e+20", "1.5e-07"). JSON has no NaN or infinity: they are written null.
extension JSONValue {
    /// The value as JSON text.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        append(to: &out)
        return out
    }

    /// Appends the value as JSON text to `out`.
    public func append(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let n): Self.appendNumber(n, to: &out)
        case .string(let s): Self.appendString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.append(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (i, field) in fields.sorted(by: { Self.keyPrecedes($0.key, $1.key) }).enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.appendString(field.key, to: &out)
                out.append(UInt8(ascii: ":"))
                field.value.append(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// The order of an object's keys: by their UTF-8 bytes (not by
    /// `String.<`, which compares canonical equivalents as equal).
    public static func keyPrecedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// A number: whole and below 10^15 as an integer, else in shortest
    /// form; null when it is not finite.
    public static func appendNumber(_ n: Double, to out: inout [UInt8]) {
        if !n.isFinite {
            out.append(contentsOf: "null".utf8)
        } else if n == n.rounded(), abs(n) < 1e15 {
            appendInteger(Int64(n), to: &out)
        } else {
            out.append(contentsOf: n.description.utf8)
        }
    }

    /// An integer's decimal digits, exact at any size (no String in between).
    public static func appendInteger(_ v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0) // 20 digits at most, kept off the heap
        withUnsafeMutableBytes(of: &digits) { raw in
            var n = 0
            repeat {
                raw[n] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                n += 1
            } while m > 0
            for i in stride(from: n - 1, through: 0, by: -1) { out.append(raw[i]) }
        }
    }

    /// A string in quotes, escaped.
    public static func appendString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most text needs no escape: copied whole.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            out.append(contentsOf: s.utf8)
            out.append(UInt8(ascii: "\""))
            return
        }
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hexDigit(b >> 4), hexDigit(b & 15)]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10 }
}
