import CMPG123

/// Why libmpg123 could not start on something; converted from its return
/// codes here, once. Each user turns it into its own module's error.
enum MPG123Error: Error, Equatable, CustomStringConvertible {
    /// `mpg123_new` failed (out of memory).
    case cannotCreate(reason: String)
    /// `mpg123_open` (a file) or `mpg123_open_feed` failed.
    case cannotOpen(reason: String)
    /// No MPEG audio frame, so no format, was found.
    case noFormat(reason: String)
    /// This libmpg123 cannot give 32-bit float output.
    case notFloat

    var description: String {
        switch self {
        case .cannotCreate(let reason): "libmpg123: \(reason)"
        case .cannotOpen(let reason): reason
        case .noFormat(let reason): "no MPEG audio found (\(reason))"
        case .notFloat: "libmpg123 cannot produce 32-bit float output"
        }
    }
}

/// What a libmpg123 read stopped at.
public enum MPG123ReadStatus: Equatable, Sendable {
    /// Frames were decoded (and more may be ready).
    case ok
    /// A feed wants more bytes.
    case needMore
    /// The stream's format is known or changed.
    case newFormat
    case done
    /// libmpg123's text for what went wrong.
    case failed(String)
}

/// One libmpg123 decoder (`mpg123_handle`), the only place that creates,
/// opens, closes and deletes one: gapless, float output, quiet from the
/// start. Every call into the handle goes through a method, so the handle
/// is alive for the whole call (a raw pointer taken out of it would not
/// keep it so).
///
/// Thread contract: one thread at a time, like the decoders that own it.
final class MPG123Handle {
    private let handle: OpaquePointer
    private var isOpen = false

    /// A new handle set up for gapless decoding to 32-bit float.
    init() throws(MPG123Error) {
        var err: Int32 = 0
        guard let mh = mpg123_new(nil, &err) else { throw .cannotCreate(reason: String(cString: mpg123_plain_strerror(err))) }
        tutti_mpg123_configure(mh)
        handle = mh
    }

    deinit {
        if isOpen { mpg123_close(handle) }
        mpg123_delete(handle)
    }

    /// libmpg123's text for the last error on this handle.
    var lastError: String { String(cString: mpg123_strerror(handle)) }

    /// Asks for ID3v2 pictures (APIC) too; before `open`.
    func keepPictures() { mpg123_param2(handle, Int32(MPG123_ADD_FLAGS.rawValue), Int(MPG123_PICTURE.rawValue), 0) }

    /// Opens the file at `path` (closing whatever was open).
    func open(path: String) throws(MPG123Error) {
        guard tutti_mpg123_open(handle, path) == MPG123_OK.rawValue else { throw .cannotOpen(reason: lastError) }
        isOpen = true
    }

    /// Opens for feeding (`feed`), starting afresh if something was open.
    func openFeed() throws(MPG123Error) {
        guard tutti_mpg123_open_feed(handle) == MPG123_OK.rawValue else { throw .cannotOpen(reason: lastError) }
        isOpen = true
    }

    /// The stream's rate and channels; reading a file's first frame (and
    /// the ID3v2 tag before it) if need be. Only 32-bit float is accepted.
    func format() throws(MPG123Error) -> (rate: Int, channels: Int) {
        var rate = 0, channels: Int32 = 0, encoding: Int32 = 0
        guard mpg123_getformat(handle, &rate, &channels, &encoding) == MPG123_OK.rawValue, rate > 0 else {
            throw .noFormat(reason: lastError)
        }
        guard encoding == Int32(MPG123_ENC_FLOAT_32.rawValue) else { throw .notFloat }
        return (rate, Int(channels))
    }

    /// Keeps the output at this format from now on, so a mid-stream change
    /// is decoded at the same rate.
    func fixFormat(rate: Int, channels: Int) {
        mpg123_format_none(handle)
        mpg123_format(handle, rate, Int32(channels), Int32(MPG123_ENC_FLOAT_32.rawValue))
    }

    /// Adds bytes to a feed.
    func feed(_ input: UnsafeRawBufferPointer) {
        guard let base = input.baseAddress, input.count > 0 else { return }
        _ = mpg123_feed(handle, base.assumingMemoryBound(to: UInt8.self), input.count)
    }

    /// Decodes into `bytes` (up to `count` bytes): the bytes written and why it stopped.
    func read(into bytes: UnsafeMutableRawBufferPointer, count: Int) -> (bytes: Int, status: MPG123ReadStatus) {
        var done = 0
        let status: MPG123ReadStatus = switch mpg123_read(handle, bytes.baseAddress, count, &done) {
        case MPG123_OK.rawValue: .ok
        case MPG123_NEED_MORE.rawValue: .needMore
        case MPG123_NEW_FORMAT.rawValue: .newFormat
        case MPG123_DONE.rawValue: .done
        default: .failed(lastError)
        }
        return (done, status)
    }

    /// Length in frames (exact, gapless, after `scan` or with a LAME/Xing
    /// header; else an estimate); negative when unknown.
    var length: Int { Int(tutti_mpg123_length(handle)) }

    /// Walks every frame of a file to learn its exact length; false when it cannot.
    @discardableResult
    func scan() -> Bool { mpg123_scan(handle) == MPG123_OK.rawValue }

    /// Seeks a file to `frame` (gapless); false when it cannot.
    func seek(toFrame frame: Int) -> Bool { tutti_mpg123_seek(handle, Int64(max(0, frame))) >= 0 }

    /// Prepares a feed to continue at `frame`: the byte offset in the stream to feed from, or nil.
    func feedSeek(toFrame frame: Int) -> Int64? {
        var inputOffset: Int64 = 0
        guard tutti_mpg123_feedseek(handle, Int64(max(0, frame)), &inputOffset) >= 0 else { return nil }
        return inputOffset
    }

    /// The encoder delay a LAME/Info tag declares; nil without one.
    var encoderDelay: Int? {
        var delay = -1
        var ignored = 0.0
        mpg123_getstate2(handle, Int32(MPG123_ENC_DELAY.rawValue), &delay, &ignored)
        return delay >= 0 ? delay : nil
    }

    /// The current frame's header: bitrate in kbit/s and whether it is constant.
    var frameInfo: (bitrateKbps: Int, isConstant: Bool)? {
        var info = mpg123_frameinfo2()
        guard mpg123_info2(handle, &info) == MPG123_OK.rawValue else { return nil }
        return (Int(info.bitrate), info.vbr == Int32(MPG123_CBR.rawValue))
    }

    /// Calls `body` with the ID3 tags found so far (pointers into the
    /// handle's memory, valid only inside `body`); not at all without any.
    func withID3(_ body: (UnsafeMutablePointer<mpg123_id3v1>?, UnsafeMutablePointer<mpg123_id3v2>?) -> Void) {
        var v1: UnsafeMutablePointer<mpg123_id3v1>?
        var v2: UnsafeMutablePointer<mpg123_id3v2>?
        guard mpg123_meta_check(handle) & MPG123_ID3 != 0, mpg123_id3(handle, &v1, &v2) == MPG123_OK.rawValue else { return }
        body(v1, v2)
    }
}
