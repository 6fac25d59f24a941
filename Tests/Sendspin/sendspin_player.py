"""A Sendspin client for Tutti's tests, built on PyPI's aiosendspin 10.

aiosendspin's own SendspinClient always runs the Noise handshake; until
Tutti's Noise responder lands, this client speaks the transition path that
aiosendspin's server also accepts: a plain text client/hello first. Every
server message is read with aiosendspin's own models (a message they cannot
parse fails the run), audio is decoded with aiosendspin's decoders, and the
clock is aiosendspin's reference time filter (SendspinTimeFilter), fed as
its client feeds it. A chunk is "played" as a correct player would: when
the filter, at that moment, maps its server timestamp to now; that local
CLOCK_MONOTONIC time is logged with the chunk.

Output: OUT.raw (16-bit stereo PCM as played) and OUT.jsonl, one JSON
object a line: {"kind": "chunk", "ts": server µs, "local": local ns,
"offset": first frame in OUT.raw, "frames": n}; {"kind": "received", "ts": server µs,
"at": local ns, "bytes": the whole message's bytes, "frames": n} for every audio
message as it arrives (before it plays; frames null when it did not decode),
so a test can count what the player holds; {"kind": "message",
"type": ..., "payload": ..., "at": local ns} for every text message, and
{"kind": "artwork", "channel": c, "ts": server µs, "bytes": n, "width": w, "height": h}
for each artwork message (one 300×300 JPEG album channel asked in the hello).
Lines on stdin are JSON messages to send (a controller's client/command).
"""

import argparse
import asyncio
import io
import json
import struct
import sys
import time

import aiohttp
from aiosendspin.audio.codecs import create_decoder
from aiosendspin.client.time_sync import SendspinTimeFilter
from aiosendspin.models.core import LegacyServerHelloMessage
from aiosendspin.models.types import ServerMessage


def now_us() -> int:
    return time.monotonic_ns() // 1000


