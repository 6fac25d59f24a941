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
{"kind": "error", ...} and {"kind": "done"}.
"""

import argparse
import asyncio
import json
import time

from aiosendspin.client import SendspinClient
from aiosendspin.models.player import ClientHelloPlayerSupport, SupportedAudioFormat
from aiosendspin.models.types import AudioCodec, Roles
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
        client = SendspinClient(Identity.generate(), args.name, [Roles.PLAYER, Roles.METADATA],
                                pairing_store=InMemoryClientPairingStore(), player_support=support,
                                cipher_suite=NoiseCipherSuite.AESGCM if args.suite == "aesgcm" else NoiseCipherSuite.CHACHAPOLY)
        await client.set_unpaired_access(enabled=True)
        counts = {"chunks": 0, "bytes": 0}

        def on_chunk(ts, data, fmt, send_ahead):
            counts["chunks"] += 1
            counts["bytes"] += len(data)
            if counts["chunks"] % 50 == 0:
                note({"kind": "chunks", "count": counts["chunks"], "pcm_bytes": counts["bytes"],
                      "synced": client.is_time_synchronized(), "send_ahead": send_ahead})

        client.add_audio_chunk_listener(on_chunk)
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
