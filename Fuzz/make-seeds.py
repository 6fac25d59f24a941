#!/usr/bin/env python3
"""Writes the seed corpus, Fuzz/corpus/TARGET/: small, real examples of each
format (docs/protocol.md, docs/snapcast.md, the MPD and JSON-RPC docs, real
stream heads, files made by lame, flac and metaflac). Run once; the seeds
are committed, and libFuzzer grows its own corpus from them elsewhere."""
import os, struct, subprocess, sys, tempfile, wave

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

def put(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

# A leading byte picks how the target cuts the input into pieces (FuzzTarget.pieces): 0xFF = all at once, 0x00 = byte by byte.
WHOLE, BYTES, SMALL = b"\xff", b"\x00", b"\x06"

# --- wire protocol: u32 length | u8 type | body, big-endian.
def frame(t, body):
    return struct.pack(">IB", len(body) + 1, t) + body
def s16(s):
    b = s.encode(); return struct.pack(">H", len(b)) + b
def stream(sid=1, codec=1, frames=960, buf=1_000_000_000):
    return struct.pack(">IBIq", sid, codec, frames, buf)
hello = frame(1, struct.pack(">H", 3) + s16("kitchen"))
welcome = frame(2, struct.pack(">H", 3) + stream())
reject = frame(3, struct.pack(">H", 3) + s16("version 1 is too old"))
treq = frame(4, struct.pack(">Iq", 7, 123456789))
tresp = frame(5, struct.pack(">Iqqq", 7, 123456789, 223456789, 223456999))
chunk = frame(6, struct.pack(">IQqI", 1, 42, 5_000_000_000, 960) + bytes(range(40)))
flush = frame(7, struct.pack(">IqB", 1, 6_000_000_000, 1))
end = frame(8, struct.pack(">Iq", 1, 7_000_000_000))
health = frame(9, struct.pack(">qqqqqqIII", -1500, 20, 300000, 900000000, 12000, 1000020, 1, 0, 3))
bye = frame(10, s16("leader shutting down"))
settings = frame(11, struct.pack(">BBq", 80, 0, 20_000_000))
command = frame(12, s16("toggle"))
follow = frame(13, stream(sid=2) + struct.pack(">q", 8_000_000_000))
eq = frame(14, bytes([10]) + bytes([0, 2, 4, 0, 0xFE, 0, 0, 0, 6, 0]) + bytes([4, 0xFC]) + bytes([1, 0xFA]))
put("wire", "follower-join", WHOLE + hello + treq)
put("wire", "leader-session", SMALL + welcome + settings + eq + tresp + chunk + chunk + flush + follow + end)
put("wire", "health-and-command", BYTES + health + command + bye)
put("wire", "reject", WHOLE + reject)
# Protocol v4: the room-key exchange (32-byte nonces and HMAC-SHA256 proofs).
hello4 = frame(1, struct.pack(">H", 4) + s16("bedroom"))
put("wire", "room-key", SMALL + hello4 + frame(30, bytes(range(32))) + frame(31, bytes(range(32, 64)) + bytes(range(64, 96))) + frame(32, bytes(range(96, 128))) + treq)

# --- Snapcast binary protocol: 26-byte little-endian header, then the body.
def snap(t, body, id=1, refers=0):
    return struct.pack("<HHHiiiiI", t, id, refers, 1700000000, 250000, 0, 0, len(body)) + body
def ss(s):
    b = s.encode(); return struct.pack("<I", len(b)) + b
hello_json = '{"Arch":"x86_64","ClientName":"Snapclient","HostName":"kitchen","ID":"00:11:22:33:44:55","Instance":1,"MAC":"00:11:22:33:44:55","OS":"Debian GNU/Linux 12","SnapStreamProtocolVersion":2,"Version":"0.26.0"}'
put("snapcast", "client-hello-time", WHOLE + snap(5, ss(hello_json)) + snap(4, struct.pack("<ii", 0, 0), id=2))
put("snapcast", "client-info", SMALL + snap(7, ss('{"volume":{"muted":false,"percent":74}}')) + snap(4, struct.pack("<ii", 0, 1200), id=3))
put("snapcast", "server-messages", BYTES + snap(1, ss("opus") + struct.pack("<I", 12) + struct.pack("<IIHH", 0x4F505553, 48000, 16, 2))
    + snap(3, ss('{"bufferMs":1000,"latency":0,"muted":false,"volume":100}')) + snap(2, struct.pack("<ii", 1700000001, 20000) + struct.pack("<I", 8) + bytes(8))
    + snap(8, struct.pack("<I", 401) + ss("Unauthorized") + ss("authentication required")))

# --- JSON-RPC lines (docs/api.md).
for name, line in [
    ("status", '{"jsonrpc":"2.0","id":1,"method":"player.status"}'),
    ("volume", '{"jsonrpc":"2.0","id":"v","method":"rooms.setVolume","params":{"room":"kitchen","volume":40}}'),
    ("notification", '{"jsonrpc":"2.0","method":"player.pause","params":null}'),
    ("search", '{"jsonrpc":"2.0","id":3,"method":"library.search","params":{"query":"Beyonc\\u00e9 \\"live\\"","limit":50,"group":"party"}}'),
    ("not-an-object", '[1,2,{"a":[true,false,null,-1.5e300]}]'),
    ("bad-id", '{"jsonrpc":"2.0","id":{"x":1},"method":"player.play"}'),
]:
    put("jsonrpc", name, line)

# --- MPD command lines, as mpc, ncmpcpp and phone apps send them.
put("mpd", "mpc-status", WHOLE + b"status\ncurrentsong\nplaylistinfo 0:10\nlistplaylists\n")
put("mpd", "command-list", SMALL + b'command_list_ok_begin\nsetvol 40\nadd "Artist/Album/01 - Song \\"One\\".mp3"\nplay 0\ncommand_list_end\n')
put("mpd", "idle", BYTES + b"idle player mixer playlist\nnoidle\nclose\n")
put("mpd", "search", WHOLE + b'search "((artist == \'Miles Davis\') AND (album contains \\"Blue\\"))"\nfind artist "Nina Simone" album "Pastel Blues"\nlist album artist "Bj\xc3\xb6rk"\ncount genre Jazz\n')
put("mpd", "errors", WHOLE + b'"quoted name"\nplay "unterminated\r\nseekcur +10\r\n\t \n')

# --- HTTP response heads (an Icecast server, a SHOUTcast v1 server, a CDN redirect).
put("http-head", "icecast", WHOLE + b"HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nicy-br:128\r\nicy-genre:Jazz\r\nicy-name:Radio Swiss Jazz\r\nicy-url:http://www.radioswissjazz.ch\r\nicy-metaint:16000\r\nCache-Control: no-cache\r\n\r\n\xff\xfb\x90\x00")
put("http-head", "shoutcast-v1", SMALL + b"ICY 200 OK\r\nicy-notice1:<BR>This stream requires Winamp<BR>\r\nicy-name:Caf\xe9 Lounge\r\nicy-pub:1\r\nicy-metaint:8192\r\n\r\n")
put("http-head", "redirect", BYTES + b"\r\nHTTP/1.1 302 Found\r\nLocation: https://cdn.example.net/stream.mp3?sid=1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
put("http-head", "file", WHOLE + b"HTTP/1.1 206 Partial Content\r\nContent-Type: audio/flac\r\nContent-Range: bytes 100-999/1000\r\nContent-Length: 900\r\nTransfer-Encoding: chunked\r\n\r\n")

# --- ICY: two metaint bytes (value - 1), then audio and metadata blocks.
def icy(metaint, blocks):
    out = struct.pack(">H", metaint - 1)
    for text in blocks:
        out += bytes(metaint)
        t = text.encode("utf-8") if isinstance(text, str) else text
        n = (len(t) + 15) // 16
        out += bytes([n]) + t + bytes(n * 16 - len(t))
    return out
put("icy", "titles", SMALL + icy(32, ["StreamTitle='Miles Davis - So What';StreamUrl='http://example.com/cover.jpg';", "", "StreamTitle='It''s a \"quote\"; still the title';"]))
put("icy", "latin1", WHOLE + icy(16, [b"StreamTitle='Caf\xe9 del Mar';"]))
put("icy", "bytewise", BYTES + icy(8, ["StreamTitle='';", "StreamTitle='A';StreamUrl='';"]))

# --- M3U playlists.
put("m3u", "extended", "#EXTM3U\n#EXTINF:215,Miles Davis - So What\n../Music/Miles Davis/Kind of Blue/01 So What.mp3\n#EXTINF:-1 tvg-id=\"radio\",Radio Swiss Jazz\nhttp://stream.srg-ssr.ch/m/rsj/mp3_128\n")
put("m3u", "windows", "\ufeff#EXTM3U\r\n#EXTINF:300,Song\r\nMusic\\Artist\\Song.flac\r\nfile:///home/me/Music/A%20B/c.wav\r\nfile://host/srv/x.mp3\r\n")
put("m3u", "latin1", b"# old player\n/srv/music/Caf\xe9/01.mp3\n./a/../b/./c.mp3\n\n")

# --- button mapping files (hardware/buttons.md).
put("buttons", "gpio", "# kitchen buttons\ninput /dev/input/by-path/platform-gpio-keys-event grab\ntiming debounce=20ms double=300ms long=600ms repeat=150ms\ndefaults on\nbutton play gpio=gpiochip0:17 active-low pull-up\nbutton vol gpio=chip0:GPIO27 debounce=5ms\nencoder knob gpio=chip0:22,23 detent=4 pull-up\non play press toggle\non play double next\non play long party\non knob cw volume-up\non knob ccw volume-down\non KEY_PLAYPAUSE press toggle\n")
put("buttons", "keys", "button ir key=KEY_VOLUMEUP\nbutton x key=0x73\nencoder wheel rel=REL_DIAL\non ir press volume-up\non wheel cw next\r\non wheel ccw previous\r\n")
put("buttons", "mistakes", "button 9 gpio=chip0:99999\non b1 triple toggle\ntiming long=0s\n")

# --- tutti.conf.
put("config", "both", '# /etc/tutti/tutti.conf\n[leader]\nmusic = /srv/music\nlisten = 0.0.0.0:4953\ncodec = opus\nbuffer-ms = 1000\nannounce = no\nname = "  Living room # main"\n\n[speaker]\nname = kitchen\noutput = alsa:hw:0\nlatency-ms = 12\nleader = auto\nrealtime = yes ; comment\n')
put("config", "speaker", "[speaker]\r\nleader = 192.168.1.10:4953\r\nmixer = hw:PCM\r\nsteer = no\r\nlog-level = debug\r\n")
put("config", "mistakes", "name = before any section\n[leader]\nbitrate = 999999\nbitrate = 1\n[speeker]\n")

# --- audio files: a 0.1 s 48 kHz stereo tone, tagged.
tmp = tempfile.mkdtemp()
wav_path = os.path.join(tmp, "tone.wav")
with wave.open(wav_path, "wb") as w:
    w.setnchannels(2); w.setsampwidth(2); w.setframerate(48000)
    w.writeframes(b"".join(struct.pack("<hh", (i * 997) % 20000 - 10000, (i * 331) % 20000 - 10000) for i in range(4800)))
pcm = open(wav_path, "rb").read()
def info_chunk(tags):
    body = b"INFO"
    for k, v in tags:
        v = v + b"\0"
        body += k + struct.pack("<I", len(v)) + v + (b"\0" if len(v) % 2 else b"")
    return b"LIST" + struct.pack("<I", len(body)) + body
info = info_chunk([(b"INAM", b"Tone"), (b"IART", b"Caf\xe9 Band"), (b"IPRD", "Album ✓".encode()), (b"ICRD", b"2001-05-17"), (b"ITRK", b"3/12"), (b"IGNR", b"Jazz")])
riff = pcm[12:]
put("wav", "tagged", b"RIFF" + struct.pack("<I", 4 + len(riff[:2000]) + len(info)) + b"WAVE" + riff[:2000] + info)
# 24-bit mono, WAVE_FORMAT_EXTENSIBLE, with an unknown length.
fmt = struct.pack("<HHIIHHHHIH14s", 0xFFFE, 1, 44100, 44100 * 3, 3, 24, 22, 24, 4, 1, b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71")
put("wav", "extensible-24bit", b"RIFF\xff\xff\xff\xffWAVEfmt " + struct.pack("<I", len(fmt)) + fmt + b"data\xff\xff\xff\xff" + bytes(range(0, 250, 2)) * 3)
fmtf = struct.pack("<HHIIHH", 3, 2, 48000, 48000 * 8, 8, 32)
put("wav", "float", b"RIFF" + struct.pack("<I", 4 + 24 + 8 + 64) + b"WAVEfmt " + struct.pack("<I", 16) + fmtf + b"data" + struct.pack("<I", 64) + struct.pack("<16f", *[0.5, -0.5, 1.0, -1.0] * 4))

def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
short = os.path.join(tmp, "short.wav")
with wave.open(short, "wb") as w:
    w.setnchannels(2); w.setsampwidth(2); w.setframerate(44100)
    w.writeframes(bytes(4 * 1200))
mp3 = os.path.join(tmp, "a.mp3")
run("lame", "--quiet", "-b", "32", "--tt", "So What", "--ta", "Miles Davis", "--tl", "Kind of Blue", "--ty", "1959", "--tn", "1/5", "--tg", "Jazz", "--id3v2-only", short, mp3)
put("id3", "lame-id3v2", open(mp3, "rb").read())
mp3b = os.path.join(tmp, "b.mp3")
run("lame", "--quiet", "-b", "32", "--nohist", "--id3v1-only", "--tt", "Caf\xe9", "--ta", "Artist", "--tn", "7", short, mp3b)
put("id3", "lame-id3v1", open(mp3b, "rb").read())
flac = os.path.join(tmp, "a.flac")
run("flac", "--silent", "--force", "-o", flac, short)
run("metaflac", "--set-tag=TITLE=Blue in Green", "--set-tag=ARTIST=Miles Davis", "--set-tag=ARTIST=Bill Evans", "--set-tag=TRACKNUMBER=3", "--set-tag=DATE=1959-08-17", "--set-tag=ALBUMARTIST=Miles Davis", flac)
put("flac", "tagged", open(flac, "rb").read())
flac2 = os.path.join(tmp, "b.flac")
run("flac", "--silent", "--force", "--no-seektable", "--padding=0", "-o", flac2, short)
put("flac", "plain", open(flac2, "rb").read())
print("seeds written under", root)
