import CFFmpeg
import Synchronization
import TuttiAudio
import TuttiSystem

/// FFmpeg's functions (libavformat 59 and, through its dependencies,
/// libavcodec, libswresample and libavutil), opened at the first file or
/// stream that needs them and never closed. `dlsym` on libavformat's handle
/// also finds the symbols of the libraries it depends on, so one handle
/// serves the whole table.
///
/// Thread contract: any thread; the first caller opens the library (Swift's
/// lazy globals are initialised once, under a lock).
public enum FFmpeg {
    /// The soname Debian 12 ships (FFmpeg 5.1); the headers in CFFmpeg are that version's.
    public static let libraryName = "libavformat.so.59"

    private static let loadedFlag = Atomic<Bool>(false)

    private static let table = Result { () throws(SharedLibraryError) -> FunctionTable<tutti_ffmpeg> in
        let table = try FunctionTable<tutti_ffmpeg>.open(libraryName, symbols: [
            "av_log_set_level", "av_strerror", "av_malloc", "av_free", "av_dict_get",
            "av_frame_alloc", "av_frame_free", "av_frame_unref", "av_channel_layout_default", "av_channel_layout_uninit",
            "avcodec_find_decoder", "avcodec_alloc_context3", "avcodec_parameters_to_context", "avcodec_open2",
            "avcodec_send_packet", "avcodec_receive_frame", "avcodec_flush_buffers", "avcodec_free_context",
            "av_packet_alloc", "av_packet_free", "av_packet_unref",
            "avformat_alloc_context", "avformat_open_input", "avformat_find_stream_info", "avformat_close_input",
            "av_find_best_stream", "av_read_frame", "avformat_seek_file", "avio_alloc_context", "avio_context_free",
            "av_find_input_format",
            "swr_alloc_set_opts2", "swr_init", "swr_convert", "swr_free",
            "avcodec_find_encoder", "avcodec_send_frame", "avcodec_receive_packet", "av_new_packet", "av_frame_get_buffer",
        ])
        // Its log goes to stderr by default; what matters reaches the user as errors.
        table.functions.log_set_level(AV_LOG_QUIET)
        loadedFlag.store(true, ordering: .releasing)
        return table
    }

    /// The function table, opening the libraries on first use; throws
    /// `.codec` naming the package to install when they are missing.
    static func functions() throws(AudioError) -> tutti_ffmpeg {
        switch table {
        case .success(let t): return t.functions
        case .failure(let e):
            throw .codec(operation: "loading FFmpeg (\(libraryName))",
                         reason: "\(e.description); install Debian's libavformat59 to play AAC, ALAC, Ogg, Opus, WMA and other formats")
        }
    }

    /// libswscale's soname in Debian 12 (FFmpeg 5.1): not a dependency of
    /// libavformat, so a table of its own, opened at the first cover scaled.
    public static let scaleLibraryName = "libswscale.so.6"

    private static let scaleTable = Result { () throws(SharedLibraryError) -> FunctionTable<tutti_swscale> in
        try FunctionTable<tutti_swscale>.open(scaleLibraryName, symbols: ["sws_getContext", "sws_scale_frame", "sws_freeContext"])
    }

    /// libswscale's functions, opening it on first use; throws naming the package to install.
    static func scaleFunctions() throws(CoverError) -> tutti_swscale {
        switch scaleTable {
        case .success(let t): return t.functions
        case .failure(let e): throw .unavailable("\(scaleLibraryName): \(e.description); install Debian's libswscale6 to scale covers")
        }
    }

    /// Whether this process has opened FFmpeg (for tests and `bench/resources`: an MP3-only leader never does).
    public static var isLoaded: Bool { loadedFlag.load(ordering: .acquiring) }

    /// Opens FFmpeg now; nil when it opened, else why not.
    public static func load() -> AudioError? {
        do { _ = try functions(); return nil } catch { return error }
    }

    /// FFmpeg's words for an error code.
    static func describe(_ code: Int32, _ ff: tutti_ffmpeg) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        if ff.strerror(code, &buffer, buffer.count) < 0 { return "FFmpeg error \(code)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static let endOfFile = tutti_averror_eof()
    static let tryAgain = tutti_averror_eagain()
    static let noTimestamp = tutti_av_nopts()
}

/// File extensions FFmpeg decodes for Tutti (MP3, FLAC and WAV have their own decoders).
public enum FFmpegFormats {
    public static let extensions: Set<String> = [
        "m4a", "m4b", "mp4", "aac", "alac", "ogg", "oga", "opus", "wma", "asf", "wv", "ape", "aif", "aiff", "aifc", "dsf", "dff",
    ]

    public static func handles(pathExtension ext: String) -> Bool { extensions.contains(ext.lowercased()) }

    /// The extension of `path` (after the last dot of its last component), lowercased; "" for none.
    public static func pathExtension(_ path: String) -> String {
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last ?? Substring(path)
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }

    /// Whether a file's first bytes are a container only FFmpeg reads here:
    /// Ogg, MP4 ("ftyp"), AIFF ("FORM"), APE ("MAC "), WavPack ("wvpk"),
    /// DSF ("DSD "), DFF ("FRM8"), ASF (WMA), ADTS.
    public static func isContainer(magic: ArraySlice<UInt8>) -> Bool {
        let m = Array(magic)
        guard m.count >= 4 else { return false }
        let head = String(decoding: m[0..<4], as: UTF8.self)
        if ["OggS", "FORM", "MAC ", "wvpk", "DSD ", "FRM8"].contains(head) { return true }
        if m.count >= 8, String(decoding: m[4..<8], as: UTF8.self) == "ftyp" { return true }
        // ADTS (raw AAC): MPEG audio's sync with layer 00, which MP3 never uses.
        if m[0] == 0xFF, m[1] & 0xF6 == 0xF0 { return true }
        return m.starts(with: [0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11]) // the ASF header object's GUID
    }
}
