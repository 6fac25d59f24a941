import Testing
import TuttiInput
