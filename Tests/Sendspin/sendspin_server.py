"""aiosendspin's own SendspinServer (10.2.1), for a Tutti speaker to join as a player.

It serves ws://127.0.0.1:PORT/sendspin (Noise KKpsk2 on every connection,
as aiosendspin's server always asks), admits any client under unpaired
access (as `sendspin serve` does), puts every player in the first one's
group, and once --players players are in, loops a 48 kHz 16- or 24-bit
stereo WAV through a PushStream as `sendspin serve` does, at most --buffer-ms
ahead. --dial URL (repeatable) makes the server dial a player that listens
(the spec's server-initiated connection: `connect_to_client`), as Music
Assistant does with a player it found over mDNS.

Lines on stdin are commands:
  clear                 stream/clear (as on a seek), then the file goes on
  volume NAME N         server/command volume N to the player named NAME
  mute NAME 0|1         server/command mute to it
  dial URL              connect_to_client(URL): dial a listening player
  formats               say each player's negotiated format ({"event": "formats", "players": {NAME: {...}}})

Output on stdout, one JSON object a line: {"event": "listening", "port": p},
{"event": "client", "name": ..., "id": ...} per player joined,
{"event": "streaming"} once audio flows, {"event": "disconnected", "id": ..., "reason": GOODBYE or null}
when a player's connection ends, {"event": "removed", "id": ...} when a client is
dropped from the server (at once after its client/goodbye), {"event": "done", "command": ...}
after each command.
"""

import argparse
import asyncio
import json
import sys
import wave

from aiosendspin.noise import Identity, InMemoryServerPairingStore, TrustedUnpairedClient
from aiosendspin.server import AudioFormat, ClientAddedEvent, ClientRemovedEvent, SendspinServer
from aiosendspin.server.server import ClientDisconnectedEvent


class AdmitEveryone(InMemoryServerPairingStore):
    """Every client may play unpaired (no operator approves it), as `sendspin serve` does."""

    async def trusted_unpaired(self, client_id):
        return await super().trusted_unpaired(client_id) or TrustedUnpairedClient(client_id)


def say(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--wav", required=True)
    parser.add_argument("--players", type=int, default=1)
    parser.add_argument("--buffer-ms", type=int, default=1500)
    parser.add_argument("--dial", action="append", default=[])
    args = parser.parse_args()
    loop = asyncio.get_running_loop()
    server = SendspinServer(loop=loop, identity=Identity.generate(), server_name="aiosendspin test server",
                            pairing_store=AdmitEveryone())
    players = []
    enough = asyncio.Event()

    def on_event(srv, event):
        if isinstance(event, ClientRemovedEvent):
            # At once only for a client that said client/goodbye (shutdown); otherwise 180 s later.
            say({"event": "removed", "id": event.client_id})
        if isinstance(event, ClientDisconnectedEvent):
            # The goodbye's reason (None: the connection just ended), e.g. another_server on a takeover.
            reason = event.goodbye_reason
            say({"event": "disconnected", "id": event.client_id, "reason": getattr(reason, "value", reason)})
        if isinstance(event, ClientAddedEvent):
            client = srv.get_client(event.client_id)
            if client is None:
                return
            if players:
                loop.create_task(players[0].group.add_client(client))
            players.append(client)
            say({"event": "client", "name": client.name, "id": client.client_id})
            if len(players) >= args.players:
                enough.set()

    server.add_event_listener(on_event)
    await server.start_server(port=args.port, host="127.0.0.1", advertise_addresses=[], discover_clients=False)
    say({"event": "listening", "port": args.port})
    for url in args.dial:
        server.connect_to_client(url)
    await enough.wait()
    await asyncio.sleep(1.5)  # group joins settle (aiosendspin delays a player's join 1 s for its clock)

    with wave.open(args.wav, "rb") as w:
        assert w.getframerate() == 48000 and w.getnchannels() == 2 and w.getsampwidth() in (2, 3)
        width = w.getsampwidth()
        pcm = w.readframes(w.getnframes())
    fmt = AudioFormat(sample_rate=48000, bit_depth=8 * width, channels=2)
    stream = players[0].group.start_stream()
    block = 4800 * 2 * width  # 100 ms a push

    async def push():
        position = 0
        streaming = False
        while True:
            stream.prepare_audio(pcm[position:position + block], fmt)
            await stream.commit_audio()
            if not streaming:
                streaming = True
                say({"event": "streaming"})
            position = (position + block) % len(pcm)
            await stream.sleep_to_limit_buffer(max_buffer_us=args.buffer_ms * 1000)

    pusher = loop.create_task(push())

    def player(name):
        for c in players:
            if c.name == name:
                return c.role("player@v1")
        return None

    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        words = line.decode().split()
        if not words:
            continue
        if words[0] == "clear":
            stream.clear()
        elif words[0] == "volume" and player(words[1]) is not None:
            player(words[1]).set_volume(int(words[2]))
        elif words[0] == "mute" and player(words[1]) is not None:
            player(words[1]).set_mute(words[2] == "1")
        elif words[0] == "dial":
            server.connect_to_client(words[1])
        elif words[0] == "formats":
            # What each player is sent (codec, rate, depth), as the server negotiated it.
            found = {}
            for c in players:
                effective = c.role("player@v1")._effective_format()
                if effective is not None:
                    codec, fmt = effective
                    found[c.name] = {"codec": codec.value, "sample_rate": fmt.sample_rate, "bit_depth": fmt.bit_depth}
            say({"event": "formats", "players": found})
        say({"event": "done", "command": words})
    pusher.cancel()
    await server.close()


if __name__ == "__main__":
    asyncio.run(main())
