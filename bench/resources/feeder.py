"""Feeds snapserver's pipe source the PCM of a WAV file, looped, paced at
real time (20 ms blocks on an absolute CLOCK_MONOTONIC schedule, at most
100 ms ahead), so the server is never flooded.

    python3 feeder.py TRACK.wav FIFO
"""
import os
import sys
import time

RATE, BYTES_PER_FRAME, BLOCK_MS, AHEAD_S = 48000, 4, 20, 0.1


def pcm_of(path):
    data = open(path, "rb").read()
    i = 12
    while i + 8 <= len(data):  # walk the RIFF chunks to "data"
        tag, size = data[i:i + 4], int.from_bytes(data[i + 4:i + 8], "little")
        if tag == b"data":
            return data[i + 8:i + 8 + size]
        i += 8 + size + (size & 1)
    sys.exit(f"feeder: no data chunk in {path}")


def main():
    pcm = pcm_of(sys.argv[1])
    block = RATE * BYTES_PER_FRAME * BLOCK_MS // 1000
    pcm = pcm[: len(pcm) - len(pcm) % block]
    out = os.open(sys.argv[2], os.O_WRONLY)  # blocks until snapserver opens it
    start, sent, pos = time.monotonic(), 0, 0
    while True:
        due = start + sent * BLOCK_MS / 1000 - AHEAD_S
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        view = memoryview(pcm)[pos:pos + block]
        while view:
            view = view[os.write(out, view):]
        pos = (pos + block) % len(pcm)
        sent += 1


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
