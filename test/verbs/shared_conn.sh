#!/bin/bash
# Two QP pairs between the same two nodes share one metaroce connection: the log of
# `verbs_check shared` shows one connection established on each side and four bindings.
set -u
run=$1 check=$2
out=$(METAROCE_LOG=1 timeout 60 "$run" "$check" shared 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; exit 1; }
n=$(grep -c 'connecting to' <<<"$out")
e=$(grep -c 'established' <<<"$out")
b=$(grep -c 'bound to QP' <<<"$out")
[ "$n" -eq 1 ] && [ "$e" -eq 2 ] && [ "$b" -eq 4 ] ||
    { echo "FAIL: $n connects, $e established, $b bindings (want 1, 2, 4)"; exit 1; }
echo PASS
