"""aiosendspin's own SendspinClient (10.2.1), unchanged, pairing with a Tutti leader by the
Pairing PSK method, then playing under the long-term PSK the pairing gave it.

1. It makes a pairing PSK and shows its pairing token (aiosendspin's `encode_psk_token`), as a
   player shows it to a person: {"kind": "token", "token": "SP:0...", "client_id": ...}.
2. It waits for OUT.staged to exist (the test pastes the token into the leader's API, then makes it).
3. It connects: the server picks the staged pairing PSK (category "pairing"), activates it for
   pairing, and aiosendspin's client runs client/pair-init and client/pair-finalize itself.
   {"kind": "connected", "psk": ...}, {"kind": "activities", ...}, then {"kind": "paired"} once its
   store holds the long-term record (written on the server's server/pair-finalize).
4. It reconnects with the same identity and store:
   {"kind": "connected", "psk": "long_term"}, then {"kind": "chunks", ...} as the stock client.
{"kind": "error", ...} and {"kind": "done"} at the end.
"""

import argparse
import asyncio
import json
import os
import secrets
import time

from aiosendspin.client import SendspinClient
from aiosendspin.models.player import ClientHelloPlayerSupport, SupportedAudioFormat
from aiosendspin.models.types import AudioCodec, Roles
from aiosendspin.noise.keys import Identity, b64url_encode, psk_id_for
from aiosendspin.noise.pairing_token import PSKPairingToken, encode_psk_token
from aiosendspin.noise.session import NoiseCipherSuite
from aiosendspin.noise.trust_store import InMemoryClientPairingStore, PairingPsk


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--name", default="Pairing player")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--suite", default="chachapoly", choices=["chachapoly", "aesgcm"])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    log = open(args.out + ".jsonl", "w", buffering=1)

    def note(record):
        record["at"] = time.monotonic()
        log.write(json.dumps(record) + "\n")

    async def wait_for(predicate, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if await predicate():
                return True
            await asyncio.sleep(0.05)
        return False

    async def run():
        identity = Identity.generate()
        store = InMemoryClientPairingStore()
        psk = secrets.token_bytes(32)
        await store.set_pairing_psk(PairingPsk(psk_id_for(psk), psk))
        note({"kind": "token", "client_id": identity.peer_id,
              "token": encode_psk_token(PSKPairingToken(client_id=b64url_encode(identity.public_bytes), pairing_psk=psk))})
        support = ClientHelloPlayerSupport(
            supported_formats=[SupportedAudioFormat(codec=AudioCodec.PCM, channels=2, sample_rate=48000, bit_depth=16)],
            buffer_capacity=1 << 20,
        )
        suite = NoiseCipherSuite.AESGCM if args.suite == "aesgcm" else NoiseCipherSuite.CHACHAPOLY
        counts = {"chunks": 0, "bytes": 0}

        def client():
            return SendspinClient(identity, args.name, [Roles.PLAYER], pairing_store=store,
                                  player_support=support, cipher_suite=suite)

        async def staged():
            return os.path.exists(args.out + ".staged")

        try:
            if not await wait_for(staged, 60):
                raise RuntimeError("the token was not staged")
            first = client()
            await first.connect(args.url)
            note({"kind": "connected", "psk": first.noise_psk.category.value if first.noise_psk else None})
            note({"kind": "activities", "activities": sorted(a.value for a in first.activities)})

            async def paired():
                return len(await store.list_records()) > 0

            if not await wait_for(paired, 30):
                raise RuntimeError("no long-term record after pairing")
            note({"kind": "paired", "records": len(await store.list_records())})
            await first.disconnect()

            second = client()

            def on_chunk(ts, data, fmt, send_ahead):
                counts["chunks"] += 1
                counts["bytes"] += len(data)
                if counts["chunks"] % 50 == 0:
                    note({"kind": "chunks", "count": counts["chunks"], "pcm_bytes": counts["bytes"],
                          "synced": second.is_time_synchronized()})

            second.add_audio_chunk_listener(on_chunk)
            await second.connect(args.url)
            note({"kind": "connected", "psk": second.noise_psk.category.value if second.noise_psk else None})
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline and second.connected:
                await asyncio.sleep(0.05)
            await second.disconnect()
        except Exception as e:  # noqa: BLE001 - reported to the test
            note({"kind": "error", "error": f"{type(e).__name__}: {e}"})
        note({"kind": "done", "chunks": counts["chunks"]})

    asyncio.run(run())


if __name__ == "__main__":
    main()
