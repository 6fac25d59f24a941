#!/usr/bin/env bash
# Builds the Debian packages into dist/ for this machine's architecture:
#   tutti          the `tutti` client and `tutti doctor` (run by tutti-follower, else tuttid), /etc/tutti/tutti.conf, the tutti user
#   tutti-speaker  tutti-follower and tutti-speaker.service (a speaker)
#   tutti-leader   tuttid, the web app and tutti-leader.service (the source)
# The Swift runtime and libstdc++ are linked in (scripts/build-static.sh), so a board needs no toolchain;
# Depends: lists only the Debian libraries the binaries load (dpkg-shlibdeps).
#
#   scripts/package.sh [--version V] [--skip-build] [--fast] [--out DIR] [--arch ARCH --bin DIR]
# --fast compresses with gzip -1 instead of xz (tests: xz takes minutes on these binaries).
# --arch/--bin package binaries built elsewhere (an aarch64 cross build, see docs/pi.md).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/TuttiCore/Version.swift)
build=1 arch=$(dpkg --print-architecture) bin="" out=dist compression=(-Zxz)
while (($#)); do
    case "$1" in
        --version) version=$2; shift 2 ;;
        --skip-build) build=0; shift ;;
        --out) out=$2; shift 2 ;;
        --fast) compression=(-Zgzip -z1); shift ;;
        --arch) arch=$2; shift 2 ;;
        --bin) bin=$2; build=0; shift 2 ;;
        *) echo "package.sh: unknown option $1" >&2; exit 64 ;;
    esac
done
scratch=.build/static
if [ -z "$bin" ]; then
    # Its own build folder: the static link must not disturb `swift build`'s.
    if ((build)); then scripts/build-static.sh; fi
    bin=$scratch/release
fi
for program in tuttid tutti-follower tutti; do
    [ -x "$bin/$program" ] || { echo "package.sh: $bin/$program is missing (build first, or drop --skip-build)" >&2; exit 1; }
done

strip_tool=strip
[ "$arch" = arm64 ] && [ "$(dpkg --print-architecture)" != arm64 ] && strip_tool=aarch64-linux-gnu-strip
maintainer="Tutti authors <tutti@example.org>"
work=$(mktemp -d /tmp/tutti-package-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# stage PACKAGE: an empty tree with its doc folder (copyright, changelog).
stage() {
    local root=$work/$1
    install -d "$root/DEBIAN" "$root/usr/share/doc/$1"
    install -m 0644 deploy/debian/copyright "$root/usr/share/doc/$1/copyright"
    printf '%s (%s) unstable; urgency=medium\n\n  * Release %s (see the git history).\n\n -- %s  %s\n' \
        "$1" "$version" "$version" "$maintainer" "$(date -R -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}")" \
        | gzip -9n > "$root/usr/share/doc/$1/changelog.gz"
    for script in postinst prerm postrm; do
        [ -f "deploy/debian/$1.$script" ] && install -m 0755 "deploy/debian/$1.$script" "$root/DEBIAN/$script"
    done
    echo "$root"
}

# program ROOT NAME: a stripped binary in usr/bin.
program() {
    install -D -m 0755 "$bin/$2" "$1/usr/bin/$2"
    "$strip_tool" --strip-unneeded --remove-section=.comment --remove-section=.note "$1/usr/bin/$2"
}

