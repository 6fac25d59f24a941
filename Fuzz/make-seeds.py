#!/usr/bin/env python3
"""Writes the seed corpus, Fuzz/corpus/TARGET/: small, real examples of each
format (docs/protocol.md, docs/snapcast.md, the MPD and JSON-RPC docs, real
stream heads, files made by lame, flac and metaflac). Run once; the seeds
are committed, and libFuzzer grows its own corpus from them elsewhere."""
import json, os, struct, subprocess, sys, tempfile, wave

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

# --- Command execution (mpd-exec, jsonrpc-exec, snapcast-exec): sessions run by a playing leader whose
# queue is /tmp/tutti-fuzz-exec/{a,b,c}.wav (Fuzz/Targets/CommandExecution.swift). The regression-* seeds
# are the requests that once ended the leader (issue 26).
music = "/tmp/tutti-fuzz-exec"
put("mpd-exec", "regression-seek-past-the-end", "seek 0 1e300\nstatus\nseekcur -1e300\nseekid 2 1e300\nseekcur +1e300\nstatus\n")
put("mpd-exec", "regression-move-huge", "move 0 9223372036854775807\nmove 0:2 9223372036854775807\nmoveid 1 9223372036854775807\nplaylistinfo\n")
put("mpd-exec", "regression-add-huge", 'add "%s/a.wav" +9223372036854775807\naddid "%s/b.wav" +9223372036854775807\nadd "%s/a.wav" -9223372036854775807\n' % (music, music, music))
put("mpd-exec", "regression-outside-paths", 'add "/"\nadd "/etc/hostname"\nadd "/etc/no-such-file"\nadd "file:///etc"\nlsinfo "/"\n')
put("mpd-exec", "mpc-session", "status\ncurrentsong\nplaylistinfo\nplay 1\npause 1\npause 0\nnext\nprevious\nseekcur +1\nseek 2 0.5\nsetvol 40\nvolume -5\n"
    "random 1\nrepeat 1\nsingle oneshot\nconsume 1\nrandom 0\nstop\nplay\n")
put("mpd-exec", "queue-edits", 'command_list_ok_begin\nadd "%s"\naddid "%s/c.wav" 1\nmove 0 2\nmove 1:3 0\nswap 0 1\nswapid 1 2\ndelete 3\n'
    'deleteid 2\nshuffle 0:2\nprio 0 0:1\nplaylistinfo 0:2\nplaylistid 1\nplchanges 0\nplchangesposid 0 0:1\nplaylistfind file x\ncommand_list_end\n' % (music, music))
put("mpd-exec", "idle-and-lists", "idle player playlist\nnoidle\ncommand_list_begin\nplay 0\nnext\ncommand_list_end\nidle\nnoidle\nclear\nplay\nadd \"%s/b.wav\" +0\n" % music)
put("mpd-exec", "library-and-outputs", 'outputs\nenableoutput 0\ntoggleoutput 1\nlsinfo\nlist album\nfind artist x\nsearch any y window 0:9223372036854775807\ncount genre Jazz\n'
    'listplaylists\nalbumart "%s/a.wav" 0\nreadpicture "%s/a.wav" 9223372036854775807\nbinarylimit 64\ntagtypes clear\nstats\n' % (music, music))

def rpc(i, method, params=None):
    r = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None: r["params"] = params
    return json.dumps(r, separators=(",", ":"))
files = ["%s/%s.wav" % (music, n) for n in "abc"]
put("jsonrpc-exec", "regression-seek-past-the-end", "\n".join([rpc(1, "player.seek", {"position": 1e300}), rpc(2, "player.seek", {"by": -1e300}),
    '{"jsonrpc":"2.0","id":3,"method":"player.seek","params":{"by":1e999}}', rpc(4, "player.status")]) + "\n")
put("jsonrpc-exec", "queue-numbers", "\n".join([rpc(1, "queue.move", {"from": 0, "to": 9007199254740992}), rpc(2, "queue.play", {"index": 1e300}),
    rpc(3, "queue.remove", {"index": -1}), rpc(4, "queue.add", {"uris": files, "next": True}), rpc(5, "queue.move", {"from": 5, "to": 0}),
    rpc(6, "queue.play", {"index": 2}), rpc(7, "queue.list"), rpc(8, "queue.clear"), rpc(9, "player.play")]) + "\n")
put("jsonrpc-exec", "transport", "\n".join([rpc(1, "player.pause"), rpc(2, "player.toggle"), rpc(3, "player.next"), rpc(4, "player.previous"),
    rpc(5, "player.setSpeed", {"speed": 1.5}), rpc(6, "player.setPitch", {"semitones": -3}), rpc(7, "player.setSpeed", {"speed": 1e300}),
    rpc(8, "player.shuffle", {"on": True}), rpc(9, "player.repeat"), rpc(10, "player.single", {"mode": "oneshot"}), rpc(11, "player.consume", {"on": True}),
    rpc(12, "player.stop"), rpc(13, "player.play")]) + "\n")
