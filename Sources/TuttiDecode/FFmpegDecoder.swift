import CFFmpeg
import Glibc
import TuttiAudio
import TuttiCore

/// What a byte source handed to FFmpeg returned.
public enum FFmpegRead {
    /// This many bytes (more than 0) were written to the buffer.
    case bytes(Int)
    /// No more bytes will come.
    case end
    /// The bytes stopped for this reason (reported by the decoder that read them).
    case failure(AudioError)
}

/// Bytes FFmpeg demuxes that are not a local file: a network stream, or
/// HLS segments one after another. FFmpeg reads them through a custom
/// AVIOContext, on the decoder's thread.
public protocol FFmpegByteSource: AnyObject {
    /// Blocks until bytes arrive, the end, or a failure.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> FFmpegRead
    /// The whole length when the bytes are a finite resource that can be
    /// read from any offset (a file over HTTP with Range); nil for a stream.
    var seekableSize: Int64? { get }
    /// Continues from `offset` (only when `seekableSize` is set); false when it cannot.
    func seek(to offset: Int64) -> Bool
}

extension FFmpegByteSource {
    public var seekableSize: Int64? { nil }
    public func seek(to offset: Int64) -> Bool { false }
}

/// One opened libavformat input (an `AVFormatContext`): a file by path, or
/// a byte source through a custom `AVIOContext` that it owns too.
/// Not thread-safe: it belongs to the decoder or tag reader that opened it.
final class FFmpegInput {
    let ff: tutti_ffmpeg
    let context: UnsafeMutablePointer<AVFormatContext>
    private var io: UnsafeMutablePointer<AVIOContext>?
    private let reader: ByteReader?

    /// Keeps the source and the failure it reported for the AVIO callback.
    final class ByteReader {
        let source: any FFmpegByteSource
        var failure: AudioError?
        init(_ source: any FFmpegByteSource) { self.source = source }
    }

    /// The failure the byte source reported, if any (the I/O error FFmpeg saw instead).
    var sourceFailure: AudioError? { reader?.failure }
    var isFile: Bool { reader == nil }
    /// A file, or bytes that can be read from any offset: seeking and lengths work.
    var isSeekable: Bool { reader == nil || reader?.source.seekableSize != nil }

    /// Opens and probes the file at `path`. With `analyse`, FFmpeg reads
    /// ahead to fill in what the headers lack (the decoder does; the tag
    /// reader only when the headers leave the rate unknown).
    init(path: String, analyse: Bool) throws(AudioError) {
        let ff = try FFmpeg.functions()
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let rc = ff.open_input(&ctx, path, nil, nil)
        guard rc >= 0, let ctx else {
            throw rc == -ENOENT || rc == -EACCES ? .cannotOpen(path: path, reason: FFmpeg.describe(rc, ff))
                : .undecodable(path: path, reason: "FFmpeg does not recognise it (\(FFmpeg.describe(rc, ff)))")
        }
        self.ff = ff
        self.context = ctx
        self.reader = nil
        if analyse || !Self.headersSuffice(ctx) {
            let rc = ff.find_stream_info(ctx, nil)
            guard rc >= 0 else { throw .undecodable(path: path, reason: "cannot read its streams (\(FFmpeg.describe(rc, ff)))") }
        }
    }