class Player:
    def __init__(self, args):
        self.args = args
        self.filter = SendspinTimeFilter()
        self.log = open(args.out + ".jsonl", "w", buffering=1)
        self.raw = open(args.out + ".raw", "wb", buffering=0)
        self.frames_out = 0
        self.decoder = None
        self.format = None
        self.pending = []  # (server ts µs, pcm bytes), in arrival order
        self.volume = 100
        self.muted = False
        self.header_bytes = 9  # a plain (legacy) client gets the 9-byte audio header
        self.ws = None
        self.failures = 0

    def note(self, record):
        self.log.write(json.dumps(record) + "\n")

    async def send(self, message):
        await self.ws.send_str(json.dumps(message))

    def hello(self):
        roles = self.args.roles.split(",")
        payload = {"client_id": self.args.id, "name": self.args.name, "version": 1, "supported_roles": [r + "@v1" for r in roles]}
        if "player" in roles:
            payload["player@v1_support"] = {
                "supported_formats": [{"codec": self.args.codec, "channels": 2, "sample_rate": 48000, "bit_depth": 16}],
                "buffer_capacity": self.args.buffer_capacity,
                "supported_commands": ["volume", "mute"],
            }
        if "artwork" in roles:
            payload["artwork@v1_support"] = {"channels": [{"source": "album", "format": "jpeg", "media_width": 300, "media_height": 300}]}
        return {"type": "client/hello", "payload": payload}

    async def time_loop(self):
        # A burst to converge, then as aiosendspin's client does once settled.
        n = 0
        while True:
            await self.send({"type": "client/time", "payload": {"client_transmitted": now_us()}})
            n += 1
            await asyncio.sleep(0.02 if n < 50 else 0.1)

    async def play_loop(self):
        # A chunk plays when the filter maps its timestamp to now (5 ms early: the loop's step).
        while True:
            if self.filter.is_synchronized:
                while self.pending:
                    ts, pcm = self.pending[0]
                    local = self.filter.compute_client_time(ts)
                    if local > now_us() + 5000:
                        break
                    self.pending.pop(0)
                    frames = len(pcm) // 4
                    self.note({"kind": "chunk", "ts": ts, "local": local * 1000, "offset": self.frames_out, "frames": frames})
                    self.raw.write(self.scaled(pcm))
                    self.frames_out += frames
            await asyncio.sleep(0.002)

    def scaled(self, pcm):
        if self.muted:
            return bytes(len(pcm))
        if self.volume >= 100:
            return pcm
        g = self.volume / 100.0
        samples = struct.unpack("<%dh" % (len(pcm) // 2), pcm)
        return struct.pack("<%dh" % len(samples), *(int(s * g) for s in samples))

    def on_text(self, text, received):
        data = json.loads(text)
        kind = data.get("type")
        self.note({"kind": "message", "type": kind, "payload": data.get("payload"), "at": received * 1000})
        if kind == "server/hello":
            LegacyServerHelloMessage.from_json(text)
            return None
        message = ServerMessage.from_json(text)
        payload = data["payload"]
        if kind == "server/time":
            offset = ((payload["server_received"] - payload["client_transmitted"]) + (payload["server_transmitted"] - received)) / 2
            delay = ((received - payload["client_transmitted"]) - (payload["server_transmitted"] - payload["server_received"])) / 2
            self.filter.update(round(offset), round(delay), received)
        elif kind == "stream/start" and "player" in payload:
            p = message.payload.player
            header = None
            if payload["player"].get("codec_header"):
                import base64
                header = base64.b64decode(payload["player"]["codec_header"])
            self.format = payload["player"]
            self.decoder = create_decoder(p.codec.value, sample_rate=p.sample_rate, bit_depth=p.bit_depth, channels=p.channels, codec_header=header)
        elif kind == "stream/clear":
            self.pending.clear()
        elif kind == "stream/end":
            self.pending.clear()
            self.decoder = None
        elif kind == "server/command" and "player" in payload:
            c = payload["player"]
            if c["command"] == "volume":
                self.volume = c["volume"]
            elif c["command"] == "mute":
                self.muted = c["mute"]
            return {"type": "client/state", "payload": {"player": {"volume": self.volume, "muted": self.muted}}}
        return None

    def on_binary(self, data, received):
        if 8 <= data[0] <= 11:
            # Artwork as a client that declared its channels in the hello gets it: [type, timestamp] + image.
            width = height = None
            if len(data) > 9:
                from PIL import Image

                try:
                    with Image.open(io.BytesIO(bytes(data[9:]))) as picture:
                        picture.load()
                        width, height = picture.size
                except Exception:  # noqa: BLE001 - reported as not decoding
                    pass
            self.note({"kind": "artwork", "channel": data[0] - 8, "ts": struct.unpack(">q", data[1:9])[0],
                       "bytes": len(data) - 9, "width": width, "height": height})
            return
        if data[0] != 4 or self.decoder is None:
            return
        ts = struct.unpack(">q", data[1:9])[0]
        pcm = self.decoder.decode(bytes(data[self.header_bytes:]))
        self.note({"kind": "received", "ts": ts, "at": received * 1000, "bytes": len(data), "frames": len(pcm) // 4 if pcm else None})
        if pcm:
            self.pending.append((ts, pcm))

    async def commands(self):
        reader = asyncio.StreamReader()
        await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            line = line.strip()
            if line:
                await self.ws.send_str(line.decode())

    async def run(self):
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(self.args.url, max_msg_size=4 << 20) as ws:
                self.ws = ws
                await self.send(self.hello())
                first = await ws.receive()
                if first.type != aiohttp.WSMsgType.TEXT:
                    self.note({"kind": "closed", "at": now_us() * 1000})  # refused at its hello
                    return
                self.on_text(first.data, now_us())
                player = {"volume": 100, "muted": False}
                if self.args.required_lead_ms is not None:
                    player["required_lead_time_ms"] = self.args.required_lead_ms
                await self.send({"type": "client/state", "payload": {"state": "synchronized", "player": player}})
                tasks = [asyncio.create_task(self.time_loop()), asyncio.create_task(self.play_loop())]
                if self.args.stdin:
                    tasks.append(asyncio.create_task(self.commands()))
                deadline = time.monotonic() + self.args.seconds
                while time.monotonic() < deadline:
                    try:
                        msg = await asyncio.wait_for(ws.receive(), timeout=max(0.01, deadline - time.monotonic()))
                    except asyncio.TimeoutError:
                        break
                    received = now_us()
                    if msg.type == aiohttp.WSMsgType.TEXT:
                        reply = self.on_text(msg.data, received)
                        if reply:
                            await self.send(reply)
                    elif msg.type == aiohttp.WSMsgType.BINARY:
                        self.on_binary(msg.data, received)
                    else:
                        self.note({"kind": "closed", "at": received * 1000})
                        break
                for t in tasks:
                    t.cancel()
                await self.send({"type": "client/goodbye", "payload": {"reason": "shutdown"}})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--id", default="sendspin-test")
    parser.add_argument("--name", default="sendspin-test")
    parser.add_argument("--codec", default="pcm", choices=["pcm", "flac"])
    parser.add_argument("--roles", default="player")
    parser.add_argument("--buffer-capacity", type=int, default=1 << 20)
    parser.add_argument("--required-lead-ms", type=int, help="required_lead_time_ms in client/state (default: not sent)")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--stdin", action="store_true", help="send each line of stdin as a message")
    parser.add_argument("--out", required=True)
    asyncio.run(Player(parser.parse_args()).run())


if __name__ == "__main__":
    main()
