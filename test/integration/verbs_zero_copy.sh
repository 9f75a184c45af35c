#!/bin/bash
# Zero-copy send for Verbs programs on the DPDK backend (issue 11): verbs_zero_copy
# (a plain libibverbs program) on both ends of a net_memif link, each process with the
# EAL in-process (--no-huge). Checks:
#  - the server verified the 4 MiB the client wrote from ordinary application memory;
#  - the client's worker sent data frames in place and copied none (METAROCE_LOG's
#    closing line: "data frames sent in place N, payloads copied 0");
#  - with the server stopped (SIGSTOP: the link takes nothing), ibv_dereg_mr of the
#    region whose frames the port holds waits, then fails with EBUSY; once the server
#    is resumed (SIGCONT) during the next call's wait, that call succeeds.
#   verbs_zero_copy.sh METAROCE_RUN VERBS_ZERO_COPY
set -u
run=$1 prog=$2
dir=$(mktemp -d /tmp/metaroce-vzc.XXXXXX)
spid= cpid=
cleanup() {
    [ -n "$spid" ] && kill -CONT "$(cat "$dir/server.pid" 2>/dev/null)" 2>/dev/null
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    [ -n "$cpid" ] && kill "$cpid" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
# rsize=5: 32-slot rings, so a stopped peer's link fills after a few frames.
eal() { echo "-l 0 --no-pci --no-huge -m 256 --vdev=net_memif0,role=$1,socket=$dir/m.sock,socket-abstract=no,bsize=8192,rsize=5"; }
export METAROCE_BACKEND=dpdk METAROCE_LOG=1 METAROCE_MIN_RTO_US=1000
METAROCE_EAL=$(eal server) METAROCE_ADDR=10.0.0.1 timeout 90 "$run" "$prog" server "$dir" >"$dir/server.log" 2>&1 &
spid=$!
sleep 1 # a memif client needs its server's socket
METAROCE_EAL=$(eal client) METAROCE_ADDR=10.0.0.2 timeout 90 "$run" "$prog" client "$dir" >"$dir/client.log" 2>&1 &
cpid=$!
wait_for() { # file seconds (gives up when the client has exited)
    for _ in $(seq $(($2 * 20))); do
        [ -e "$dir/$1" ] && return 0
        kill -0 $cpid 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
fail=0
if wait_for ready2 60; then
    kill -STOP "$(cat "$dir/server.pid")"
    touch "$dir/go2"
    wait_for busy 30 || { echo "FAIL: the client never tried to deregister"; fail=1; }
    wait_for dereg2 30 # the client deregisters again: resume the server during its wait
    sleep 0.2
    kill -CONT "$(cat "$dir/server.pid")"
else
    echo "FAIL: phase 1 did not finish"
    fail=1
    touch "$dir/done"
fi
wait $cpid; crc=$?
cpid=
wait $spid; src=$?
spid=
echo "== server (exit $src)"; cat "$dir/server.log"
echo "== client (exit $crc)"; cat "$dir/client.log"
[ $src -eq 0 ] && [ $crc -eq 0 ] || { echo "FAIL: exit status server $src client $crc"; fail=1; }
grep -q "server: 4194304 bytes verified" "$dir/server.log" || { echo "FAIL: the bytes were not verified"; fail=1; }
grep -q "ibv_dereg_mr with frames held: 16 " "$dir/client.log" || { echo "FAIL: no EBUSY while frames were held"; fail=1; }
grep -q "ibv_dereg_mr once the link drains: 0 " "$dir/client.log" || { echo "FAIL: deregistration after the drain"; fail=1; }
grep -q "metaroce: ibv_dereg_mr: cannot deregister the region" "$dir/client.log" || { echo "FAIL: no reason printed with EBUSY"; fail=1; }
# The client's worker counters at close: frames sent in place, none copied.
line=$(grep -o "data frames sent in place [0-9]*, payloads copied [0-9]*" "$dir/client.log")
echo "client worker: ${line:-no counters}"
zc=$(echo "$line" | awk '{print $6}' | tr -d ,); copied=$(echo "$line" | awk '{print $9}')
[ "${zc:-0}" -ge 1024 ] || { echo "FAIL: expected at least 1024 frames (4 MiB) sent in place, got ${zc:-none}"; fail=1; }
[ "${copied:-1}" -eq 0 ] || { echo "FAIL: ${copied:-?} payloads copied"; fail=1; }
[ $fail -eq 0 ] && echo PASS
exit $fail
