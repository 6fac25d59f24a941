#!/bin/sh
# A mixed library for bench/library (docs/library.md, "Benchmark"):
# N × 5 files (MP3, FLAC, AAC in .m4a, Ogg Vorbis, Opus), 3 s tones, each
# tagged with its own title, artist (400), album (1,000), track and year,
# made by Debian's ffmpeg from one encoding per format (-c copy), then the
# whole set copied COPIES times.
#
#   bench/library/make-mixed.sh DIR [N=800] [COPIES=5]
#   bench/library/run.sh --music DIR/lib --out bench/library/last-run-mixed.txt
set -eu
dir=$1; n=${2:-800}; copies=${3:-5}
mkdir -p "$dir/base" "$dir/one"
cd "$dir"
ffmpeg -v error -y -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=3" -ac 2 base/src.wav
ffmpeg -v error -y -i base/src.wav -c:a libmp3lame -b:a 128k base/b.mp3
ffmpeg -v error -y -i base/src.wav -c:a flac base/b.flac
ffmpeg -v error -y -i base/src.wav -c:a aac -b:a 128k base/b.m4a
ffmpeg -v error -y -i base/src.wav -c:a libvorbis base/b.ogg
ffmpeg -v error -y -i base/src.wav -c:a libopus base/b.opus
one() {
    i=$1; a=$((i % 400)); al=$((i % 1000)); d=one/artist$a/album$al
    mkdir -p "$d"
    for ext in mp3 flac m4a ogg opus; do
        ffmpeg -v error -y -i base/b.$ext -c copy -map_metadata -1 -metadata title="Song $i $ext" -metadata artist="Artist $a" \
            -metadata album="Album $al" -metadata track=$((i % 12 + 1)) -metadata date=$((1970 + i % 50)) "$d/track$i.$ext"
    done
}
i=0
while [ "$i" -lt "$n" ]; do one "$i" & one $((i + 1)) & wait; i=$((i + 2)); done
rm -rf lib && mkdir lib
c=1
while [ "$c" -le "$copies" ]; do cp -r one "lib/copy$c"; c=$((c + 1)); done
echo "$(find lib -type f | wc -l) files in $dir/lib"
