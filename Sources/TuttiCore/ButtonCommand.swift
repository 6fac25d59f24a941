// A command a button, a remote or a speaker's room command asks for: in
// TuttiCore because the wire protocol carries it (`Message.roomCommand`);
// the gestures that make one are TuttiGestures'.

/// What a button can ask the player to do. The raw value is the word used
/// in the config file.
public enum ButtonCommand: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case play, pause, toggle, stop, next, prev
    case volumeUp = "vol+"
    case volumeDown = "vol-"
    case mute, like, party, shuffle
    case `repeat`
    /// The room's next EQ preset (Flat, Bass, Treble, …, then saved ones).
    case eq

    public var description: String { rawValue }
}
