#!/usr/bin/env bash
# The install test: builds the Debian packages, checks them (lintian,
# dpkg-deb --info/--contents, ldd), installs them into a fresh Debian
# bookworm root that has no Swift toolchain, and there runs the versions, the
# packaged settings, a leader→speaker playback to a file DAC as the tutti user,
# systemd-analyze verify, an upgrade that keeps an edited tutti.conf, and a purge.
#
#   scripts/test-packages.sh [--skip-build]
# The root is made once with debootstrap (minbase) and cached under
# /var/cache/tutti-test, keyed on its package list; each run works on a copy.
# Needs root (chroot, unshare). Prints how long each step took.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
skip=()
[ "${1:-}" = --skip-build ] && skip=(--skip-build)

started=$(date +%s.%N)
step() { printf '\n== %s (at %s s)\n' "$1" "$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"; }
fail() { echo "test-packages: FAIL: $*" >&2; exit 1; }

# What the root needs besides minbase: the libraries the packages depend on
# (checked against their Depends below), adduser and init-system-helpers.
root_packages=(adduser init-system-helpers libasound2 libopus0 libmpg123-0 libsoxr0 libsqlite3-0
    libavahi-client3 libflac12 libogg0 libgpiod2 libcivetweb1 zlib1g libcurl4 librubberband2 libsodium23 libexpat1 libstdc++6 libgcc-s1)

step "packages"
scripts/package.sh --fast "${skip[@]}"
arch=$(dpkg --print-architecture)
version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/TuttiCore/Version.swift)
debs=(dist/tutti_"$version"_"$arch".deb dist/tutti-speaker_"$version"_"$arch".deb dist/tutti-leader_"$version"_"$arch".deb)
ls -l "${debs[@]}"

step "lintian"
lintian --fail-on error --tag-display-limit 0 "${debs[@]}" || fail "lintian reports errors"

step "dpkg-deb --info / --contents"
for deb in "${debs[@]}"; do
    dpkg-deb --info "$deb"
    depends=$(dpkg-deb --field "$deb" Depends)
    case "$depends" in *swift*|*Swift*) fail "$deb depends on a Swift package: $depends" ;; esac
done
contents() { dpkg-deb --contents "$1" | awk '{print $6}'; }
expect_in() { contents "$1" | grep -qx "$2" || fail "$1 lacks $2"; }
expect_in "${debs[0]}" ./usr/bin/tutti
expect_in "${debs[0]}" ./etc/tutti/tutti.conf
expect_in "${debs[1]}" ./usr/bin/tutti-follower
expect_in "${debs[1]}" ./lib/systemd/system/tutti-speaker.service
expect_in "${debs[2]}" ./usr/bin/tuttid
expect_in "${debs[2]}" ./usr/share/tutti/web/index.html
expect_in "${debs[2]}" ./lib/systemd/system/tutti-leader.service
[ "$(dpkg-deb --ctrl-tarfile "${debs[0]}" | tar -xO ./conffiles)" = /etc/tutti/tutti.conf ] || fail "tutti.conf is not a conffile"
dpkg-deb --field "${debs[2]}" Recommends | grep -q 'libavformat59' || fail "the leader does not recommend libavformat59 (FFmpeg, opened at first use)"
dpkg-deb --field "${debs[2]}" Recommends | grep -q 'espeak-ng' || fail "the leader does not recommend espeak-ng (announcements' text)"
if dpkg-deb --field "${debs[2]}" Depends | grep -qE 'libav(format|codec|util|filter|device)|libswresample'; then fail "the leader depends on FFmpeg (it must only recommend it)"; fi
if contents "${debs[1]}" | grep -q 'share/tutti\|tuttid'; then fail "the speaker package carries the leader's files"; fi

step "binaries: no toolchain path"
for program in tuttid tutti-follower tutti; do
    ldd ".build/static/release/$program" | grep -q /opt/swift && fail "$program loads a library from the toolchain"
    ldd ".build/static/release/$program" | grep -q 'not found' && fail "$program misses a library"
    ldd ".build/static/release/$program" | grep -q 'libstdc++' && fail "$program loads libstdc++ (scripts/build-static.sh links it in)"
