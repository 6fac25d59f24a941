import CFLAC

/// FLAC tags and exact length through libFLAC's stream decoder, in one
/// open: STREAMINFO (rate, total samples), VORBIS_COMMENT and PICTURE
/// blocks from the metadata callback, then a seek to the last sample to
/// prove the audio the header promises is really there (a truncated file
/// fails the seek). Files whose STREAMINFO has no length are decoded once
/// to count samples.
enum FLACTags {
    private final class Context {
        var tags = TagSet()
        var sampleRate = 0
        var totalSamples: UInt64 = 0
        var counted: UInt64 = 0
        var streamError: String?
    }

    static func read(path: String) -> Result<FileMetadata, SkipReason> {
        guard let decoder = FLAC__stream_decoder_new() else { return .failure(.unreadable("libFLAC: out of memory")) }
        defer { FLAC__stream_decoder_delete(decoder) }
        FLAC__stream_decoder_set_md5_checking(decoder, 0)
        FLAC__stream_decoder_set_metadata_respond(decoder, FLAC__METADATA_TYPE_VORBIS_COMMENT)
        FLAC__stream_decoder_set_metadata_respond(decoder, FLAC__METADATA_TYPE_PICTURE)

        let context = Context()
        let client = Unmanaged.passUnretained(context).toOpaque()
        let status = FLAC__stream_decoder_init_file(decoder, path, { _, frame, _, client in
            guard let frame, let client else { return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT }
            Unmanaged<Context>.fromOpaque(client).takeUnretainedValue().counted += UInt64(frame.pointee.header.blocksize)
            return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
        }, { _, block, client in
            guard let block, let client else { return }
            FLACTags.metadata(block.pointee, into: Unmanaged<Context>.fromOpaque(client).takeUnretainedValue())
        }, { _, status, client in
            guard let client else { return }
            let context = Unmanaged<Context>.fromOpaque(client).takeUnretainedValue()
            if context.streamError == nil { context.streamError = FLACTags.describe(status) }
        }, client)
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else {
            return .failure(.unreadable(status == FLAC__STREAM_DECODER_INIT_STATUS_ERROR_OPENING_FILE ? "cannot open the file" : "libFLAC init status \(status.rawValue)"))
        }
        defer { FLAC__stream_decoder_finish(decoder) }

        // The metadata callback runs inside this call (and the context stays alive across it).
        let metadataOK = withExtendedLifetime(context) { FLAC__stream_decoder_process_until_end_of_metadata(decoder) != 0 }
        guard context.sampleRate > 0 else {
            return .failure(.corrupt(context.streamError.map { "no FLAC stream: \($0)" } ?? "no FLAC STREAMINFO block"))
        }
        guard metadataOK else { return .failure(.corrupt("metadata ends early (truncated?)")) }
        var frames: UInt64
        if context.totalSamples > 0 {
            let found = withExtendedLifetime(context) { FLAC__stream_decoder_seek_absolute(decoder, context.totalSamples - 1) != 0 }
            guard found else {
                return .failure(.corrupt("audio ends before the \(context.totalSamples) samples STREAMINFO promises (truncated?)"))
            }
            frames = context.totalSamples
        } else {
            let ok = withExtendedLifetime(context) { FLAC__stream_decoder_process_until_end_of_stream(decoder) != 0 }
            guard ok, context.counted > 0 else {
                return .failure(.corrupt(context.streamError ?? "no decodable audio frames"))
            }
            frames = context.counted
        }
        return .success(FileMetadata(format: .flac, tags: context.tags, durationFrames: Int(frames), sampleRate: context.sampleRate))
    }

    private static func describe(_ status: FLAC__StreamDecoderErrorStatus) -> String {
        switch status {
        case FLAC__STREAM_DECODER_ERROR_STATUS_LOST_SYNC: "lost sync"
        case FLAC__STREAM_DECODER_ERROR_STATUS_BAD_HEADER: "bad frame header"
        case FLAC__STREAM_DECODER_ERROR_STATUS_FRAME_CRC_MISMATCH: "frame CRC mismatch"
        default: "unparseable stream (status \(status.rawValue))"
        }
    }

    private static func metadata(_ block: FLAC__StreamMetadata, into context: Context) {
        switch block.type {
        case FLAC__METADATA_TYPE_STREAMINFO:
            context.sampleRate = Int(block.data.stream_info.sample_rate)
            context.totalSamples = block.data.stream_info.total_samples
        case FLAC__METADATA_TYPE_VORBIS_COMMENT:
            let vc = block.data.vorbis_comment
            guard let comments = vc.comments, block.length <= UInt32(TagLimits.maxTagBlockBytes) else { return }
            var values: [String: [String]] = [:]
            for i in 0..<Int(vc.num_comments) {
                let c = comments[i]
                guard let entry = c.entry, c.length > 0 else { continue }
                let text = String(decoding: UnsafeBufferPointer(start: entry, count: Int(c.length)), as: UTF8.self)
                guard let eq = text.firstIndex(of: "=") else { continue }
                values[text[..<eq].uppercased(), default: []].append(String(text[text.index(after: eq)...]))
            }
            // Several values of one field (two ARTIST comments) become a list.
            func value(_ keys: String...) -> String? {
                for key in keys { if let v = values[key] { return TagText.clean(v.joined(separator: "\0")) } }
                return nil
            }
            var tags = context.tags
            tags.title = value("TITLE")
            tags.artist = value("ARTIST")
            tags.album = value("ALBUM")
            tags.albumArtist = value("ALBUMARTIST", "ALBUM ARTIST", "ALBUM_ARTIST")
            tags.genre = value("GENRE")
            tags.trackNumber = TagText.number(value("TRACKNUMBER"))
            tags.discNumber = TagText.number(value("DISCNUMBER"))
            tags.year = TagText.year(value("DATE", "YEAR", "ORIGINALDATE"))
            context.tags = tags
        case FLAC__METADATA_TYPE_PICTURE:
            let p = block.data.picture
            guard let data = p.data, p.data_length > 0, Int(p.data_length) <= TagLimits.maxPictureBytes else { return }
            let mime = p.mime_type.map { String(cString: $0) }
            if mime == "-->" { return } // a URL, not an image
            let bytes = Array(UnsafeBufferPointer(start: data, count: Int(p.data_length)))
            context.tags.offer(picture: .init(mime: TagText.imageMime(bytes, declared: mime), bytes: bytes,
                                              isFrontCover: p.type == FLAC__STREAM_METADATA_PICTURE_TYPE_FRONT_COVER))
        default:
            break
        }
    }
}
