import TuttiControlKit
@_exported import TuttiFollower
@_exported import TuttiSystem
