import Glibc
import TuttiFuzzTargets

// libFuzzer's driver with our own entry point, so that one binary serves
// every target: `tutti-fuzz TARGET [libFuzzer flags and corpus folders]`.
// It is linked from libclang_rt.fuzzer_no_main (scripts/fuzz.sh): the
// runtime with a `main` clashes with the one SwiftPM gives executables.

@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<CInt>,
               _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
               _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The target chosen on the command line; set once before libFuzzer starts.
nonisolated(unsafe) var selected = FuzzTarget.wire

@main
enum Driver {
    static func main() {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        guard CommandLine.arguments.count >= 2, let target = FuzzTarget(rawValue: CommandLine.arguments[1]) else {
            print("usage: tutti-fuzz TARGET [libFuzzer options] [CORPUS…]\ntargets: \(names)")
            exit(2)
        }
        selected = target
        // libFuzzer sees the program name and everything after the target.
        var argv: [UnsafeMutablePointer<CChar>?] = CommandLine.arguments.enumerated().filter { $0.offset != 1 }.map { strdup($0.element) }
        argv.append(nil)
        var argc = CInt(argv.count - 1)
        let status = argv.withUnsafeMutableBufferPointer { buffer -> CInt in
            var base = buffer.baseAddress
            return runDriver(&argc, &base) { data, size in
                selected.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
                return 0
            }
        }
        exit(status)
    }
}
