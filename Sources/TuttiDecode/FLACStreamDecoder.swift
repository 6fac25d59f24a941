import CFLAC

/// Why libFLAC could not start on a file; converted from its status codes
/// here, once. Each user turns it into its own module's error.
enum FLACError: Error, Equatable, CustomStringConvertible {
    /// `FLAC__stream_decoder_new` failed.
    case outOfMemory
    /// `FLAC__stream_decoder_init_file` failed: the file could not be opened.
    case cannotOpenFile
    /// `FLAC__stream_decoder_init_file` failed otherwise (its status).
    case initFailed(status: UInt32)

    var description: String {
        switch self {
        case .outOfMemory: "libFLAC: out of memory"
        case .cannotOpenFile: "cannot open the file"
        case .initFailed(let status): "libFLAC init status \(status)"
        }
    }

    /// The init status libFLAC gave (`FLAC__StreamDecoderInitStatus`), for messages that show it.
    var status: UInt32? {
        switch self {
        case .outOfMemory: nil
        case .cannotOpenFile: FLAC__STREAM_DECODER_INIT_STATUS_ERROR_OPENING_FILE.rawValue
        case .initFailed(let status): status
        }
    }
}

/// One libFLAC stream decoder (`FLAC__StreamDecoder`), the only place that
/// creates, initialises, finishes and deletes one. Its callbacks are C
/// functions handed `client` (the owner, unretained: the owner keeps this
/// decoder, so it outlives every callback). Every call into the decoder goes
/// through a method, so the decoder is alive for the whole call.
///
/// Thread contract: one thread at a time, like the decoders that own it.
final class FLACStreamDecoder {
    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    private var initialised = false

    init() throws(FLACError) {
        guard let d = FLAC__stream_decoder_new() else { throw .outOfMemory }
        decoder = d
    }

    deinit {
        if initialised { FLAC__stream_decoder_finish(decoder) }
        FLAC__stream_decoder_delete(decoder)
    }

    /// Skips the MD5 check of the decoded audio (tags and length only); before `open`.
    func skipMD5Check() { FLAC__stream_decoder_set_md5_checking(decoder, 0) }

    /// Also hands this kind of metadata block to the metadata callback; before `open`.
    func respond(to type: FLAC__MetadataType) { FLAC__stream_decoder_set_metadata_respond(decoder, type) }

    /// Opens the FLAC file at `path`; the callbacks get `client`.
    func open(path: String, write: FLAC__StreamDecoderWriteCallback, metadata: FLAC__StreamDecoderMetadataCallback,
              error: FLAC__StreamDecoderErrorCallback, client: UnsafeMutableRawPointer) throws(FLACError) {
        let status = FLAC__stream_decoder_init_file(decoder, path, write, metadata, error, client)
        switch status {
        case FLAC__STREAM_DECODER_INIT_STATUS_OK: initialised = true
        case FLAC__STREAM_DECODER_INIT_STATUS_ERROR_OPENING_FILE: throw .cannotOpenFile
        default: throw .initFailed(status: status.rawValue)
        }
    }

    /// Reads up to the first audio frame (the metadata callback runs inside); false when it stopped early.
    func processMetadata() -> Bool { FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0 }

    /// Decodes one frame (the write callback runs inside); false on a fatal error.
    func processFrame() -> Bool { FLAC__stream_decoder_process_single(decoder) != 0 }

    /// Decodes to the end; false on a fatal error.
    func processToEnd() -> Bool { FLAC__stream_decoder_process_until_end_of_stream(decoder) != 0 }

    /// Moves to `sample` (the write callback gets the frame there); false when it cannot.
    func seek(toSample sample: UInt64) -> Bool { FLAC__stream_decoder_seek_absolute(decoder, sample) != 0 }

    /// After a failed seek: drops what it held so decoding can go on.
    func flush() { FLAC__stream_decoder_flush(decoder) }

    var state: FLAC__StreamDecoderState { FLAC__stream_decoder_get_state(decoder) }
}