    /// Opens `source` as a stream (not seekable), probing at most
    /// `probeBytes` and analysing at most half a second of it. `format` is
    /// libavformat's short name ("aac", "ogg", "mpegts", "mov") when the
    /// caller knows it (a Content-Type), else FFmpeg probes the bytes.
    init(source: any FFmpegByteSource, name: String, format: String?, probeBytes: Int) throws(AudioError) {
        let ff = try FFmpeg.functions()
        guard let ctx = ff.format_alloc_context() else { throw .codec(operation: "avformat_alloc_context", reason: "out of memory") }
        let size = 32_768
        guard let buffer = ff.malloc(size) else {
            var c: UnsafeMutablePointer<AVFormatContext>? = ctx
            ff.close_input(&c)
            throw .codec(operation: "av_malloc", reason: "out of memory")
        }
        let reader = ByteReader(source)
        let opaque = Unmanaged.passUnretained(reader).toOpaque()
        let seekable = source.seekableSize != nil
        guard let io = ff.avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), Int32(size), 0, opaque, ffmpegRead, nil,
                                             seekable ? ffmpegSeek : nil) else {
            ff.free(buffer)
            var c: UnsafeMutablePointer<AVFormatContext>? = ctx
            ff.close_input(&c)
            throw .codec(operation: "avio_alloc_context", reason: "out of memory")
        }
        io.pointee.seekable = seekable ? AVIO_SEEKABLE_NORMAL : 0
        ctx.pointee.pb = io
        ctx.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        ctx.pointee.probesize = Int64(probeBytes)
        ctx.pointee.max_analyze_duration = 500_000 // µs: a live stream is not read far ahead to be analysed
        self.ff = ff
        self.reader = reader
        self.io = io
        var opened: UnsafeMutablePointer<AVFormatContext>? = ctx
        let inputFormat = format.flatMap { ff.find_input_format($0) }
        // On failure avformat_open_input frees the context (not our AVIO context).
        let rc = ff.open_input(&opened, name, inputFormat, nil)
        guard rc >= 0, let opened else {
            Self.freeIO(&self.io, ff)
            throw reader.failure ?? .undecodable(path: name, reason: "FFmpeg does not recognise the stream (\(FFmpeg.describe(rc, ff)))")
        }
        self.context = opened
        let info = ff.find_stream_info(opened, nil)
        guard info >= 0 else {
            throw reader.failure ?? .undecodable(path: name, reason: "cannot read its streams (\(FFmpeg.describe(info, ff)))")
        }
    }

    deinit {
        var c: UnsafeMutablePointer<AVFormatContext>? = context
        ff.close_input(&c)
        Self.freeIO(&io, ff)
    }

    private static func freeIO(_ io: inout UnsafeMutablePointer<AVIOContext>?, _ ff: tutti_ffmpeg) {
        guard let context = io else { return }
        // FFmpeg may have replaced the buffer given at allocation; free the current one.
        ff.free(context.pointee.buffer)
        var c: UnsafeMutablePointer<AVIOContext>? = context
        ff.avio_context_free(&c)
        io = nil
    }

    /// Whether the container's headers already give an audio stream's rate
    /// and length, so the tag reader can skip reading ahead.
    private static func headersSuffice(_ ctx: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        for i in 0..<Int(ctx.pointee.nb_streams) {
            guard let s = ctx.pointee.streams[i], let par = s.pointee.codecpar else { continue }
            if par.pointee.codec_type == AVMEDIA_TYPE_AUDIO {
                return par.pointee.sample_rate > 0 && (s.pointee.duration > 0 || ctx.pointee.duration > 0)
            }
        }
        return false
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { context.pointee.streams[index]! }
    var streamCount: Int { Int(context.pointee.nb_streams) }

    /// A value of the container's metadata, then of each stream's (Ogg
    /// keeps its comments on the stream): the first of `keys` found (any case).
    func tag(_ keys: [String], audioStream: Int?) -> String? {
        for key in keys {
            if let v = Self.value(ff, context.pointee.metadata, key) { return v }
            if let audioStream, let v = Self.value(ff, stream(audioStream).pointee.metadata, key) { return v }
        }
        return nil
    }

    private static func value(_ ff: tutti_ffmpeg, _ dict: OpaquePointer?, _ key: String) -> String? {
        guard let dict, let entry = ff.dict_get(dict, key, nil, 0), let v = entry.pointee.value else { return nil }
        return String(cString: v)
    }
}

/// The AVIO read callback: the byte source's bytes, end or failure in FFmpeg's terms.
private let ffmpegRead: tutti_avio_read = { opaque, buffer, size in
    guard let opaque, let buffer, size > 0 else { return FFmpeg.endOfFile }
    let reader = Unmanaged<FFmpegInput.ByteReader>.fromOpaque(opaque).takeUnretainedValue()
    switch reader.source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: Int(size))) {
    case .bytes(let n): return n > 0 ? Int32(min(n, Int(size))) : FFmpeg.endOfFile
    case .end: return FFmpeg.endOfFile
    case .failure(let e):
        reader.failure = e
        return -EIO
    }
}

