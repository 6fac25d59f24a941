#!/usr/bin/env python3
"""Makes a library of N tagged MP3 files for bench/library, once.

A few template MP3s of different lengths are encoded with lame once; every
file is then an ID3v2 tag of its own in front of one template's frames
(spawning lame 100,000 times would take hours on two cores). The shapes vary
as real collections do: albums of 1 to 40 tracks, compilations with an album
artist "Various Artists", multi-disc albums in deep folders, one big flat
folder of singles, Korean, Japanese and accented names, ID3v2.3 (Latin-1 or
UTF-16) and ID3v2.4 (UTF-8) tags.

The corpus is deterministic (seeded) and written into FOLDER with a
manifest (corpus.json) that records its parameters, so a second run with the
same N finds it and does nothing.

    bench/library/corpus.py --files 100000 --out /var/tmp/tutti-bench-corpus-100000
"""
import argparse
import itertools
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import wave

VERSION = 3  # bump when the shapes change, so an old cache is remade

ENGLISH = """love night dream fire river summer shadow light heart road city storm golden silver blue midnight
ocean wild electric forever morning paper glass winter stone echo velvet neon highway garden thunder honey ghost
crystal desert rain sugar magic rebel angel broken secret satellite harbor lantern mirror orbit canyon violet
hollow home girl boy time world life day sky sun moon star fall rise run back down up away alone together
never always little big black white red green gold fade burn cold warm dark bright slow fast last first one
two three ten hundred song number dance party baby lady king queen blood bone wire radio tv machine signal
station island mountain valley forest field flower rose lily wolf bird fox horse lion tiger snake dragon
saint sinner prayer heaven hell devil church bell chain key door window wall house room bed floor roof
street avenue boulevard train plane ship boat car bike wheel engine motor rocket planet comet galaxy""".split()
ACCENTED = ["café", "señorita", "über", "naïve", "déjà", "vu", "à", "la", "mañana", "corazón", "canción",
            "für", "schön", "straße", "été", "hôtel", "crème", "brûlée", "fiancée", "résumé", "olé", "niño",
            "jalapeño", "smörgåsbord", "façade", "garçon", "où", "être", "noël", "élan"]
KOREAN = ["사랑", "밤", "바다", "하늘", "별", "꿈", "너", "나", "우리", "노래", "비", "눈", "봄", "여름",
          "가을", "겨울", "마음", "길", "집", "빛", "서울", "친구", "안녕", "시간"]
JAPANESE = ["東京", "夜", "桜", "恋", "雨", "空", "海", "星", "夢", "花", "風", "月", "君", "心", "光",
            "道", "歌", "涙", "青", "春", "さくら", "ありがとう", "さよなら", "きみ", "メロディー", "カメラ", "夜景"]
FIRST = ["John", "Mary", "José", "Björk", "Zoë", "Françoise", "Ana", "Lars", "Søren", "Chloé", "André",
         "Ingrid", "Mohammed", "Wei", "Yuki", "Kenji", "Min", "Ji", "Pablo", "Renée", "Sinéad", "Ólafur",
         "Anna", "Peter", "David", "Laura", "Marco", "Elena", "Jürgen", "Dvořák", "Beyoncé", "Sigur"]
LAST = ["Smith", "González", "Johansson", "Müller", "Dubois", "Nakamura", "Kim", "Park", "Rossi",
        "Novák", "Ólafsson", "Brown", "Martin", "Lee", "Garcia", "Wilson", "Taylor", "Moore", "Rós",
        "Arnalds", "Černý", "Łukasz", "Šimić", "O'Brien", "MacLeod", "Van Dyke"]
KOREAN_NAMES = ["김민수", "이지은", "박서준", "최유나", "정하늘", "방탄", "소녀시대", "빅뱅", "아이유", "악동"]
JAPANESE_NAMES = ["山田太郎", "宇多田", "椎名林檎", "きゃりー", "坂本龍一", "久石譲", "中島みゆき", "嵐", "星野源"]
GENRES = ["Rock", "Pop", "Jazz", "Electronic", "Folk", "Classical", "Hip-Hop", "Ambient", "Soul", "Metal",
          "K-Pop", "J-Pop", "Chanson", "Blues", "Reggae", "Country"]
SYLLABLES = "ka ri no ta me lo vi sa ne ru po di an el or um ix za bo le mi tu ra sho ven dar kel mon tri".split()


def pseudo_words(rng, n):
    """Made-up words, so the vocabulary is large and most words are rare."""
    out = set()
    while len(out) < n:
        out.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))))
    return sorted(out)


