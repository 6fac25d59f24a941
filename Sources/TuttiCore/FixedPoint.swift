/// A number with a fixed count of decimals, as printf's `%.Nf` (`%+.Nf`
/// with `plus`) writes it, for logs and reports without Foundation's
/// `String(format:)`. Non-finite values read "nan", "inf" or "-inf".
public func fixedPoint(_ value: Double, decimals: Int, plus: Bool = false) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : (plus ? "+inf" : "inf")) }
    let digits = max(0, min(decimals, 15))
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded(.toNearestOrEven) // printf rounds ties to even too
    guard scaled < 9e18 else { return "\(value)" }
    let whole = UInt64(scaled)
    let factor = UInt64(scale)
    var text = String(whole / factor)
    if digits > 0 {
        let fraction = String(whole % factor)
        text += "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
    let negative = value < 0 && whole > 0
    return (negative ? "-" : (plus ? "+" : "")) + text
}
