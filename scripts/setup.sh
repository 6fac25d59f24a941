#!/usr/bin/env bash
# Installs what Tutti needs to build, run and test on Debian 12 (idempotent,
# non-interactive). The Swift toolchain itself must already be on PATH.
set -euo pipefail

packages=(
  pkg-config
  libasound2-dev libmpg123-dev libopus-dev libsoxr-dev libsqlite3-dev libavahi-client-dev   # C libraries
<<<<<<< HEAD
  libflac-dev libgpiod-dev libcivetweb-dev zlib1g-dev librubberband-dev libsodium-dev  # web server; speed and pitch; room key
=======
  libflac-dev libgpiod-dev libcivetweb-dev zlib1g-dev libssl-dev                            # the web app's server; libcrypto: the scan's SHA-256
>>>>>>> 7aff374 (Library: libcrypto SHA-256 for content hashes, byte-ordered walk merged with the library's rows (no dictionary of paths), malloc_trim after scans and long MPD answers; MPD answers written from SQLite's bytes; lsinfo skips subfolders by index; list from indexes; web lists cached encoded; ranking tests; docs)
  libcurl4-openssl-dev dpkg-dev lintian debootstrap binutils systemd                              # packages: the leader's static link, scripts/test-packages.sh
  alsa-utils lame flac id3v2 mpd mpc python3 python3-pip                                    # tests: encoders, taggers, MPD peers, test servers
  ncmpcpp tmux openssl ca-certificates util-linux                                           # tests: ncmpcpp in tmux; https certificates, the CA bundle, unshare
  avahi-daemon dbus                                                                         # mDNS: discovery tests run their own daemon on loopback
  chromium chromium-driver python3-selenium                                                 # the web app's tests drive a real browser
  snapclient procps                                                                                # Snapcast compatibility: the stock client as a room
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v swift >/dev/null || { echo "setup: the Swift toolchain (swift) is not on PATH" >&2; exit 1; }

# python-mpd2, the second real MPD client the MPD tests drive; python-snapcast
# (PyPI "snapcast"), the library Home Assistant's Snapcast integration is built on.
python3 -c 'import mpd' 2>/dev/null || python3 -m pip install --quiet python-mpd2 \
  || python3 -m pip install --quiet --break-system-packages python-mpd2
python3 -c 'import snapcast.control' 2>/dev/null || python3 -m pip install --quiet snapcast \
  || python3 -m pip install --quiet --break-system-packages snapcast
