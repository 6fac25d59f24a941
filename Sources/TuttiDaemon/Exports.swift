@_exported import TuttiFollower
@_exported import TuttiSystem
