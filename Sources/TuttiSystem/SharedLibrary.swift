import Glibc

/// Why a library opened when first needed could not be (the loader's words).
public struct SharedLibraryError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    public init(description: String) { self.description = description }
}

/// The functions of a C library that is opened when first needed (dlopen)
/// instead of linked, so a process that never needs it never loads it.
/// `Table` is a C struct of function pointers only, declared in the
/// library's shim; `open` fills it from `symbols`, in the struct's order.
/// The library is never closed.
// @unchecked Sendable: the table is written once, before `open` returns, and only read after.
public struct FunctionTable<Table>: @unchecked Sendable {
    private let table: UnsafePointer<Table>

    /// Its functions, to call.
    public var functions: Table { table.pointee }
    /// For the shim's wrappers of variadic functions, which take the table.
    public var pointer: UnsafePointer<Table> { table }

    public static func open(_ file: String, symbols: [String]) throws(SharedLibraryError) -> FunctionTable {
        let slot = MemoryLayout<UnsafeRawPointer>.stride
        precondition(symbols.count * slot == MemoryLayout<Table>.size, "\(Table.self) has not \(symbols.count) function pointers")
        guard let library = dlopen(file, RTLD_NOW | RTLD_LOCAL) else { throw SharedLibraryError(description: loaderError(file)) }
        let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<Table>.size, alignment: MemoryLayout<Table>.alignment)
        for (i, name) in symbols.enumerated() {
            guard let function = dlsym(library, name) else {
                raw.deallocate()
                throw SharedLibraryError(description: loaderError("\(name) in \(file)"))
            }
            raw.storeBytes(of: function, toByteOffset: i * slot, as: UnsafeMutableRawPointer.self)
        }
        // Every field is a function pointer, now set: the memory is a valid Table.
        return FunctionTable(table: UnsafePointer(raw.bindMemory(to: Table.self, capacity: 1)))
    }

    private static func loaderError(_ what: String) -> String {
        dlerror().map { String(cString: $0) } ?? "\(what) not found"
    }
}
