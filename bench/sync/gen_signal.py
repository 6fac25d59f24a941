#!/usr/bin/env python3
"""Write the two test tracks of the sync benchmark (48 kHz, 16-bit, stereo WAV).

Left channel: digital silence with a sharp click (a 2 ms, 2 kHz cosine burst
whose first sample is at full amplitude, so the onset is one sample wide and
survives Opus) once a second. Right channel: a continuous 1 kHz tone at a low
level, so that the moment the audio stops (pause) can be seen.

Each track opens with a marker pair that tells which track just started and
where its frame 0 was:

  A.wav  clicks at 0.50 s and 0.62 s (120 ms apart), then at k + 0.50 s
  B.wav  clicks at 0.25 s and 0.40 s (150 ms apart), then at k + 0.25 s

Gaps of 120/150 ms never occur inside a track (clicks are otherwise 1 s
apart), so a pair of clicks 120 or 150 ms apart marks a track start at
"first click − 0.50 s" or "first click − 0.25 s".
"""
import argparse
import array
import math
import os
import sys
import wave

RATE = 48000

# Shared with analyze.py: what the markers look like.
TRACKS = {
    # name: (first click phase s, second marker click s, steady phase s)
    "A": (0.50, 0.62, 0.50),
    "B": (0.25, 0.40, 0.25),
}


def burst(amplitude, hz=2000.0, ms=2.0):
    n = int(round(ms * RATE / 1000))
    full = 32767 * amplitude
    return [int(round(full * math.cos(2 * math.pi * hz * k / RATE))) for k in range(n)]


def one_second(click_positions, click, tone):
    """Interleaved S16 samples of one second: clicks on L at the given frames, tone on R."""
    a = array.array("h", bytes(4 * RATE))
    a[1::2] = tone
    for pos in click_positions:
        for k, v in enumerate(click):
            if pos + k < RATE:
                a[2 * (pos + k)] = v
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def write_track(path, seconds, first_clicks, steady_phase, click, tone):
    first = one_second([int(round(t * RATE)) for t in first_clicks], click, tone)
    steady = one_second([int(round(steady_phase * RATE))], click, tone)
    with wave.open(path, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(first)
        for _ in range(seconds - 1):
            w.writeframes(steady)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="where A.wav and B.wav go")
    p.add_argument("--seconds", type=int, default=120, help="length of each track (default 120)")
    p.add_argument("--click", type=float, default=0.9, help="click amplitude, fraction of full scale (0.9)")
    p.add_argument("--tone", type=float, default=0.1, help="right-channel 1 kHz tone amplitude (0.1)")
    a = p.parse_args()
    if a.seconds < 2:
        p.error("--seconds must be at least 2")
    click = burst(a.click)
    period = [int(round(32767 * a.tone * math.sin(2 * math.pi * k / 48))) for k in range(48)]  # 1 kHz
    tone = array.array("h", period * (RATE // 48))
    for name, (c1, c2, steady) in TRACKS.items():
        write_track(os.path.join(a.dir, name + ".wav"), a.seconds, [c1, c2], steady, click, tone)


if __name__ == "__main__":
    main()
