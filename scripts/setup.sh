#!/usr/bin/env bash
# Installs what Tutti needs to build, run and test on Debian 12 (idempotent,
# non-interactive). The Swift toolchain itself must already be on PATH.
set -euo pipefail

packages=(
  pkg-config
  libasound2-dev libmpg123-dev libopus-dev libsoxr-dev libsqlite3-dev libavahi-client-dev   # C libraries
  libflac-dev libgpiod-dev libcivetweb-dev zlib1g-dev librubberband-dev libsodium-dev libssl-dev libexpat1-dev  # web server; speed and pitch; room key; libcrypto: the scan's SHA-256 (opened at first use); expat: podcast feeds
  libogg-dev                                                                                # previews: Ogg pages for Opus (opened at first use)
  libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libswscale-dev            # FFmpeg: AAC, ALAC, Ogg, Opus, WMA, WavPack, APE, AIFF, DSD; HLS; Sendspin covers (opened at first use)
  libcurl4-openssl-dev dpkg-dev lintian debootstrap binutils systemd                              # packages: the leader's static link, scripts/test-packages.sh
  libstdc++-12-dev                                                                          # packages: libstdc++.a, linked in by scripts/build-static.sh
  alsa-utils lame flac id3v2 mpd mpc python3 python3-pip                                    # tests: encoders, taggers, MPD peers, test servers
  ffmpeg                                                                                    # tests: the AAC, ALAC, Ogg, Opus, WMA, WavPack, AIFF corpus and HLS streams
  opus-tools oggz-tools                                                                     # tests: previews' Ogg Opus checked by opusinfo and oggz-validate (OggOpusWriterTests)
  ncmpcpp tmux openssl ca-certificates util-linux curl                                      # tests: ncmpcpp in tmux; https certificates, the CA bundle, unshare; curl as a raw HTTP client (WebServerHeaderTests)
  avahi-daemon dbus                                                                         # mDNS: discovery tests run their own daemon on loopback
  avahi-utils                                                                               # mDNS: avahi-browse sees what a speaker announces (a listening Sendspin player)
  shairport-sync                                                                            # AirPlay: the leader's managed receivers (AirPlayTests)
  chromium chromium-driver python3-selenium                                                 # the web app's tests drive a real browser
  fonts-noto-cjk                                                                            # the web app in Korean: Hangul in its screenshots
  snapclient procps                                                                                # Snapcast compatibility: the stock client as a room
  pulseaudio libasound2-plugins                                                             # faults: a DAC that can be unplugged (ALSA's pulse plugin)
  pulseaudio-utils                                                                          # Play here: parec records what Chromium plays (PlayHereWebTests), pactl
  iproute2                                                                                  # pairing: two hosts in network namespaces (scripts/netns-pairing-test.sh)
  libportaudio2                                                                             # Sendspin: the stock `sendspin` CLI's audio output (into a PulseAudio null sink)
  espeak-ng                                                                                 # announcements: text spoken by the leader (AnnouncementTests), a voice per language, Korean included
  python3-jinja2 python3-yaml                                                               # announcements: docs/sound.md's Home Assistant rest_command rendered as Home Assistant renders it (Jinja2)
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
# axe-core in Selenium, for Debian's python3 (the browser tests run under it): the web app's accessibility (i18n_test.py).
/usr/bin/python3 -c 'import axe_selenium_python' 2>/dev/null || /usr/bin/python3 -m pip install --quiet axe-selenium-python \
  || /usr/bin/python3 -m pip install --quiet --break-system-packages axe-selenium-python
# feedgen writes the podcast feeds (RSS with itunes:*, Atom) the podcast tests serve.
python3 -c 'import feedgen.feed' 2>/dev/null || python3 -m pip install --quiet feedgen \
  || python3 -m pip install --quiet --break-system-packages feedgen
# pyatv: a real AirPlay sender, the phone in AirPlayTests.
python3 -c 'import pyatv' 2>/dev/null || python3 -m pip install --quiet pyatv \
  || python3 -m pip install --quiet --break-system-packages pyatv
# aiosendspin and sendspin (Python >= 3.12; Debian 12 has 3.11) for the Sendspin tests: a venv under
# the cache, where TuttiTestSupport's SendspinPython looks (and makes it when missing).
sendspin_venv="${XDG_CACHE_HOME:-$HOME/.cache}/tutti/sendspin-venv"
if ! "$sendspin_venv/bin/python3" -c 'import aiosendspin.noise, aiosendspin.client.time_sync, av, PIL' 2>/dev/null; then
  py312=""
  pyenv_root="$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"
  for v in "$pyenv_root"/versions/3.12*; do [ -x "$v/bin/python3" ] && py312="$v/bin/python3"; done
  [ -n "$py312" ] || py312="$(command -v python3.12 || true)"
  if [ -n "$py312" ]; then
    rm -rf "$sendspin_venv" && mkdir -p "$(dirname "$sendspin_venv")"
    "$py312" -m venv "$sendspin_venv" && "$sendspin_venv/bin/pip" install --quiet aiosendspin==10.2.1 sendspin==9.0.0 pillow
  else
    echo "setup: no Python 3.12 (pyenv install 3.12.1): the Sendspin tests against aiosendspin will skip" >&2
  fi
fi