/// The AVIO seek callback: the size (`AVSEEK_SIZE`) or a move to an absolute offset.
private let ffmpegSeek: tutti_avio_seek = { opaque, offset, whence in
    guard let opaque else { return -Int64(EINVAL) }
    let reader = Unmanaged<FFmpegInput.ByteReader>.fromOpaque(opaque).takeUnretainedValue()
    guard let size = reader.source.seekableSize else { return -Int64(ESPIPE) }
    let how = whence & ~Int32(AVSEEK_FORCE)
    if how == tutti_avseek_size() { return size }
    let target: Int64
    switch how {
    case SEEK_SET: target = offset
    case SEEK_END: target = size + offset
    default: return -Int64(EINVAL)
    }
    guard target >= 0, target <= size, reader.source.seek(to: target) else { return -Int64(EIO) }
    return target
}

/// Everything but MP3, FLAC and WAV, through FFmpeg: AAC and ALAC (MP4),
/// Ogg Vorbis, Opus, WMA, WavPack, APE, AIFF, DSF/DFF (DSD as PCM at an
/// eighth of the bit rate). Output is interleaved stereo float at the
/// stream's own rate (libswresample converts the sample format and mixes
/// other channel counts to stereo).
///
/// Gapless: libavformat applies what each container says (Opus pre-skip,
/// Vorbis granule positions, an MP4 edit list or iTunes' `iTunSMPB` delay);
/// the padding `iTunSMPB` declares at the end is cut here. Seeking is
/// sample-accurate: libavformat lands on a packet at or before the target
/// (a little earlier, so the decoder settles) and the frames before the
/// target are dropped by their timestamps.
///
/// Thread contract: one thread at a time, like every decoder.
public final class FFmpegDecoder: AudioDecoder {
    public let path: String
    public private(set) var sampleRate = 0
    public private(set) var frameCount: Int?
    /// libavcodec's name for the codec ("aac", "opus", "alac", "wmav2"…).
    public let codecName: String
    /// Channels in the stream (the output is always stereo).
    public let channels: Int

    private let input: FFmpegInput
    private let ff: tutti_ffmpeg
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let seekPreroll: Int
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var resampler: OpaquePointer?
    private var resamplerInput: (format: Int32, channels: Int32, rate: Int32) = (-1, 0, 0)
    private var converted: [Float] = []
    private var pending: [Float] = []
    private var pendingStart = 0
    /// Frame index (at `sampleRate`) of the next frame added to `pending`.
    private var position = 0
    /// After a seek: frames before this are dropped.
    private var discardUntil: Int?
    /// After a seek from the start (codecs whose frame timestamps are not
    /// sample-accurate): frames still to drop, counted.
    private var discardCount = 0
    /// Whether frame timestamps place a seek to the sample. WMA's are not
    /// (ASF keeps milliseconds, several frames share a packet's): it seeks
    /// by decoding from the start, which WMA does hundreds of times faster than real time.
    private let seeksByTimestamp: Bool
    /// The first packet's timestamp: where a seek from the start goes.
    private var firstPacketPTS: Int64?
    /// Timestamp of the first frame played from the start: position 0.
    private var originPTS: Int64?
    /// The end `iTunSMPB` declares (the encoder's padding after it is cut).
    private let declaredEnd: Int?
    private var draining = false
    private var finished = false
    private var corruptPackets = 0

    /// Opens the file at `path` and decodes its first frame (so the rate is known).
    public convenience init(path: String) throws(AudioError) {
        try self.init(input: FFmpegInput(path: path, analyse: true), name: path)
    }

