/// A group's volume, as one slider over several rooms: it is the loudest
/// room's volume, and moving it scales every room by the same factor, so
/// the rooms keep their balance (a quiet bathroom stays quieter than the
/// kitchen).
public enum GroupVolume {
    /// The group's volume: its loudest room's (0 with no rooms).
    public static func of(_ volumes: [UInt8]) -> UInt8 { volumes.max() ?? 0 }

    /// Each room's new volume for group volume `target` (0…100). From
    /// silence (every room at 0) there is no balance to keep: all go to `target`.
    public static func scaled(_ volumes: [UInt8], to target: UInt8) -> [UInt8] {
        let target = min(target, 100)
        let loudest = of(volumes)
        guard loudest > 0 else { return volumes.map { _ in target } }
        return volumes.map { v in
            UInt8(min(100, (Double(v) * Double(target) / Double(loudest)).rounded()))
        }
    }
}
