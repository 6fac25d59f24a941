import Foundation
import Glibc

/// One short file per format FFmpeg decodes for Tutti, made at test time by
/// Debian's `ffmpeg` (no binary fixtures): a 440 Hz tone, tagged with
/// `-metadata` in Korean and accented text, and a cover where the container
/// keeps one that ffmpeg can write (MP4, AIFF's ID3; Ogg and Opus as a FLAC
/// picture comment), raw AAC's tags in an ID3v2 tag.
public struct FFmpegCorpus {
    public struct Entry: Sendable {
        /// Path under the corpus folder.
        public var file: String
        /// The encoder's arguments.
        public var args: [String]
        public var rate: Int
        public var hasCover: Bool
        /// Its AudioFormatKind's raw value.
        public var kind: String
    }

    public static let entries: [Entry] = [
        Entry(file: "AAC/aac.m4a", args: ["-c:a", "aac", "-b:a", "128k", "-movie_timescale", "44100"], rate: 44_100, hasCover: true, kind: "mp4"),
        Entry(file: "ALAC/alac.m4a", args: ["-c:a", "alac"], rate: 44_100, hasCover: true, kind: "mp4"),
        Entry(file: "ADTS/raw.aac", args: ["-c:a", "aac", "-b:a", "128k", "-write_id3v2", "1"], rate: 44_100, hasCover: false, kind: "aac"),
        Entry(file: "Vorbis/vorbis.ogg", args: ["-c:a", "libvorbis"], rate: 44_100, hasCover: true, kind: "ogg"),
        Entry(file: "Opus/opus.opus", args: ["-c:a", "libopus"], rate: 48_000, hasCover: true, kind: "opus"),
        // ffmpeg writes a picture into ASF as a video stream, not the WM/Picture that players read.
        Entry(file: "WMA/wma.wma", args: ["-c:a", "wmav2"], rate: 44_100, hasCover: false, kind: "wma"),
        Entry(file: "WavPack/wavpack.wv", args: ["-c:a", "wavpack"], rate: 44_100, hasCover: false, kind: "wavpack"),
        Entry(file: "AIFF/aiff.aiff", args: ["-c:a", "pcm_s16be", "-write_id3v2", "1"], rate: 44_100, hasCover: true, kind: "aiff"),
    ]

    /// Tags written to every file; each title ends with the entry's kind, so
    /// a search finds one file (`title(of:)`).
    public static let artist = "김민준 & Zoë"
    public static let album = "Été 앨범"
    public static func title(of entry: Entry) -> String { "서울의 밤 Déjà \(entry.file.split(separator: "/")[0])" }

    public let dir: String
    public let cover: [UInt8]

