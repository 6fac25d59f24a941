// No nil literal: `dictionary[key] = nil` must stay a removal, not a JSON null.

/// JSON written as Swift literals: `["state": "playing", "track": 3,
/// "rooms": ["den", "kitchen"]]` is a `JSONValue`, so replies are built
/// with the type that reads requests, and nothing is `Any`.
extension JSONValue: ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByStringLiteral,
    ExpressibleByStringInterpolation, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral {
    /// A key written twice is a programmer's error, as in a `Dictionary` literal.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(uniqueKeysWithValues: elements))
    }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    /// A whole number from any integer type: exact within ±2^53 (a larger
    /// one, such as a monotonic time in nanoseconds, needs its own digits).
    public static func int(_ value: some BinaryInteger) -> JSONValue { .number(Double(value)) }
    /// Strings as an array.
    public static func strings(_ values: some Sequence<String>) -> JSONValue { .array(values.map(JSONValue.string)) }
    /// Numbers as an array.
    public static func numbers(_ values: some Sequence<Double>) -> JSONValue { .array(values.map(JSONValue.number)) }
}

extension JSONValue {
    /// A whole number (exact up to ±2^53, as JSON numbers are doubles).
    public init(_ value: Int) { self = .number(Double(value)) }
    public init(_ value: Double) { self = .number(value) }
    public init(_ value: String) { self = .string(value) }
    public init(_ value: Bool) { self = .bool(value) }
    public init(_ values: [String]) { self = .array(values.map(JSONValue.string)) }
    public init(_ values: [Double]) { self = .array(values.map(JSONValue.number)) }
}
