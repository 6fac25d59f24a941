import Glibc
import TuttiCLI

// The client; everything it does is in TuttiCLI, so its parsing and
// printing are tested there. It returns the exit code; only here is exit.
exit(runTutti(Array(CommandLine.arguments.dropFirst())))