done
ls -l .build/static/release/tuttid .build/static/release/tutti-follower .build/static/release/tutti | awk '{print $5, $9}'
# `tutti` parses JSON with TuttiCore's JSONValue, not Foundation: ICU's data
# made it 55 MiB installed; now 9 MiB.
installed=$(dpkg-deb --fsys-tarfile "${debs[0]}" | tar -tv ./usr/bin/tutti | awk '{print $3}')
echo "tutti installed: $installed bytes"
((installed < 10000000)) || fail "tutti is $installed bytes installed (Foundation linked again?)"

step "binaries: the code that runs comes first (link/code-order.txt)"
# Half of the first 100 functions the file lists lie within the first 64 KiB
# of .text when the link followed it (18-22 KB; without it, 160 KB).
for program in tuttid tutti-follower; do
    binary=.build/static/release/$program
    text=$(readelf -SW "$binary" | sed -n 's/.* \.text  *PROGBITS  *\([0-9a-f]*\) .*/\1/p')
    [ -n "$text" ] || fail "$program has no .text"
    median=$(awk 'NR == FNR { if (NF == 3) at[$3] = $1; next } ($1 in at) { print at[$1]; if (++n == 100) exit }' \
        <(nm --defined-only "$binary") link/code-order.txt | while read -r a; do echo $((16#$a - 16#$text)); done | sort -n | sed -n 50p)
    [ -n "$median" ] || fail "$program defines fewer than 50 of link/code-order.txt's functions"
    echo "$program: half of link/code-order.txt's first 100 functions within the first $median bytes of .text"
    ((median < 65536)) || fail "$program: the link did not follow link/code-order.txt"
done

step "bookworm root"
key=$(printf '%s\n' minbase bookworm "${root_packages[@]}" | sha256sum | cut -c1-16)
cache=/var/cache/tutti-test/bookworm-$key
if [ ! -e "$cache/etc/debian_version" ]; then
    rm -rf "$cache.tmp" && mkdir -p "$(dirname "$cache")"
    debootstrap --variant=minbase --include="$(IFS=,; echo "${root_packages[*]}")" bookworm "$cache.tmp" http://deb.debian.org/debian \
        >/tmp/tutti-debootstrap.log 2>&1 || { tail -20 /tmp/tutti-debootstrap.log; fail "debootstrap"; }
    rm -rf "$cache.tmp/var/cache/apt/archives/"*.deb
    mv "$cache.tmp" "$cache"
fi
root=$(mktemp -d /tmp/tutti-root-XXXXXX)
cleanup() { umount -R "$root/proc" 2>/dev/null || true; rm -rf "$root"; }
trap cleanup EXIT
cp -a "$cache/." "$root/"
# In the root: its own mount and PID namespaces with /proc; the host's loopback.
inroot() { unshare --mount --pid --fork --mount-proc="$root/proc" chroot "$root" "$@"; }
[ -e "$root/opt/swift" ] && fail "the root has a Swift toolchain"
if inroot sh -c 'command -v swift || ls /usr/lib/*/libswiftCore.so /usr/lib/swift 2>/dev/null' | grep -q .; then fail "the root has Swift"; fi

step "install"
# Every Depends is a Debian package the root has (minbase, or root_packages and theirs): no Swift.
for deb in "${debs[@]}"; do
    for dep in $(dpkg-deb --field "$deb" Depends | tr ',|' '\n\n' | sed 's/(.*//; s/ //g' | grep -v '^tutti'); do
        inroot dpkg-query -W -f='${Status}\n' "$dep" 2>/dev/null | grep -q 'install ok installed' \
            || fail "$deb depends on $dep, which the test root does not have: add it to root_packages"
    done
done
mkdir -p "$root/tmp/debs" && cp "${debs[@]}" "$root/tmp/debs/"
inroot sh -c 'dpkg -i /tmp/debs/*.deb' || fail "dpkg -i"
for group in audio gpio input; do
    inroot id -nG tutti | tr ' ' '\n' | grep -qx "$group" || fail "tutti is not in $group"
done
for unit in tutti-speaker tutti-leader; do
    [ -L "$root/etc/systemd/system/multi-user.target.wants/$unit.service" ] || fail "$unit.service is not enabled"
done
[ "$(inroot stat -c %U /var/lib/tutti)" = tutti ] || fail "/var/lib/tutti is not the tutti user's"
# A password or a room key is written into tutti.conf by hand: root and the services' group only.
conf_mode=$(inroot stat -c '%a %U %G' /etc/tutti/tutti.conf)
[ "$conf_mode" = "640 root tutti" ] || fail "/etc/tutti/tutti.conf is $conf_mode, not 640 root tutti"
inroot dpkg -i /tmp/debs/tutti_"$version"_"$arch".deb >/dev/null || fail "reinstalling tutti (postinst twice)"
du -sk "$root/usr/bin/tuttid" "$root/usr/bin/tutti-follower" "$root/usr/bin/tutti" "$root/usr/share/tutti/web"
inroot dpkg-query -W -f='${Package} ${Installed-Size} KiB\n' tutti tutti-speaker tutti-leader

step "versions and packaged settings"
[ "$(inroot tutti-follower --version)" = "tutti-follower $version" ] || fail "tutti-follower --version"
[ "$(inroot tuttid --version)" = "tuttid $version" ] || fail "tuttid --version"
inroot tuttid leader --print-config | grep -E '^music = /var/lib/tutti/music +# /etc/tutti/tutti.conf:[0-9]+$' \
    || fail "the leader does not read /etc/tutti/tutti.conf"
inroot tutti doctor --help >/dev/null || fail "tutti doctor --help"

step "systemd-analyze verify"
# The installed units, on this host (systemd is not running; verify needs no
# manager, but --root= wants the root's own systemd, which minbase lacks):
# ExecStart= points into the root so the binaries it checks are the packaged
# ones. verify exits 0 on a key it ignores, so any output is a failure too.
units=$(mktemp -d /tmp/tutti-units-XXXXXX)
for unit in tutti-speaker tutti-leader; do
    sed "s|^ExecStart=/usr/bin/|ExecStart=$root/usr/bin/|" "$root/lib/systemd/system/$unit.service" > "$units/$unit.service"
done
said=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$units"/*.service 2>&1) || fail "systemd-analyze verify: $said"
rm -rf "$units"
[ -z "$said" ] || fail "systemd-analyze verify: $said"

step "playback: leader → speaker (file DAC) as the tutti user"
port=$((20000 + RANDOM % 20000))
python3 - "$root/tmp/tone.wav" <<'PY'
import struct, sys, random
# 2 s of 48 kHz stereo noise: any sample that reaches the DAC is recognisable.
rng = random.Random(13)
frames = 96000
data = struct.pack('<%dh' % (frames * 2), *[rng.randint(-20000, 20000) for _ in range(frames * 2)])
header = b'RIFF' + struct.pack('<I', 36 + len(data)) + b'WAVEfmt ' + struct.pack('<IHHIIHH', 16, 1, 2, 48000, 192000, 4, 16) + b'data' + struct.pack('<I', len(data))
open(sys.argv[1], 'wb').write(header + data)
PY
# The two lines a Pi's owner edits (docs/pi.md), plus the test's own leader.
sed -i "s|^#name = .*|name = test-room|; s|^#output = .*|output = file:/var/lib/tutti/out.raw|; s|^#leader = auto|leader = 127.0.0.1:$port|" "$root/etc/tutti/tutti.conf"
: > "$root/tmp/leader.conf"
inroot sh -c "
    tuttid leader --config /tmp/leader.conf --play /tmp/tone.wav --codec pcm --listen 127.0.0.1:$port \
        --control off --mpd off --web off --no-announce --buffer-ms 1000 --start-ms 1000 > /tmp/leader.log 2>&1 &
    leader=\$!
    setpriv --reuid tutti --regid tutti --init-groups tutti-follower --no-steer --no-realtime > /tmp/speaker.log 2>&1 &
    speaker=\$!
    wait \$leader; status=\$?
    sleep 1; kill \$speaker; wait \$speaker
    exit \$status
" || { cat "$root/tmp/leader.log" "$root/tmp/speaker.log"; fail "the leader failed"; }
[ "$(inroot stat -c %U /var/lib/tutti/out.raw)" = tutti ] || fail "the speaker did not run as tutti"
python3 - "$root/tmp/tone.wav" "$root/var/lib/tutti/out.raw" <<'PY' || { cat "$root/tmp/leader.log" "$root/tmp/speaker.log"; exit 1; }
import sys
wav = open(sys.argv[1], 'rb').read()[44:]
out = open(sys.argv[2], 'rb').read()
# PCM codec, no steering, full volume: the DAC gets the file's samples bit for bit.
at = out.find(wav[:19200])
if at < 0 or at % 4:
    sys.exit("test-packages: FAIL: the first 100 ms of the track never reached the DAC (%d bytes played)" % len(out))
heard = 0
while heard < len(wav) and at + heard < len(out) and out[at + heard] == wav[heard]: heard += 1
print("speaker played %.3f s of the 2 s track bit-exact (starting %.3f s into its output)" % (heard / 192000, at / 192000))
if heard < len(wav): sys.exit("test-packages: FAIL: only %d of %d bytes arrived intact" % (heard, len(wav)))
PY

step "upgrade keeps the edited tutti.conf; a disabled unit stays disabled"
upgrade=$(mktemp -d /tmp/tutti-upgrade-XXXXXX)
scripts/package.sh --fast --skip-build --version "$version+1" --out "$upgrade" >/dev/null
# What `systemctl disable` does (there is no systemctl in the root): the link goes.
rm "$root/etc/systemd/system/multi-user.target.wants/tutti-leader.service"
cp "$upgrade"/*.deb "$root/tmp/debs/" && rm -rf "$upgrade"
inroot sh -c "dpkg -i /tmp/debs/*_${version}+1_$arch.deb" >/dev/null || fail "upgrade"
grep -qx 'name = test-room' "$root/etc/tutti/tutti.conf" || fail "the upgrade lost the edited tutti.conf"
conf_mode=$(inroot stat -c '%a %U %G' /etc/tutti/tutti.conf)
[ "$conf_mode" = "640 root tutti" ] || fail "after the upgrade /etc/tutti/tutti.conf is $conf_mode, not 640 root tutti"
[ "$(inroot tuttid --version)" = "tuttid $version" ] || fail "upgraded binary"
[ -L "$root/etc/systemd/system/multi-user.target.wants/tutti-speaker.service" ] || fail "the upgrade disabled tutti-speaker"
[ ! -e "$root/etc/systemd/system/multi-user.target.wants/tutti-leader.service" ] || fail "the upgrade re-enabled a disabled unit"

step "purge"
rm "$root"/var/lib/tutti/out.raw*     # the test's own file; music or files someone adds stay
inroot dpkg --purge tutti-leader tutti-speaker tutti >/dev/null || fail "purge"
for path in etc/tutti var/lib/tutti lib/systemd/system/tutti-speaker.service \
            etc/systemd/system/multi-user.target.wants/tutti-speaker.service \
            var/lib/systemd/deb-systemd-helper-enabled/tutti-speaker.service.dsh-also; do
    [ ! -e "$root/$path" ] && [ ! -L "$root/$path" ] || fail "/$path is left after purge: $(ls -la "$root/$path" 2>&1 | head -5)"
done
inroot dpkg-statoverride --list /etc/tutti/tutti.conf >/dev/null && fail "the purge left tutti.conf's statoverride"
inroot sh -c 'dpkg -i /tmp/debs/*_'"$version"'_'"$arch"'.deb' >/dev/null || fail "installing again after a purge"
[ -L "$root/etc/systemd/system/multi-user.target.wants/tutti-speaker.service" ] || fail "not enabled after reinstall"

step "done"
