// The local HTTP server the tests start (Python 3, raw sockets so it can
// answer "ICY 200 OK", drop connections and trickle bytes). Kept as a
// string so the test target has no unhandled resource files.
let testServerScript = #"""
# HTTP test server for TuttiStreamsTests: python3 test_server.py FILE.mp3
# Prints its port, then serves until killed. Routes (query strings are
# ignored unless named below; ?type=audio%2Faac sets the audio routes' Content-Type):
#   /file.mp3        the file, Content-Length, Range requests (206)
#   /norange.mp3     the file, always 200 in full (ignores Range)
#   /slow.mp3        Content-Length of the file; 4 KiB every 0.2 s up to 40 KiB, then silence
#   /icy.mp3         with "Icy-MetaData: 1": icy-metaint 8192 and changing StreamTitle
#                    blocks, no Content-Length; ?v1 answers "ICY 200 OK" (SHOUTcast v1)
#   /live?drop=N     a live stream (no Content-Length) that closes after N bytes; ?icy adds metadata
#   /truncated.mp3   Content-Length of the file, half of it sent, then the connection closes
#   /garbage.mp3     200 KB of text served as audio/mpeg
#   /redirect?n=N    302 to /redirect?n=N-1 (relative Location), n=0: 301 to /file.mp3
#   /chunked.mp3     HTTP/1.1, Transfer-Encoding: chunked, chunks of odd sizes with extensions
#   /longheader      a 20,000-byte header line;  /manyheaders: 500 headers
#   /redirect-to?url=U  302 to U (not escaped: give a plain URL)
#   /liar?declared=N&send=M  Content-Length: N and Transfer-Encoding: chunked, then M bytes of the file, repeated
#   /endless?send=M  no Content-Length, M bytes of the file, repeated, then the connection closes
#   /stats           {"connections": {path: count}, "sent": {path: body bytes written}}
#   anything else    404
import json, os, socket, socketserver, sys, threading, time

DATA = open(sys.argv[1], "rb").read()
METAINT = 8192
TITLES = {0: "Artist 0 - Song 0".encode(), 3: "Guns N' Roses - Don't Cry".encode(),
          6: "Sigur Rós – Hoppípolla".encode("utf-8"), 9: "Björk - Jóga".encode("latin-1")}
lock = threading.Lock()
connections = {}
sent = {}

def icy_body(data, titles):
    out = bytearray()
    block = 0
    for start in range(0, len(data), METAINT):
        chunk = data[start:start + METAINT]
        out += chunk
        if len(chunk) < METAINT:
            break
        if block in titles:
            text = b"StreamTitle='" + titles[block] + b"';StreamUrl='http://example.com/" + str(block).encode() + b"';"
            n = (len(text) + 15) // 16
            out += bytes([n]) + text + b"\0" * (n * 16 - len(text))
        else:
            out += b"\0"
        block += 1
    return bytes(out)

