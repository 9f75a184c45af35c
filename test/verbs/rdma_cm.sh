#!/bin/bash
# rdma_cm modes (-R) are out of scope (no librdmacm interposer): ib_write_bw must fail
# at once with its own clear rdma_cm message, not hang.
set -u
run=$1
out=$(METAROCE_ADDR=127.9.3.1 timeout 20 "$run" ib_write_bw -x 0 -R 2>&1)
rc=$?
echo "$out"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: exit $rc (124: hung)"; exit 1; }
grep -q 'rdma_create_event_channel failed' <<<"$out" || { echo "FAIL: no rdma_cm message"; exit 1; }
echo PASS
