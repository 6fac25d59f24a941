"""aiosendspin's own Noise handshake and encrypted transport, driven over a
plain TCP socket for TuttiAuthTests (no WebSocket: each frame is
kind (0 text, 1 binary) + 4-byte big-endian length + bytes).

usage: sendspin_noise_peer.py client|server PORT SUITE OWN_SECRET_HEX PEER_PUBLIC_B64U LONG_TERM_PSK_HEX|-

client: aiosendspin's run_handshake_client (the Noise responder);
server: aiosendspin's run_handshake_server (the Noise initiator).
After the handshake it sends a probe (JSON with what it saw), a binary
message larger than one Noise frame, then echoes every message back until
the text "bye".
"""
import asyncio
import hashlib
import json
import struct
import sys

from aiohttp import WSMessage, WSMsgType
from aiosendspin.noise import (
    SENTINEL_PSK, Identity, NoiseCipherSuite, PskCategory, ResolvedPsk,
    psk_id_for, run_handshake_client, run_handshake_server,
)

role, port, suite_name, secret_hex, peer_id, psk_hex = sys.argv[1:7]
suite = {"chacha": NoiseCipherSuite.CHACHAPOLY, "aesgcm": NoiseCipherSuite.AESGCM}[suite_name]
identity = Identity.from_private_bytes(bytes.fromhex(secret_hex))
long_term = None if psk_hex == "-" else bytes.fromhex(psk_hex)


class SocketWS:
    def __init__(self, reader, writer):
        self.reader, self.writer, self.closed, self.close_code = reader, writer, False, None

    async def _send(self, kind, data):
        self.writer.write(struct.pack(">BI", kind, len(data)) + data)
        await self.writer.drain()

    async def send_str(self, data):
        await self._send(0, data.encode("utf-8"))

    async def send_bytes(self, data):
        await self._send(1, bytes(data))

    async def receive(self):
        try:
            kind, length = struct.unpack(">BI", await self.reader.readexactly(5))
            data = await self.reader.readexactly(length)
        except asyncio.IncompleteReadError:
            self.closed = True
            return WSMessage(WSMsgType.CLOSED, None, None)
        if kind == 0:
            return WSMessage(WSMsgType.TEXT, data.decode("utf-8"), None)
        return WSMessage(WSMsgType.BINARY, data, None)

    async def close(self):
        self.closed = True
        self.writer.close()
        return True

    def exception(self):
        return None


async def resolve(psk_id, category):
    if psk_id == psk_id_for(SENTINEL_PSK):
        return ResolvedPsk(psk_id, SENTINEL_PSK, PskCategory.SENTINEL)
    if long_term is not None and psk_id == psk_id_for(long_term):
        return ResolvedPsk(psk_id, long_term, PskCategory.LONG_TERM, peer_id)
    return None


async def provide(client_id):
    if long_term is not None:
        return ResolvedPsk(psk_id_for(long_term), long_term, PskCategory.LONG_TERM, client_id)
    return ResolvedPsk(psk_id_for(SENTINEL_PSK), SENTINEL_PSK, PskCategory.SENTINEL)


async def main():
    reader, writer = await asyncio.open_connection("127.0.0.1", int(port))
    ws = SocketWS(reader, writer)
    if role == "client":
        result = await run_handshake_client(ws, local_identity=identity, suite=suite, psk_resolver=resolve, expected_server_id=peer_id)
    else:
        result = await run_handshake_server(ws, local_identity=identity, psk_provider=provide, strict=True)
    enc = result.encrypted_ws
    probe = {"peer": result.peer_id, "suite": result.suite.value, "category": result.psk.category.value,
             "handshake_hash": result.handshake_hash.hex(), "mismatch": result.credential_mismatch}
    await enc.send_str(json.dumps(probe))
    big = bytes([4]) + bytes((i * 7 + 3) % 251 for i in range(200_000))
    await enc.send_bytes(big)
    while True:
        msg = await enc.receive()
        if msg.type is WSMsgType.TEXT:
            if msg.data == "bye":
                break
            await enc.send_str("echo:" + msg.data)
        elif msg.type is WSMsgType.BINARY:
            await enc.send_bytes(bytes([5]) + hashlib.sha256(msg.data).digest() + msg.data[1:])
        else:
            print("unexpected", msg, file=sys.stderr)
            sys.exit(2)
    writer.close()


asyncio.run(main())