# shlibs ROOT: the Debian packages of the libraries its binaries load.
shlibs() {
    local root=$1 dir
    dir=$(mktemp -d "$work/shlibs-XXXXXX")
    mkdir -p "$dir/debian" && printf 'Source: tutti\n\nPackage: x\nArchitecture: any\n' > "$dir/debian/control"
    # The binaries' packed relocations (DT_RELR, Package.swift's leanLink) need
    # glibc 2.36; dpkg-shlibdeps sees only symbol versions, so raise its libc6.
    (cd "$dir" && dpkg-shlibdeps -O --warnings=0 "${@:2}" "$root"/usr/bin/*) | sed -n 's/^shlibs:Depends=//p' |
        sed 's/libc6 (>= 2\.3[0-5])/libc6 (>= 2.36)/'
}

# control ROOT NAME DEPENDS RECOMMENDS DESCRIPTION...
control() {
    local root=$1 name=$2 depends=$3 recommends=$4; shift 4
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
        echo "Depends: $depends"
        [ -z "$recommends" ] || echo "Recommends: $recommends"
        echo "Section: sound"
        echo "Priority: optional"
        echo "Homepage: https://github.com/tutti-audio/tutti"
        printf 'Description: %s\n' "$1"; shift
        for line in "$@"; do echo " $line"; done
    } > "$root/DEBIAN/control"
}

build_deb() {
    # Owned by root whoever builds; sorted, so two builds are the same bytes.
    dpkg-deb --root-owner-group "${compression[@]}" --build "$1" "$out/${2}_${version}_${arch}.deb" >/dev/null
    echo "$out/${2}_${version}_${arch}.deb"
}

rm -f "$out"/tutti*_"$arch".deb

# tutti: what every box gets.
root=$(stage tutti)
program "$root" tutti
# 0640: a password or a room key is written here by hand. The tutti group (made
# by postinst, so not in the archive) is given read access there, by dpkg-statoverride.
install -D -m 0640 deploy/tutti.conf "$root/etc/tutti/tutti.conf"
echo /etc/tutti/tutti.conf > "$root/DEBIAN/conffiles"
# A password or a room key is written into it by hand (docs/security.md): not 0644 on purpose.
install -d "$root/usr/share/lintian/overrides"
echo "tutti: non-standard-file-perm 0640 != 0644 [etc/tutti/tutti.conf]" > "$root/usr/share/lintian/overrides/tutti"
chmod 0644 "$root/usr/share/lintian/overrides/tutti"
install -D -m 0644 README.md "$root/usr/share/doc/tutti/README.md"
install -m 0644 docs/pi.md "$root/usr/share/doc/tutti/pi.md"
install -D -m 0644 hardware/buttons.conf "$root/usr/share/doc/tutti/examples/buttons.conf"
control "$root" tutti "adduser, $(shlibs "$root")" "" \
    "synchronised multi-room audio: client, doctor and settings" \
    "Tutti plays music in sync on several speakers: a leader streams Opus to" \
    "followers that play it through their DACs at the same instant." \
    "." \
    "This package has the tutti command (control, and 'tutti doctor' to check a" \
    "speaker's setup), /etc/tutti/tutti.conf, and the tutti system user."
build_deb "$root" tutti

# tutti-speaker: a speaker's daemon, without the leader's libraries.
root=$(stage tutti-speaker)
program "$root" tutti-follower
install -D -m 0644 deploy/tutti-speaker.service "$root/lib/systemd/system/tutti-speaker.service"
# libFLAC is opened at the first FLAC stream from a Sendspin server (dlopen): named here.
control "$root" tutti-speaker "tutti (= $version), $(shlibs "$root"), libflac12, init-system-helpers (>= 1.54~)" "avahi-daemon, shairport-sync" \
    "synchronised multi-room audio: speaker" \
    "The speaker daemon (tutti-follower) and its service: it finds the leader" \
    "over mDNS, keeps a model of its clock and plays the stream through ALSA," \
    "steering for the DAC's drift. Configure it in /etc/tutti/tutti.conf."
build_deb "$root" tutti-speaker

# tutti-leader: the source, its library, control surfaces and web app.
root=$(stage tutti-leader)
program "$root" tuttid
install -d "$root/usr/share/tutti"
cp -r web "$root/usr/share/tutti/web"
find "$root/usr/share/tutti/web" -type d -exec chmod 0755 {} + && find "$root/usr/share/tutti/web" -type f -exec chmod 0644 {} +
install -D -m 0644 deploy/tutti-leader.service "$root/lib/systemd/system/tutti-leader.service"
# libcurl (network streams), librubberband (speed and pitch), libFLAC (FLAC
# files, Sendspin FLAC) and libogg (the web app's previews) are opened when
# first used, not linked, so dpkg-shlibdeps cannot see them: named here.
# shairport-sync: the AirPlay receivers (airplay = yes in tutti.conf); without it the leader says so and goes on.
# FFmpeg (libavformat59 and the libraries it pulls in, about 30 MiB) is opened
# at the first AAC, ALAC, Ogg, Opus, WMA… file or HLS stream: recommended, so a
# leader that plays MP3 and FLAC only can do without it.
# libswscale6 (FFmpeg's scaler, opened at the first cover a Sendspin display asks for): recommended too.
# espeak-ng (a program the leader runs to speak an announcement's text, about 10 MiB with its voices):
# recommended; without it a text announcement says to install it, and chimes and URLs still play.
control "$root" tutti-leader "tutti (= $version), $(shlibs "$root"), libcurl4 (>= 7.85.0), librubberband2, libflac12, libogg0, init-system-helpers (>= 1.54~)" "avahi-daemon, libavformat59, libswscale6, espeak-ng" \
    "synchronised multi-room audio: leader and web app" \
    "The leader daemon (tuttid): a music library, queues and groups, Opus" \
    "streams to every speaker, JSON-RPC and MPD control, and the phone web app" \
    "on port 8080. Configure it in /etc/tutti/tutti.conf."
build_deb "$root" tutti-leader
