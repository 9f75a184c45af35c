#!/bin/bash
# rdma-core's own test suite (Debian's rdma-core ships it in /usr/share/doc/rdma-core/tests,
# pyverbs-based) run unmodified over metaroce0 with a pinned node address, as a user
# would run it against an HCA. Every test must pass or skip (the suite skips what a
# device reports it lacks: UD, XRC, atomics, ODP, memory windows, device memory, ...),
# and the RC traffic tests that carry data between two QPs of the device must pass.
#   rdma_core_suite.sh METAROCE_RUN NODE_ADDR   (METAROCE_BACKEND, METAROCE_EAL from the
#   environment pick the backend)
set -u
run=$1 addr=$2
src=/usr/share/doc/rdma-core/tests
py=/usr/bin/python3 # the system Python, whose python3-pyverbs matches rdma-core
if [ ! -f "$src/run_tests.py" ] || ! "$py" -c 'import pyverbs' 2>/dev/null; then
    echo "rdma-core's tests or pyverbs missing (scripts/install-deps.sh installs python3-pyverbs)"
    exit 77 # meson: skipped
fi
dir=$(mktemp -d /tmp/metaroce-rdmacore.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cp -r "$src" "$dir/tests"
gunzip -f "$dir"/tests/*.gz
cd "$dir"
out=$(METAROCE_ADDR=$addr timeout 300 "$run" "$py" tests/run_tests.py --dev metaroce0 --port 1 --gid 0 -v 2>&1)
rc=$?
echo "$out" | grep -E '\.\.\. (ok|FAIL|ERROR)$|^(FAIL|ERROR):|^Ran |^OK|^FAILED'
[ $rc -eq 0 ] || { echo "FAIL: the suite exited $rc"; echo "$out" | tail -40; exit 1; }
# True if test $1 reported "... ok": on its own line, or (a test with a docstring) on the
# line after, which shows the docstring's first line.
passed() {
    awk -v t="$1" '$1 == t { if ($0 ~ /\.\.\. ok$/) { ok = 1; exit } seen = 1; next }
                   seen { ok = $0 ~ /\.\.\. ok$/; exit }
                   END { exit !ok }' <<<"$out"
}
# Required to pass: the RC traffic tests the header names, and the MR reregistrations
# (new rights, new memory under the same keys), whose second half resets both QPs after
# the error and runs again on them.
for t in test_qp_ex_rc_rdma_write test_qp_ex_rc_rdma_read test_qp_ex_rc_send_imm \
         test_rc_traffic_cq_ex test_cq_events_rc test_ro_rc_traffic \
         test_mr_rereg_access test_mr_rereg_access_bad_flow test_mr_rereg_addr; do
    passed "$t" || { echo "FAIL: $t did not pass"; exit 1; }
done
echo PASS
