import TuttiControlKit
// The composition root: who imports it sees the engine and the speaker it composes.
@_exported import TuttiFollower
@_exported import TuttiLeader
@_exported import TuttiSystem
