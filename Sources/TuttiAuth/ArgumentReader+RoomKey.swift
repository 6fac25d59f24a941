import TuttiCore

extension ArgumentReader {
    /// A room key (empty: none), for both daemons' `--room-key`.
    public mutating func roomKey(_ flag: String) throws(UsageError) -> RoomKey? {
        let text = try value(flag)
        if text.isEmpty { return nil }
        do { return try RoomKey(text) } catch { throw UsageError("room key: \(error)") }
    }
}
