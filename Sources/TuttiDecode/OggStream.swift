import COgg
import TuttiSystem

/// libogg, opened at the first Ogg stream (dlopen), never linked: only the
/// leader's previews write Ogg, so no process maps it before the first
/// preview. `OggStream` is the only caller.
enum OggLibrary {
    static let table = Result { () throws(SharedLibraryError) in
        try FunctionTable<tutti_ogg>.open("libogg.so.0", symbols: [
            "ogg_stream_init", "ogg_stream_clear", "ogg_stream_packetin",
            "ogg_stream_pageout", "ogg_stream_flush", "ogg_stream_check",
        ])
    }

    /// The table, or why libogg (`libogg.so.0`) could not be opened.
    static func functions() throws(OggError) -> tutti_ogg {
        switch table {
        case .success(let t): return t.functions
        case .failure(let e): throw .unavailable(e.description)
        }
    }
}

/// Why an Ogg stream could not be written; converted from libogg's return
/// codes here, once.
public enum OggError: Error, Equatable, CustomStringConvertible {
    /// libogg is not installed (the loader's words).
    case unavailable(String)
    /// libogg refused: out of memory, or a stream already in error (what was being done).
    case failed(String)

    public var description: String {
        switch self {
        case .unavailable(let why): "libogg is not installed (\(why)); install Debian's libogg0"
        case .failed(let what): "libogg: \(what) failed"
        }
    }
}

/// One logical Ogg bitstream being written (libogg's `ogg_stream_state`),
/// the only place that initialises and clears one: packets go in, pages
/// (header and body, checksummed by libogg) come out as bytes.
///
/// Thread contract: one thread at a time. Allocates: never on the audio thread.
public final class OggStream {
    private let ogg: tutti_ogg
    private let state: UnsafeMutablePointer<ogg_stream_state>

    /// Opens libogg if no one has yet. Throws `.unavailable` without it.
    public init(serial: UInt32) throws(OggError) {
        ogg = try OggLibrary.functions()
        state = .allocate(capacity: 1)
        guard ogg.stream_init(state, Int32(bitPattern: serial)) == 0 else {
            state.deallocate()
            throw .failed("ogg_stream_init")
        }
    }

    deinit {
        _ = ogg.stream_clear(state)
        state.deallocate()
    }

    /// Adds one packet; libogg copies its bytes. `granule`: the codec's
    /// position at the packet's end (-1: none).
    public func append(_ bytes: [UInt8], granule: Int64, number: Int64, first: Bool, last: Bool) throws(OggError) {
        let status = bytes.withUnsafeBufferPointer { b in
            var packet = ogg_packet(packet: UnsafeMutablePointer(mutating: b.baseAddress), bytes: b.count,
                                    b_o_s: first ? 1 : 0, e_o_s: last ? 1 : 0, granulepos: granule, packetno: number)
            return ogg.stream_packetin(state, &packet)
        }
        guard status == 0 else { throw .failed("ogg_stream_packetin") }
    }

    /// Appends to `out` the pages libogg has filled (it decides when a page
    /// is full); with `flush`, also the page it holds, however short.
    public func pages(into out: inout [UInt8], flush: Bool = false) throws(OggError) {
        var page = ogg_page()
        while ogg.stream_pageout(state, &page) != 0 { append(page, to: &out) }
        if flush {
            while ogg.stream_flush(state, &page) != 0 { append(page, to: &out) }
        }
        guard ogg.stream_check(state) == 0 else { throw .failed(flush ? "ogg_stream_flush" : "ogg_stream_pageout") }
    }

    /// A page's bytes point into the stream's buffers until the next call: copied here.
    private func append(_ page: ogg_page, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: page.header, count: page.header_len))
        out.append(contentsOf: UnsafeBufferPointer(start: page.body, count: page.body_len))
    }
}
