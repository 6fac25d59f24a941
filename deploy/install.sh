#!/usr/bin/env bash
# Builds Tutti on the board and installs it where the packages would (run as
# root). Prefer the packages (scripts/package.sh, docs/pi.md): they need no
# toolchain on the board and remove cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release
# tutti-follower beside tuttid: `tuttid follower` runs it (a speaker without Foundation, about half the memory).
install -m 0755 .build/release/tuttid .build/release/tutti .build/release/tutti-follower /usr/bin/
# The web app, where tuttid looks for it beside itself (bin/../share/tutti/web).
rm -rf /usr/share/tutti/web && mkdir -p /usr/share/tutti && cp -r web /usr/share/tutti/web
sh deploy/debian/tutti.postinst configure
# 0640 root:tutti: a password or a room key is written here by hand (the user exists now).
[ -e /etc/tutti/tutti.conf ] || install -D -m 0640 -g tutti deploy/tutti.conf /etc/tutti/tutti.conf
install -m 0644 deploy/tutti-leader.service deploy/tutti-speaker.service /etc/systemd/system/
echo "installed; edit /etc/tutti/tutti.conf, then enable one of: systemctl enable --now tutti-speaker / tutti-leader (web app on port 8080)"