class Vocabulary:
    def __init__(self, rng):
        self.rng = rng
        self.rare = pseudo_words(rng, 6000)
        # Zipf-like: a few English words are common, the made-up ones rare.
        self.common = ENGLISH
        # Zipf over the English words: the commonest in a few per cent of titles.
        weights = [1 / (rank + 8) for rank in range(len(ENGLISH))]
        self.cumulative = list(itertools.accumulate(weights))

    def word(self):
        r = self.rng.random()
        if r < 0.55:
            return self.rng.choices(self.common, cum_weights=self.cumulative)[0]
        if r < 0.62:
            return self.rng.choice(ACCENTED)
        return self.rng.choice(self.rare)

    def phrase(self, script, lo=1, hi=4):
        n = self.rng.randint(lo, hi)
        if script == "ko":
            return " ".join(self.rng.choice(KOREAN) for _ in range(n))
        if script == "ja":
            # Japanese is written without spaces: "東京の夜".
            return "の".join(self.rng.choice(JAPANESE) for _ in range(min(n, 3)))
        words = [self.word() for _ in range(n)]
        return " ".join(w[:1].upper() + w[1:] if i == 0 or self.rng.random() < 0.6 else w for i, w in enumerate(words))


def artist_name(rng, vocab, script):
    if script == "ko":
        return rng.choice(KOREAN_NAMES) + ("" if rng.random() < 0.5 else " " + rng.choice(KOREAN))
    if script == "ja":
        return rng.choice(JAPANESE_NAMES) + ("" if rng.random() < 0.5 else rng.choice(JAPANESE))
    r = rng.random()
    if r < 0.35:
        return rng.choice(FIRST) + " " + rng.choice(LAST)
    if r < 0.7:
        return "The " + vocab.phrase("en", 1, 2).title()
    return vocab.phrase("en", 1, 3).title()


def album_size(rng):
    r = rng.random()
    if r < 0.12:
        return 1                      # singles
    if r < 0.30:
        return rng.randint(3, 6)      # EPs
    if r < 0.92:
        return rng.randint(8, 16)     # albums
    return rng.randint(20, 40)        # double albums, box sets


def safe(name):
    return name.replace("/", "-").replace("\0", "").strip() or "_"


def plan(n, seed):
    """The tracks: a list of (relative path, tags)."""
    rng = random.Random(seed)
    vocab = Vocabulary(rng)
    tracks = []
    used_artists = set()
    artist_list = []
    artist_no = 0

    def new_artist(script):
        nonlocal artist_no
        while True:
            a = artist_name(rng, vocab, script)
            artist_no += 1
            if a not in used_artists:
                used_artists.add(a)
                artist_list.append(a)
                return a
            if rng.random() < 0.3:  # now and then a number tells two bands apart
                a = f"{a} {artist_no}"
                used_artists.add(a)
                return a

    singles_left = n // 12            # the big flat folder
    while len(tracks) < n:
        r = rng.random()
        script = "ko" if r < 0.05 else "ja" if r < 0.10 else "en"
        if singles_left > 0 and rng.random() < 0.08:
            artist = new_artist(script)
            for _ in range(min(rng.randint(1, 5), singles_left, n - len(tracks))):
                title = vocab.phrase(script, 1, 4)
                tracks.append((f"Singles/{safe(artist)} - {safe(title)} {len(tracks)}.mp3",
                               dict(title=title, artist=artist, genre=rng.choice(GENRES),
                                    year=1950 + rng.randrange(75))))
                singles_left -= 1
            continue
        compilation = rng.random() < 0.06
        artist = "Various Artists" if compilation else new_artist(script)
        genre = rng.choice(GENRES)
        deep = rng.random() < 0.25
        for _ in range(1 if compilation else rng.randint(1, 6)):
            if len(tracks) >= n:
                break
            album = vocab.phrase(script, 1, 3)
            year = 1950 + rng.randrange(75)
            size = min(album_size(rng), n - len(tracks))
            discs = 2 if size >= 24 and rng.random() < 0.5 else 1
            for t in range(size):
                disc = 1 + t * discs // size
                number = t - (disc - 1) * math.ceil(size / discs) + 1
                title = vocab.phrase(script if rng.random() < 0.8 else "en", 1, 5)
                track_artist = artist
                if compilation:
                    track_artist = new_artist(script) if rng.random() < 0.7 or not artist_list else rng.choice(artist_list)
                tags = dict(title=title, artist=track_artist, album=album, track=f"{number}/{size}",
                            genre=genre, year=year)
                if compilation:
                    tags["albumartist"] = "Various Artists"
                    folder = f"Compilations/{safe(album)} ({year})"
                elif deep:
                    folder = f"{genre}/{safe(artist)}/{year} - {safe(album)}" + (f"/CD{disc}" if discs > 1 else "")
                else:
                    folder = f"{safe(artist)}/{safe(album)}"
                if discs > 1:
                    tags["disc"] = f"{disc}/{discs}"
                tracks.append((f"{folder}/{number:02d} {safe(title)[:80]} {len(tracks)}.mp3", tags))
    return tracks


