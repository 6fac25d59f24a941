import Glibc
import Testing
import TuttiSystem

/// Libraries opened when first needed (libcurl here, librubberband and
/// FFmpeg elsewhere): the table is filled in its struct's order, and a
/// missing library or function is an error that names it.
struct FunctionTableTests {
    struct LibC { var getpid: @convention(c) () -> Int32; var abs: @convention(c) (Int32) -> Int32 }

    @Test func aLibrarysFunctionsAreCalledThroughItsTable() throws {
        let table = try FunctionTable<LibC>.open("libc.so.6", symbols: ["getpid", "abs"])
        #expect(table.functions.getpid() == getpid())
        #expect(table.functions.abs(-7) == 7)
    }

    @Test func aMissingLibraryOrFunctionSaysWhich() {
        #expect { try FunctionTable<LibC>.open("libtutti-absent.so.9", symbols: ["getpid", "abs"]) } throws: {
            ($0 as? SharedLibraryError)?.description.contains("libtutti-absent.so.9") == true
        }
        #expect { try FunctionTable<LibC>.open("libc.so.6", symbols: ["getpid", "tutti_no_such_function"]) } throws: {
            ($0 as? SharedLibraryError)?.description.contains("tutti_no_such_function") == true
        }
    }
}
