#!/usr/bin/env bash
# Runs one libFuzzer target; meson's fuzz suite and scripts/fuzz.sh both use it.
#   run_fuzz.sh replay TARGET_EXE GEN_CORPUS   every seed and regression input, once
#   run_fuzz.sh fuzz   TARGET_EXE GEN_CORPUS   fuzz from the seeds for FUZZ_SECONDS (20)
# Seeds are captured from a real transfer by GEN_CORPUS at every run, so they follow
# the current wire format. Regression inputs live in test/fuzz/regressions/<target>/
# (replay only: fuzzing from an input that fails would stop at once). New inputs go to
# FUZZ_CORPUS if set (scripts/fuzz.sh keeps one per target), else to a scratch
# directory. A failing input is saved in test/fuzz/crashes/.
set -euo pipefail
mode=$1 exe=$(realpath "$2") gen=$(realpath "$3")
name=$(basename "$exe")
src=$(cd "$(dirname "$0")" && pwd)
crashes=$src/crashes
regressions=$src/regressions/$name
seconds=${FUZZ_SECONDS:-20}
# Hangs: one input may take this long (the endpoint world runs bounded loops).
common=(-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/$name-")
# An endpoint input is a sequence of operations: long ones from the start reach deeper
# states in a short run (60 s: 2243 edges at once vs 2200 growing the length slowly).
fuzz_opts=()
[ "$name" != fuzz_endpoint ] || fuzz_opts=(-max_len=512 -len_control=0)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" "$tmp/seeds" >/dev/null
seeds=$tmp/seeds/$name
mkdir -p "$crashes" "$regressions"

# On failure: say which input failed and how to run it again.
report() {
    local newest
    newest=$(ls -t "$crashes/$name"-* 2>/dev/null | head -n 1 || true)
    echo "=== $name FAILED ($1)"
    if [ -n "$newest" ]; then
        echo "=== input saved: $newest"
        echo "=== reproduce:   $exe $newest"
        echo "=== keep it as a regression: cp $newest $regressions/<what-it-breaks>"
    fi
}

# Runs the target once on each given input; on failure shows why and how to rerun it.
replay() {
    if "$exe" "${common[@]}" "$@" >"$tmp/replay.log" 2>&1; then
        return 0
    fi
    grep -v '^Running: \|^Executed ' "$tmp/replay.log" | tail -n 40
    last=$(grep '^Running: ' "$tmp/replay.log" | tail -n 1 | cut -d' ' -f2-)
    echo "=== $name FAILED on $last"
    echo "=== reproduce:   $exe $last"
    return 1
}

if [ "$mode" = replay ]; then
    seed_files=("$seeds"/*)
    echo "$name: replaying ${#seed_files[@]} seeds captured from a real transfer"
    status=0
    replay "${seed_files[@]}" || status=1
    # One run per regression input, so every open one is reported.
    for r in "$regressions"/*; do
        [ -f "$r" ] || continue
        echo "$name: regression $(basename "$r")"
        replay "$r" || status=1
    done
    [ $status -ne 0 ] || echo "$name: replay ok"
    exit $status
fi

corpus=${FUZZ_CORPUS:-$tmp/corpus}
mkdir -p "$corpus"
echo "$name: fuzzing for ${seconds}s (corpus $corpus)"
status=0
"$exe" "${common[@]}" "${fuzz_opts[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    "$corpus" "$seeds" >"$tmp/fuzz.log" 2>&1 || status=$?
if [ $status -ne 0 ]; then
    grep -v '^#[0-9]' "$tmp/fuzz.log" | tail -n 80
    report "exit $status"
    exit 1
fi
# The last status line has the coverage; the final stats the executions.
grep -E '^#[0-9]+' "$tmp/fuzz.log" | tail -n 1
grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added' "$tmp/fuzz.log"
echo "$name: no failure in ${seconds}s"
