import TuttiCore