put("jsonrpc-exec", "rooms-and-groups", "\n".join([rpc(1, "rooms.list"), rpc(2, "rooms.set", {"room": "kitchen", "volume": 1e300, "latencyMs": -1e300}),
    rpc(3, "rooms.setEq", {"room": "kitchen", "gains": [1e300] * 10}), rpc(4, "groups.list"), rpc(5, "groups.setVolume", {"group": "main", "volume": -1}),
    rpc(6, "party.on"), rpc(7, "party.off"), rpc(8, "eq.presets"), rpc(9, "auth.status")]) + "\n")

def snapreq(i, method, params):
    return json.dumps({"id": i, "jsonrpc": "2.0", "method": method, "params": params}, separators=(",", ":"))
put("snapcast-exec", "regression-set-position", "\r\n".join([snapreq(1, "Stream.Control", {"id": "main", "command": "setPosition", "params": {"position": 1e300}}),
    snapreq(2, "Stream.Control", {"id": "main", "command": "seek", "params": {"offset": -1e300}}),
    snapreq(3, "Stream.Control", {"id": "main", "command": "seek", "params": {"offset": 1e300}}), snapreq(4, "Server.GetStatus", {})]) + "\r\n")
put("snapcast-exec", "home-assistant", "\r\n".join([snapreq(1, "Server.GetRPCVersion", {}), snapreq(2, "Server.GetStatus", {}),
    snapreq(3, "Stream.Control", {"id": "main", "command": "next"}), snapreq(4, "Stream.Control", {"id": "main", "command": "playPause"}),
    snapreq(5, "Stream.SetProperty", {"id": "main", "property": "volume", "value": 1e300}),
    snapreq(6, "Stream.SetProperty", {"id": "main", "property": "loopStatus", "value": "playlist"}),
    snapreq(7, "Stream.SetProperty", {"id": "main", "property": "shuffle", "value": True}),
    snapreq(8, "Group.SetMute", {"id": "main", "mute": True}), snapreq(9, "Client.SetVolume", {"id": "kitchen", "volume": {"percent": 1e300}})]) + "\r\n")
put("snapcast-exec", "batch", "[" + ",".join([snapreq(1, "Group.GetStatus", {"id": "main"}), snapreq(2, "Stream.Control", {"id": "main", "command": "previous"}),
    snapreq(3, "Group.SetClients", {"id": "main", "clients": []}), snapreq(4, "Client.SetLatency", {"id": "kitchen", "latency": 9e18})]) + "]\r\n")

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

# --- sendspin-flac: a Sendspin server's FLAC as a speaker gets it: [2-byte length][codec_header],
# then [2-byte length][frame] a chunk. 16 and 24 bit, 960-sample blocks (one 20 ms chunk each).
def sendspin_flac(path):
    data = open(path, "rb").read()
    at, last = 4, False
    while not last:
        last = data[at] & 0x80 != 0
        at += 4 + int.from_bytes(data[at + 1:at + 4], "big")
    header, frames = data[:at], data[at:]
    starts = [i for i in range(len(frames) - 1) if frames[i] == 0xFF and frames[i + 1] & 0xFE == 0xF8]
    out = struct.pack(">H", len(header)) + header
    for a, b in zip(starts, starts[1:] + [len(frames)]):
        out += struct.pack(">H", b - a) + frames[a:b]
    return out
for bits in (16, 24):
    f = os.path.join(tmp, "s%d.flac" % bits)
    run("ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=0.2", "-ac", "2",
        "-c:a", "flac", "-frame_size", "960", "-sample_fmt", "s16" if bits == 16 else "s32", "-bits_per_raw_sample", str(bits), f)
    put("sendspin-flac", "tone%d" % bits, sendspin_flac(f))
# --- sendspin-listen: what dials a listening speaker: the WebSocket opening request, then masked frames.
def ws_masked(opcode, payload, mask=b"\x11\x22\x33\x44"):
    n = len(payload)
    head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