    /// Opens a stream read from `source`; `format` as for libavformat's
    /// demuxer names ("aac", "ogg", "mpegts", "mov"), nil to probe.
    public convenience init(source: any FFmpegByteSource, name: String, format: String?, probeBytes: Int = 65_536) throws(AudioError) {
        try self.init(input: FFmpegInput(source: source, name: name, format: format, probeBytes: probeBytes), name: name)
    }

    private init(input: FFmpegInput, name: String) throws(AudioError) {
        self.input = input
        self.ff = input.ff
        self.path = name
        var decoder: UnsafePointer<AVCodec>?
        let index = ff.find_best_stream(input.context, AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0)
        guard index >= 0, let decoder else {
            throw .undecodable(path: name, reason: "no audio stream FFmpeg can decode (\(FFmpeg.describe(index, input.ff)))")
        }
        streamIndex = index
        let stream = input.stream(Int(index))
        for i in 0..<input.streamCount where i != Int(index) { input.stream(i).pointee.discard = AVDISCARD_ALL }
        timeBase = stream.pointee.time_base
        codecName = decoder.pointee.name.map { String(cString: $0) } ?? "?"
        guard let par = stream.pointee.codecpar else { throw .undecodable(path: name, reason: "no codec parameters") }
        channels = Int(par.pointee.ch_layout.nb_channels)
        seekPreroll = max(Int(par.pointee.seek_preroll), 2_048)
        seeksByTimestamp = ![AV_CODEC_ID_WMAV1, AV_CODEC_ID_WMAV2, AV_CODEC_ID_WMAPRO, AV_CODEC_ID_WMALOSSLESS].contains(par.pointee.codec_id)
        guard let c = ff.codec_alloc_context(decoder) else { throw .codec(operation: "avcodec_alloc_context3", reason: "out of memory") }
        codec = c
        var rc = ff.parameters_to_context(c, par)
        if rc >= 0 {
            c.pointee.pkt_timebase = timeBase
            rc = ff.codec_open(c, decoder, nil)
        }
        guard rc >= 0 else { throw .undecodable(path: name, reason: "cannot open the \(codecName) decoder (\(FFmpeg.describe(rc, ff)))") }
        packet = ff.packet_alloc()
        frame = ff.frame_alloc()
        guard packet != nil, frame != nil else { throw .codec(operation: "av_packet_alloc", reason: "out of memory") }
        // Where the audio ends, when the container says so: iTunes' gapless data, else an MP4's
        // edit list (the stream's duration), which leaves out the encoder's padding at the end.
        let containerName = input.context.pointee.iformat?.pointee.name.map { String(cString: $0) } ?? ""
        let isMP4 = containerName.hasPrefix("mov")
        declaredEnd = FFmpegGapless.iTunesEnd(input.tag(["iTunSMPB"], audioStream: Int(index)))
            ?? (isMP4 && input.isSeekable ? FFmpegGapless.length(input: input, stream: stream, rate: Int(par.pointee.sample_rate)) : nil)

        // The first frame: its rate is the rate, its timestamp position 0.
        while pending.count == 0 && !finished { try decodeFrame() }
        guard sampleRate > 0 else {
            throw input.sourceFailure ?? .undecodable(path: name, reason: "no decodable \(codecName) audio")
        }
        frameCount = input.isSeekable ? FFmpegGapless.length(input: input, stream: stream, rate: sampleRate, end: declaredEnd) : nil
    }

    deinit {
        ff.frame_free(&frame)
        ff.packet_free(&packet)
        ff.codec_free_context(&codec)
        ff.swr_free(&resampler)
    }

