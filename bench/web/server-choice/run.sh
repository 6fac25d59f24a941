#!/bin/sh
# civetweb 1.15 against libwebsockets 4.1.6 for the phone web app: builds both
# bench servers and runs bench.py (3 runs each by default, medians).
#
#   bench/web/server-choice/run.sh                        # about 1 min 30 s
#   bench/web/server-choice/run.sh --runs 1
#   bench/web/server-choice/run.sh --civetweb-timeout-ms 10000
#
# Needs libcivetweb-dev, libwebsockets-dev, gcc, python3 (standard library
# only). Binaries go to $BUILD (default /tmp/tutti-bench-server-choice).
# Everything runs under nice -n 10.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-/tmp/tutti-bench-server-choice}
mkdir -p "$BUILD"

gcc -O2 -Wall -Wextra -o "$BUILD/civetweb_server" "$here/civetweb_server.c" \
    -lcivetweb -lpthread
gcc -O2 -Wall -Wextra -o "$BUILD/lws_server" "$here/lws_server.c" \
    $(pkg-config --cflags --libs libwebsockets) -lpthread

echo "libraries:"
for f in /usr/lib/x86_64-linux-gnu/libcivetweb.so.1.15.0 \
         /usr/lib/x86_64-linux-gnu/libwebsockets.so.17; do
    [ -e "$f" ] || f=$(ls /usr/lib/*/"$(basename "$f")" 2>/dev/null | head -n 1)
    [ -n "$f" ] && ls -lL "$f"
done
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

exec nice -n 10 /usr/bin/python3 "$here/bench.py" \
    --civetweb "$BUILD/civetweb_server" --lws "$BUILD/lws_server" "$@"