def id3_text(frame_id, text, version):
    if version == 4:
        body = b"\x03" + text.encode("utf-8")
    else:
        try:
            body = b"\x00" + text.encode("latin-1")
        except UnicodeEncodeError:
            body = b"\x01" + "\ufeff".encode("utf-16-le") + text.encode("utf-16-le")
    size = len(body)
    if version == 4:
        size_bytes = bytes([(size >> 21) & 0x7F, (size >> 14) & 0x7F, (size >> 7) & 0x7F, size & 0x7F])
    else:
        size_bytes = struct.pack(">I", size)
    return frame_id.encode() + size_bytes + b"\x00\x00" + body


def id3_tag(tags, version):
    frames = [id3_text("TIT2", tags["title"], version), id3_text("TPE1", tags["artist"], version)]
    if "album" in tags:
        frames.append(id3_text("TALB", tags["album"], version))
    if "albumartist" in tags:
        frames.append(id3_text("TPE2", tags["albumartist"], version))
    if "track" in tags:
        frames.append(id3_text("TRCK", tags["track"], version))
    if "disc" in tags:
        frames.append(id3_text("TPOS", tags["disc"], version))
    frames.append(id3_text("TCON", tags["genre"], version))
    frames.append(id3_text("TDRC" if version == 4 else "TYER", str(tags["year"]), version))
    body = b"".join(frames)
    n = len(body)
    return b"ID3" + bytes([version, 0, 0]) + bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F]) + body


def templates(work, seconds_list):
    """MP3s of different lengths (CBR 128 kbit/s with a LAME Info header), encoded once."""
    out = []
    for i, seconds in enumerate(seconds_list):
        wav = os.path.join(work, f"t{i}.wav")
        rng = random.Random(i)
        with wave.open(wav, "wb") as w:
            w.setnchannels(2)
            w.setsampwidth(2)
            w.setframerate(44100)
            frames = bytearray()
            for k in range(int(44100 * seconds)):
                v = int(8000 * math.sin(2 * math.pi * (220 + 110 * i) * k / 44100) + rng.randint(-800, 800))
                frames += struct.pack("<hh", v, v)
            w.writeframes(bytes(frames))
        mp3 = wav[:-4] + ".mp3"
        subprocess.run(["lame", "--quiet", "--cbr", "-b", "128", wav, mp3], check=True)
        with open(mp3, "rb") as f:
            out.append(f.read())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    manifest_path = os.path.join(args.out, "corpus.json")
    want = {"version": VERSION, "files": args.files, "seed": args.seed}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            have = json.load(f)
        if {k: have.get(k) for k in want} == want:
            print(f"corpus: {args.files} files already in {args.out}")
            return
        print(f"corpus: {args.out} holds another corpus ({have}); making it again", file=sys.stderr)
        shutil.rmtree(args.out)
    os.makedirs(args.out, exist_ok=True)
    tracks = plan(args.files, args.seed)
    with tempfile.TemporaryDirectory() as work:
        audio = templates(work, [0.6, 1.1, 1.7, 2.6])
    made = set()
    rng = random.Random(args.seed + 1)
    for i, (rel, tags) in enumerate(tracks):
        path = os.path.join(args.out, "music", rel)
        folder = os.path.dirname(path)
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        version = 4 if rng.random() < 0.3 else 3
        with open(path, "wb") as f:
            f.write(id3_tag(tags, version))
            f.write(audio[i % len(audio)])
        if (i + 1) % 20000 == 0:
            print(f"corpus: {i + 1} files", file=sys.stderr)
    with open(os.path.join(args.out, "tracks.json"), "w") as f:
        json.dump([dict(path=rel, **tags) for rel, tags in tracks], f, ensure_ascii=False)
    with open(manifest_path, "w") as f:
        json.dump(dict(want, folders=len(made)), f)
    print(f"corpus: wrote {len(tracks)} files in {len(made)} folders under {args.out}/music")


if __name__ == "__main__":
    main()