    public func read(into output: inout [Float], maxFrames: Int) throws(AudioError) -> Int {
        guard maxFrames > 0 else { return 0 }
        while pending.count - pendingStart == 0 && !finished { try decodeFrame() }
        let n = min((pending.count - pendingStart) / 2, maxFrames)
        output.append(contentsOf: pending[pendingStart..<(pendingStart + 2 * n)])
        pendingStart += 2 * n
        if pendingStart == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingStart = 0
        }
        return n
    }

    /// Decodes the rest and counts the frames (for formats whose headers do not say the length exactly).
    public func decodedLength() throws(AudioError) -> Int {
        var scratch: [Float] = []
        var total = 0
        while true {
            scratch.removeAll(keepingCapacity: true)
            let n = try read(into: &scratch, maxFrames: 16_384)
            if n == 0 { return total }
            total += n
        }
    }

    public func seek(toFrame target: Int) throws(AudioError) {
        guard input.isSeekable else { throw .undecodable(path: path, reason: "a stream cannot seek") }
        let frame = max(0, min(target, frameCount ?? Int.max))
        let start = seeksByTimestamp ? max(0, frame - seekPreroll) : 0
        var ts = firstPacketPTS ?? 0
        if seeksByTimestamp {
            // The file's time base and origin, checked before they make a timestamp.
            let offset = (Double(start) * Double(timeBase.den) / (Double(timeBase.num) * Double(sampleRate))).rounded(.down)
            let sum = FFmpegGapless.frames(offset).map { (originPTS ?? 0).addingReportingOverflow(Int64($0)) }
            guard let sum, !sum.overflow else { throw .undecodable(path: path, reason: "seek to frame \(frame): a timestamp out of range") }
            ts = sum.partialValue
        }
        let rc = ff.seek_file(input.context, streamIndex, Int64.min, ts, ts, 0)
        guard rc >= 0 else { throw .undecodable(path: path, reason: "seek to frame \(frame) failed (\(FFmpeg.describe(rc, ff)))") }
        ff.flush_buffers(codec)
        pending.removeAll(keepingCapacity: true)
        pendingStart = 0
        if seeksByTimestamp {
            discardUntil = frame
            position = frame
        } else {
            discardCount = frame
            position = 0
        }
        draining = false
        finished = false
    }

    /// Decodes one frame into `pending` (or reaches the end: `finished`).
    private func decodeFrame() throws(AudioError) {
        while true {
            let rc = ff.receive_frame(codec, frame)
            if rc >= 0 {
                defer { ff.frame_unref(frame) }
                try deliver(frame!)
                return
            }
            if rc == FFmpeg.endOfFile { finished = true; return }
            guard rc == FFmpeg.tryAgain else { throw .undecodable(path: path, reason: "\(codecName): \(FFmpeg.describe(rc, ff))") }
            if draining { finished = true; return }
            try sendPacket()
        }
    }

    private func sendPacket() throws(AudioError) {
        while true {
            let rc = ff.read_frame(input.context, packet)
            if rc < 0 {
                if let failure = input.sourceFailure { throw failure }
                if rc != FFmpeg.endOfFile && !input.isFile {
                    throw .undecodable(path: path, reason: "the stream broke off (\(FFmpeg.describe(rc, ff)))")
                }
                // The end (or a file cut short: what was read plays): drain the decoder.
                draining = true
                _ = ff.send_packet(codec, nil)
                return
            }
            defer { ff.packet_unref(packet) }
            guard packet!.pointee.stream_index == streamIndex else { continue }
            if firstPacketPTS == nil { firstPacketPTS = packet!.pointee.pts == FFmpeg.noTimestamp ? packet!.pointee.dts : packet!.pointee.pts }
            let sent = ff.send_packet(codec, packet)
            if sent >= 0 { corruptPackets = 0; return }
            // A damaged packet is skipped, as players do; a run of them is a broken file.
            corruptPackets += 1
            if corruptPackets > 64 { throw .undecodable(path: path, reason: "\(codecName): \(FFmpeg.describe(sent, ff))") }
        }
    }

    /// Converts a decoded frame to stereo float, drops what lies before a
    /// seek's target or after the declared end, and queues the rest.
    private func deliver(_ frame: UnsafeMutablePointer<AVFrame>) throws(AudioError) {
        let f = frame.pointee
        guard f.nb_samples > 0, f.sample_rate > 0 else { return }
        // Checked where it enters: a stream's rate sizes the conversion buffer (a chained Ogg or an
        // HLS discontinuity may change it mid-stream). DSD comes decoded at up to 705.6 kHz.
        guard f.sample_rate <= FFmpegGapless.maximumSampleRate else {
            throw .undecodable(path: path, reason: "a sample rate of \(f.sample_rate) Hz")
        }
        if sampleRate == 0 { sampleRate = Int(f.sample_rate) }
        let count = try convert(frame)
        guard count > 0 else { return }
        var skip = 0
        let pts = f.best_effort_timestamp != FFmpeg.noTimestamp ? f.best_effort_timestamp : f.pts
        if originPTS == nil { originPTS = pts == FFmpeg.noTimestamp ? 0 : pts }
        if let target = discardUntil {
            if pts != FFmpeg.noTimestamp, let origin = originPTS {
                // Timestamps come from the file: in Double, and checked before they become frames.
                guard let start = FFmpegGapless.frames((Double(pts) - Double(origin)) * Double(timeBase.num) * Double(sampleRate) / Double(timeBase.den)) else {
                    throw .undecodable(path: path, reason: "a timestamp out of range")
                }
                if start + count <= target { return } // wholly before the target
                skip = max(0, target - start)
                position = max(start, target)
            }
            discardUntil = nil
        }
        if discardCount > 0 {
            skip = min(count, discardCount)
            discardCount -= skip
            position += skip
        }
        var keep = count - skip
        if let end = declaredEnd { keep = max(0, min(keep, end - position)) }
        guard keep > 0 else { return }
        pending.append(contentsOf: converted[(2 * skip)..<(2 * (skip + keep))])
        position += keep
    }

    /// The frame as interleaved stereo float at `sampleRate` into `converted`; returns the frames.
    private func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws(AudioError) -> Int {
        let f = frame.pointee
        let shape = (format: f.format, channels: f.ch_layout.nb_channels, rate: f.sample_rate)
        if resampler == nil || shape != resamplerInput {
            ff.swr_free(&resampler)
            var out = AVChannelLayout(), inLayout = f.ch_layout
            ff.channel_layout_default(&out, 2)
            var defaulted = AVChannelLayout()
            if inLayout.order == AV_CHANNEL_ORDER_UNSPEC {
                ff.channel_layout_default(&defaulted, f.ch_layout.nb_channels)
                inLayout = defaulted
            }
            let rc = ff.swr_alloc_set_opts2(&resampler, &out, AV_SAMPLE_FMT_FLT, Int32(sampleRate),
                                            &inLayout, AVSampleFormat(rawValue: f.format), f.sample_rate, 0, nil)
            ff.channel_layout_uninit(&defaulted)
            guard rc >= 0, resampler != nil, ff.swr_init(resampler) >= 0 else {
                ff.swr_free(&resampler)
                throw .undecodable(path: path, reason: "cannot convert \(codecName)'s \(f.ch_layout.nb_channels)-channel output")
            }
            resamplerInput = shape
        }
        let capacity = Int(f.nb_samples) * sampleRate / Int(f.sample_rate) + 256
        if converted.count < capacity * 2 { converted = [Float](repeating: 0, count: capacity * 2) }
        let n = converted.withUnsafeMutableBytes { raw -> Int32 in
            var out: UnsafeMutablePointer<UInt8>? = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let inputs = UnsafeMutableRawPointer(f.extended_data!).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
            return ff.swr_convert(resampler, &out, Int32(clamping: capacity), inputs, f.nb_samples)
        }
        guard n >= 0 else { throw .undecodable(path: path, reason: "sample conversion failed (\(FFmpeg.describe(n, ff)))") }
        return Int(n)
    }
}

