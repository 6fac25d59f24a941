#!/usr/bin/env python3
"""Home Assistant's Snapcast library (python-snapcast, PyPI `snapcast`) against a Tutti leader.

    python3 Tests/Snapcast/control_test.py --port SNAPCAST_CONTROL_PORT --tutti-control TUTTI_JSONRPC_PORT \
        --tutti PATH/TO/tutti --snapclient ROOM --room ROOM

The leader must have two rooms connected: a stock snapclient (--snapclient) and
another room (--room), both in the main group, playing a queue of 2+ tracks.
Prints one line per check; exits 1 with a message on the first failure.
"""
import argparse, asyncio, json, socket, subprocess, sys

def fail(msg):
    print("FAIL", msg); sys.exit(1)

def ok(name, detail):
    print("ok   %-22s %s" % (name, detail))

class Tutti:
    """The leader's own JSON-RPC, to check its real state independently of Snapcast's view."""
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port)); self.f = self.s.makefile("rwb"); self.n = 0
    def call(self, method, params=None):
        self.n += 1
        self.f.write((json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params or {}}) + "\n").encode()); self.f.flush()
        while True:
            m = json.loads(self.f.readline())
            if m.get("id") == self.n:
                if "error" in m: fail("%s: %s" % (method, m["error"]))
                return m["result"]

async def until(what, fn, timeout=5.0):
    end = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < end:
        if fn(): return
        await asyncio.sleep(0.05)
    fail("timed out waiting for " + what)

async def main(a):
    import snapcast.control
    tutti = Tutti(a.tutti_control)
    loop = asyncio.get_running_loop()
    server = await snapcast.control.create_server(loop, "127.0.0.1", a.port, reconnect=False)
    clients = {c.identifier: c for c in server.clients}
    if {a.snapclient, a.room} - set(clients): fail("clients %s lack %s or %s" % (sorted(clients), a.snapclient, a.room))
    main_group = next((g for g in server.groups if g.identifier == "main"), None)
    if not main_group or set(main_group.clients) != {a.snapclient, a.room}: fail("main group: %s" % (main_group and main_group.clients))
    if [s.identifier for s in server.streams] != ["main"] or main_group.stream != "main": fail("streams: %s" % [s.identifier for s in server.streams])
    ok("status", "version %s, clients %s, group %s on stream %s" % (server.version, sorted(clients), main_group.friendly_name, main_group.stream))

    snap = clients[a.snapclient]
    await snap.set_volume(30)
    v = {r["name"]: r["volume"] for r in tutti.call("rooms.list")["rooms"]}
    if v.get(a.snapclient) != 30 or snap.volume != 30: fail("volume 30: Tutti says %s, python-snapcast %s" % (v.get(a.snapclient), snap.volume))
    ok("client volume", "%s at 30 in Tutti's rooms.list" % a.snapclient)

    # A room taken out of its group gets a group of its own, as with snapserver; and back.
    await main_group.remove_client(a.room)
    groups = {g["id"]: g["rooms"] for g in tutti.call("groups.list")["groups"]}
    own = [gid for gid, rooms in groups.items() if rooms == [a.room]]
    if not own or a.room in groups.get("main", []): fail("after remove_client: groups %s" % groups)
    if len(server.groups) != 2: fail("python-snapcast sees %d groups" % len(server.groups))
    await main_group.add_client(a.room)
    groups = {g["id"]: g["rooms"] for g in tutti.call("groups.list")["groups"]}
    if sorted(groups.get("main", [])) != sorted([a.snapclient, a.room]): fail("after add_client: groups %s" % groups)
    ok("move client", "%s to group %s and back to main" % (a.room, own[0]))

    # Home Assistant's announcement: snapshot, change, restore.
    main_group = server.group("main")
    main_group.snapshot(); snap.snapshot()
    await snap.set_volume(70)
    await main_group.set_muted(True)
    if not all(r["muted"] for r in tutti.call("rooms.list")["rooms"] if r["name"] in (a.snapclient, a.room)): fail("group mute did not mute the rooms")
    await main_group.restore(); await snap.restore()
    rooms = {r["name"]: r for r in tutti.call("rooms.list")["rooms"]}
    if rooms[a.snapclient]["volume"] != 30 or rooms[a.snapclient]["muted"] or rooms[a.room]["muted"]: fail("restore: %s" % rooms)
    ok("snapshot, restore", "volume 70 → 30, group mute on → off")

    # Stream.Control, seen in `tutti status`.
    before = tutti.call("player.status")["track"]
    await server.stream_control("main", "next", {})
    await until("the next track", lambda: tutti.call("player.status")["track"] == before + 1)
    await server.stream_control("main", "pause", {})
    out = subprocess.run([a.tutti, "--host", "127.0.0.1:%d" % a.tutti_control, "status"], capture_output=True, text=True).stdout
    if "paused" not in out.lower(): fail("tutti status after pause: %r" % out)
    ok("stream control", "next → track %d, pause → tutti status: %s" % (before + 1, out.splitlines()[0] if out else ""))

    # Notifications: a change made in Tutti reaches python-snapcast without a request.
    tutti.call("rooms.set", {"room": a.snapclient, "volume": 55})
    await until("Client.OnVolumeChanged", lambda: server.client(a.snapclient).volume == 55)
    ok("notification", "rooms.set in Tutti → python-snapcast sees volume 55")
    server.stop()
    print("all checks passed")

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True); p.add_argument("--tutti-control", type=int, required=True)
    p.add_argument("--tutti", required=True); p.add_argument("--snapclient", required=True); p.add_argument("--room", required=True)
    asyncio.run(main(p.parse_args()))
