#!/usr/bin/env bash
# metaroce-perf --backend udp: a server and a client as two processes on loopback
# (kernel UDP sockets at 127.9.N.1 and 127.9.N.2, no DPDK port); passes when both exit
# 0 and the client verified the data.
#   perf_udp_pair.sh PERF_BINARY N TEST [metaroce-perf options...]
# CLIENT_ONLY (environment): options for the client alone (the server learns -q from
# the client's hello).
set -u
perf=$1 net=$2 test_name=$3; shift 3
dir=$(mktemp -d /tmp/metaroce-perf-udp.XXXXXX)
trap 'rm -rf "$dir"' EXIT
# The EAL still provides the memory regions: no hugepages, no devices. Both processes
# stop within meson's 30 s even when it kills only this script.
eal=(--no-pci --no-huge -m 256 --no-telemetry --log-level='*:warning')
srv=127.9.$net.1 cli=127.9.$net.2
timeout 25 "$perf" -l 0 "${eal[@]}" --file-prefix="pu-s-$$" -- "$test_name" --backend udp \
  --local $srv --timeout 20 "$@" </dev/null >"$dir/server.log" 2>&1 &
spid=$!
# The client retries its connection until --timeout: no need to wait for the server.
timeout 25 "$perf" -l 1 "${eal[@]}" --file-prefix="pu-c-$$" -- "$test_name" --backend udp \
  --local $cli --timeout 20 "$@" ${CLIENT_ONLY:-} $srv </dev/null >"$dir/client.log" 2>&1
crc=$?
wait $spid
src=$?
echo "=== client (exit $crc)"; cat "$dir/client.log"
echo "=== server (exit $src)"; cat "$dir/server.log"
rc=0
[ $crc -eq 0 ] && [ $src -eq 0 ] || rc=1
grep -q "Data verification: ok" "$dir/client.log" || { echo "client did not verify data"; rc=1; }
grep -q "Device         : udp:$cli" "$dir/client.log" || { echo "client header lacks the UDP device"; rc=1; }
exit $rc
