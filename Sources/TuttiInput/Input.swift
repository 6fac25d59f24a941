// Buttons and remotes: evdev and GPIO readers (issue 5).
import TuttiCore
