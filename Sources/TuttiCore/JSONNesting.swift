/// How deep a JSON text nests its arrays and objects, found without parsing
/// it. Foundation's parser recurses once per level; on a web server thread
/// (civetweb's have 100 KiB of stack) a body of a few hundred `[` was
/// enough to overflow it and end the process. No request Tutti knows nests
/// more than a few levels, so anything deeper is refused before parsing.
public enum JSONNesting {
    /// The deepest any request may nest (a JSON-RPC batch of objects with
    /// object params holding arrays is 4).
    public static let limit = 32

    /// Whether `bytes` nest deeper than `limit` (brackets inside strings do not count).
    public static func exceeds<C: Collection<UInt8>>(_ bytes: C, limit: Int = JSONNesting.limit) -> Bool {
        var depth = 0
        var inString = false, escaped = false
        for b in bytes {
            if inString {
                if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return true }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return false
    }
}
