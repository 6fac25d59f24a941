#!/usr/bin/env python3
"""Analyse one run of bench/sync: how far apart the followers' DACs played
the same clicks, how a late joiner converged, and how long commands took to
be heard.

  analyze.py RUN_DIR [--warmup S] [--integer-onsets] [--case NAME]

RUN_DIR is a run directory kept by run.sh --keep (its manifest says which
DACs there were and when the run started and ended); --warmup overrides the
run's warm-up; --integer-onsets skips the sub-frame refinement. Besides the
report it writes RUN_DIR/clicks.csv: every click of the first follower with
the signed difference of each other DAC, in µs.

Sources of click instants (CLOCK_MONOTONIC ns, shared by every process):

* file sink: the raw S16LE output of the follower's virtual DAC and its
  .timing log ("frameIndex leaveNs" per block). A click onset is the first
  frame whose left sample has |x| >= 0.5 full scale after at least 100 ms
  (4800 frames) below it; the onset is refined to a fraction of a frame by
  linear interpolation of the threshold crossing between that frame and the
  one before it. Frame f of a block starting at frame F leaving at T leaves
  at T + (f - F) / (48000 (1 + ppm/1e6)) s.
* vdac (ALSA) sink: the CLICK lines of the vdac log (same detector, exact
  frame, no sub-frame refinement).

Python 3 standard library only. The raw files are scanned in chunks: the
high byte of every left sample is picked out with a strided slice and mapped
through bytes.translate, so locating loud samples is a bytes.find.
"""
import bisect
import json
import math
import os
import re
import sys

RATE = 48000
THRESHOLD = 16384                 # 0.5 full scale
QUIET_FRAMES = 4800               # 100 ms
CHUNK_BYTES = 4 * RATE * 8        # 8 s of stereo S16 per read
# High byte of a S16LE sample in 0x40..0xBF  <=>  x >= 16384 or x <= -16385.
LOUD_HI = bytes(1 if 0x40 <= b <= 0xBF else 0 for b in range(256))
# High byte not 0x00/0xFF  <=>  x >= 256 or x < -256 (about -42 dBFS): audible.
AUDIBLE_HI = bytes(0 if b in (0x00, 0xFF) else 1 for b in range(256))
SILENT_PEAK = 256 / 32768         # the same level for vdac period peaks
SILENT_RUN_FRAMES = int(0.030 * RATE)   # silence must last 30 ms to count as "went silent"
# Track-start markers (see gen_signal.py): gap between the first two clicks -> (track, first click s)
MARKERS = [(0.120, "A", 0.50), (0.150, "B", 0.25)]
MARKER_TOLERANCE = 0.008
PAIR_WINDOW_NS = 500_000_000
# A gap: both channels below -42 dBFS for at least 10 ms while the tone should play
# (the right channel carries a 1 kHz tone throughout each track).
GAP_FRAMES = int(0.010 * RATE)
GAP_RE = re.compile(b"\x00{%d,}" % (2 * GAP_FRAMES))
JOIN_TOLERANCE_NS = 100_000
JOIN_RUN = 5


