#!/usr/bin/env bash
# ./scripts/verbs-bench.sh --quick against the suite's build: every program runs and the
# table has its shape (a header, four rows with a figure each, the source lines). The
# figures themselves are not judged: a benchmark reports numbers, it does not pass or fail.
#   verbs_bench_check.sh BUILD_DIR
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
BENCH_BUILD_DIR=$1 "$src/scripts/verbs-bench.sh" --quick --net 74 --port 19074 >"$out" 2>&1
rc=$?
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ "$rc" -eq 0 ] || bad "verbs-bench.sh --quick exited $rc"
num='[0-9]+(\.[0-9]+)?'
grep -qE "^ load average: $num $num $num at start, $num $num $num at end" "$out" ||
  bad "no load average line"
grep -qE '^\| measurement +\| message +\| +Gb/s \| latency us +\| note \|$' "$out" || bad "no table header"
grep -qE '^\|-+\|-+\|-+\|-+\|-+\|$' "$out" || bad "no header rule"
for r in "ib_write_bw -x 0, metaroce over UDP" "iperf3 -u -b 0, kernel UDP" "iperf3, kernel TCP"; do
  grep -qE "^\| $r +\| 4096 B +\| +$num \| - +\| .+ \|$" "$out" || bad "no Gb/s row '$r'"
done
grep -qE "^\| ib_send_lat -x 0, metaroce over UDP +\| 2 B +\| +- \| $num typ, $num avg, $num p99 +\| min $num; " "$out" ||
  bad "no latency row"
[ "$(grep -c '^|' "$out")" -eq 6 ] || bad "the table does not have exactly 4 rows"
for s in "ib_write_bw: 4096 200 " "ib_send_lat: 2 100 " "iperf3 UDP : .* receiver$" \
         "iperf3 UDP : .* sender$" "iperf3 TCP : .* receiver$"; do
  grep -qE "^ $s" "$out" || bad "no source line '$s'"
done
if [ "$fail" -ne 0 ]; then
  echo "--- verbs-bench.sh --quick output"
  cat "$out"
fi
exit "$fail"