class Handler(socketserver.StreamRequestHandler):
    def send(self, status, headers, body=b"", v1=False):
        line = "ICY %s\r\n" % status if v1 else "HTTP/1.0 %s\r\n" % status
        head = line + "".join("%s: %s\r\n" % h for h in headers) + "\r\n"
        self.wfile.write(head.encode("latin-1") + body)
        self.wfile.flush()

    def handle(self):
        request = self.rfile.readline().decode("latin-1").strip()
        headers = {}
        while True:
            line = self.rfile.readline().decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        parts = request.split(" ")
        target = parts[1] if len(parts) > 1 else "/"
        path, _, query = target.partition("?")
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        with lock:
            connections[path] = connections.get(path, 0) + 1
        try:
            self.route(path, params, headers)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def route(self, path, params, headers):
        audio = [("Content-Type", params.get("type", "audio/mpeg").replace("%2F", "/"))]
        if path == "/file.mp3":
            rng = headers.get("range", "")
            if rng.startswith("bytes=") and rng[6:].endswith("-"):
                start = int(rng[6:-1])
                self.send("206 Partial Content", audio + [("Content-Length", len(DATA) - start),
                          ("Content-Range", "bytes %d-%d/%d" % (start, len(DATA) - 1, len(DATA))), ("Accept-Ranges", "bytes")], DATA[start:])
            else:
                self.send("200 OK", audio + [("Content-Length", len(DATA)), ("Accept-Ranges", "bytes")], DATA)
        elif path == "/norange.mp3":
            self.send("200 OK", audio + [("Content-Length", len(DATA))], DATA)
        elif path == "/slow.mp3":
            self.send("200 OK", audio + [("Content-Length", len(DATA))])
            for start in range(0, 40960, 4096):
                self.wfile.write(DATA[start:start + 4096]); self.wfile.flush()
                time.sleep(0.2)
            time.sleep(30)
        elif path == "/icy.mp3":
            wants = headers.get("icy-metadata") == "1"
            hdrs = audio + [("icy-name", "Tutti Test FM"), ("icy-genre", "Test"), ("icy-br", "128")]
            if wants:
                hdrs.append(("icy-metaint", METAINT))
            self.send("200 OK", hdrs, icy_body(DATA, TITLES) if wants else DATA, v1="v1" in params)
        elif path == "/live":
            drop = int(params.get("drop", "40000"))
            icy = "icy" in params and headers.get("icy-metadata") == "1"
            hdrs = audio + [("icy-name", "Live FM")] + ([("icy-metaint", METAINT)] if icy else [])
            body = icy_body(DATA, {0: b"Live"}) if icy else DATA
            self.send("200 OK", hdrs, body[:drop])
        elif path == "/truncated.mp3":
            self.send("200 OK", audio + [("Content-Length", len(DATA))], DATA[:len(DATA) // 2])
        elif path == "/garbage.mp3":
            text = b"<html><body>This is not audio. " * 7000
            self.send("200 OK", [("Content-Type", "text/html"), ("Content-Length", len(text))], text)
        elif path == "/redirect":
            n = int(params.get("n", "0"))
            if n > 0:
                self.send("302 Found", [("Location", "redirect?n=%d" % (n - 1)), ("Content-Length", 0)])
            else:
                self.send("301 Moved Permanently", [("Location", "http://127.0.0.1:%d/file.mp3" % self.server.server_address[1]), ("Content-Length", 0)])
        elif path == "/chunked.mp3":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\nTransfer-Encoding: chunked\r\n\r\n")
            pos, size = 0, 1
            while pos < len(DATA):
                chunk = DATA[pos:pos + size]
                self.wfile.write(b"%x;ext=1\r\n" % len(chunk) + chunk + b"\r\n")
                pos += len(chunk)
                size = size * 7 % 9001 + 1
            self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
            self.wfile.flush()
        elif path == "/longheader":
            self.send("200 OK", audio + [("X-Long", "a" * 20000)], DATA)
        elif path == "/manyheaders":
            self.send("200 OK", audio + [("X-H%d" % i, "v") for i in range(500)], DATA)
        elif path == "/redirect-to":
            self.send("302 Found", [("Location", params.get("url", "/")), ("Content-Length", 0)])
        elif path in ("/liar", "/endless"):
            total = int(params.get("send", "4194304"))
            hdrs = audio + ([("Content-Length", params.get("declared", "1000")), ("Transfer-Encoding", "chunked")] if path == "/liar" else [])
            self.wfile.write(("HTTP/1.1 200 OK\r\n" + "".join("%s: %s\r\n" % h for h in hdrs) + "Connection: close\r\n\r\n").encode())
            pos = 0
            while pos < total:
                chunk = (DATA * 2)[pos % len(DATA):pos % len(DATA) + min(16384, total - pos)]
                self.wfile.write((b"%x\r\n" % len(chunk) + chunk + b"\r\n") if path == "/liar" else chunk)
                pos += len(chunk)
                with lock:
                    sent[path] = sent.get(path, 0) + len(chunk)
            if path == "/liar":
                self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        elif path == "/stats":
            with lock:
                body = json.dumps({"connections": connections, "sent": sent}).encode()
            self.send("200 OK", [("Content-Type", "application/json"), ("Content-Length", len(body))], body)
        else:
            self.send("404 Not Found", [("Content-Length", 0)])

class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

def exit_with_parent():
    # The test process holds our stdin open; EOF means it is gone (even if it crashed).
    sys.stdin.buffer.read()
    os._exit(0)

threading.Thread(target=exit_with_parent, daemon=True).start()
server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""#