opening = ("GET /sendspin HTTP/1.1\r\nHost: 127.0.0.1:8928\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
hello_json = json.dumps({"type": "server/hello", "payload": {"server_id": "s", "name": "Music Assistant", "version": 1}}).encode()
put("sendspin-listen", "opening-and-hello", WHOLE + opening + ws_masked(1, hello_json) + ws_masked(2, bytes(range(40))) + ws_masked(8, b"\x03\xe8"))
put("sendspin-listen", "byte-by-byte", BYTES + opening + ws_masked(9, b"ping"))
put("sendspin-listen", "wrong-path", SMALL + opening.replace(b"/sendspin", b"/other"))
put("sendspin-listen", "post", WHOLE + opening.replace(b"GET", b"POST"))
put("sendspin-listen", "unmasked-frame", WHOLE + opening + bytes([0x81, 2]) + b"hi")
print("seeds written under", root)

# --- podcast feeds (FeedParser: expat), whole documents.
put("feed", "rss", """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>
<title>Show &amp; Tell</title><itunes:author>Kim</itunes:author><itunes:image href="https://e.com/c.jpg"/>
<description><![CDATA[<p>About <b>music</b></p>]]></description>
<item><title>Ep 1</title><guid>g1</guid><pubDate>Tue, 05 Mar 2024 06:00:00 +0900</pubDate>
<enclosure url="https://e.com/1.mp3" length="123" type="audio/mpeg"/><itunes:duration>1:02:03</itunes:duration>
<description>&lt;p&gt;Hi&lt;/p&gt;&lt;script&gt;x()&lt;/script&gt;</description></item>
<item><title>Ep 2</title><enclosure url="http://e.com/2.m4a"/><itunes:duration>754</itunes:duration></item>
</channel></rss>
""")
put("feed", "atom", """<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom"><title>Atom</title><author><name>Lee</name></author><logo>https://e.org/l.png</logo>
<entry><title>First</title><id>tag:e.org,2024:1</id><updated>2024-02-01T10:00:00Z</updated><published>2024-01-31T23:30:00.5-01:00</published>
<link rel="enclosure" href="https://e.org/1.ogg" type="audio/ogg" length="999"/><summary type="html">&lt;b&gt;bold&lt;/b&gt;</summary></entry>
</feed>
""")
put("feed", "entities", """<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><rss><channel><title>&b;</title></channel></rss>""")
put("feed", "not-xml", "{\"title\": \"json, not a feed\"}")

# --- station playlists (StationPlaylists): PLS, M3U, ASX, XSPF, and HLS (handed over).
put("station-playlist", "pls", "[playlist]\nNumberOfEntries=2\nFile1=http://dead.example/s\nTitle1=A\nFile2=/relative/stream.mp3\nVersion=2\n")
put("station-playlist", "m3u", "#EXTM3U\r\n#EXTINF:-1,Radio\r\nhttp://r.example/live\r\nother.mp3\r\n")
put("station-playlist", "asx", '<ASX version="3.0"><Entry><Ref HREF="http://a.example/1"/></Entry><ENTRYREF href="/more.asx"/></ASX>')
put("station-playlist", "xspf", '<?xml version="1.0"?><playlist version="1" xmlns="http://xspf.org/ns/0/"><trackList><track><location>http://a.example/1</location></track></trackList></playlist>')
put("station-playlist", "hls", "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXTINF:6.0,\nseg1.ts\n")
put("hls", "live", "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-MEDIA-SEQUENCE:41\n#EXTINF:6.0,Artist - Title\nseg41.ts\n#EXT-X-DISCONTINUITY\n#EXTINF:5.97,\n/abs/seg42.ts?t=1\n")
put("hls", "fmp4-vod", "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXT-X-PROGRAM-DATE-TIME:2026-12-06T05:00:00Z\n#EXTINF:4,\na.m4s\n#EXTINF:4,\nhttps://cdn.example/b.m4s\n#EXT-X-ENDLIST\n")
put("hls", "multivariant", "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"aud\",NAME=\"en\",DEFAULT=YES,URI=\"audio/en.m3u8\"\n#EXT-X-STREAM-INF:BANDWIDTH=64000,CODECS=\"mp4a.40.5\"\nlow.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS=\"avc1.4d401f,mp4a.40.2\",RESOLUTION=1280x720,AUDIO=\"aud\"\nvideo.m3u8\n")
put("hls", "encrypted", "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXT-X-KEY:METHOD=AES-128,URI=\"k\"\n#EXTINF:6,\ns.ts\n")
def synchsafe(n):
    return bytes([n >> 21 & 0x7F, n >> 14 & 0x7F, n >> 7 & 0x7F, n & 0x7F])
_id3 = b"".join(f + synchsafe(len(b"\x03" + t.encode())) + b"\0\0" + b"\x03" + t.encode() for f, t in [(b"TIT2", "Jóga"), (b"TPE1", "Björk")])
put("hls", "id3-segment", b"ID3\x04\x00\x00" + synchsafe(len(_id3)) + _id3 + b"\xff\xf1\x50\x80")