/// Lengths and gapless data from what containers declare.
public enum FFmpegGapless {
    /// iTunes' `iTunSMPB` (" 00000000 00000840 000001E4 00000000001CCB5C …",
    /// hexadecimal: reserved, encoder delay, padding, original length): the
    /// original length, where the audio ends; nil when absent or unreadable.
    public static func iTunesEnd(_ value: String?) -> Int? {
        guard let value else { return nil }
        let fields = value.split(separator: " ")
        guard fields.count >= 4, let length = Int(fields[3], radix: 16), length > 0 else { return nil }
        return length
    }

    /// The stream's length in frames at `rate`, as decoded: `end` when the
    /// container declares one; the ADTS frames counted for raw AAC (whose
    /// duration FFmpeg only estimates from the bit rate); else the stream's
    /// duration less Opus' pre-skip (an Ogg granule counts it), else the container's.
    static func length(input: FFmpegInput, stream: UnsafeMutablePointer<AVStream>, rate: Int, end: Int? = nil) -> Int? {
        if let end { return end }
        let s = stream.pointee
        let name = input.context.pointee.iformat?.pointee.name.map { String(cString: $0) } ?? ""
        // Counted from the file itself: a stream's url is its address, not a path.
        if name == "aac", input.isFile, let url = input.context.pointee.url, let frames = adtsFrames(path: String(cString: url)) {
            return frames * 1_024
        }
        if name == "dsf", input.isFile, let url = input.context.pointee.url, let samples = dsfSamples(path: String(cString: url)) {
            return samples / 8 // libavformat's duration counts the last block's padding; it decodes the samples the header gives
        }
        if s.duration > 0, s.duration != FFmpeg.noTimestamp {
            // The container's numbers: any duration and time base a file declares, checked before they become frames.
            guard var frames = Self.frames((Double(s.duration) * Double(s.time_base.num) * Double(rate) / Double(s.time_base.den)).rounded()) else { return nil }
            if let par = s.codecpar, par.pointee.codec_id == AV_CODEC_ID_OPUS, name == "ogg" {
                frames -= Int(par.pointee.initial_padding) * rate / 48_000
            }
            return frames > 0 ? frames : nil
        }
        let d = input.context.pointee.duration
        if d > 0, d != FFmpeg.noTimestamp, let frames = Self.frames((Double(d) * Double(rate) / Double(AV_TIME_BASE)).rounded()), frames > 0 { return frames }
        return nil
    }

