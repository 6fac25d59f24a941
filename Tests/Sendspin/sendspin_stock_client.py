"""aiosendspin's own SendspinClient (10.2.1), unchanged, against a Tutti leader.

It runs the whole encrypted path as Music Assistant's players do: the
Noise KKpsk2 handshake (the server is the initiator), server/hello first,
client/hello, server/activate, then time sync and audio. Unpaired access
is enabled, as a stock player's default, so the server may give it roles
once a person allows it.

Output (OUT.jsonl, one JSON object a line, flushed as it goes):
{"kind": "connected", "server_id": ...} once admitted;
{"kind": "activities", "activities": [...]} when the server's declared activities change;
{"kind": "stream", "codec": ...} at stream/start;
{"kind": "chunks", "count": n, "pcm_bytes": b, "synced": bool} every 50 chunks;
{"kind": "artwork", "channel": c, "bytes": n, "width": w, "height": h, "sha256": ...} for each image shown
(decoded with Pillow; width and height null when it does not decode; bytes 0: cleared), with
--artwork WIDTHxHEIGHT[:FORMAT] (one album channel; --roles artwork,… to ask for the role);
{"kind": "error", ...} and {"kind": "done"}.
"""

import argparse
import asyncio
import hashlib
import io
import json
import time

from PIL import Image

from aiosendspin.client import SendspinClient
from aiosendspin.models.artwork import ArtworkChannel
from aiosendspin.models.player import ClientHelloPlayerSupport, SupportedAudioFormat
from aiosendspin.models.types import ArtworkSource, AudioCodec, PictureFormat, Roles
from aiosendspin.noise.keys import Identity
from aiosendspin.noise.session import NoiseCipherSuite
from aiosendspin.noise.trust_store import InMemoryClientPairingStore


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--name", default="Stock player")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--suite", default="chachapoly", choices=["chachapoly", "aesgcm"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--roles", default="player,metadata")
    parser.add_argument("--artwork", default=None)
    args = parser.parse_args()
    log = open(args.out + ".jsonl", "w", buffering=1)

    def note(record):
        record["at"] = time.monotonic()
        log.write(json.dumps(record) + "\n")

    async def run():
        support = ClientHelloPlayerSupport(
            supported_formats=[SupportedAudioFormat(codec=AudioCodec.PCM, channels=2, sample_rate=48000, bit_depth=16)],
            buffer_capacity=1 << 20,
        )
        roles = [Roles(r if "@" in r else r + "@v1") for r in args.roles.split(",")]
        channels = None
        if args.artwork:
            size, _, fmt = args.artwork.partition(":")
            width, height = (int(v) for v in size.split("x"))
            channels = [ArtworkChannel(source=ArtworkSource.ALBUM, format=PictureFormat(fmt or "jpeg"), width=width, height=height)]
        client = SendspinClient(Identity.generate(), args.name, roles,
                                pairing_store=InMemoryClientPairingStore(),
                                player_support=support if Roles.PLAYER in roles else None,
                                artwork_channels=channels,
                                cipher_suite=NoiseCipherSuite.AESGCM if args.suite == "aesgcm" else NoiseCipherSuite.CHACHAPOLY)
        await client.set_unpaired_access(enabled=True)
        counts = {"chunks": 0, "bytes": 0}

        def on_chunk(ts, data, fmt, send_ahead):
            counts["chunks"] += 1
            counts["bytes"] += len(data)
            if counts["chunks"] % 50 == 0:
                note({"kind": "chunks", "count": counts["chunks"], "pcm_bytes": counts["bytes"],
                      "synced": client.is_time_synchronized(), "send_ahead": send_ahead})

        def on_artwork(channel, image):
            width = height = None
            if image:
                try:
                    with Image.open(io.BytesIO(image)) as picture:
                        picture.load()
                        width, height = picture.size
                except Exception:  # noqa: BLE001 - reported as not decoding
                    pass
            note({"kind": "artwork", "channel": channel, "bytes": len(image), "width": width, "height": height,
                  "sha256": hashlib.sha256(image).hexdigest()})

        client.add_audio_chunk_listener(on_chunk)
        client.add_artwork_listener(on_artwork)
        client.add_stream_start_listener(lambda msg: note({"kind": "stream", "codec": str(msg.payload.player.codec.value) if msg.payload.player else None}))
        try:
            await client.connect(args.url)
            note({"kind": "connected", "server": client.server_info.name if client.server_info else None,
                  "psk": client.noise_psk.category.value if client.noise_psk else None})
            activities = None
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline and client.connected:
                now = sorted(a.value for a in client.activities)
                if now != activities:
                    activities = now
                    note({"kind": "activities", "activities": activities})
                await asyncio.sleep(0.05)
            if not client.connected:
                note({"kind": "disconnected"})
            await client.disconnect()
        except Exception as e:  # noqa: BLE001 - reported to the test
            note({"kind": "error", "error": f"{type(e).__name__}: {e}"})
        note({"kind": "done", "chunks": counts["chunks"]})

    asyncio.run(run())


if __name__ == "__main__":
    main()