def s16(buf, offset):
    return int.from_bytes(buf[offset:offset + 2], "little", signed=True)


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks, q in 0..100."""
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median(values):
    return percentile(sorted(values), 50)


def fmt(x, digits=1):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


class FileDAC:
    """The project's virtual DAC: raw audio plus a timing log."""

    kind = "file"

    def __init__(self, name, path, ppm, interpolate=True):
        self.name, self.path, self.ppm = name, path, ppm
        self.ns_per_frame = 1e9 / (RATE * (1 + ppm / 1e6))
        self.interpolate = interpolate
        with open(path + ".timing") as f:
            nums = f.read().split()
        self.F = [int(x) for x in nums[0::2]]
        self.T = [int(x) for x in nums[1::2]]
        n = min(len(self.F), len(self.T))
        del self.F[n:], self.T[n:]
        self.frames = os.path.getsize(path) // 4
        self.discontinuities = 0
        for i in range(1, n):
            expected = self.T[i - 1] + (self.F[i] - self.F[i - 1]) * self.ns_per_frame
            if abs(self.T[i] - expected) > 1000:
                self.discontinuities += 1
        self.clicks = [self.time_of_frame(f) for f in self.scan_clicks()]

    def scan_clicks(self):
        """Click onsets as (fractional) frame indexes."""
        onsets = []
        last_loud = -(1 << 60)
        prev_left = 0
        base = 0
        with open(self.path, "rb") as f:
            while True:
                buf = f.read(CHUNK_BYTES)
                n = len(buf) // 4
                if n == 0:
                    break
                hi = buf[1:4 * n:4].translate(LOUD_HI)
                pos = hi.find(1)
                while pos != -1:
                    g = base + pos
                    if g - last_loud > QUIET_FRAMES:
                        cur = s16(buf, 4 * pos)
                        prev = s16(buf, 4 * pos - 4) if pos > 0 else prev_left
                        onsets.append(g - 1 + self.fraction(prev, cur) if self.interpolate else float(g))
                    last_loud = g
                    pos = hi.find(1, pos + 1)
                prev_left = s16(buf, 4 * (n - 1))
                base += n
                if len(buf) < CHUNK_BYTES:
                    break
        return onsets

    @staticmethod
    def fraction(prev, cur):
        """Where between the previous frame (0) and this one (1) |x| crossed the threshold."""
        sign = 1 if cur > 0 else -1
        a, b = prev * sign, cur * sign
        if b <= a:
            return 1.0
        return min(1.0, max(0.0, (THRESHOLD - a) / (b - a)))

    def time_of_frame(self, f):
        i = max(0, bisect.bisect_right(self.F, f) - 1)
        return self.T[i] + (f - self.F[i]) * self.ns_per_frame

    def frame_at_time(self, t):
        i = bisect.bisect_right(self.T, t) - 1
        if i < 0:
            return 0
        f = self.F[i] + (t - self.T[i]) / self.ns_per_frame
        if i + 1 < len(self.F):
            f = min(f, self.F[i + 1])
        return int(math.ceil(f))

    def _audible_map(self, t, seconds):
        start = self.frame_at_time(t)
        with open(self.path, "rb") as f:
            f.seek(4 * start)
            data = f.read(4 * int(seconds * RATE))
        return start, data[1::2].translate(AUDIBLE_HI)   # one byte per sample, both channels

    def went_silent(self, t, seconds=6.0):
        """First instant >= t after which the output stays below -42 dBFS for >= 30 ms."""
        start, h = self._audible_map(t, seconds)
        idx = h.find(bytes(2 * SILENT_RUN_FRAMES))
        if idx < 0:
            return None
        return self.time_of_frame(start + (idx + 1) // 2)

    def became_audible(self, t, seconds=6.0):
        """First audible sample after t, provided the output was silent at t."""
        start, h = self._audible_map(t, seconds)
        if 1 in h[:2 * SILENT_RUN_FRAMES]:
            return None
        idx = h.find(1)
        if idx < 0:
            return None
        return self.time_of_frame(start + idx // 2)

    def first_audible(self):
        """When the first audible sample (either channel, >= -42 dBFS) left the DAC."""
        base = 0
        with open(self.path, "rb") as f:
            while True:
                buf = f.read(CHUNK_BYTES)
                if len(buf) < 4:
                    return None
                idx = buf[1:len(buf) - len(buf) % 4:2].translate(AUDIBLE_HI).find(1)
                if idx >= 0:
                    return self.time_of_frame(base + idx // 2)
                base += len(buf) // 4

    def gaps(self, lo, hi, quiet):
        """Silent stretches (>= 10 ms) between lo and hi (ns) outside the `quiet` intervals:
        (start ns, length ms) each."""
        start, end = self.frame_at_time(lo), self.frame_at_time(hi)
        if end <= start:
            return []
        with open(self.path, "rb") as f:
            f.seek(4 * start)
            h = f.read(4 * (end - start))[1::2].translate(AUDIBLE_HI)
        out = []
        for m in GAP_RE.finditer(h):
            t = self.time_of_frame(start + m.start() // 2)
            length = (m.end() - m.start()) / 2 / RATE * 1000
            t_end = t + length * 1e6
            if any(a <= t_end and t <= b for a, b in quiet):
                continue
            out.append((t, length))
        return out

    def health(self):
        return f"DAC segments restarted (underruns seen by the DAC): {self.discontinuities}"


class VdacDAC:
    """A vdac ALSA PCM: CLICK lines and per-period peaks from its log."""

    kind = "vdac"

    def __init__(self, name, path, ppm):
        self.name, self.path, self.ppm = name, path, ppm
        self.clicks = []
        self.pt, self.pn, self.peak = [], [], []
        self.xruns = self.underruns = self.starts = 0
        self.period_frames = None
        with open(path, errors="replace") as f:
            for line in f:
                p = line.split()
                if not p:
                    continue
                tag = p[0]
                if tag[0].isdigit():
                    self.pt.append(int(p[0]))
                    self.pn.append(int(p[2]))
                    self.peak.append(float(p[3]))
                elif tag == "CLICK":
                    self.clicks.append(int(p[1]))
                elif tag == "XRUN":
                    self.xruns += 1
                elif tag == "UNDERRUN":
                    self.underruns += 1
                elif tag == "START":
                    self.starts += 1
                elif tag == "#" and len(p) > 1:
                    for kv in p[2:]:
                        if kv.startswith("ppm="):
                            self.ppm = float(kv[4:])
                        elif kv.startswith("period="):
                            self.period_frames = int(kv[7:])
        self.clicks.sort()

    def went_silent(self, t, seconds=6.0):
        """Start of the first silent period (peak < -42 dBFS) of a >= 30 ms silent stretch after t.
        Resolution: one period (the silence began inside the period before)."""
        i = max(0, bisect.bisect_right(self.pt, t) - 1)
        end = t + seconds * 1e9
        while i < len(self.pt) and self.pt[i] < end:
            if self.peak[i] < SILENT_PEAK:
                j, frames = i, 0
                while j < len(self.pt) and self.peak[j] < SILENT_PEAK and frames < SILENT_RUN_FRAMES:
                    frames += self.pn[j]
                    j += 1
                if frames >= SILENT_RUN_FRAMES:
                    return max(self.pt[i], t)
                i = j
            else:
                i += 1
        return None

    def became_audible(self, t, seconds=6.0):
        """Start of the first audible period after t (the output must be silent at t)."""
        i = max(0, bisect.bisect_right(self.pt, t) - 1)
        if i < len(self.peak) and self.peak[i] >= SILENT_PEAK:
            return None
        end = t + seconds * 1e9
        while i < len(self.pt) and self.pt[i] < end:
            if self.peak[i] >= SILENT_PEAK:
                return self.pt[i]
            i += 1
        return None

    def first_audible(self):
        """Start of the first audible period (resolution: one period)."""
        for t, peak in zip(self.pt, self.peak):
            if peak >= SILENT_PEAK:
                return t
        return None

    def health(self):
        return f"vdac xruns={self.xruns} underruns={self.underruns} starts={self.starts}"


def pair_clicks(a, b, window=PAIR_WINDOW_NS):
    """Mutually nearest clicks of two sorted lists, within the window: [(ta, tb)]."""
    def nearest(xs, t):
        i = bisect.bisect_left(xs, t)
        best = None
        for j in (i - 1, i):
            if 0 <= j < len(xs) and (best is None or abs(xs[j] - t) < abs(xs[best] - t)):
                best = j
        return best
    pairs = []
    for ta in a:
        j = nearest(b, ta)
        if j is None or abs(b[j] - ta) > window:
            continue
        k = nearest(a, b[j])
        if a[k] == ta:
            pairs.append((ta, b[j]))
    return pairs


def stats(diffs_ns):
    absolute = sorted(abs(d) / 1000 for d in diffs_ns)
    return {
        "n": len(absolute),
        "median": percentile(absolute, 50),
        "p95": percentile(absolute, 95),
        "p99": percentile(absolute, 99),
        "max": absolute[-1] if absolute else float("nan"),
        "mean": (sum(diffs_ns) / len(diffs_ns) / 1000) if diffs_ns else float("nan"),
    }


def slope_us_per_s(pairs):
    if len(pairs) < 3:
        return float("nan")
    xs = [ta / 1e9 for ta, _ in pairs]
    ys = [(tb - ta) / 1000 for ta, tb in pairs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else float("nan")


def track_starts(clicks):
    """[(instant frame 0 of a track was heard, track name)] from marker click pairs."""
    found = []
    for c1, c2 in zip(clicks, clicks[1:]):
        gap = (c2 - c1) / 1e9
        for marker_gap, name, phase in MARKERS:
            if abs(gap - marker_gap) <= MARKER_TOLERANCE:
                # The follower plays stream frame n at epoch + n/48000 s of the leader's clock
                # (= CLOCK_MONOTONIC here), whatever its DAC's crystal: no ppm scaling.
                found.append((c1 - phase * 1e9, name))
    return found


def read_manifest(run_dir):
    run, dacs = {}, []
    with open(os.path.join(run_dir, "manifest")) as f:
        for line in f:
            p = line.split()
            if not p:
                continue
            kv = dict(x.split("=", 1) for x in p[1:] if "=" in x)
            if p[0] == "run":
                run = kv
            elif p[0] == "dac":
                dacs.append(kv)
    return run, dacs


def read_commands(path):
    records = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        records.append(json.loads(line))
                    except ValueError:
                        pass
    return records


def rooms_health(result):
    """Per-room health fields from a rooms.list result of unknown exact shape."""
    rooms = result
    if isinstance(result, dict):
        for key in ("rooms", "followers", "items"):
            if isinstance(result.get(key), list):
                rooms = result[key]
                break
        else:
            rooms = [dict(v, name=k) if isinstance(v, dict) else {"name": k, "value": v} for k, v in result.items()]
    out = []
    for room in rooms if isinstance(rooms, list) else []:
        if not isinstance(room, dict):
            continue
        flat = dict(room)
        for v in room.values():
            if isinstance(v, dict):
                for k2, v2 in v.items():
                    flat.setdefault(k2, v2)
        name = flat.get("name") or flat.get("room") or flat.get("id") or "?"
        fields = {k: flat[k] for k in ("underruns", "hardResyncs", "concealed", "concealedChunks", "connected",
                                       "outputErrorUs", "bufferMs", "rttUs", "clockSkewPpm", "ratioPpm",
                                       "clockUncertaintyUs", "streamDelayMaxMs") if k in flat}
        out.append((name, fields, room))
    return out


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) >= 2 else 2
    run_dir = sys.argv[1]
    interpolate = "--integer-onsets" not in sys.argv
    run, manifest = read_manifest(run_dir)
    t0 = int(run["t0"])
    t_end = int(run["end"])
    warmup = float(run.get("warmup", 3))
    if "--warmup" in sys.argv[2:]:
        warmup = float(sys.argv[sys.argv.index("--warmup") + 1])
    lo = t0 + warmup * 1e9
    hi = t_end - 1e9

    dacs = []
    for m in manifest:
        path = os.path.join(run_dir, m["path"])
        try:
            if m["kind"] == "file":
                d = FileDAC(m["name"], path, float(m["ppm"]), interpolate)
            else:
                d = VdacDAC(m["name"], path, float(m["ppm"]))
        except (OSError, ValueError, IndexError) as e:
            print(f"{m['name']}: no usable output ({e})")
            continue
        d.late = m.get("late") == "1"
        d.launch = int(m["launch"]) if m.get("launch", "").isdigit() else None
        d.log = os.path.join(run_dir, m["log"]) if m.get("log") else None
        d.log_bytes = int(m["logbytes"]) if m.get("logbytes", "").isdigit() else None
        dacs.append(d)
    main_dacs = [d for d in dacs if not d.late]
    late = [d for d in dacs if d.late]

    print(f"run: {len(main_dacs)} followers{' + late joiner' if late else ''}, "
          f"{(t_end - t0) / 1e9:.1f} s, clicks counted from +{warmup:g} s to end-1 s")
    for d in dacs:
        n = sum(1 for c in d.clicks if lo <= c <= hi)
        print(f"  {d.name}: DAC {d.ppm:+g} ppm ({d.kind}), {len(d.clicks)} clicks ({n} in the window); {d.health()}")

    # --- every pair of followers ---
    pair_stats = []
    for i in range(len(main_dacs)):
        for j in range(i + 1, len(main_dacs)):
            a, b = main_dacs[i], main_dacs[j]
            ca = [c for c in a.clicks if lo <= c <= hi]
            cb = [c for c in b.clicks if lo - PAIR_WINDOW_NS <= c <= hi + PAIR_WINDOW_NS]
            pairs = pair_clicks(ca, cb)
            if not pairs:
                print(f"pair {a.name}~{b.name}: no clicks paired")
                continue
            s = stats([tb - ta for ta, tb in pairs])
            unpaired_b = sum(1 for c in cb if lo <= c <= hi) - len(pairs)
            pair_stats.append(s)
            worst = max(pairs, key=lambda p: abs(p[1] - p[0]))
            print(f"pair {a.name}~{b.name}: clicks={s['n']} unpaired={len(ca) - len(pairs)}+{max(0, unpaired_b)} "
                  f"median={fmt(s['median'])} p95={fmt(s['p95'])} p99={fmt(s['p99'])} max={fmt(s['max'])} µs; "
                  f"signed mean={s['mean']:+.1f} µs slope={slope_us_per_s(pairs):+.3f} µs/s; "
                  f"max at +{(worst[0] - t0) / 1e9:.1f} s")

    # Issue 30's figures: how soon every room is heard (late joiner too),
    # how far each room's first click is from the others' (a room must not
    # start out of step), and the pairs from 20 s on.
    heard_all = None
    for d in dacs:
        start = d.launch
        heard = d.first_audible()
        if start is None or heard is None:
            heard_all = float("inf")
            break
        heard_all = max(heard_all or 0.0, (heard - start) / 1e9)
    first_click_us = None
    for d in main_dacs + late:
        if not d.clicks:
            continue
        for o in main_dacs:
            if o is d:
                continue
            pairs = pair_clicks(d.clicks[:1], o.clicks)
            if pairs:
                first_click_us = max(first_click_us or 0.0, abs(pairs[0][1] - pairs[0][0]) / 1e3)
    after20 = []
    for i in range(len(main_dacs)):
        for j in range(i + 1, len(main_dacs)):
            ca = [c for c in main_dacs[i].clicks if t0 + 20e9 <= c <= hi]
            cb = [c for c in main_dacs[j].clicks if t0 + 20e9 - PAIR_WINDOW_NS <= c <= hi + PAIR_WINDOW_NS]
            after20 += [abs(b - a) for a, b in pair_clicks(ca, cb)]
    after20.sort()
    p99_20 = percentile(after20, 99) / 1e3 if after20 else None
    med_20 = percentile(after20, 50) / 1e3 if after20 else None
    heard_text = "never" if heard_all == float("inf") else fmt(heard_all, 2)
    print(f"rooms: every room heard {heard_text} s after it started; first clicks within {fmt(first_click_us)} µs of the others; "
          f"from 20 s median={fmt(med_20)} p99={fmt(p99_20)} µs")

    # Per-click signed differences from the first follower, whole run, for plotting (clicks.csv).
    if dacs:
        ref = main_dacs[0] if main_dacs else dacs[0]
        others = [d for d in dacs if d is not ref]
        paired = [dict(pair_clicks(ref.clicks, d.clicks)) for d in others]
        with open(os.path.join(run_dir, "clicks.csv"), "w") as f:
            f.write("t_s," + ",".join(f"{d.name}-{ref.name}_us" for d in others) + "\n")
            for c in ref.clicks:
                cells = [f"{(p[c] - c) / 1000:.2f}" if c in p else "" for p in paired]
                f.write(f"{(c - t0) / 1e9:.3f}," + ",".join(cells) + "\n")

    # --- late joiner ---
    join_s = None
    # When the late joiner's first click is already in step (and the next
    # JOIN_RUN - 1), it played in step from its first sound: the clicks are a
    # second apart, so join_s alone also counts the wait for the next click.
    heard_s, first_click_in_step, late_p99 = None, None, None
    if late and main_dacs:
        ref = main_dacs[0]
        for d in late:
            launch = d.launch or (d.clicks[0] if d.clicks else None)
            pairs = pair_clicks([c for c in d.clicks if c <= hi], [c for c in ref.clicks if c <= hi + PAIR_WINDOW_NS])
            diffs = [(tl, tl - tr) for tl, tr in pairs]
            heard = d.first_audible()
            first_audio = (heard - launch) / 1e9 if heard is not None and launch else None
            k = None
            for idx in range(len(diffs)):
                run_ = diffs[idx:idx + JOIN_RUN]
                if all(abs(x) <= JOIN_TOLERANCE_NS for _, x in run_):
                    k = idx
                    break
            if k is None or launch is None:
                print(f"late join {d.name}: launched at +{((launch or t0) - t0) / 1e9:.1f} s, "
                      f"never within {JOIN_TOLERANCE_NS // 1000} µs of {ref.name} ({len(diffs)} clicks compared)")
                continue
            join_s = (diffs[k][0] - launch) / 1e9
            heard_s, first_click_in_step = first_audio, k == 0
            after = [x for _, x in diffs[k:]]
            s = stats(after)
            late_p99 = s['p99']
            excursions = sum(1 for x in after if abs(x) > JOIN_TOLERANCE_NS)
            print(f"late join {d.name}: launched at +{(launch - t0) / 1e9:.1f} s; heard after "
                  f"{fmt(first_audio, 2)} s (first audible sample); within {JOIN_TOLERANCE_NS // 1000} µs of {ref.name} "
                  f"(for {JOIN_RUN} clicks in a row) after join_s={join_s:.2f}; from then vs {ref.name}: "
                  f"clicks={s['n']} median={fmt(s['median'])} p95={fmt(s['p95'])} p99={fmt(s['p99'])} "
                  f"max={fmt(s['max'])} µs, {excursions} clicks beyond {JOIN_TOLERANCE_NS // 1000} µs"
                  + ("; its first click was in step (in step from its first sound)" if k == 0 else
                     f"; {k} click(s) out of step first"))

    # --- commands ---
    records = read_commands(os.path.join(run_dir, "commands.jsonl"))
    command_summary = {}
    control_note = run.get("control", "off")
    accepted = [r for r in records if isinstance(r.get("result"), dict) and "acceptedAt" in r["result"]
                and r.get("method", "").startswith("player.")]
    errors = [r for r in records if r.get("error") is not None]
    if control_note != "on":
        print(f"commands: skipped ({control_note})")
    elif not accepted:
        why = errors[0]["error"] if errors else "no player.* command answered with acceptedAt"
        print(f"commands: no measurable command ({why})")
    else:
        per = {}   # method -> dac name -> [latency ms]
        sched = {}  # method -> [heard - effectiveAt, µs]
        starts = {d.name: track_starts(d.clicks) for d in dacs}
        sent = {}
        for n, r in enumerate(accepted):
            method = r["method"].split(".", 1)[1]
            if method == "seek":
                method = "seek0"
            sent[method] = sent.get(method, 0) + 1
            acc = int(r["result"]["acceptedAt"])
            eff = r["result"].get("effectiveAt")
            # Look for the effect until the next command (at most 6 s): never credit one command
            # with the next one's effect.
            horizon = 6e9
            if n + 1 < len(accepted):
                horizon = min(horizon, int(accepted[n + 1]["result"]["acceptedAt"]) - acc)
            horizon = max(horizon, 0)
            for d in dacs:
                if d.late and (d.launch is None or d.launch > acc - 5e9):
                    continue
                heard = None
                if method == "pause":
                    heard = d.went_silent(acc, horizon / 1e9)
                elif method == "play":
                    heard = d.became_audible(acc, horizon / 1e9)
                elif method in ("next", "previous", "seek0"):
                    later = [t for t, _ in starts[d.name] if acc <= t <= acc + horizon]
                    heard = later[0] if later else None
                if heard is None:
                    per.setdefault(method, {}).setdefault(d.name, [])
                    continue
                per.setdefault(method, {}).setdefault(d.name, []).append((heard - acc) / 1e6)
                if isinstance(eff, (int, float)):
                    sched.setdefault(method, []).append((heard - int(eff)) / 1e3)
        for method in ("pause", "play", "next", "previous", "seek0"):
            if method not in per:
                continue
            medians = {n: median(v) for n, v in per[method].items() if v}
            missing = [n for n, v in per[method].items() if not v]
            worst = max(medians.values()) if medians else None
            command_summary[method] = worst
            reps = max((len(v) for v in per[method].values()), default=0)
            parts = " ".join(f"{n}={fmt(v)}" for n, v in medians.items())
            if medians:
                line = f"command {method}: accepted->heard ms, median of {reps} per DAC: {parts}; worst DAC={fmt(worst)}"
                if missing:
                    line += f"; not seen on {','.join(missing)}"
            else:
                line = f"command {method}: {sent[method]} accepted, " \
                       f"effect not heard on any DAC (within 6 s or before the next command)"
            if method in sched and sched[method]:
                e = sorted(sched[method])
                line += f"; heard-effectiveAt µs median={fmt(percentile(e, 50))} min={fmt(e[0])} max={fmt(e[-1])}"
            print(line)
        if errors:
            print(f"commands: {len(errors)} errors, first: {errors[0].get('method')}: {errors[0]['error']}")

    # --- gaps: silence where the tone should be heard (outside pause..play and track ends) ---
    quiet = []
    pause_at = None
    for r in accepted:
        acc = int(r["result"]["acceptedAt"])
        if r["method"] == "player.pause":
            pause_at = acc
        elif r["method"] == "player.play" and pause_at is not None:
            quiet.append((pause_at - 0.2e9, acc + 1.0e9))
            pause_at = None
    if pause_at is not None:
        quiet.append((pause_at - 0.2e9, t_end))
    gap_total, gap_longest, gap_parts = 0, 0.0, []
    for d in dacs:
        if not hasattr(d, "gaps"):
            continue
        start = lo
        if d.late:
            heard = d.first_audible()
            if heard is None:
                continue
            start = max(lo, heard + 0.5e9)
        g = d.gaps(start, hi, quiet)
        gap_total += len(g)
        gap_longest = max([gap_longest] + [x for _, x in g])
        gap_parts.append(f"{d.name}={len(g)}")
        for t, x in g[:3]:
            print(f"gap {d.name}: {x:.1f} ms silent at +{(t - t0) / 1e9:.2f} s")
    gaps_text = f"{gap_total} (longest {gap_longest:.0f} ms)" if gap_parts else "n/a"
    print(f"gaps (>= 10 ms silent outside pauses): {' '.join(gap_parts) if gap_parts else 'n/a (vdac sink)'}")

    # --- health ---
    resyncs = underruns = None
    rooms = [r for r in records if r.get("method") == "rooms.list" and r.get("result") is not None]
    if rooms:
        last = rooms[-1]
        for name, fields, raw in rooms_health(last["result"]):
            if isinstance(fields.get("hardResyncs"), int):
                resyncs = (resyncs or 0) + fields["hardResyncs"]
            if isinstance(fields.get("underruns"), int):
                underruns = (underruns or 0) + fields["underruns"]
            if fields:
                print("health " + name + ": " + " ".join(f"{k}={v}" for k, v in fields.items()))
            else:
                print("health " + name + ": " + json.dumps(raw, separators=(",", ":"))[:300])
    else:
        print("health: leader health unavailable (no rooms.list)")
    # The leader's command lead (v6 logs each change of 20 ms or more).
    leader_log = os.path.join(run_dir, "leader.log")
    if os.path.exists(leader_log):
        leads = [int(m.group(1)) for m in re.finditer(r"commands now take effect (\d+) ms ahead", open(leader_log, errors="replace").read())]
        if leads:
            print(f"command lead: {len(leads)} changes, longest {max(leads)} ms, last {leads[-1]} ms")
    for d in dacs:
        if d.log and os.path.exists(d.log):
            with open(d.log, "rb") as f:   # up to the end of the run, not the shutdown
                text = f.read(d.log_bytes if d.log_bytes is not None else -1).decode(errors="replace")
            conns = text.count("connected to leader")
            warnings = sum(1 for line in text.splitlines() if " warning " in line)
            print(f"log {d.name}: connections={conns} warnings={warnings}")

    # --- summary ---
    if pair_stats:
        med = median([s["median"] for s in pair_stats])
        p95 = max(s["p95"] for s in pair_stats)
        p99 = max(s["p99"] for s in pair_stats)
        mx = max(s["max"] for s in pair_stats)
    else:
        med = p95 = p99 = mx = float("nan")
    print(f"sync_p95_us worst_pair={fmt(p95)} median_of_pairs={fmt(median([s['p95'] for s in pair_stats]) if pair_stats else None)}")
    print(f"join_s={fmt(join_s, 2)}")
    print(f"sync_us median={fmt(med)} p99={fmt(p99)} max={fmt(mx)} "
          f"pause_ms={fmt(command_summary.get('pause'))} next_ms={fmt(command_summary.get('next'))}")
    case = sys.argv[sys.argv.index("--case") + 1] if "--case" in sys.argv[2:] else "run"
    joined = "" if heard_s is None else (f" (heard {heard_s:.2f}, first click in step)" if first_click_in_step else f" (heard {heard_s:.2f})")
    print(f"case {case}: median={fmt(med)} p99={fmt(p99)} max={fmt(mx)} µs join_s={fmt(join_s, 2)}{joined} late_p99={fmt(late_p99)} "
          f"pause_ms={fmt(command_summary.get('pause'))} next_ms={fmt(command_summary.get('next'))} "
          f"gaps={gaps_text} hardResyncs={resyncs if resyncs is not None else 'n/a'} "
          f"underruns={underruns if underruns is not None else 'n/a'} "
          f"heard_all_s={heard_text} first_click_us={fmt(first_click_us)} p99_20s={fmt(p99_20)}")
    return 0 if pair_stats else 1


if __name__ == "__main__":
    sys.exit(main())
