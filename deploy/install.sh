#!/usr/bin/env bash
# Builds Tutti and installs the binaries and service units (run as root on the board).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release
# tutti-follower beside tuttid: `tuttid follower` runs it (a speaker without Foundation, about half the memory).
install -m 0755 .build/release/tuttid .build/release/tutti .build/release/tutti-follower /usr/local/bin/
# The web app, where tuttid looks for it beside itself (bin/../share/tutti/web).
rm -rf /usr/local/share/tutti/web && mkdir -p /usr/local/share/tutti && cp -r web /usr/local/share/tutti/web
id tutti >/dev/null 2>&1 || useradd --system --groups audio --home /var/lib/tutti --create-home tutti
install -m 0644 deploy/tutti-leader.service deploy/tutti-follower.service /etc/systemd/system/
echo "installed; enable one of: systemctl enable --now tutti-follower (speaker) / tutti-leader (source, web app on port 8080)"
