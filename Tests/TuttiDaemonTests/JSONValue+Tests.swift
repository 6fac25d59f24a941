import TuttiCore

extension JSONValue {
    /// An array of objects only (nil when any element is something else), as
    /// the tests read `rooms`, `entries`, `podcasts` and the like.
    var objectArray: [[String: JSONValue]]? {
        guard let items = array else { return nil }
        let objects = items.compactMap(\.object)
        return objects.count == items.count ? objects : nil
    }
}
