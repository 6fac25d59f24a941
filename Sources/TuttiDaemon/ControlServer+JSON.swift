import TuttiCore
import TuttiControlKit

/// Encodes the JSON the leader writes (JSON-RPC replies and notifications,
/// Snapcast's control API, saved state) without Foundation, whose
/// JSONSerialization would load ICU into the leader (and whose `.sortedKeys`
/// compared keys through NSString with a locale: 85 % of a ranked search's
/// time). Keys are sorted by their bytes. Handles what replies are made of
/// (strings, Swift integers, floating-point numbers and booleans, `JSONValue`
/// from parsed requests, `JSONValue.null` for null, arrays, dictionaries
/// with String keys); anything else returns nil.
/// Numbers: a whole number below 10^15 is written as an integer ("3", not
/// "3.0"), others in Swift's shortest form ("0.1", "1e+20").
enum ReplyJSON {
    static func encode(_ value: Any) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(4_096)
        return append(value, to: &out) ? out : nil
    }

    private static func append(_ value: Any, to out: inout [UInt8]) -> Bool {
        // The scalars by their dynamic type first: cheaper than a cast each.
        let kind = type(of: value)
        if kind == String.self {
            appendString(value as! String, to: &out)
        } else if kind == Int.self {
            appendInteger(Int64(value as! Int), to: &out)
        } else if kind == Bool.self {
            out += (value as! Bool) ? Array("true".utf8) : Array("false".utf8)
        } else if kind == Double.self {
            return appendDouble(value as! Double, to: &out)
        } else if kind == Int64.self {
            out += Array(String(value as! Int64).utf8)
        } else if kind == Int32.self {
            out += Array(String(value as! Int32).utf8)
        } else if kind == UInt32.self {
            out += Array(String(value as! UInt32).utf8)
        } else if kind == UInt8.self {
            out += Array(String(value as! UInt8).utf8)
        } else if kind == UInt64.self {
            out += Array(String(value as! UInt64).utf8)
        } else if kind == Float.self {
            return appendDouble(Double(value as! Float), to: &out)
        } else if kind == JSONValue.self {
            return append(value as! JSONValue, to: &out)
        } else if kind == ControlServer.EncodedJSON.self {
            out += (value as! ControlServer.EncodedJSON).bytes
        } else if let d = value as? [String: Any] {
            out.append(UInt8(ascii: "{"))
            let keys = d.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (i, key) in keys.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                guard append(d[key]!, to: &out) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        } else if let a = value as? [Any] {
            out.append(UInt8(ascii: "["))
            for (i, element) in a.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                guard append(element, to: &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        } else {
            return false
        }
        return true
    }

    private static func append(_ value: JSONValue, to out: inout [UInt8]) -> Bool {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let b): out += b ? Array("true".utf8) : Array("false".utf8)
        case .number(let n): return appendDouble(n, to: &out)
        case .string(let s): appendString(s, to: &out)
        case .array(let a): return append(a as [Any], to: &out)
        case .object(let o): return append(o as [String: Any], to: &out)
        }
        return true
    }

    static func appendDouble(_ d: Double, to out: inout [UInt8]) -> Bool {
        guard d.isFinite else { return false }
        if d == d.rounded(), abs(d) < 1e15 { appendInteger(Int64(d), to: &out) } else { out += Array("\(d)".utf8) }
        return true
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// Decimal digits without a String in between.
    static func appendInteger(_ v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(UInt8(ascii: "-")) }
        var m = v.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0) // 20 digits at most, kept off the heap
        var n = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                raw[n] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
                n += 1
            } while m > 0
            for i in stride(from: n - 1, through: 0, by: -1) { out.append(raw[i]) }
        }
    }

    static func appendString(_ s: String, to out: inout [UInt8]) {
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
            case 0..<0x20: out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), 0x30, 0x30, hex[Int(b >> 4)], hex[Int(b & 15)]]
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
