import CFFmpeg
import TuttiAudio

/// Why a cover could not be made into the picture a client asked for.
public enum CoverError: Error, Equatable, CustomStringConvertible, Sendable {
    /// FFmpeg or libswscale could not be opened (the package to install is named).
    case unavailable(String)
    /// The bytes are neither a JPEG nor a PNG.
    case notAnImage
    /// A size outside what is scaled (either side 1…`CoverImage.maximumSide`).
    case badSize(width: Int, height: Int)
    /// An FFmpeg call failed.
    case ffmpeg(operation: String, reason: String)

    public var description: String {
        switch self {
        case .unavailable(let why): "covers cannot be scaled: \(why)"
        case .notAnImage: "the cover is neither a JPEG nor a PNG"
        case .badSize(let w, let h): "a cover of \(w)×\(h) pixels is outside 1…\(CoverImage.maximumSide) on a side"
        case .ffmpeg(let operation, let reason): "FFmpeg failed \(operation): \(reason)"
        }
    }
}

/// The encodings a scaled cover is sent in.
public enum PictureFormat: String, Sendable, CaseIterable {
    case jpeg, png
}

/// A decoded picture, 8-bit RGB, rows top to bottom (for checking what was made).
public struct RGBPicture: Equatable, Sendable {
    public var width: Int
    public var height: Int
    public var rgb: [UInt8]

    public func pixel(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        let i = (y * width + x) * 3
        return (rgb[i], rgb[i + 1], rgb[i + 2])
    }
}

/// Album covers made into the size and format a display asks for, with
/// FFmpeg (libavcodec decodes the JPEG or PNG and encodes the result,
/// libswscale scales), which the leader already opens for its decoders: no
/// other image library. The picture is scaled to fit the box with its
/// aspect ratio kept, centred on black (letterboxed, as aiosendspin's own
/// server does), so the client gets exactly the size it asked for.
///
/// Thread contract: any thread; each call has its own FFmpeg contexts. Not
/// for the audio thread (it allocates and takes milliseconds).
public enum CoverImage {
    /// Either side of a picture made, or of a cover read, is at most this.
    public static let maximumSide = 4096
    /// A cover read may be at most this on a side, and at most `maximumSourcePixels` in all
    /// (the decoder refuses more before it allocates: about 50 MB at 4:2:0, 100 MB as RGB).
    static let maximumSourceSide = 16_384
    static let maximumSourcePixels: Int64 = 32 << 20
    /// JPEG quality as FFmpeg's quantiser (2 best … 31 worst): 3 is about quality 90.
    static let jpegQuantiser: Int32 = 3

    /// Where a `width`×`height` picture goes in a `boxWidth`×`boxHeight`
    /// box: as large as fits with its aspect ratio kept, centred (offsets
    /// even, for 4:2:0 chroma). Sizes are truncated as aiosendspin does.
    public static func fit(width: Int, height: Int, boxWidth: Int, boxHeight: Int) -> (x: Int, y: Int, width: Int, height: Int) {
        guard width > 0, height > 0 else { return (0, 0, boxWidth, boxHeight) }
        var w = boxWidth, h = boxHeight
        if width * boxHeight >= height * boxWidth {
            h = max(1, min(boxHeight, height * boxWidth / width))
        } else {
            w = max(1, min(boxWidth, width * boxHeight / height))
        }
        return (((boxWidth - w) / 2) & ~1, ((boxHeight - h) / 2) & ~1, w, h)
    }

    /// The cover `bytes` (JPEG or PNG) as a `width`×`height` picture in `format`.
    public static func scaled(_ bytes: [UInt8], width: Int, height: Int, format: PictureFormat) throws(CoverError) -> [UInt8] {
        guard (1...maximumSide).contains(width), (1...maximumSide).contains(height) else { throw .badSize(width: width, height: height) }
        let ff = try functions()
        let sws = try FFmpeg.scaleFunctions()
        let source = try decode(bytes, ff)
        let srcW = Int(source.frame.pointee.width), srcH = Int(source.frame.pointee.height)
        let place = fit(width: srcW, height: srcH, boxWidth: width, boxHeight: height)
        let pixelFormat = format == .jpeg ? AV_PIX_FMT_YUVJ420P : AV_PIX_FMT_RGB24
        let inner = try ImageFrame(width: place.width, height: place.height, format: pixelFormat, ff)
        let scaler = try ScaleContext(from: source, to: inner, sws)
        try scaler.scale(source, into: inner)
        let box = try ImageFrame(width: width, height: height, format: pixelFormat, ff)
        box.fillBlack()
        box.paste(inner, x: place.x, y: place.y)
        return try encode(box, format: format, ff)
    }

