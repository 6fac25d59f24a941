import Testing
import TuttiLibrary
