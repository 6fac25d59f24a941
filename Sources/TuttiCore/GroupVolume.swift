/// A group's volume, as one slider over several rooms: it is the loudest
/// room's volume, and moving it scales every room by the same factor, so
/// the rooms keep their balance (a quiet bathroom stays quieter than the
/// kitchen).
///
/// The balance is kept unrounded while the slider moves: dragging a group
/// down to 2 and back up must not leave every room at the same level.
public enum GroupVolume {
    /// The group's volume: its loudest room's (0 with no rooms).
    public static func of(_ volumes: [UInt8]) -> UInt8 { volumes.max() ?? 0 }

    /// Each room's share of the loudest (1 for the loudest); nil when all are silent.
    public static func balance(of volumes: [UInt8]) -> [Double]? {
        let loudest = of(volumes)
        guard loudest > 0 else { return nil }
        return volumes.map { Double($0) / Double(loudest) }
    }

    /// Each room's volume for group volume `target` (0…100) with this balance.
    public static func scaled(balance: [Double], to target: UInt8) -> [UInt8] {
        let target = Double(min(target, 100))
        return balance.map { UInt8(min(100, max(0, ($0 * target).rounded()))) }
    }

    /// From the rooms' current volumes; from silence (every room at 0)
    /// there is no balance to keep: all go to `target`.
    public static func scaled(_ volumes: [UInt8], to target: UInt8) -> [UInt8] {
        scaled(balance: balance(of: volumes) ?? volumes.map { _ in 1 }, to: target)
    }
}