    /// The highest sample rate a decoder may give (DSD256 decoded at one eighth).
    static let maximumSampleRate: Int32 = 1_411_200

    /// `x` frames as an Int, nil when a file's numbers made it infinite, NaN or
    /// beyond 2^53 (`Int(x)` traps on those).
    static func frames(_ x: Double) -> Int? {
        x.isFinite && abs(x) < 0x1p53 ? Int(x) : nil
    }

    /// A DSF file's sample count per channel (its `fmt ` chunk, at byte 64).
    static func dsfSamples(path: String) -> Int? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes = [UInt8](repeating: 0, count: 72)
        guard fread(&bytes, 1, 72, file) == 72, bytes[0..<4] == [0x44, 0x53, 0x44, 0x20], bytes[28..<32] == [0x66, 0x6D, 0x74, 0x20] else { return nil }
        let count = (0..<8).reduce(0) { $0 | Int(bytes[64 + $1]) << (8 * $1) }
        return count > 0 ? count : nil
    }

    /// The ADTS frames of a raw AAC file (after any ID3v2 tag), each 1,024
    /// samples, counted by walking their headers; nil when the walk breaks.
    static func adtsFrames(path: String) -> Int? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var header = [UInt8](repeating: 0, count: 10)
        var offset = 0
        if fread(&header, 1, 10, file) == 10, header[0..<3] == [0x49, 0x44, 0x33] { // "ID3"
            offset = 10 + (Int(header[6] & 0x7F) << 21 | Int(header[7] & 0x7F) << 14 | Int(header[8] & 0x7F) << 7 | Int(header[9] & 0x7F))
        }
        var frames = 0
        while fseek(file, offset, SEEK_SET) == 0, fread(&header, 1, 7, file) == 7 {
            guard header[0] == 0xFF, header[1] & 0xF6 == 0xF0 else { return frames > 0 ? frames : nil }
            let length = Int(header[3] & 0x03) << 11 | Int(header[4]) << 3 | Int(header[5]) >> 5
            guard length >= 7 else { return nil }
            frames += Int(header[6] & 0x03) + 1 // raw data blocks in this frame
            offset += length
        }
        return frames > 0 ? frames : nil
    }
}