    /// The picture in `bytes` (JPEG or PNG), decoded to RGB.
    public static func decoded(_ bytes: [UInt8]) throws(CoverError) -> RGBPicture {
        let ff = try functions()
        let sws = try FFmpeg.scaleFunctions()
        let source = try decode(bytes, ff)
        let w = Int(source.frame.pointee.width), h = Int(source.frame.pointee.height)
        let rgb = try ImageFrame(width: w, height: h, format: AV_PIX_FMT_RGB24, ff)
        try ScaleContext(from: source, to: rgb, sws).scale(source, into: rgb)
        var out = [UInt8](repeating: 0, count: w * h * 3)
        let stride = Int(rgb.frame.pointee.linesize.0)
        guard let plane = rgb.frame.pointee.data.0 else { throw .ffmpeg(operation: "converting to RGB", reason: "no picture") }
        for row in 0..<h {
            for i in 0..<(w * 3) { out[row * w * 3 + i] = plane[row * stride + i] }
        }
        return RGBPicture(width: w, height: h, rgb: out)
    }

    // MARK: FFmpeg

    static func functions() throws(CoverError) -> tutti_ffmpeg {
        do { return try FFmpeg.functions() } catch { throw .unavailable(error.description) }
    }

    /// The codec of a picture, from its first bytes.
    static func codec(of bytes: [UInt8]) -> AVCodecID? {
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return AV_CODEC_ID_MJPEG }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return AV_CODEC_ID_PNG }
        return nil
    }

    static func decode(_ bytes: [UInt8], _ ff: tutti_ffmpeg) throws(CoverError) -> ImageFrame {
        guard let id = codec(of: bytes), bytes.count < Int(Int32.max) - 64 else { throw .notAnImage }
        guard let decoder = ff.find_decoder(id) else { throw .ffmpeg(operation: "finding the picture decoder", reason: "not built in") }
        let context = try ImageCodec(decoder, ff, operation: "decoding a cover")
        context.context.pointee.max_pixels = maximumSourcePixels
        try context.open(decoder)
        let packet = try ImagePacket(bytes, ff)
        let frame = try ImageFrame(ff)
        try check(ff.send_packet(context.context, packet.packet), "decoding a cover", ff)
        _ = ff.send_packet(context.context, nil) // the end: a decoder that holds the frame gives it now
        try check(ff.receive_frame(context.context, frame.frame), "decoding a cover", ff)
        let w = Int(frame.frame.pointee.width), h = Int(frame.frame.pointee.height)
        guard (1...maximumSourceSide).contains(w), (1...maximumSourceSide).contains(h) else { throw .badSize(width: w, height: h) }
        return frame
    }

    static func encode(_ frame: ImageFrame, format: PictureFormat, _ ff: tutti_ffmpeg) throws(CoverError) -> [UInt8] {
        let operation = "encoding a \(format.rawValue.uppercased()) cover"
        guard let encoder = ff.find_encoder(format == .jpeg ? AV_CODEC_ID_MJPEG : AV_CODEC_ID_PNG) else {
            throw .ffmpeg(operation: operation, reason: "no encoder built in")
        }
        let codec = try ImageCodec(encoder, ff, operation: operation)
        let c = codec.context
        c.pointee.width = frame.frame.pointee.width
        c.pointee.height = frame.frame.pointee.height
        c.pointee.pix_fmt = AVPixelFormat(rawValue: frame.frame.pointee.format)
        c.pointee.time_base = AVRational(num: 1, den: 1)
        if format == .jpeg {
            // A fixed quantiser, not a bit rate: the same cover gives the same quality whatever its size.
            c.pointee.flags |= AV_CODEC_FLAG_QSCALE
            c.pointee.global_quality = jpegQuantiser * tutti_ff_qp2lambda()
            frame.frame.pointee.quality = c.pointee.global_quality
        }
        try codec.open(encoder)
        try check(ff.send_frame(c, frame.frame), operation, ff)
        _ = ff.send_frame(c, nil)
        let packet = try ImagePacket(ff)
        try check(ff.receive_packet(c, packet.packet), operation, ff)
        guard let data = packet.packet.pointee.data, packet.packet.pointee.size > 0 else {
            throw .ffmpeg(operation: operation, reason: "no picture came out")
        }
        return Array(UnsafeBufferPointer(start: data, count: Int(packet.packet.pointee.size)))
    }

    static func check(_ rc: Int32, _ operation: String, _ ff: tutti_ffmpeg) throws(CoverError) {
        if rc < 0 { throw .ffmpeg(operation: operation, reason: FFmpeg.describe(rc, ff)) }
    }
}

/// An `AVCodecContext` for one picture, freed with it.
final class ImageCodec {
    let context: UnsafeMutablePointer<AVCodecContext>
    private let ff: tutti_ffmpeg
    private let operation: String

    init(_ codec: UnsafePointer<AVCodec>, _ ff: tutti_ffmpeg, operation: String) throws(CoverError) {
        guard let context = ff.codec_alloc_context(codec) else { throw .ffmpeg(operation: operation, reason: "out of memory") }
        self.context = context
        self.ff = ff
        self.operation = operation
    }

    func open(_ codec: UnsafePointer<AVCodec>) throws(CoverError) {
        try CoverImage.check(ff.codec_open(context, codec, nil), operation, ff)
    }

