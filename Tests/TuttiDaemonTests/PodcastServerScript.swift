import TuttiTestSupport

// The podcast tests' feed writer and web server (Python 3), kept as strings
// so the test target has no resource files.

/// `python3 makefeed.py DIR BASE N`: writes DIR/feed.xml (RSS 2.0 with
/// itunes:*) and DIR/atom.xml with PyPI feedgen, for episodes 1…N whose
/// enclosures are BASE/epK.mp3 (files the test made with lame). Episode K
/// is published K days after 2024-01-01; its description is HTML with a
/// script, which Tutti must keep as text only.
let podcastFeedScript = #"""
import datetime, json, os, sys
from feedgen.feed import FeedGenerator
folder, base, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
durations = json.load(open(os.path.join(folder, "durations.json")))
for kind in ("rss", "atom"):
    fg = FeedGenerator()
    fg.load_extension("podcast")
    fg.id(base + "/show")
    fg.title("Tutti Test Show")
    fg.author({"name": "Ada Tester", "email": "ada@example.com"})
    fg.link(href=base + "/show", rel="alternate")
    fg.description("A show <b>about</b> tones & silence")
    fg.podcast.itunes_author("Ada Tester")
    fg.podcast.itunes_image(base + "/cover.png")
    fg.logo(base + "/cover.png")
    fg.lastBuildDate(datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc))
    for k in range(1, count + 1):
        fe = fg.add_entry()
        fe.id("urn:tutti:episode:%d" % k)
        fe.title("Episode %d: %d Hz" % (k, 220 * (k + 1)))
        fe.description("<p>Tone number %d &amp; friends</p><script>alert('x')</script><p>Second paragraph</p>" % k)
        fe.enclosure(base + "/ep%d.mp3" % k, str(os.path.getsize(os.path.join(folder, "ep%d.mp3" % k))), "audio/mpeg")
        fe.published(datetime.datetime(2024, 1, 1, 9, 30, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=k))
        fe.updated(datetime.datetime(2024, 1, 1, 9, 30, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=k))
        seconds = durations[str(k)]
        fe.podcast.itunes_duration("%d:%02d" % (seconds // 60, seconds % 60))
        fe.podcast.itunes_image(base + "/ep%d.png" % k)
    if kind == "rss":
        fg.rss_file(os.path.join(folder, "feed.xml"), pretty=True)
    else:
        fg.atom_file(os.path.join(folder, "atom.xml"), pretty=True)
"""#

/// `python3 server.py DIR`: prints its port, then serves DIR until killed.
/// Files with `ETag` (a hash of the bytes) and `Last-Modified`, 304 for a
/// matching `If-None-Match`/`If-Modified-Since`, byte ranges (206). Also:
///   /old-feed.xml    301 to /feed.xml
///   /big.xml         50 MB of XML, no Content-Length (close-delimited)
///   /big-declared.xml  the same with its Content-Length
///   /stats           {"requests": {path: n}, "notModified": n, "sent": {path: bytes}, "ranges": {path: [Range]}}
let podcastServerScript = #"""
import email.utils, hashlib, http.server, json, os, socketserver, sys, threading
folder = sys.argv[1]
lock = threading.Lock()
stats = {"requests": {}, "notModified": 0, "sent": {}, "ranges": {}}

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args):
        pass
    def count(self, key, n=1, table="sent"):
        with lock:
            stats[table][self.path] = stats[table].get(self.path, 0) + n
    def do_GET(self):
        with lock:
            stats["requests"][self.path] = stats["requests"].get(self.path, 0) + 1
        if self.path == "/stats":
            with lock:
                body = json.dumps(stats).encode()
            return self.reply(200, body, "application/json")
        if self.path == "/old-feed.xml":
            self.send_response(301)
            self.send_header("Location", "/feed.xml")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path in ("/big.xml", "/big-declared.xml"):
            return self.big(declared=self.path == "/big-declared.xml")
        name = os.path.join(folder, self.path.lstrip("/").split("?")[0])
        if "/../" in self.path or not os.path.isfile(name):
            return self.reply(404, b"not found", "text/plain")
        data = open(name, "rb").read()
        etag = '"%s"' % hashlib.sha1(data).hexdigest()[:16]
        modified = email.utils.formatdate(int(os.path.getmtime(name)), usegmt=True)
        if self.headers.get("If-None-Match") == etag or (self.headers.get("If-None-Match") is None and self.headers.get("If-Modified-Since") == modified):
            with lock:
                stats["notModified"] += 1
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        kind = {"mp3": "audio/mpeg", "png": "image/png", "pls": "audio/x-scpls"}.get(name.rsplit(".", 1)[-1], "application/rss+xml")
        extra = [("ETag", etag), ("Last-Modified", modified), ("Accept-Ranges", "bytes")]
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            with lock:
                stats["ranges"].setdefault(self.path, []).append(rng)
            start_text, _, end_text = rng[6:].partition("-")
            start = int(start_text)
            end = int(end_text) if end_text else len(data) - 1
            if start >= len(data):
                return self.reply(416, b"", "text/plain", [("Content-Range", "bytes */%d" % len(data))])
            part = data[start:end + 1]
            return self.reply(206, part, kind, extra + [("Content-Range", "bytes %d-%d/%d" % (start, start + len(part) - 1, len(data)))])
        return self.reply(200, data, kind, extra)
    def reply(self, status, body, kind, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
            self.count("sent", len(body))
        except (BrokenPipeError, ConnectionResetError):
            pass
    def big(self, declared):
        item = b"<item><title>x</title><enclosure url='http://127.0.0.1/x.mp3' type='audio/mpeg' length='1'/></item>\n" * 100
        total = 50 * 1000 * 1000
        self.send_response(200)
        self.send_header("Content-Type", "application/rss+xml")
        if declared:
            self.send_header("Content-Length", str(total))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        head = b"<?xml version='1.0'?><rss version='2.0'><channel><title>Big</title>\n"
        try:
            self.wfile.write(head)
            sent = len(head)
            while sent < total:
                self.wfile.write(item)
                sent += len(item)
                self.count("sent", len(item))
        except (BrokenPipeError, ConnectionResetError):
            pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    def handle_error(self, request, client_address):
        pass  # a client that hung up mid-answer (a refused feed, a paused download)

server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""#

/// Writes a 64×64 PNG (a colour gradient) to `path`, with Python's zlib:
/// cover art for the tests (album covers, a show's artwork).
func writePNG(to path: String) throws {
    let r = try runProgram("/usr/bin/python3", ["-c", """
        import struct, zlib, sys
        w = h = 64
        raw = b"".join(b"\\x00" + b"".join(bytes((x * 4, y * 4, 160)) for x in range(w)) for y in range(h))
        def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
        open(sys.argv[1], "wb").write(b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
        """, path])
    guard r.status == 0 else { throw CommandFailed(description: "writing \(path): \(r.err)") }
}
