#!/usr/bin/env bash
# Builds the fuzz targets (Fuzz/, docs/security.md) with libFuzzer and
# AddressSanitizer, then runs each for N seconds from the committed seeds
# (Fuzz/corpus/TARGET) plus the corpus earlier runs grew (.build/fuzz/corpus).
#
#   scripts/fuzz.sh [--seconds N] [--jobs J] [TARGET...]
#
# Prints one line per target: executions, executions per second, crashes;
# a crash's input is kept in .build/fuzz/crashes/TARGET/ and the exit
# status is 1. Reproduce one with
#   .build/fuzz/debug/tutti-fuzz TARGET .build/fuzz/crashes/TARGET/crash-…
# Not part of CI (scripts/test.sh): CI runs the seeds through the same
# targets without libFuzzer (TuttiFuzzTests).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
jobs=1
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=($(ls Fuzz/corpus))

scratch=.build/fuzz
swiftc=$(readlink -f "$(command -v swiftc)")
runtime=$(ls "$(dirname "$swiftc")"/../lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a 2>/dev/null | head -1)
[ -n "$runtime" ] || { echo "fuzz.sh: the toolchain has no libclang_rt.fuzzer_no_main" >&2; exit 2; }

# Coverage instrumentation as -sanitize=fuzzer sets it, without its runtime:
# that one brings a main() of its own, which clashes with SwiftPM's (Fuzz/Driver).
# ld.gold's warnings about __asan_* symbols are harmless.
echo "building tutti-fuzz (libFuzzer + AddressSanitizer) in $scratch"
TUTTI_FUZZ=1 swift build --product tutti-fuzz --scratch-path "$scratch" \
    -Xswiftc -sanitize=address \
    -Xswiftc -sanitize-coverage=edge,indirect-calls,trace-cmp,inline-8bit-counters,pc-table \
    -Xlinker "$runtime" -Xlinker -lstdc++ 2>&1 | grep -v -e 'ld.gold: warning: Cannot export local symbol' -e 'prohibited flag' || true
binary="$scratch/debug/tutti-fuzz"
[ -x "$binary" ] || { echo "fuzz.sh: the build failed" >&2; exit 2; }

# Swift's runtime keeps metadata caches for the life of the process: not leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}"
# ASan and libFuzzer report a crash themselves; Swift's backtracer would
# outlive the crashed process (measured: left sleeping for an hour).
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=no}"

run_one() {
    local target="$1"
    local corpus="$scratch/corpus/$target" crashes="$scratch/crashes/$target" log="$scratch/logs/$target.log"
    mkdir -p "$corpus" "$crashes" "$(dirname "$log")"
    local max_len=4096 extra=()
    case "$target" in id3|flac|wav) max_len=16384 ;; esac
    # The -exec targets run a session against a playing leader: about 20 a
    # second under ASan, too few for libFuzzer to lengthen its inputs step by
    # step (280 bytes after 12,000), so sessions of any length from the start.
    case "$target" in *-exec) extra=(-len_control=0) ;; esac
    # Crashes, timeouts, leaks and OOMs count; a slow unit (-report_slow_units,
    # 10 s) is kept for a look but is no failure: on a loaded machine a stall
    # of the whole process makes one (measured: one that took 10 s ran in 0.2 s).
    count_failures() { ls "$crashes" | grep -c -E '^(crash|timeout|leak|oom)-' || true; }
    local before; before=$(count_failures)
    "$binary" "$target" -max_total_time="$seconds" -max_len="$max_len" "${extra[@]}" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" "Fuzz/corpus/$target" >"$log" 2>&1 || true
    local after; after=$(count_failures)
    local slow; slow=$(ls "$crashes" | grep -c '^slow-unit-' || true)
    local runs rate
    runs=$(awk '/^stat::number_of_executed_units:/ {print $2}' "$log" | tail -1)
    rate=$(awk '/^stat::average_exec_per_sec:/ {print $2}' "$log" | tail -1)
    if [ -z "$runs" ]; then # a crash ends the run before the final statistics
        runs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#'); rate=$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    fi
    printf '%-13s executions %10s   exec/s %7s   crashes %d%s\n' "$target" "${runs:-0}" "${rate:-0}" $((after - before)) \
        "$([ "$slow" -gt 0 ] && echo "   (slow units kept: $slow)")"
    [ "$after" -eq "$before" ] || { grep -m1 -E 'ERROR: AddressSanitizer|Fatal error|Precondition failed|deadly signal' "$log" | sed 's/^/    /'; return 1; }
}

status=0
running=0
for target in "${targets[@]}"; do
    [ -d "Fuzz/corpus/$target" ] || { echo "fuzz.sh: no target '$target' (Fuzz/corpus/ has $(ls Fuzz/corpus | tr '\n' ' '))" >&2; exit 2; }
    run_one "$target" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n || status=1; running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n || status=1; running=$((running - 1)); done
exit "$status"
