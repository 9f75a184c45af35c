#!/usr/bin/env bash
# ./scripts/demo.sh as a new user runs it: every step announced in order, the build's
# progress shown (not hidden in a log), DEMO_HUGEPAGES=0 leaving the system as it was,
# and a verified write_bw. Uses the suite's own build directory (already built).
#   demo_check.sh BUILD_DIR
set -uo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pages_before=$(cat /proc/sys/vm/nr_hugepages)
mounts_before=$(mount | grep -c ' type hugetlbfs ')

DEMO_BUILD_DIR=$build DEMO_HUGEPAGES=0 DEMO_SECONDS=2 "$src/scripts/demo.sh" >"$out" 2>&1
rc=$?
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ "$rc" -eq 0 ] || bad "demo.sh exited $rc"
# The steps, in order, each on its own line.
last=0
for step in "[1/4] Debian packages" "[2/4] building in" "[3/4] memory: leaving hugepages alone" \
            "[4/4] write_bw for 2 s"; do
  n=$(grep -nF "demo: $step" "$out" | head -1 | cut -d: -f1)
  if [ -z "$n" ]; then
    bad "no line 'demo: $step'"
  elif [ "$n" -le "$last" ]; then
    bad "'demo: $step' out of order"
  else
    last=$n
  fi
done
# ninja's own output sits between the build step and the memory step. (grep reads it all:
# with -q it would stop at the first match and, under pipefail, a long build's sed would
# fail on the closed pipe.)
sed -n '/demo: \[2\/4\]/,/demo: \[3\/4\]/p' "$out" | grep -E '^ninja: |^\[[0-9]+/[0-9]+\] ' >/dev/null ||
  bad "the build step shows nothing of ninja's progress"
grep -q 'running with --no-huge' "$out" || bad "does not say it runs with --no-huge"
grep -q 'system change' "$out" && bad "DEMO_HUGEPAGES=0 still changed the system"
[ "$(cat /proc/sys/vm/nr_hugepages)" = "$pages_before" ] || bad "vm.nr_hugepages changed"
[ "$(mount | grep -c ' type hugetlbfs ')" = "$mounts_before" ] || bad "hugetlbfs mounts changed"
grep -q '#bytes' "$out" || bad "no perftest table"
grep -q 'Data verification: ok' "$out" || bad "data not verified"
if [ "$fail" -ne 0 ]; then
  echo "--- demo.sh output"
  cat "$out"
fi
exit "$fail"
