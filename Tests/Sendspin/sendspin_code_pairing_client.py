"""aiosendspin's own SendspinClient (10.2.1), unchanged, pairing with a Tutti leader by a pairing
code, then playing under the long-term PSK the pairing gave it.

--method dynamic: it has a display (PairingSupport.pairing_code_display) and offers the dynamic
  code; each code it shows is written {"kind": "code", "code": "123456", "grouped": "123-456",
  "connection": N}, as a person would read it off its screen.
--method static: it has the eight digits --code printed on it and offers the static code; its
  owner's pairing gesture (SendspinClient.open_pairing_window) is made when OUT.gesture exists.

It connects up to --connections times while it is not paired (a leader closes the connection
when an attempt ends without pairing): {"kind": "connected", "psk": ..., "connection": N}, then
{"kind": "closed", "connection": N} when the leader closes it, {"kind": "abort", "reason": ...}
for each pair/abort it sends or gets without closing. Once its store holds the long-term record
(written on the server's server/pair-finalize): {"kind": "paired"}, and it reconnects with the
same identity and store: {"kind": "connected", "psk": "long_term"}, then {"kind": "chunks", ...}.
{"kind": "error", ...} and {"kind": "done"} at the end.
"""

import argparse
import asyncio
import dataclasses
import json
import os
import time

from aiosendspin.client import PairingSupport, SendspinClient
from aiosendspin.models.player import ClientHelloPlayerSupport, SupportedAudioFormat
from aiosendspin.models.types import AudioCodec, Roles
from aiosendspin.noise.keys import Identity
from aiosendspin.noise.session import NoiseCipherSuite
from aiosendspin.noise.trust_store import InMemoryClientPairingStore


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--name", default="Code player")
    parser.add_argument("--method", default="dynamic", choices=["dynamic", "static"])
    parser.add_argument("--code", default="", help="the static code printed on it (8 digits)")
    parser.add_argument("--connections", type=int, default=1, help="connections to try while not paired")
    parser.add_argument("--seconds", type=float, default=20, help="how long it plays once paired")
    parser.add_argument("--wait", type=float, default=120, help="how long one unpaired connection may last")
    parser.add_argument("--suite", default="chachapoly", choices=["chachapoly", "aesgcm"])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    log = open(args.out + ".jsonl", "w", buffering=1)
    state = {"connection": 0, "chunks": 0, "bytes": 0}

    def note(record):
        record["at"] = time.monotonic()
        log.write(json.dumps(record) + "\n")

    async def show(code, *, grouped):
        if code is not None:
            note({"kind": "code", "code": code, "grouped": grouped, "connection": state["connection"]})

    async def run():
        identity = Identity.generate()
        store = InMemoryClientPairingStore()
        if args.method == "static":
            await store.set_static_pairing_code(args.code)
            config = await store.get_pairing_config()
            await store.store_pairing_config(dataclasses.replace(config, static_pairing_code_enabled=True, dynamic_pairing_code_enabled=False))
            support = PairingSupport(offer_static_pairing_code=True, pair_pending_message="Hold the pairing button for two seconds")
        else:
            support = PairingSupport(pairing_code_display=show, offer_static_pairing_code=False)
        player = ClientHelloPlayerSupport(
            supported_formats=[SupportedAudioFormat(codec=AudioCodec.PCM, channels=2, sample_rate=48000, bit_depth=16)],
            buffer_capacity=1 << 20,
        )
        suite = NoiseCipherSuite.AESGCM if args.suite == "aesgcm" else NoiseCipherSuite.CHACHAPOLY

        def client():
            c = SendspinClient(identity, args.name, [Roles.PLAYER], pairing_store=store, player_support=player,
                               cipher_suite=suite, pairing_support=support)
            c.add_pairing_abort_listener(lambda reason: note({"kind": "abort", "reason": getattr(reason, "value", str(reason)),
                                                              "connection": state["connection"]}))
            return c

        async def paired():
            return len(await store.list_records()) > 0

        try:
            gesture_made = False
            while not await paired() and state["connection"] < args.connections:
                state["connection"] += 1
                c = client()
                await c.connect(args.url)
                note({"kind": "connected", "psk": c.noise_psk.category.value if c.noise_psk else None,
                      "activities": sorted(a.value for a in c.activities), "connection": state["connection"]})
                deadline = time.monotonic() + args.wait
                while c.connected and not await paired() and time.monotonic() < deadline:
                    if args.method == "static" and not gesture_made and os.path.exists(args.out + ".gesture"):
                        gesture_made = True
                        c.open_pairing_window()
                        note({"kind": "gesture", "connection": state["connection"]})
                    await asyncio.sleep(0.02)
                if not c.connected:
                    note({"kind": "closed", "connection": state["connection"]})
                elif await paired():
                    note({"kind": "paired", "records": len(await store.list_records()), "connection": state["connection"]})
                await c.disconnect()
            if not await paired():
                raise RuntimeError("not paired after %d connections" % state["connection"])

            second = client()

            def on_chunk(ts, data, fmt, send_ahead):
                state["chunks"] += 1
                state["bytes"] += len(data)
                if state["chunks"] % 50 == 0:
                    note({"kind": "chunks", "count": state["chunks"], "pcm_bytes": state["bytes"], "synced": second.is_time_synchronized()})

            second.add_audio_chunk_listener(on_chunk)
            await second.connect(args.url)
            note({"kind": "connected", "psk": second.noise_psk.category.value if second.noise_psk else None,
                  "activities": sorted(a.value for a in second.activities), "connection": state["connection"] + 1})
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline and second.connected:
                await asyncio.sleep(0.05)
            await second.disconnect()
        except Exception as e:  # noqa: BLE001 - reported to the test
            note({"kind": "error", "error": f"{type(e).__name__}: {e}"})
        note({"kind": "done", "chunks": state["chunks"]})

    asyncio.run(run())


if __name__ == "__main__":
    main()
