"""aiosendspin's own SendspinClient (10.2.1) as the sync reference for a
Sendspin server: encrypted, unpaired access, PCM 48 kHz 16-bit stereo. A
chunk is "played" as a correct player would: when the client's reference
time filter maps its server timestamp to now (compute_play_time); that local
CLOCK_MONOTONIC time is logged with the chunk (the client's clock is
CLOCK_MONOTONIC here, as Tutti's file DAC's timing log is).

Output, as sendspin_player.py's: OUT.raw (the PCM as played) and OUT.jsonl,
{"kind": "chunk", "ts": server µs, "local": local ns, "offset": first frame
in OUT.raw, "frames": n} a chunk, and {"kind": "message", "type": ...} for
stream/start, stream/clear, stream/end.
"""

import argparse
import asyncio
import json
import time

from aiosendspin.client import SendspinClient
from aiosendspin.models.player import ClientHelloPlayerSupport, SupportedAudioFormat
from aiosendspin.models.types import AudioCodec, Roles
from aiosendspin.noise.keys import Identity
from aiosendspin.noise.trust_store import InMemoryClientPairingStore


class MonotonicClock:
    def now_us(self):
        return time.monotonic_ns() // 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--name", default="reference")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    log = open(args.out + ".jsonl", "w", buffering=1)
    raw = open(args.out + ".raw", "wb", buffering=0)

    def note(record):
        log.write(json.dumps(record) + "\n")

    async def run():
        support = ClientHelloPlayerSupport(
            supported_formats=[SupportedAudioFormat(codec=AudioCodec.PCM, channels=2, sample_rate=48000, bit_depth=16)],
            buffer_capacity=1 << 20,
        )
        client = SendspinClient(Identity.generate(), args.name, [Roles.PLAYER], pairing_store=InMemoryClientPairingStore(),
                                player_support=support, clock=MonotonicClock())
        await client.set_unpaired_access(enabled=True)
        pending = []
        frames_out = [0]
        client.add_audio_chunk_listener(lambda ts, data, fmt, ahead: pending.append((ts, bytes(data))))

        def on_clear(roles):
            note({"kind": "message", "type": "stream/clear", "at": time.monotonic_ns()})
            pending.clear()

        client.add_stream_clear_listener(on_clear)
        client.add_stream_start_listener(lambda m: note({"kind": "message", "type": "stream/start", "at": time.monotonic_ns()}))
        await client.connect(args.url)
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline and client.connected:
            if client.is_time_synchronized():
                while pending:
                    ts, pcm = pending[0]
                    local = client.compute_play_time(ts)
                    if local > client.now_us() + 5000:
                        break
                    pending.pop(0)
                    frames = len(pcm) // 4
                    note({"kind": "chunk", "ts": ts, "local": local * 1000, "offset": frames_out[0], "frames": frames})
                    raw.write(pcm)
                    frames_out[0] += frames
            await asyncio.sleep(0.002)
        await client.disconnect()

    asyncio.run(run())


if __name__ == "__main__":
    main()
