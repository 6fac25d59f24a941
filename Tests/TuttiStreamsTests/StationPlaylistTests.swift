import Foundation
import Testing
import TuttiAudio
import TuttiCore
@testable import TuttiStreams
import TuttiTestSupport

/// `python3 server.py ROUTES.json`: serves each path of the JSON object
/// (`{"/path": ["content type", "file"]}`; a file named `@PORT` in its text
/// is replaced by the server's port), 404 for anything else; prints its
/// port; exits when stdin closes. Files with Range support.
private let playlistServerScript = #"""
import http.server, json, os, socketserver, sys, threading
routes = json.load(open(sys.argv[1]))
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def do_GET(self):
        route = routes.get(self.path)
        if route is None:
            body = b"not found"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        data = open(route[1], "rb").read().replace(b"@PORT", str(port).encode())
        start = 0
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        self.send_header("Content-Type", route[0])
        self.send_header("Content-Length", str(len(data) - start))
        self.end_headers()
        try:
            self.wfile.write(data[start:])
        except (BrokenPipeError, ConnectionResetError):
            pass
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    def handle_error(self, request, client_address):
        pass  # a client that hung up (a playlist opened, then closed)
server = Server(("127.0.0.1", 0), Handler)
port = server.server_address[1]
print(port, flush=True)
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
server.serve_forever()
"""#

/// Station URLs that answer with playlists: detection, parsing, and a
/// playlist whose first stream is dead playing its second.
@Suite(.serialized) struct StationPlaylistTests {
    @Test func kindsByTypeBytesAndExtension() {
        #expect(StationPlaylist.kind(contentType: "audio/x-scpls; charset=utf-8") == .pls)
        #expect(StationPlaylist.kind(contentType: "application/vnd.apple.mpegurl") == .m3u)
        #expect(StationPlaylist.kind(contentType: "video/x-ms-asx") == .asx)
        #expect(StationPlaylist.kind(contentType: "application/xspf+xml") == .xspf)
        #expect(StationPlaylist.kind(contentType: "audio/mpeg") == nil)
        #expect(StationPlaylist.kind(url: "http://r.example/live.PLS?x=1") == .pls)
        #expect(StationPlaylist.kind(url: "http://r.example/a.m3u8#frag") == .m3u)
        #expect(StationPlaylist.kind(url: "http://r.example/stream.mp3") == nil)
        #expect(StationPlaylist.kind(url: "http://r.example.pls/stream") == nil, "a dot in the host is no extension")
        #expect(StationPlaylist.kind(sniffing: Array("\u{FEFF}\n [Playlist]\nFile1=http://a/".utf8)[...]) == .pls)
        #expect(StationPlaylist.kind(sniffing: Array("#EXTM3U\n".utf8)[...]) == .m3u)
        #expect(StationPlaylist.kind(sniffing: Array("<ASX version=\"3.0\">".utf8)[...]) == .asx)
        #expect(StationPlaylist.kind(sniffing: Array("<?xml version=\"1.0\"?><playlist xmlns=\"http://xspf.org/ns/0/\">".utf8)[...]) == .xspf)
        #expect(StationPlaylist.kind(sniffing: [0xFF, 0xFB, 0x90, 0x64, 0, 0][...]) == nil, "MPEG audio is not a playlist")
        #expect(StationPlaylist.isHLS("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\nseg1.ts\n"))
        #expect(!StationPlaylist.isHLS("#EXTM3U\n#EXTINF:-1,Radio\nhttp://r.example/stream\n"))
    }

    @Test func entriesInOrderAndResolved() throws {
        let pls = "[playlist]\nNumberOfEntries=3\nFile2=http://b.example/2\nTitle1=One\nFile1=/one\nFile3=three.mp3\nfile10=ftp://x/y\nVersion=2\n"
        #expect(StationPlaylist.parsePLS(pls, base: "http://r.example/dir/station.pls?id=4") ==
                ["http://r.example/one", "http://b.example/2", "http://r.example/dir/three.mp3"])
        #expect(StationPlaylist.parseM3U("#EXTM3U\r\n#EXTINF:-1,A\r\nhttp://a.example/s\r\n\r\nrelative/s2\r\nmms://old/x\r\n", base: "https://r.example/p/l.m3u") ==
                ["http://a.example/s", "https://r.example/p/relative/s2"])
        let asx = #"<ASX version="3.0"><Entry><Ref HREF="http://a.example/1"/><REF href="http://a.example/2"/></Entry><ENTRYREF href="/more.asx"/></ASX>"#
        #expect(try StationPlaylistReader.entries(Array(asx.utf8), kind: .asx, base: "http://r.example/x.asx") ==
                ["http://a.example/1", "http://a.example/2", "http://r.example/more.asx"])
        let xspf = #"<?xml version="1.0"?><playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList><track><location> http://a.example/1 </location><title>x</title></track><track><location>http://a.example/2</location></track></trackList></playlist>"#
        #expect(try StationPlaylistReader.entries(Array(xspf.utf8), kind: .xspf, base: "http://r.example/") == ["http://a.example/1", "http://a.example/2"])
        let bomb = #"<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "xxxxxxxx">]><asx><ref href="&x;"/></asx>"#
        #expect(throws: FeedError.entityDeclaration) { try StationPlaylistReader.entries(Array(bomb.utf8), kind: .asx, base: "http://r/") }
    }

    /// A .pls whose first entry answers 404 plays its second; so do the same
    /// list behind a URL without extension (by its Content-Type), an M3U
    /// served as text/plain (by its first bytes), an M3U that points to the
    /// .pls, an XSPF and an ASX. A playlist that points to itself stops at
    /// three levels; an HLS playlist goes to the HLS opener.
    @Test func aPlaylistWhoseFirstStreamIsDeadPlaysTheSecond() throws {
        let dir = makeTemporaryDirectory()
        writeFileBytes(dir + "/tone.wav", TestSignal.wav16(TestSignal.sine(frequency: 440, seconds: 2, amplitude: 0.4)))
        try runTool(["lame", "--quiet", "-b", "128", dir + "/tone.wav", dir + "/tone.mp3"])
        let dead = "http://127.0.0.1:@PORT/gone.mp3", live = "http://127.0.0.1:@PORT/tone.mp3"
        let files: [String: String] = [
            "station.pls": "[playlist]\nNumberOfEntries=2\nFile1=\(dead)\nTitle1=Dead mirror\nFile2=\(live)\nTitle2=Tone\nVersion=2\n",
            "plain.m3u": "#EXTM3U\n#EXTINF:-1,Dead\n\(dead)\n#EXTINF:-1,Tone\n\(live)\n",
            "nested.m3u": "http://127.0.0.1:@PORT/station.pls\n",
            "loop.m3u": "http://127.0.0.1:@PORT/loop.m3u\n",
            "hls.m3u8": "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:1\n#EXTINF:6.0,\nseg1.ts\n",
            "station.xspf": #"<?xml version="1.0"?><playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList><track><location>\#(dead)</location></track><track><location>\#(live)</location></track></trackList></playlist>"#,
            "station.asx": #"<asx version="3.0"><entry><ref href="\#(dead)"/></entry><entry><ref href="\#(live)"/></entry></asx>"#,
        ]
        for (name, text) in files { try text.write(toFile: dir + "/" + name, atomically: true, encoding: .utf8) }
        let routes: [String: [String]] = [
            "/tone.mp3": ["audio/mpeg", dir + "/tone.mp3"],
            "/station.pls": ["audio/x-scpls", dir + "/station.pls"],
            "/listen": ["audio/x-scpls", dir + "/station.pls"],
            "/sniffed": ["text/plain", dir + "/plain.m3u"],
            "/nested.m3u": ["audio/x-mpegurl", dir + "/nested.m3u"],
            "/loop.m3u": ["audio/x-mpegurl", dir + "/loop.m3u"],
            "/live": ["application/vnd.apple.mpegurl", dir + "/hls.m3u8"],
            "/station.xspf": ["application/xspf+xml", dir + "/station.xspf"],
            "/station.asx": ["video/x-ms-asx", dir + "/station.asx"],
            "/audio.m3u": ["audio/mpeg", dir + "/tone.mp3"],
        ]
        try JSONSerialization.data(withJSONObject: routes).write(to: URL(fileURLWithPath: dir + "/routes.json"))
        try playlistServerScript.write(toFile: dir + "/server.py", atomically: true, encoding: .utf8)
        let server = try TestServer(script: dir + "/server.py", arguments: [dir + "/routes.json"])
        defer { server.stop() }
        let opener = SourceOpener(options: testOptions())

        for path in ["/station.pls", "/listen", "/sniffed", "/nested.m3u", "/station.xspf", "/station.asx"] {
            let decoder = try opener.open(server.url(path))
            #expect(decoder.path == server.url("/tone.mp3"), "\(path) resolved to the tone")
            let samples = try decodeAll(decoder)
            let frames = samples.count / 2
            #expect(abs(frames - 2 * decoder.sampleRate) < decoder.sampleRate / 50, "\(path): 2 s of audio, got \(frames) frames")
            var crossings = 0
            for f in 1..<frames where (samples[2 * f] < 0) != (samples[2 * f - 2] < 0) { crossings += 1 }
            let hz = Double(crossings) / 2 / (Double(frames) / Double(decoder.sampleRate))
            #expect(abs(hz - 440) < 5, "\(path): a 440 Hz tone, heard \(hz) Hz")
        }
        // Named like a playlist, but audio: played as the stream it is.
        let named = try opener.open(server.url("/audio.m3u"))
        #expect(named.path == server.url("/audio.m3u"))
        #expect(abs(try decodeAll(named).count / 2 - 2 * named.sampleRate) < named.sampleRate / 50)
        #expect(throws: StreamError.self) { try opener.open(server.url("/loop.m3u")) }
        do {
            _ = try opener.open(server.url("/loop.m3u"))
        } catch {
            #expect(error.description.contains("nested more than 3 deep"), "\(error)")
        }
        do {
            _ = try opener.open(server.url("/live"))
            Issue.record("HLS opened")
        } catch {
            #expect(error.description.contains("HLS"), "\(error)")
        }
    }
}

private func writeFileBytes(_ path: String, _ bytes: [UInt8]) {
    _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
}
