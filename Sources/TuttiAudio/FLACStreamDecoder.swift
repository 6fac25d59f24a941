import CFLAC
import TuttiSystem

/// libFLAC, opened at the first FLAC decoder or encoder (dlopen), never
/// linked: a speaker maps it only once a Sendspin server sends FLAC, a leader
/// only at a FLAC file or a FLAC Sendspin player. `FLACStreamDecoder` and
/// `FLACFrameEncoder` are the only callers.
enum FLACLibrary {
    static let table = Result { () throws(SharedLibraryError) in
        try FunctionTable<tutti_flac>.open("libFLAC.so.12", symbols: [
            "FLAC__stream_decoder_new", "FLAC__stream_decoder_delete", "FLAC__stream_decoder_finish",
            "FLAC__stream_decoder_set_md5_checking", "FLAC__stream_decoder_set_metadata_respond",
            "FLAC__stream_decoder_init_file", "FLAC__stream_decoder_init_stream",
            "FLAC__stream_decoder_process_until_end_of_metadata", "FLAC__stream_decoder_process_single",
            "FLAC__stream_decoder_process_until_end_of_stream", "FLAC__stream_decoder_seek_absolute",
            "FLAC__stream_decoder_flush", "FLAC__stream_decoder_get_state",
            "FLAC__stream_encoder_new", "FLAC__stream_encoder_delete", "FLAC__stream_encoder_finish",
            "FLAC__stream_encoder_set_channels", "FLAC__stream_encoder_set_bits_per_sample",
            "FLAC__stream_encoder_set_sample_rate", "FLAC__stream_encoder_set_compression_level",
            "FLAC__stream_encoder_set_blocksize", "FLAC__stream_encoder_set_streamable_subset",
            "FLAC__stream_encoder_init_stream", "FLAC__stream_encoder_process_interleaved",
            "FLAC__stream_encoder_get_state",
        ])
    }

    /// The table, or why libFLAC 1.4 (`libFLAC.so.12`) could not be opened.
    static func functions() throws(FLACError) -> tutti_flac {
        switch table {
        case .success(let t): return t.functions
        case .failure(let e): throw .unavailable(e.description)
        }
    }
}

/// Why libFLAC could not start; converted from its status codes here, once.
/// Each user turns it into its own module's error.
public enum FLACError: Error, Equatable, CustomStringConvertible {
    /// libFLAC is not installed (the loader's words).
    case unavailable(String)
    /// `FLAC__stream_decoder_new` failed.
    case outOfMemory
    /// `FLAC__stream_decoder_init_file` failed: the file could not be opened.
    case cannotOpenFile
    /// `FLAC__stream_decoder_init_*` failed otherwise (its status).
    case initFailed(status: UInt32)

    public var description: String {
        switch self {
        case .unavailable(let why): "libFLAC is not installed (\(why))"
        case .outOfMemory: "libFLAC: out of memory"
        case .cannotOpenFile: "cannot open the file"
        case .initFailed(let status): "libFLAC init status \(status)"
        }
    }

    /// The init status libFLAC gave (`FLAC__StreamDecoderInitStatus`), for messages that show it.
    public var status: UInt32? {
        switch self {
        case .unavailable, .outOfMemory: nil
        case .cannotOpenFile: FLAC__STREAM_DECODER_INIT_STATUS_ERROR_OPENING_FILE.rawValue
        case .initFailed(let status): status
        }
    }
}

/// One libFLAC stream decoder (`FLAC__StreamDecoder`), the only place that
/// creates, initialises, finishes and deletes one: the leader's files and
/// tags (TuttiDecode) and a speaker's Sendspin FLAC (`FLACChunkDecoder`).
/// Its callbacks are C functions handed `client` (the owner, unretained: the
/// owner keeps this decoder, so it outlives every callback). Every call into
/// the decoder goes through a method, so the decoder is alive for the whole call.
///
/// Thread contract: one thread at a time, like the decoders that own it.
public final class FLACStreamDecoder {
    private let flac: tutti_flac
    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    private var initialised = false

    /// Opens libFLAC if no one has yet. Throws `.unavailable` without it.
    public init() throws(FLACError) {
        flac = try FLACLibrary.functions()
        guard let d = flac.decoder_new() else { throw .outOfMemory }
        decoder = d
    }

    deinit {
        if initialised { _ = flac.decoder_finish(decoder) }
        flac.decoder_delete(decoder)
    }

    /// Skips the MD5 check of the decoded audio (tags and length only; a stream cut into frames); before `open`.
    public func skipMD5Check() { _ = flac.decoder_set_md5_checking(decoder, 0) }

    /// Also hands this kind of metadata block to the metadata callback; before `open`.
    public func respond(to type: FLAC__MetadataType) { _ = flac.decoder_set_metadata_respond(decoder, type) }

    /// Opens the FLAC file at `path`; the callbacks get `client`.
    public func open(path: String, write: FLAC__StreamDecoderWriteCallback, metadata: FLAC__StreamDecoderMetadataCallback,
                     error: FLAC__StreamDecoderErrorCallback, client: UnsafeMutableRawPointer) throws(FLACError) {
        try started(flac.decoder_init_file(decoder, path, write, metadata, error, client))
    }

    /// Reads from `read` (no seeking: a stream); the callbacks get `client`.
    public func open(read: FLAC__StreamDecoderReadCallback, write: FLAC__StreamDecoderWriteCallback,
                     metadata: FLAC__StreamDecoderMetadataCallback?, error: FLAC__StreamDecoderErrorCallback,
                     client: UnsafeMutableRawPointer) throws(FLACError) {
        try started(flac.decoder_init_stream(decoder, read, nil, nil, nil, nil, write, metadata, error, client))
    }

    private func started(_ status: FLAC__StreamDecoderInitStatus) throws(FLACError) {
        switch status {
        case FLAC__STREAM_DECODER_INIT_STATUS_OK: initialised = true
        case FLAC__STREAM_DECODER_INIT_STATUS_ERROR_OPENING_FILE: throw .cannotOpenFile
        case FLAC__STREAM_DECODER_INIT_STATUS_MEMORY_ALLOCATION_ERROR: throw .outOfMemory
        default: throw .initFailed(status: status.rawValue)
        }
    }

    /// Reads up to the first audio frame (the metadata callback runs inside); false when it stopped early.
    public func processMetadata() -> Bool { flac.decoder_process_until_end_of_metadata(decoder) != 0 }

    /// Decodes one frame (the write callback runs inside); false on a fatal error.
    public func processFrame() -> Bool { flac.decoder_process_single(decoder) != 0 }

    /// Decodes to the end; false on a fatal error.
    public func processToEnd() -> Bool { flac.decoder_process_until_end_of_stream(decoder) != 0 }

    /// Moves to `sample` (the write callback gets the frame there); false when it cannot.
    public func seek(toSample sample: UInt64) -> Bool { flac.decoder_seek_absolute(decoder, sample) != 0 }

    /// Drops what it held (input read ahead, a failed frame) and looks for the
    /// next frame; the stream's STREAMINFO stays. After a failed seek, or a
    /// frame that ended short or failed its CRC.
    public func flush() { _ = flac.decoder_flush(decoder) }

    public var state: FLAC__StreamDecoderState { flac.decoder_get_state(decoder) }
}
