#!/usr/bin/env bash
# Sets up and runs the whole test suite.
# TUTTI_TEST_TIMEOUT (seconds, default 2400): a run that takes longer is
# stopped and the tests still running are named, instead of a silent hang.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
log=$(mktemp /tmp/tutti-test-XXXXXX.log)
status=0
timeout --kill-after=30 "${TUTTI_TEST_TIMEOUT:-2400}" stdbuf -oL -eL swift test --skip-build "$@" 2>&1 | tee "$log" || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "tests stopped after ${TUTTI_TEST_TIMEOUT:-2400} s; still running:" >&2
    # A test that started and neither passed nor failed.
    grep -E '^(◇|✔|✘) (Test|Suite) ' "$log" | grep -v 'Test case passing' \
        | sed -E 's/^(◇|✔|✘) (Test|Suite) (.*) (started|passed|failed).*$/\1 \3/' \
        | awk '{ mark = $1; $1 = ""; if ($0 == " run") next; if (mark == "◇") open[$0] = 1; else delete open[$0] } END { for (t in open) print "  " t }' >&2
fi
rm -f "$log"
# The install test: packages built, checked and installed into a bookworm root
# (docs/packaging.md). Last, and only when the suite passed: it takes minutes.
if [ "$status" -eq 0 ] && [ -z "${TUTTI_SKIP_PACKAGE_TEST:-}" ] && [ "$#" -eq 0 ]; then
    scripts/test-packages.sh || status=$?
fi
exit "$status"