    /// Writes the corpus under `dir` (`seconds` of tone each); throws when ffmpeg fails.
    public init(dir: String, seconds: Double = 1.5) throws {
        self.dir = dir
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try runTool(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=8x8:d=1", "-frames:v", "1", dir + "/cover.png"])
        cover = [UInt8](FileManager.default.contents(atPath: dir + "/cover.png") ?? Data())
        for entry in Self.entries {
            let out = dir + "/" + entry.file
            try FileManager.default.createDirectory(atPath: (out as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var args = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=\(entry.rate):duration=\(seconds)"]
            let usesPictureStream = entry.hasCover && !["ogg", "opus"].contains(entry.kind)
            if usesPictureStream { args += ["-i", dir + "/cover.png", "-map", "0:a", "-map", "1", "-c:v", "copy", "-disposition:v", "attached_pic"] }
            args += ["-ac", "2"] + entry.args
            args += ["-metadata", "title=\(Self.title(of: entry))", "-metadata", "artist=\(Self.artist)", "-metadata", "album=\(Self.album)",
                     "-metadata", "album_artist=Various", "-metadata", "track=3/9", "-metadata", "disc=1/2",
                     "-metadata", "date=2020-05-01", "-metadata", "genre=Ambient"]
            if entry.hasCover && !usesPictureStream {
                args += ["-metadata", "METADATA_BLOCK_PICTURE=\(Data(Self.flacPicture(cover)).base64EncodedString())"]
            }
            try runTool(args + [out])
        }
    }

    /// A stereo DSF file of a sine through a first-order sigma-delta modulator at 2.8224 MHz (DSD64).
    public static func dsf(seconds: Double, frequency: Double, amplitude: Double) -> (bytes: [UInt8], samples: Int) {
        let rate = 2_822_400, samples = Int(seconds * Double(rate))
        let block = 4_096, bytesPerChannel = (samples + 7) / 8
        let blocks = (bytesPerChannel + block - 1) / block
        var bits = [UInt8](repeating: 0, count: blocks * block)
        // The sine by rotation (one multiply-add per sample), the modulator's integrator, LSB-first bits.
        let step = 2 * Double.pi * frequency / Double(rate)
        var (s, c) = (0.0, 1.0)
        let (ss, cs) = (sin(step), cos(step))
        var integrator = 0.0
        for i in 0..<samples {
            let x = amplitude * s
            (s, c) = (s * cs + c * ss, c * cs - s * ss)
            let y = integrator >= 0 ? 1.0 : -1.0
            integrator += x - y
            if y > 0 { bits[i / 8] |= 1 << UInt8(i % 8) }
        }
        func le(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        var data: [UInt8] = []
        data.reserveCapacity(2 * bits.count)
        for b in 0..<blocks { for _ in 0..<2 { data += bits[(b * block)..<((b + 1) * block)] } }
        let fmt = Array("fmt ".utf8) + le(52, 8) + le(1, 4) + le(0, 4) + le(2, 4) + le(2, 4) + le(rate, 4) + le(1, 4)
            + le(samples, 8) + le(block, 4) + le(0, 4)
        let total = 28 + fmt.count + 12 + data.count
        return (Array("DSD ".utf8) + le(28, 8) + le(total, 8) + le(0, 8) + fmt + Array("data".utf8) + le(12 + data.count, 8) + data, samples)
    }

    /// A FLAC PICTURE block (front cover, PNG): what Ogg comments carry base64-encoded.
    static func flacPicture(_ png: [UInt8]) -> [UInt8] {
        func be32(_ n: Int) -> [UInt8] { [UInt8((n >> 24) & 0xff), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)] }
        let mime = Array("image/png".utf8)
        return be32(3) + be32(mime.count) + mime + be32(0) + be32(8) + be32(8) + be32(24) + be32(0) + be32(png.count) + png
    }
}

/// Serves a folder of HLS output; `/live.m3u8` is a live sliding window over
/// its `index.m3u8`'s segments: two listed at start, one more each target
/// duration, at most three at a time, ENDLIST once all are out; other
/// files with a type by extension (`.aac` as an AAC station). Usage:
/// `python3 server.py DIR`; prints its port, exits when stdin closes.
public let hlsTestServerScript = #"""
import http.server, os, re, socketserver, sys, threading, time
root = sys.argv[1]
start = time.time()
text = open(os.path.join(root, "index.m3u8")).read()
segs = re.findall(r"#EXTINF:([0-9.]+),\n(\S+)", text)
target = int(re.search(r"#EXT-X-TARGETDURATION:(\d+)", text).group(1))
head = "".join(l + "\n" for l in text.splitlines() if l.startswith("#EXT-X-MAP"))
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def reply(self, ctype, body):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        path = self.path.split("?")[0]
        if path in ("/live.m3u8", "/outage.m3u8"):
            elapsed = time.time() - start
            if path == "/outage.m3u8" and 0.9 <= elapsed < 2.1:
                # The same live playlist, but the server is down from 0.9 s to 2.1 s.
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            out = 0.0
            available = 0
            for d, _ in segs:
                if available >= 2 and out > elapsed:
                    break
                out += float(d)
                available += 1
            first = max(0, available - 3)
            body = "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:%d\n#EXT-X-MEDIA-SEQUENCE:%d\n%s" % (target, first, head)
            for d, name in segs[first:available]:
                body += "#EXTINF:%s,Live %s\n%s\n" % (d, name, name)
            if available == len(segs):
                body += "#EXT-X-ENDLIST\n"
            return self.reply("application/vnd.apple.mpegurl", body.encode())
        file = os.path.join(root, os.path.basename(path))
        if not os.path.isfile(file):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        types = {".m3u8": "application/vnd.apple.mpegurl", ".aac": "audio/aacp", ".ogg": "audio/ogg", ".m4s": "video/mp4", ".mp4": "video/mp4"}
        ctype = types.get(os.path.splitext(file)[1], "video/mp2t")
        self.reply(ctype, open(file, "rb").read())
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    def handle_error(self, request, client_address):
        pass
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
server.serve_forever()
"""#
