import Testing
import TuttiStreams
