#!/usr/bin/env bash
# Runs the user guide's metaroce-perf pair (write_bw -s 65536 --report_gbits over one
# net_memif link) RUNS times and fails if either process ever exits non-zero. It guards
# the server's exit: it used to die with SIGSEGV in net_memif's rx in about half of the
# runs when the vdev lacked bsize=8192 (the server polled the port while the client's
# disconnect tore the shared rings down).
#   perf_exit_repeat.sh PERF_BINARY RUNS BSIZE [extra metaroce-perf options...]
# BSIZE: the memif bsize, or "default" to leave it out (the crashing setup).
# With BSIZE=default only a death by signal fails the run: at the 2 KiB default a 4 KiB
# frame spans 3 memif descriptors, and rare data/connection failures there are reported
# (printed) but are a separate defect from the exit crash.
set -u
perf=$1; runs=$2; bsize=$3; shift 3
here=$(dirname "$(realpath "$0")")
[ "$bsize" = default ] && export PERF_PAIR_BSIZE= || export PERF_PAIR_BSIZE=$bsize
fails=0; others=0; start=$(date +%s)
for i in $(seq "$runs"); do
  out=$(mktemp -d /tmp/metaroce-exit.XXXXXX)
  PERF_PAIR_OUT=$out "$here/perf_pair.sh" "$perf" write_bw -s 65536 --report_gbits "$@" \
    >"$out/pair.log" 2>&1
  rc=$?
  codes=$(grep -o '^=== [a-z]* (exit [0-9]*)' "$out/pair.log" | grep -o '[0-9]*' | tr '\n' ' ')
  echo "run $i: rc $rc, exit codes (client server): $codes"
  signal=0
  for c in $codes; do [ "$c" -ge 128 ] && [ "$c" -ne 130 ] && signal=1; done
  if [ $signal -eq 1 ] || { [ "$bsize" != default ] && [ $rc -ne 0 ]; }; then
    fails=$((fails + 1)); cat "$out/pair.log"
  elif [ $rc -ne 0 ]; then
    others=$((others + 1)); grep -a "error\|FAILED" "$out/pair.log"
  fi
  rm -rf "$out"
done
echo "$runs runs in $(( $(date +%s) - start )) s: $fails failed, $others other (non-crash) failures"
[ $fails -eq 0 ]