    deinit {
        var c: UnsafeMutablePointer<AVCodecContext>? = context
        ff.codec_free_context(&c)
    }
}

/// An `AVPacket`: a cover's bytes to decode (copied, with FFmpeg's padding), or an encoded picture.
final class ImagePacket {
    let packet: UnsafeMutablePointer<AVPacket>
    private let ff: tutti_ffmpeg

    init(_ ff: tutti_ffmpeg) throws(CoverError) {
        guard let packet = ff.packet_alloc() else { throw .ffmpeg(operation: "allocating a packet", reason: "out of memory") }
        self.packet = packet
        self.ff = ff
    }

    convenience init(_ bytes: [UInt8], _ ff: tutti_ffmpeg) throws(CoverError) {
        try self.init(ff)
        try CoverImage.check(ff.new_packet(packet, Int32(bytes.count)), "holding a cover", ff)
        if let data = packet.pointee.data {
            bytes.withUnsafeBufferPointer { b in if let base = b.baseAddress { data.update(from: base, count: b.count) } }
        }
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        ff.packet_free(&p)
    }
}

/// An `AVFrame`: a decoded cover, or a picture being made.
final class ImageFrame {
    let frame: UnsafeMutablePointer<AVFrame>
    private let ff: tutti_ffmpeg

    init(_ ff: tutti_ffmpeg) throws(CoverError) {
        guard let frame = ff.frame_alloc() else { throw .ffmpeg(operation: "allocating a frame", reason: "out of memory") }
        self.frame = frame
        self.ff = ff
    }

    /// A frame with its own planes of `width`×`height` in `format`.
    convenience init(width: Int, height: Int, format: AVPixelFormat, _ ff: tutti_ffmpeg) throws(CoverError) {
        try self.init(ff)
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.format = format.rawValue
        try CoverImage.check(ff.frame_get_buffer(frame, 0), "allocating a \(width)×\(height) picture", ff)
    }

    var isYUV420: Bool { frame.pointee.format == AV_PIX_FMT_YUVJ420P.rawValue }

    /// The planes this frame has: (base, stride, bytes a row, rows, black).
    private var planes: [(UnsafeMutablePointer<UInt8>, Int, Int, Int, UInt8)] {
        let f = frame.pointee
        let w = Int(f.width), h = Int(f.height)
        guard let p0 = f.data.0 else { return [] }
        if !isYUV420 { return [(p0, Int(f.linesize.0), w * 3, h, 0)] }
        guard let p1 = f.data.1, let p2 = f.data.2 else { return [] }
        let cw = (w + 1) / 2, ch = (h + 1) / 2
        // Full-range YUV: black is luma 0, chroma at its middle.
        return [(p0, Int(f.linesize.0), w, h, 0), (p1, Int(f.linesize.1), cw, ch, 128), (p2, Int(f.linesize.2), cw, ch, 128)]
    }

    func fillBlack() {
        for (base, stride, bytes, rows, black) in planes {
            for row in 0..<rows { (base + row * stride).update(repeating: black, count: bytes) }
        }
    }

    /// Copies `picture` (same format, no larger) in with its top left at (`x`, `y`), both even.
    func paste(_ picture: ImageFrame, x: Int, y: Int) {
        let into = planes, from = picture.planes
        for (i, (base, stride, _, _, _)) in into.enumerated() where i < from.count {
            let (src, srcStride, bytes, rows, _) = from[i]
            let (dx, dy) = i == 0 ? (isYUV420 ? x : x * 3, y) : (x / 2, y / 2)
            for row in 0..<rows { (base + (dy + row) * stride + dx).update(from: src + row * srcStride, count: bytes) }
        }
    }

    deinit {
        var f: UnsafeMutablePointer<AVFrame>? = frame
        ff.frame_free(&f)
    }
}

/// A libswscale `SwsContext` from one frame's size and format to another's.
final class ScaleContext {
    let context: OpaquePointer
    private let sws: tutti_swscale

    init(from source: ImageFrame, to destination: ImageFrame, _ sws: tutti_swscale) throws(CoverError) {
        let s = source.frame.pointee, d = destination.frame.pointee
        // Lanczos, as aiosendspin's server resizes; accurate rounding for the colour conversion.
        guard let context = sws.getContext(s.width, s.height, AVPixelFormat(rawValue: s.format), d.width, d.height,
                                           AVPixelFormat(rawValue: d.format), Int32(SWS_LANCZOS | SWS_ACCURATE_RND), nil, nil, nil) else {
            throw .ffmpeg(operation: "scaling \(s.width)×\(s.height) to \(d.width)×\(d.height)", reason: "libswscale refused the formats")
        }
        self.context = context
        self.sws = sws
    }

    func scale(_ source: ImageFrame, into destination: ImageFrame) throws(CoverError) {
        let rc = sws.scale_frame(context, destination.frame, source.frame)
        if rc < 0 { throw .ffmpeg(operation: "scaling a cover", reason: "libswscale error \(rc)") }
    }

    deinit { sws.freeContext(context) }
}
