import TuttiCLI

// The client; everything it does is in TuttiCLI (Runner.swift), so its
// parsing and printing are tested there.
runTutti(Array(CommandLine.arguments.dropFirst()))
