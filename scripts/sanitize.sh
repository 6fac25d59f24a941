#!/usr/bin/env bash
# Runs tests under ThreadSanitizer and AddressSanitizer (docs/security.md),
# each built in its own scratch path (.build/tsan, .build/asan), so the
# ordinary .build/debug is untouched.
#
#   scripts/sanitize.sh [thread] [address] [-- SWIFT-TEST-ARGS...]
#
# Without SWIFT-TEST-ARGS it runs the subset below: every pure-logic suite,
# the parsers' seeds, and the daemon suites that drive many threads at once
# (control clients, groups, MPD, Snapcast, the web app, a leader with
# followers). The suites that measure sync to microseconds (SyncTests,
# SoundTests, AudioPathTests), the benchmarks, discovery (avahi-daemon) and
# the package test are left out: under TSan's 5–15× slowdown they fail on
# timing, not on races (measured: SoundTests' clicks 1.3 ms apart, bound
# 0.2 ms), and they add half an hour. The subset takes about 5 min to
# build and 4 min to run under TSan on 2 cores.
# Prints each distinct report (its first frames in our code) and exits
# non-zero when a sanitizer reported anything or a test failed.
set -uo pipefail
cd "$(dirname "$0")/.."

modes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case "$1" in thread|address) modes+=("$1") ;; *) echo "sanitize.sh: thread or address, not '$1'" >&2; exit 2 ;; esac
    shift
done
[ "${1:-}" = "--" ] && shift
[ ${#modes[@]} -gt 0 ] || modes=(thread address)
default_filter='TuttiCoreTests|TuttiFuzzTests|TuttiStreamsTests|TuttiInputTests|TuttiWebTests|TuttiLibraryTests\.(PlaylistTests|M3UTests|ScanTests)|TuttiDaemonTests\.(ControlPlaneTests|ControlTests|GroupTests|MPDProtocolTests|MPDClientTests|SnapcastTests|ButtonTests|WebAppTests|ConfigFileTests|CommandLineTests)'
args=("$@")
# GroupTests' party-mode test measures rooms within a millisecond: a timing check, like the suites left out.
[ ${#args[@]} -gt 0 ] || args=(--filter "$default_filter" --skip "groupsPlayTheirOwnStreamsAndPartyModeSyncsEveryRoom")

scripts/setup.sh >/dev/null
status=0
for mode in "${modes[@]}"; do
    case "$mode" in thread) scratch=.build/tsan; kind=ThreadSanitizer ;; address) scratch=.build/asan; kind=AddressSanitizer ;; esac
    log="$scratch/sanitize.log"
    mkdir -p "$scratch"
    echo "== $kind: building in $scratch"
    start=$(date +%s)
    if ! swift build --build-tests --sanitize="$mode" --scratch-path "$scratch" 2>&1 | grep -E 'error|warning: [^p]' ; then :; fi
    built=$(date +%s)
    # halt_on_error=0: every report of a run, not just the first. Swift's
    # runtime keeps metadata for the life of the process: not leaks.
    # Known false reports (accesses inside a Synchronization.Mutex, which TSan cannot see): tsan-suppressions.txt.
    TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan-suppressions.txt ${TSAN_OPTIONS:-}" \
    ASAN_OPTIONS="detect_leaks=0 ${ASAN_OPTIONS:-}" \
        timeout --kill-after=30 "${TUTTI_SANITIZE_TIMEOUT:-3600}" \
        swift test --skip-build --sanitize="$mode" --scratch-path "$scratch" "${args[@]}" >"$log" 2>&1
    test_status=$?
    done_at=$(date +%s)
    reports=$(grep -c -E "^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer)" "$log")
    passed=$(grep -E '^✔ Test run with' "$log" | tail -1)
    failed=$(grep -E '^✘ Test run with' "$log" | tail -1)
    echo "$kind: build $((built - start)) s, tests $((done_at - built)) s; ${passed}${failed}; $reports report(s); log $log"
    if [ "$reports" -gt 0 ]; then
        # One line per distinct report: its kind and the first frames in Tutti's code.
        awk '/^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer)/ { kind = $0; n = 0; line = ""; next }
             kind != "" && /#[0-9]+ / && /Tutti|tutti/ && n < 2 { sub(/^ *#[0-9]+ [^ ]+ in /, ""); sub(/ \/.*\//, " "); line = line (n ? " <- " : "") $0; n++ }
             kind != "" && /^SUMMARY/ { print "  " kind; print "      " line; kind = "" }' "$log" | sort | uniq -c | sort -rn | head -40
        status=1
    fi
    [ "$test_status" -eq 0 ] || { echo "$kind: swift test exited $test_status"; grep -E '^✘ Test [^r]' "$log" | head -20; status=1; }
done
exit "$status"
